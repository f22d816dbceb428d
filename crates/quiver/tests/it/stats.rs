//! Index statistics (SPEC A1) through HTTP, with traffic metered from the vector API and time driven
//! by the manual clock.

use std::time::Duration;

use quiver_core::Clock;
use quiver_testkit::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const SERIES: [&str; 16] = [
    "daily_update_requests",
    "daily_query_requests",
    "daily_rerank_requests",
    "daily_bandwidths",
    "query_throughput",
    "update_throughput",
    "query_latency_mean",
    "query_latency_99",
    "update_latency_mean",
    "update_latency_99",
    "embeds_latency_mean",
    "embeds_latency_99",
    "rerank_latency_mean",
    "rerank_latency_99",
    "vector_count",
    "data_size",
];

async fn get(server: &TestServer, path: &str) -> (StatusCode, Value) {
    let response = server.management(Method::GET, path).send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn vector_call(server: &TestServer, token: &str, path: &str, body: Value) {
    let response = server
        .vector(token, Method::POST, path)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{path}");
}

fn is_wire_time(text: &str) -> bool {
    // YYYY-MM-DD HH:MM:SS.fff +0000 UTC
    let bytes = text.as_bytes();
    text.len() == 33
        && text.ends_with(" +0000 UTC")
        && bytes[4] == b'-'
        && bytes[10] == b' '
        && bytes[19] == b'.'
        && text[..4].chars().all(|c| c.is_ascii_digit())
}

#[tokio::test]
async fn stats_count_queries_and_updates_and_shape_every_series() {
    let mut server = TestServer::embedded().await;
    // Start on a whole minute, so the manual clock's steps land in known points, and not in the last
    // ten minutes of a UTC day, whose end would reset the daily counts the test reads.
    let now = server.clock().now().as_millis();
    let (day, ten_minutes) = (86_400_000, 600_000);
    let start = if now % day > day - ten_minutes {
        now - now % day + day
    } else {
        now - now % 60_000
    };
    server
        .clock()
        .set(quiver_core::Timestamp::from_millis(start + 5_000));
    let record = server.create_vector_index(json!({"name": "s", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 2})).await;
    let (id, token) = (
        record["id"].as_str().unwrap().to_owned(),
        record["token"].as_str().unwrap().to_owned(),
    );

    vector_call(
        &server,
        &token,
        "/upsert",
        json!([{"id": "a", "vector": [1.0, 0.0]}, {"id": "b", "vector": [0.0, 1.0]}]),
    )
    .await;
    vector_call(
        &server,
        &token,
        "/upsert",
        json!({"id": "c", "vector": [1.0, 1.0]}),
    )
    .await;
    for _ in 0..3 {
        vector_call(&server, &token, "/query", json!({"vector": [1.0, 0.0]})).await;
    }
    vector_call(&server, &token, "/fetch", json!({"ids": ["a"]})).await;
    let refused = server
        .vector(&token, Method::POST, "/query")
        .json(&json!({"vector": [1.0]}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        refused.status(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "a failed request is not counted"
    );

    let (status, stats) = get(&server, &format!("/v2/vector/index/{id}/stats")).await;
    assert_eq!(status, StatusCode::OK, "{stats}");
    assert_eq!(
        (
            stats["daily_query_count"].clone(),
            stats["daily_update_count"].clone()
        ),
        (json!(4), json!(2))
    );
    assert_eq!(
        (
            stats["monthly_query_count"].clone(),
            stats["monthly_update_count"].clone()
        ),
        (json!(4), json!(2))
    );
    assert_eq!(stats["daily_rerank_count"], 0);
    assert_eq!(stats["current_vector_count"], 3);
    assert_eq!(stats["monthly_cost"], 0.0, "free plan");
    assert!(stats["monthly_bandwidth_usage"].as_u64().unwrap() > 0);
    assert!(stats["storage_usage"].as_u64().unwrap() > 0);
    assert!(stats["pending_index_count"].is_u64());
    for name in SERIES {
        let series = stats[name].as_array().unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(series.len(), 60, "{name}");
        assert!(
            series
                .iter()
                .all(|p| is_wire_time(p["x"].as_str().unwrap()) && p["y"].is_number()),
            "{name}: {}",
            series[0]
        );
    }
    assert_eq!(stats["days"].as_array().unwrap().len(), 60);
    assert_eq!(stats["daily_query_requests"][59]["y"], 4.0);
    assert_eq!(stats["daily_update_requests"][59]["y"], 2.0);
    assert_eq!(stats["vector_count"][59]["y"], 3.0);
    assert!(stats["query_latency_mean"][59]["y"].as_f64().unwrap() > 0.0);
    assert!(
        stats["daily_query_requests"][59]["x"]
            .as_str()
            .unwrap()
            .contains(":00.000 +0000 UTC"),
        "aligned to the minute"
    );

    server.clock().advance(Duration::from_secs(120));
    vector_call(&server, &token, "/query", json!({"vector": [0.0, 1.0]})).await;
    let (_, stats) = get(&server, &format!("/v2/vector/index/{id}/stats?period=1h")).await;
    assert_eq!(stats["daily_query_requests"][59]["y"], 1.0);
    assert_eq!(stats["daily_query_requests"][57]["y"], 4.0, "two minutes back");
    assert_eq!(stats["daily_query_count"], 5);

    let (_, month) = get(&server, &format!("/v2/vector/index/{id}/stats?period=30d")).await;
    assert_eq!(month["daily_query_requests"].as_array().unwrap().len(), 240);
    assert_eq!(month["days"].as_array().unwrap().len(), 240);
    let (status, error) = get(&server, &format!("/v2/vector/index/{id}/stats?period=2h")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("1h, 3h, 12h, 1d, 3d, 7d, 30d"),
        "{error}"
    );

    let (_, listed) = get(&server, "/v2/vector/index").await;
    let throughput = listed[0]["throughput_vector"].as_array().unwrap();
    assert_eq!(throughput.len(), 60);
    assert_eq!(throughput[59]["y"], 1.0);

    let (_, global) = get(&server, "/v2/vector/index/stats").await;
    assert_eq!(global["request"], 7);
    assert_eq!(global["record_count"], 3);

    server.restart().await;
    let (_, stats) = get(&server, &format!("/v2/vector/index/{id}/stats")).await;
    assert_eq!(stats["daily_query_count"], 5, "usage survives a restart");
    server.stop().await;
}

#[tokio::test]
async fn stats_of_another_accounts_or_an_unknown_index_are_404_and_search_stats_have_the_same_shape() {
    let server = TestServer::embedded().await;
    let other = server.create_account("other@example.com").await;
    let record = server.create_vector_index(json!({"name": "s", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 2})).await;
    let id = record["id"].as_str().unwrap();
    let theirs = server
        .management_as(&other, Method::GET, &format!("/v2/vector/index/{id}/stats"))
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    let (status, _) = get(
        &server,
        "/v2/vector/index/00000000-0000-4000-8000-000000000000/stats",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let unauthenticated = server
        .client()
        .get(server.url(&format!("/v2/vector/index/{id}/stats")))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthenticated.status(), StatusCode::UNAUTHORIZED);

    let created = server
        .management(Method::POST, "/v2/search")
        .json(&json!({"name": "q", "region": "eu-west-1", "type": "payg"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::OK);
    let (_, searches) = get(&server, "/v2/search").await;
    let search_id = searches[0]["id"].as_str().unwrap();
    let (status, stats) = get(&server, &format!("/v2/search/{search_id}/stats?period=7d")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stats["daily_rerank_requests"].as_array().unwrap().len(), 60);
    assert_eq!(stats["monthly_rerank_count"], 0);
    let (status, global) = get(&server, "/v2/search/stats").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(global["rerank_count"], 0);
}

/// The `y` of every point of `series` in a stats answer.
fn ys(stats: &Value, series: &str) -> Vec<f64> {
    stats[series]
        .as_array()
        .unwrap()
        .iter()
        .map(|point| point["y"].as_f64().unwrap())
        .collect()
}

#[tokio::test]
async fn stored_and_unflushed_usage_land_in_the_right_points_across_a_month_boundary() {
    let mut server = TestServer::embedded().await;
    // 2026-01-31 23:50:05 UTC: ten minutes before a day and a month begin.
    server
        .clock()
        .set(quiver_core::Timestamp::from_millis(1_769_903_405_000));
    let record = server.create_vector_index(json!({"name": "m", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 2})).await;
    let (id, token) = (
        record["id"].as_str().unwrap().to_owned(),
        record["token"].as_str().unwrap().to_owned(),
    );
    for _ in 0..2 {
        vector_call(&server, &token, "/query", json!({"vector": [1.0, 0.0]})).await;
    }
    server.restart().await; // flushes January's usage to the store
    server.clock().advance(Duration::from_secs(15 * 60)); // 2026-02-01 00:05:05
    for _ in 0..3 {
        vector_call(&server, &token, "/query", json!({"vector": [1.0, 0.0]})).await;
    }

    for flushed in [false, true] {
        let stats = |period: &'static str| {
            let server = &server;
            let id = id.clone();
            async move {
                get(server, &format!("/v2/vector/index/{id}/stats?period={period}"))
                    .await
                    .1
            }
        };
        let hour = stats("1h").await;
        assert_eq!(
            (
                hour["daily_query_count"].as_u64(),
                hour["monthly_query_count"].as_u64()
            ),
            (Some(3), Some(3)),
            "flushed {flushed}"
        );
        let points = ys(&hour, "daily_query_requests");
        assert_eq!(
            (points[59], points[44], points.iter().sum::<f64>()),
            (3.0, 2.0, 5.0),
            "1h, flushed {flushed}"
        );
        // Three-minute points: 00:03 holds February's queries, 23:48 (five points back) January's.
        let points = ys(&stats("3h").await, "daily_query_requests");
        assert_eq!(
            (points[59], points[54], points.iter().sum::<f64>()),
            (3.0, 2.0, 5.0),
            "3h, flushed {flushed}"
        );
        // Points of 12, 24, 72 and 180 minutes all start at midnight: January's queries are one point back.
        for (period, last) in [("12h", 59), ("1d", 59), ("3d", 59), ("30d", 239)] {
            let answer = stats(period).await;
            let points = ys(&answer, "daily_query_requests");
            assert_eq!(points.len(), last + 1);
            assert_eq!(
                (points[last], points[last - 1]),
                (3.0, 2.0),
                "{period}, flushed {flushed}"
            );
            assert_eq!(answer["monthly_query_count"], 3, "{period}");
        }
        let points = ys(&stats("7d").await, "daily_query_requests");
        assert_eq!(points[58] + points[59], 5.0, "7d");
        assert_eq!(points.iter().sum::<f64>(), 5.0, "7d");
        server.restart().await; // the second round reads February from the store too
    }
    server.stop().await;
}
