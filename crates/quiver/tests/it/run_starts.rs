//! Starting workflow runs: triggers (one, a batch, sent again, with settings as query keys), and a start
//! whose message is turned away as a duplicate.

use quiver_testkit::TestServer;
use quiver_testkit::calls::send;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::workflows::{running_runs, trigger_by_batch, workflow_headers};

#[tokio::test]
async fn a_batch_trigger_starts_each_run_and_answers_each_item_in_its_place() {
    let server = TestServer::embedded().await;
    let order = "https://shop.example.com/order";
    let trigger = |items: Value| send(server.queue(Method::POST, "/v2/batch/trigger").json(&items));
    let (status, answers) = trigger(json!([
        {"destination": order, "headers": {"Upstash-Workflow-RunId": "wfr_batch_a", "Upstash-Delay": "1h"}, "body": "{\"order\":1}"},
        {"destination": "https://shop.example.com/refund", "headers": {"Upstash-Delay": "1h"}},
        {"destination": ""},
        {"destination": order, "headers": {"Upstash-Workflow-RunId": ""}},
    ]))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{answers}");
    assert_eq!(answers[0]["workflowRunId"], "wfr_batch_a", "{answers}");
    assert_eq!(answers[0]["deduplicated"], false);
    let created_at = answers[0]["workflowCreatedAt"].as_i64().expect("a creation time");
    let second = answers[1]["workflowRunId"].as_str().unwrap().to_owned();
    assert!(second.starts_with("wfr_") && second != "wfr_batch_a", "{answers}");
    assert_eq!(answers[2], json!({"error": "destination: is required"}));
    assert!(
        answers[3]["error"].as_str().unwrap().contains("workflow run id"),
        "{answers}"
    );
    let mut expected = vec!["wfr_batch_a".to_owned(), second];
    expected.sort();
    assert_eq!(running_runs(&server).await, expected);
    let (_, logs) = send(server.queue(Method::GET, "/v2/workflows/events?workflowRunId=wfr_batch_a")).await;
    assert_eq!(logs["runs"][0]["workflowUrl"], order, "{logs}");

    // The same run id again starts nothing: the run that was started answers.
    let (status, again) = trigger(json!([
        {"destination": order, "headers": {"Upstash-Workflow-RunId": "wfr_batch_a", "Upstash-Delay": "1h"}},
    ]))
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(
        again,
        json!([{"workflowRunId": "wfr_batch_a", "workflowCreatedAt": created_at, "deduplicated": true}])
    );
    let (_, pending) = send(server.queue(Method::GET, "/v2/messages")).await;
    assert_eq!(
        pending["messages"].as_array().unwrap().len(),
        2,
        "one first step per run: {pending}"
    );
}

#[tokio::test]
async fn a_trigger_sent_again_deduplicated_by_id_or_by_content_answers_the_run_it_started() {
    let server = TestServer::embedded().await;
    let order = "https://shop.example.com/order";
    let trigger = || {
        send(
            server
                .queue(Method::POST, &format!("/v2/trigger/{order}"))
                .header("Upstash-Deduplication-Id", "order-7")
                .header("Upstash-Delay", "1h")
                .body("{}"),
        )
    };
    let (status, first) = trigger().await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, again) = trigger().await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again, first, "the run the first trigger started");
    let (_, batched) = send(server.queue(Method::POST, "/v2/batch/trigger").json(&json!([
        {"destination": order, "headers": {"Upstash-Deduplication-Id": "order-7", "Upstash-Delay": "1h"}},
    ])))
    .await;
    assert_eq!(batched[0]["workflowRunId"], first["workflowRunId"], "{batched}");
    assert_eq!(batched[0]["deduplicated"], true);
    // A setting may come as a query key, as for any publish.
    let (_, by_query) = send(
        server
            .queue(
                Method::POST,
                &format!("/v2/trigger/{order}?Upstash-Deduplication-Id=order-7"),
            )
            .header("Upstash-Delay", "1h")
            .body("{}"),
    )
    .await;
    assert_eq!(by_query, first, "{by_query}");
    assert_eq!(
        running_runs(&server).await,
        [first["workflowRunId"].as_str().unwrap()],
        "no run is left without its message"
    );
    let (_, pending) = send(server.queue(Method::GET, "/v2/messages")).await;
    assert_eq!(pending["messages"].as_array().unwrap().len(), 1, "{pending}");

    // Deduplicated by content (the body and the forwarded headers), the same holds.
    let by_content = |body: &'static str| {
        send(
            server
                .queue(Method::POST, &format!("/v2/trigger/{order}"))
                .header("Upstash-Content-Based-Deduplication", "true")
                .header("Upstash-Delay", "1h")
                .body(body),
        )
    };
    let (_, one) = by_content("{\"order\":8}").await;
    let (_, same) = by_content("{\"order\":8}").await;
    let (_, other) = by_content("{\"order\":9}").await;
    assert_eq!(same, one);
    assert_ne!(other["workflowRunId"], one["workflowRunId"]);
    assert_eq!(running_runs(&server).await.len(), 3, "one run for each content");
    let (_, pending) = send(server.queue(Method::GET, "/v2/messages")).await;
    assert_eq!(pending["messages"].as_array().unwrap().len(), 3, "{pending}");
}

#[tokio::test]
async fn a_trigger_takes_its_run_id_from_a_query_key_as_a_publish_takes_its_settings() {
    let server = TestServer::embedded().await;
    let (status, started) = send(
        server
            .queue(
                Method::POST,
                "/v2/trigger/https://shop.example.com/order?Upstash-Workflow-RunId=wfr_by_query",
            )
            .header("Upstash-Workflow-RunId", "wfr_by_header")
            .header("Upstash-Delay", "1h")
            .body("{}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{started}");
    assert_eq!(
        started["workflowRunId"], "wfr_by_query",
        "the query key wins, as for any setting"
    );
    assert_eq!(running_runs(&server).await, ["wfr_by_query"]);
}

#[tokio::test]
async fn a_run_start_turned_away_as_a_duplicate_leaves_no_run_behind() {
    let server = TestServer::embedded().await;
    let url = "https://shop.example.com/workflow";
    let start = |run: &'static str| {
        let mut request = server
            .queue(Method::POST, &format!("/v2/publish/{url}"))
            .header("Upstash-Deduplication-Id", "start-1")
            .header("Upstash-Delay", "1h")
            .body("{}");
        for (name, value) in workflow_headers(run, true, url) {
            request = request.header(name, value);
        }
        send(request)
    };
    let (status, first) = start("wfr_first").await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, again) = start("wfr_again").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{again}");
    assert_eq!(again["messageId"], first["messageId"], "{again}");
    assert_eq!(again["deduplicated"], true);
    let batched = trigger_by_batch(
        &server,
        "wfr_batched",
        url,
        &[("Upstash-Deduplication-Id", "start-1"), ("Upstash-Delay", "1h")],
    )
    .await;
    assert_eq!(batched["deduplicated"], true, "{batched}");
    assert_eq!(
        running_runs(&server).await,
        ["wfr_first"],
        "the duplicates' runs are not left waiting for messages that were not stored"
    );
    // A trigger naming a run of its own, turned away the same way, answers the earlier message's run.
    let (status, triggered) = send(
        server
            .queue(Method::POST, &format!("/v2/trigger/{url}"))
            .header("Upstash-Workflow-RunId", "wfr_triggered")
            .header("Upstash-Deduplication-Id", "start-1")
            .body("{}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{triggered}");
    assert_eq!(triggered["workflowRunId"], "wfr_first", "{triggered}");
    assert_eq!(running_runs(&server).await, ["wfr_first"]);
}
