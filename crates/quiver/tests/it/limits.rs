//! Plan limits that count over time, through real HTTP on a manual clock: queries and writes per second
//! (429 with `Retry-After`), daily queries and updates, monthly bandwidth. Each test checks the status,
//! the message and that nothing past the limit was applied.

use std::time::Duration;

use quiver_admin::usage::{MinuteUsage, days_from_civil};
use quiver_core::{Clock, IndexId, Timestamp};
use quiver_testkit::TestServer;
use quiver_testkit::calls::{VectorIndex, call, index, ok};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// 2026-03-15 10:00:00.500 UTC: mid-month, mid-day, mid-second.
fn mid_march() -> Timestamp {
    Timestamp::from_millis((days_from_civil(2026, 3, 15) * 86_400 + 10 * 3_600) * 1_000 + 500)
}

async fn server_at_mid_march() -> TestServer {
    let server = TestServer::embedded().await;
    server.clock().set(mid_march());
    server
}

async fn free_index(server: &TestServer, plan: &str) -> VectorIndex {
    index(
        server,
        json!({"name": "l", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 2, "type": plan}),
    )
    .await
}

/// Stores usage the index had earlier in the current minute, as the meter would have.
async fn had_usage(server: &TestServer, index: &VectorIndex, usage: MinuteUsage) {
    let id: IndexId = index.id.parse().unwrap();
    let minute = server.clock().now().as_secs().div_euclid(60);
    server
        .admin_store()
        .add_usage(vec![(id, minute, usage)])
        .await
        .unwrap();
}

async fn retry_after(
    server: &TestServer,
    index: &VectorIndex,
    path: &str,
    body: Value,
) -> (StatusCode, String, i64) {
    let response = server
        .vector(&index.token, reqwest::Method::POST, path)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let after = response
        .headers()
        .get("retry-after")
        .map_or(-1, |v| v.to_str().unwrap().parse().unwrap());
    let body: Value = response.json().await.unwrap();
    (status, body["error"].as_str().unwrap_or("").to_owned(), after)
}

#[tokio::test]
async fn queries_past_the_per_second_rate_are_429_until_the_next_second() {
    let server = server_at_mid_march().await;
    let idx = free_index(&server, "free").await;
    ok(&server, &idx, "/upsert", json!({"id": "a", "vector": [1.0, 0.0]})).await;
    let query = json!({"vector": [1.0, 0.0], "topK": 1});
    for n in 0..1_000 {
        let (status, _, text) = call(&server, &idx, "/query", query.clone()).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "query {n} of the 1,000 that fit in one second: {text}"
        );
    }

    let (status, message, after) = retry_after(&server, &idx, "/query", query.clone()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(after, 1);
    assert!(
        message.contains("rate limit of 1000 queries per second"),
        "{message}"
    );
    // Writes have their own budget.
    ok(&server, &idx, "/upsert", json!({"id": "b", "vector": [0.0, 1.0]})).await;

    server.clock().advance(Duration::from_secs(1));
    ok(&server, &idx, "/query", query).await;
}

#[tokio::test]
async fn the_daily_update_quota_refuses_writes_until_the_next_utc_day() {
    let server = server_at_mid_march().await;
    let idx = free_index(&server, "free").await;
    had_usage(
        &server,
        &idx,
        MinuteUsage {
            updates: 9_999,
            ..MinuteUsage::default()
        },
    )
    .await;

    ok(
        &server,
        &idx,
        "/upsert",
        json!({"id": "last", "vector": [1.0, 0.0]}),
    )
    .await;
    let (status, message, after) = retry_after(
        &server,
        &idx,
        "/upsert",
        json!({"id": "over", "vector": [0.0, 1.0]}),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(message.contains("daily limit of 10000 updates"), "{message}");
    assert_eq!(after, 14 * 3_600, "until 00:00 UTC");
    let fetched = ok(&server, &idx, "/fetch", json!({"ids": ["last", "over"]})).await;
    assert_eq!(fetched[0]["id"], "last");
    assert_eq!(fetched[1], Value::Null, "nothing past the limit was written");
    // Reads are counted separately.
    ok(&server, &idx, "/query", json!({"vector": [1.0, 0.0]})).await;

    server.clock().advance(Duration::from_secs(14 * 3_600));
    ok(
        &server,
        &idx,
        "/upsert",
        json!({"id": "over", "vector": [0.0, 1.0]}),
    )
    .await;
}

#[tokio::test]
async fn the_daily_query_quota_counts_what_the_meter_recorded_and_paid_plans_have_none() {
    let server = server_at_mid_march().await;
    let free = free_index(&server, "free").await;
    had_usage(
        &server,
        &free,
        MinuteUsage {
            queries: 10_000,
            ..MinuteUsage::default()
        },
    )
    .await;
    let (status, message, _) = retry_after(&server, &free, "/query", json!({"vector": [1.0, 0.0]})).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(message.contains("daily limit of 10000 queries"), "{message}");

    let paid = free_index(&server, "payg").await;
    had_usage(
        &server,
        &paid,
        MinuteUsage {
            queries: 50_000,
            ..MinuteUsage::default()
        },
    )
    .await;
    ok(&server, &paid, "/query", json!({"vector": [1.0, 0.0]})).await;
}

#[tokio::test]
async fn the_monthly_bandwidth_limit_refuses_requests_until_the_next_month() {
    let server = server_at_mid_march().await;
    let idx = free_index(&server, "free").await;
    had_usage(
        &server,
        &idx,
        MinuteUsage {
            bytes: 50 << 30,
            ..MinuteUsage::default()
        },
    )
    .await;
    let (status, message, after) =
        retry_after(&server, &idx, "/upsert", json!({"id": "a", "vector": [1.0, 0.0]})).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert!(
        message.contains("monthly bandwidth limit of 53687091200 bytes"),
        "{message}"
    );
    let april = days_from_civil(2026, 4, 1) * 86_400;
    assert_eq!(after, april - server.clock().now().as_secs());

    server.clock().set(Timestamp::from_millis(april * 1_000));
    let fetched = ok(&server, &idx, "/fetch", json!({"ids": ["a"]})).await;
    assert_eq!(fetched, json!([null]), "nothing past the limit was written");
}
