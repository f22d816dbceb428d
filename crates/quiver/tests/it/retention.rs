//! Retention by age: the events log forgets finished messages `log_retention_days` after their last event,
//! never a pending one; the DLQ forgets a dead letter `dlq_retention_days` after it failed.

use std::time::Duration;

use quiver_testkit::calls::{publish, send};
use quiver_testkit::{Receiver, Reply, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(20);
const DAY: Duration = Duration::from_secs(86_400);

async fn states_of(server: &TestServer, message_id: &str) -> Vec<String> {
    let (status, body) = send(server.queue(Method::GET, &format!("/v2/events?messageId={message_id}"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut states: Vec<String> = body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["state"].as_str().unwrap().to_owned())
        .collect();
    states.reverse();
    states
}

/// Polls until the message's states are `expected`.
async fn wait_for_states(server: &TestServer, message_id: &str, expected: &[&str]) {
    let what = format!("{message_id} reaching the states {expected:?}");
    quiver_testkit::poll::until(&what, WAIT, || async {
        (states_of(server, message_id).await == expected).then_some(())
    })
    .await;
}

fn id(published: &Value) -> String {
    published["messageId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_finished_message_leaves_the_log_after_the_retention_and_a_pending_one_never_does() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let (_, delivered) = publish(&server, &receiver.url("/now"), &[], "x").await;
    let delivered = id(&delivered);
    receiver.wait_for(1, WAIT).await;
    wait_for_states(&server, &delivered, &["CREATED", "ACTIVE", "DELIVERED"]).await;
    let (_, pending) = publish(&server, &receiver.url("/later"), &[("Svc-Delay", "45d")], "y").await;
    let pending = id(&pending);

    server.clock().advance(29 * DAY);
    let (_, recent) = publish(&server, &receiver.url("/recent"), &[("Svc-Delay", "30d")], "z").await;
    let recent = id(&recent);
    server.settle().await;
    assert_eq!(
        states_of(&server, &delivered).await,
        ["CREATED", "ACTIVE", "DELIVERED"],
        "29 days are within the default retention of 30"
    );

    server.clock().advance(2 * DAY);
    wait_for_states(&server, &delivered, &[]).await;
    assert_eq!(
        states_of(&server, &pending).await,
        ["CREATED"],
        "a pending message keeps its log"
    );
    assert_eq!(states_of(&server, &recent).await, ["CREATED"]);
    // Delivered on day 31, so prunable after day 61: its disappearance shows a pruning round ran.
    let (_, marker) = publish(&server, &receiver.url("/marker"), &[], "m").await;
    let marker = id(&marker);
    receiver.wait_for(2, WAIT).await;
    wait_for_states(&server, &marker, &["CREATED", "ACTIVE", "DELIVERED"]).await;

    // The delayed message goes out 45 days after it was published. Its CREATED event is older than the
    // retention, but its newest events are fresh, so its log stays whole.
    server.clock().advance(15 * DAY);
    receiver.wait_for(3, WAIT).await;
    wait_for_states(&server, &pending, &["CREATED", "ACTIVE", "DELIVERED"]).await;
    // Day 62: a round runs after that delivery (the marker goes), and keeps the delayed message's log,
    // whose newest events are 16 days old although its CREATED event is 62 days old.
    server.clock().advance(16 * DAY);
    wait_for_states(&server, &marker, &[]).await;
    assert_eq!(
        states_of(&server, &pending).await,
        ["CREATED", "ACTIVE", "DELIVERED"]
    );
}

#[tokio::test]
async fn finished_messages_leave_the_log_behind_thousands_of_older_pending_ones() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let failing = Receiver::start().await;
    failing.respond_with(Reply::status(500));
    // More pending messages than a pruning round looks at in one go, all older than the finished one:
    // each failed once and waits 300 days for its retry, so its events (four) stand in the log.
    let batch: Vec<Value> = (0..100)
        .map(|_| {
            serde_json::json!({"destination": failing.url("/later"), "body": "p",
                "headers": {"Svc-Retries": "1", "Svc-Retry-Delay": "25920000000"}})
        })
        .collect();
    for _ in 0..25 {
        let (status, body) = send(server.queue(Method::POST, "/v2/batch").json(&batch)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body[99]["messageId"].is_string(), "{body}");
    }
    failing.wait_for(2_500, WAIT).await;
    let (_, finished) = publish(&server, &receiver.url("/now"), &[], "x").await;
    let finished = id(&finished);
    receiver.wait_for(1, WAIT).await;
    wait_for_states(&server, &finished, &["CREATED", "ACTIVE", "DELIVERED"]).await;

    server.clock().advance(31 * DAY);
    wait_for_states(&server, &finished, &[]).await;
}

/// Publishes a message that fails at once; returns its id and its dead letter's id once it is in the DLQ.
async fn dead_letter(server: &TestServer, receiver: &Receiver, body: &str) -> (String, String) {
    let (_, published) = publish(server, &receiver.url("/down"), &[("Svc-Retries", "0")], body).await;
    let message_id = id(&published);
    let path = format!("/v2/dlq?messageId={message_id}");
    let dlq_id = quiver_testkit::poll::until(&format!("{body} reaching the DLQ"), WAIT, || async {
        let (_, page) = send(server.queue(Method::GET, &path)).await;
        page["messages"][0]["dlqId"].as_str().map(str::to_owned)
    })
    .await;
    (message_id, dlq_id)
}

async fn dlq_status(server: &TestServer, dlq_id: &str) -> StatusCode {
    send(server.queue(Method::GET, &format!("/v2/dlq/{dlq_id}")))
        .await
        .0
}

#[tokio::test]
async fn a_dead_letter_leaves_the_queue_after_the_retention() {
    // The log keeps a day, so a message's log going shows that a retention round ran (a round prunes the
    // DLQ before the log).
    let server = TestServer::with_config(|config| config.queue.log_retention_days = 1).await;
    let receiver = Receiver::start().await;
    receiver.respond_with(Reply::status(500));
    let (message, old) = dead_letter(&server, &receiver, "old").await;

    server.clock().advance(29 * DAY);
    wait_for_states(&server, &message, &[]).await;
    assert_eq!(
        dlq_status(&server, &old).await,
        StatusCode::OK,
        "29 days are within the default retention of 30"
    );
    let (marker, recent) = dead_letter(&server, &receiver, "recent").await;

    server.clock().advance(2 * DAY);
    wait_for_states(&server, &marker, &[]).await;
    assert_eq!(dlq_status(&server, &old).await, StatusCode::NOT_FOUND);
    assert_eq!(dlq_status(&server, &recent).await, StatusCode::OK);
}

#[tokio::test]
async fn a_retention_of_zero_keeps_dead_letters() {
    let server = TestServer::with_config(|config| {
        config.queue.dlq_retention_days = 0;
        config.queue.log_retention_days = 1;
    })
    .await;
    let receiver = Receiver::start().await;
    receiver.respond_with(Reply::status(500));
    let (message, kept) = dead_letter(&server, &receiver, "kept").await;
    server.clock().advance(400 * DAY);
    // The message's log goes after a day, which shows a retention round ran after the advance.
    wait_for_states(&server, &message, &[]).await;
    assert_eq!(dlq_status(&server, &kept).await, StatusCode::OK);
}
