//! The message queue through real HTTP, delivering to real local receivers, with time driven by hand.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use quiver_core::Clock;
use quiver_queue::signing::hmac_sha256;
use quiver_testkit::calls::{publish, send};
use quiver_testkit::poll::until;
use quiver_testkit::{Receiver, RecordedRequest, Reply, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const WAIT: Duration = Duration::from_secs(20);

pub(crate) async fn events_of(server: &TestServer, message_id: &str) -> Vec<Value> {
    let (status, body) = send(server.queue(Method::GET, &format!("/v2/events?messageId={message_id}"))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut events = body["events"].as_array().unwrap().clone();
    events.reverse();
    events
}

fn states(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["state"].as_str().unwrap()).collect()
}

fn verify_signature(request: &RecordedRequest, key: &str, url: &str) -> Value {
    let token = request.header("upstash-signature").expect("a signature");
    assert_eq!(request.header("svc-signature"), Some(token));
    let (signing_input, signature) = token.rsplit_once('.').unwrap();
    let expected = URL_SAFE_NO_PAD.encode(hmac_sha256(key.as_bytes(), signing_input.as_bytes()));
    assert_eq!(signature, expected, "signed with the current key");
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(signing_input.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["iss"], "Upstash");
    assert_eq!(claims["sub"], url);
    assert_eq!(claims["body"], URL_SAFE.encode(Sha256::digest(&request.body)));
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["nbf"].as_i64().unwrap(),
        300
    );
    claims
}

#[tokio::test]
async fn a_published_message_is_delivered_signed_with_its_method_body_and_forwarded_headers() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let url = receiver.url("/hook?source=test");
    let (status, published) = publish(
        &server,
        &url,
        &[
            ("Content-Type", "application/json"),
            ("Svc-Method", "PUT"),
            ("Svc-Forward-X-Tenant", "acme"),
            ("Upstash-Forward-X-Trace", "t-1"),
            ("X-Not-Forwarded", "secret"),
        ],
        r#"{"hello":"world"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    let message_id = published["messageId"].as_str().unwrap();
    assert!(message_id.starts_with("msg_"));
    assert_eq!(published["url"], url);
    assert_eq!(published["deduplicated"], false);

    let delivered = receiver.wait_for(1, WAIT).await.remove(0);
    assert_eq!(delivered.method, Method::PUT);
    assert_eq!(delivered.uri.to_string(), "/hook?source=test");
    assert_eq!(&delivered.body[..], br#"{"hello":"world"}"#);
    assert_eq!(delivered.header("content-type"), Some("application/json"));
    assert_eq!(delivered.header("x-tenant"), Some("acme"));
    assert_eq!(delivered.header("x-trace"), Some("t-1"));
    assert_eq!(delivered.header("x-not-forwarded"), None);
    assert_eq!(
        delivered.header("authorization"),
        None,
        "the queue token is never forwarded"
    );
    assert_eq!(delivered.header("upstash-message-id"), Some(message_id));
    assert_eq!(delivered.header("svc-message-id"), Some(message_id));
    assert_eq!(delivered.header("upstash-retried"), Some("0"));
    assert_eq!(delivered.header("user-agent"), Some("Upstash-QStash"));
    verify_signature(&delivered, &server.account().current_signing_key, &url);
}

#[tokio::test]
async fn the_events_log_shows_a_delivered_message_s_life_in_order() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let (_, published) = publish(&server, &receiver.url("/ok"), &[], "x").await;
    let message_id = published["messageId"].as_str().unwrap();
    receiver.wait_for(1, WAIT).await;
    let events = until("the delivery's outcome in the log", WAIT, || async {
        let events = events_of(&server, message_id).await;
        (events.len() >= 3).then_some(events)
    })
    .await;
    assert_eq!(states(&events), ["CREATED", "ACTIVE", "DELIVERED"]);
    assert_eq!(events[2]["responseStatus"], 200);
    assert_eq!(events[0]["url"], receiver.url("/ok"));
}

#[tokio::test]
async fn failures_are_retried_after_the_default_backoff_then_delivered() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.fail_next(2, 500);
    let (_, published) = publish(
        &server,
        &receiver.url("/flaky"),
        &[("Svc-Retries", "3")],
        "payload",
    )
    .await;
    let message_id = published["messageId"].as_str().unwrap().to_owned();

    receiver.wait_for(1, WAIT).await;
    let message = wait_for_retried(&server, &message_id, 1).await;
    let events = events_of(&server, &message_id).await;
    let error = events.iter().find(|e| e["state"] == "ERROR").unwrap();
    let retry = events.iter().find(|e| e["state"] == "RETRY").unwrap();
    assert_eq!(error["responseStatus"], 500);
    let backoff = retry["nextDeliveryTime"].as_i64().unwrap() - retry["time"].as_i64().unwrap();
    assert_eq!(backoff, 12_182, "e^2.5 seconds before the first retry");
    assert_eq!(message["notBefore"], retry["nextDeliveryTime"]);

    server.clock().advance(Duration::from_millis(12_182));
    let second = receiver.wait_for(2, WAIT).await.remove(1);
    assert_eq!(second.header("upstash-retried"), Some("1"));
    wait_for_retried(&server, &message_id, 2).await;
    let events = events_of(&server, &message_id).await;
    let retries: Vec<i64> = events
        .iter()
        .filter(|e| e["state"] == "RETRY")
        .map(|e| e["nextDeliveryTime"].as_i64().unwrap() - e["time"].as_i64().unwrap())
        .collect();
    assert_eq!(retries, [12_182, 148_413], "e^5 seconds before the second retry");

    server.clock().advance(Duration::from_millis(148_413));
    let third = receiver.wait_for(3, WAIT).await.remove(2);
    assert_eq!(third.header("upstash-retried"), Some("2"));
}

/// Waits until the message has `retried` retries scheduled.
async fn wait_for_retried(server: &TestServer, message_id: &str, retried: u64) -> Value {
    until(
        &format!("message {message_id} reaching {retried} retries"),
        WAIT,
        || async {
            let (status, message) =
                send(server.queue(Method::GET, &format!("/v2/messages/{message_id}"))).await;
            (status == StatusCode::OK && message["retried"] == retried).then_some(message)
        },
    )
    .await
}

#[tokio::test]
async fn a_retry_delay_expression_and_a_retry_after_header_set_the_next_attempt() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.reply_next(Reply::status(503));
    receiver.reply_next(Reply::status(429).with_header("retry-after", "7"));
    let (_, published) = publish(
        &server,
        &receiver.url("/x"),
        &[("Svc-Retry-Delay", "1000 * (retried + 2)")],
        "b",
    )
    .await;
    let message_id = published["messageId"].as_str().unwrap().to_owned();
    wait_for_retried(&server, &message_id, 1).await;
    server.clock().advance(Duration::from_secs(2));
    receiver.wait_for(2, WAIT).await;
    wait_for_retried(&server, &message_id, 2).await;
    let delays: Vec<i64> = events_of(&server, &message_id)
        .await
        .iter()
        .filter(|e| e["state"] == "RETRY")
        .map(|e| e["nextDeliveryTime"].as_i64().unwrap() - e["time"].as_i64().unwrap())
        .collect();
    assert_eq!(
        delays,
        [2_000, 7_000],
        "the expression, then the destination's Retry-After"
    );
}

#[tokio::test]
async fn exhausted_retries_go_to_the_dead_letter_queue_which_can_be_read_retried_and_deleted() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.respond_with(
        Reply::status(500)
            .with_body("broken")
            .with_header("x-why", "disk"),
    );
    let (_, published) = publish(&server, &receiver.url("/down"), &[("Svc-Retries", "0")], "lost?").await;
    let message_id = published["messageId"].as_str().unwrap().to_owned();
    receiver.wait_for(1, WAIT).await;

    let dead = wait_for_dead_letter(&server, &message_id).await;
    assert_eq!(dead["responseStatus"], 500);
    assert_eq!(dead["responseBody"], "broken");
    assert_eq!(dead["responseHeader"]["X-Why"], json!(["disk"]), "{dead}");
    assert_eq!(dead["body"], "lost?");
    assert_eq!(dead["maxRetries"], 0);
    let dlq_id = dead["dlqId"].as_str().unwrap().to_owned();
    let (status, fetched) = send(server.queue(Method::GET, &format!("/v2/dlq/{dlq_id}"))).await;
    assert_eq!(
        (status, fetched["messageId"].clone()),
        (StatusCode::OK, json!(message_id))
    );
    let (status, _) = send(server.queue(Method::GET, &format!("/v2/messages/{message_id}"))).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a dead message is no longer pending"
    );
    assert_eq!(
        states(&events_of(&server, &message_id).await),
        ["CREATED", "ACTIVE", "ERROR", "FAILED"]
    );

    receiver.respond_with(Reply::status(200));
    let (status, retried) = send(server.queue(Method::POST, &format!("/v2/dlq/retry/{dlq_id}"))).await;
    assert_eq!(status, StatusCode::CREATED, "{retried}");
    let again = receiver.wait_for(2, WAIT).await.remove(1);
    assert_eq!(&again.body[..], b"lost?");
    let (status, _) = send(server.queue(Method::GET, &format!("/v2/dlq/{dlq_id}"))).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a retried dead letter leaves the queue"
    );

    receiver.respond_with(Reply::status(500));
    let (_, second) = publish(&server, &receiver.url("/down"), &[("Svc-Retries", "0")], "again").await;
    let second_dead = wait_for_dead_letter(&server, second["messageId"].as_str().unwrap()).await;
    let path = format!("/v2/dlq/{}", second_dead["dlqId"].as_str().unwrap());
    let (status, _) = send(server.queue(Method::DELETE, &path)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(server.queue(Method::DELETE, &path)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

pub(crate) async fn wait_for_dead_letter(server: &TestServer, message_id: &str) -> Value {
    until(
        &format!("message {message_id} reaching the dead letter queue"),
        WAIT,
        || async {
            let (_, page) = send(server.queue(Method::GET, &format!("/v2/dlq?messageId={message_id}"))).await;
            page["messages"].as_array().and_then(|m| m.first()).cloned()
        },
    )
    .await
}

#[tokio::test]
async fn a_489_with_non_retryable_goes_straight_to_the_dead_letter_queue() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.reply_next(Reply::status(489).with_header("Upstash-NonRetryable-Error", "true"));
    let (_, published) = publish(&server, &receiver.url("/refuse"), &[("Svc-Retries", "5")], "no").await;
    let dead = wait_for_dead_letter(&server, published["messageId"].as_str().unwrap()).await;
    assert_eq!(dead["responseStatus"], 489);
    assert_eq!(receiver.requests().len(), 1, "no retry was made");
}

#[tokio::test]
async fn callbacks_report_every_attempt_and_the_failure_callback_reports_exhaustion() {
    let server = TestServer::embedded().await;
    let destination = Receiver::start().await;
    let callbacks = Receiver::start().await;
    let failures = Receiver::start().await;
    destination.respond_with(
        Reply::status(500)
            .with_body("nope")
            .with_header("x-reason", "test"),
    );
    let (_, published) = publish(
        &server,
        &destination.url("/work"),
        &[
            ("Content-Type", "text/plain"),
            ("Svc-Retries", "1"),
            ("Svc-Callback", &callbacks.url("/cb")),
            ("Svc-Callback-Forward-X-Cb", "yes"),
            ("Svc-Failure-Callback", &failures.url("/failed")),
        ],
        "job",
    )
    .await;
    let message_id = published["messageId"].as_str().unwrap().to_owned();

    let first = callbacks.wait_for(1, WAIT).await.remove(0);
    assert_eq!(first.header("x-cb"), Some("yes"));
    assert_eq!(first.header("content-type"), Some("application/json"));
    verify_signature(
        &first,
        &server.account().current_signing_key,
        &callbacks.url("/cb"),
    );
    let body = first.json();
    assert_eq!(body["status"], 500);
    assert_eq!(body["body"], STANDARD.encode("nope"));
    assert_eq!(body["header"]["X-Reason"], json!(["test"]));
    assert_eq!(body["retried"], 0);
    assert_eq!(body["maxRetries"], 1);
    assert_eq!(body["sourceMessageId"], message_id.as_str());
    assert_eq!(body["url"], destination.url("/work"));
    assert_eq!(body["method"], "POST");
    assert_eq!(body["sourceHeader"]["Content-Type"], "text/plain");
    assert_eq!(body["sourceBody"], STANDARD.encode("job"));
    assert!(body["notBefore"].is_string() && body["createdAt"].is_string());
    assert!(body.get("dlqId").is_none());

    wait_for_retried(&server, &message_id, 1).await;
    server.clock().advance(Duration::from_secs(13));
    let second = callbacks.wait_for(2, WAIT).await.remove(1).json();
    assert_eq!(second["retried"], 1);

    let failure = failures.wait_for(1, WAIT).await.remove(0).json();
    assert_eq!(failure["status"], 500);
    assert_eq!(failure["sourceMessageId"], message_id.as_str());
    let dead = wait_for_dead_letter(&server, &message_id).await;
    assert_eq!(failure["dlqId"], dead["dlqId"]);
    assert_eq!(failures.requests().len(), 1, "the failure callback fires once");
}

#[tokio::test]
async fn a_successful_attempt_calls_back_once_and_no_failure_callback_fires() {
    let server = TestServer::embedded().await;
    let destination = Receiver::start().await;
    let callbacks = Receiver::start().await;
    destination.respond_with(Reply::status(201).with_body("made"));
    publish(
        &server,
        &destination.url("/ok"),
        &[
            ("Svc-Callback", &callbacks.url("/cb")),
            ("Svc-Failure-Callback", &callbacks.url("/failed")),
        ],
        "x",
    )
    .await;
    let callback = callbacks.wait_for(1, WAIT).await.remove(0);
    assert_eq!(callback.uri.path(), "/cb");
    assert_eq!(callback.json()["status"], 201);
    assert_eq!(callback.json()["body"], STANDARD.encode("made"));
}

#[tokio::test]
async fn a_delayed_message_can_be_read_and_cancelled_before_it_is_due() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let (_, published) = publish(
        &server,
        &receiver.url("/later"),
        &[("Svc-Delay", "1h"), ("Svc-Label", "nightly")],
        "{}",
    )
    .await;
    let message_id = published["messageId"].as_str().unwrap().to_owned();
    let (status, message) = send(server.queue(Method::GET, &format!("/v2/messages/{message_id}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(message["messageId"], message_id.as_str());
    assert_eq!(message["url"], receiver.url("/later"));
    assert_eq!(message["method"], "POST");
    assert_eq!(message["maxRetries"], 3);
    assert_eq!(message["labels"], json!(["nightly"]));
    let created = message["createdAt"].as_i64().unwrap();
    assert_eq!(message["notBefore"].as_i64().unwrap() - created, 3_600_000);

    let (status, cancelled) = send(server.queue(Method::DELETE, &format!("/v2/messages/{message_id}"))).await;
    assert_eq!((status, cancelled), (StatusCode::OK, json!({"cancelled": 1})));
    let (status, _) = send(server.queue(Method::DELETE, &format!("/v2/messages/{message_id}"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        states(&events_of(&server, &message_id).await),
        ["CREATED", "CANCEL_REQUESTED", "CANCELED"]
    );
    server.clock().advance(Duration::from_secs(3_700));
    let (_, published) = publish(&server, &receiver.url("/now"), &[], "").await;
    let delivered = receiver.wait_for(1, WAIT).await;
    assert_eq!(
        delivered[0].uri.path(),
        "/now",
        "the cancelled message never went out"
    );
    assert!(published["messageId"].is_string());
}

#[tokio::test]
async fn bulk_cancel_takes_ids_from_the_query_or_the_body_or_cancels_everything() {
    let server = TestServer::embedded().await;
    let mut ids = Vec::new();
    for _ in 0..4 {
        let (_, published) = publish(&server, "http://127.0.0.1:9/x", &[("Svc-Delay", "1d")], "").await;
        ids.push(published["messageId"].as_str().unwrap().to_owned());
    }
    let (_, by_query) = send(server.queue(
        Method::DELETE,
        &format!("/v2/messages?messageIds={}&messageIds={}", ids[0], ids[1]),
    ))
    .await;
    assert_eq!(by_query, json!({"cancelled": 2}));
    let (_, by_body) = send(
        server
            .queue(Method::DELETE, "/v2/messages")
            .json(&json!({"messageIds": [ids[2]]})),
    )
    .await;
    assert_eq!(by_body, json!({"cancelled": 1}));
    let (_, all) = send(server.queue(Method::DELETE, "/v2/messages")).await;
    assert_eq!(all, json!({"cancelled": 1}));
}

#[tokio::test]
async fn bulk_cancel_by_filter_takes_only_the_matching_messages() {
    let server = TestServer::embedded().await;
    let later = [("Svc-Delay", "1d")];
    let labelled = [("Svc-Delay", "1d"), ("Svc-Label", "nightly")];
    let keyed = [
        ("Svc-Delay", "1d"),
        ("Svc-Flow-Control-Key", "k"),
        ("Svc-Flow-Control-Value", "parallelism=1"),
    ];
    publish(&server, "http://127.0.0.1:9/a/one", &later, "").await;
    publish(&server, "http://127.0.0.1:9/a/two", &labelled, "").await;
    publish(&server, "http://127.0.0.1:9/b/one", &keyed, "").await;
    publish(&server, "http://localhost:9/a/one", &later, "").await;

    let (_, by_label) = send(server.queue(Method::DELETE, "/v2/messages?label=nightly")).await;
    assert_eq!(by_label, json!({"cancelled": 1}));
    let (_, by_key) = send(server.queue(Method::DELETE, "/v2/messages?flowControlKey=k,other")).await;
    assert_eq!(by_key, json!({"cancelled": 1}));
    // Filters are ANDed: host 127.0.0.1 and path /a/one leave the localhost message alone.
    let (_, by_host_and_path) =
        send(server.queue(Method::DELETE, "/v2/messages?host=127.0.0.1&path=/a/one")).await;
    assert_eq!(by_host_and_path, json!({"cancelled": 1}));
    let (_, nothing) = send(server.queue(Method::DELETE, "/v2/messages?topicName=none")).await;
    assert_eq!(nothing, json!({"cancelled": 0}));
    let (_, by_body_url) = send(
        server
            .queue(Method::DELETE, "/v2/messages")
            .json(&json!({"url": "http://localhost:9/a/one"})),
    )
    .await;
    assert_eq!(by_body_url, json!({"cancelled": 1}));
    let (status, bad) = send(server.queue(Method::DELETE, "/v2/messages?fromDate=yesterday")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
}

#[tokio::test]
async fn a_duplicate_within_the_window_returns_the_first_message_with_202() {
    let server = TestServer::embedded().await;
    let headers = [("Svc-Deduplication-Id", "order-7"), ("Svc-Delay", "1h")];
    let (status, first) = publish(&server, "http://127.0.0.1:9/d", &headers, "a").await;
    assert_eq!(status, StatusCode::OK);
    let (status, second) = publish(&server, "http://127.0.0.1:9/d", &headers, "b").await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(second["messageId"], first["messageId"]);
    assert_eq!(second["deduplicated"], true);

    let content = [("Svc-Content-Based-Deduplication", "True"), ("Svc-Delay", "1h")];
    let (_, one) = publish(&server, "http://127.0.0.1:9/c", &content, "same").await;
    let (status, two) = publish(&server, "http://127.0.0.1:9/c", &content, "same").await;
    assert_eq!(
        (status, two["messageId"].clone()),
        (StatusCode::ACCEPTED, one["messageId"].clone())
    );
    let (status, _) = publish(&server, "http://127.0.0.1:9/c", &content, "different").await;
    assert_eq!(status, StatusCode::OK);

    server.clock().advance(Duration::from_secs(601));
    let (status, later) = publish(&server, "http://127.0.0.1:9/d", &headers, "c").await;
    assert_eq!(status, StatusCode::OK, "the window has passed");
    assert_ne!(later["messageId"], first["messageId"]);
}

#[tokio::test]
async fn batch_publishes_each_item_and_reports_errors_per_item() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    send(
        server
            .queue(Method::POST, "/v2/topics/pair/endpoints")
            .json(&json!({"endpoints": [{"url": receiver.url("/g1")}, {"url": receiver.url("/g2")}]})),
    )
    .await;
    let batch = json!([
        {"destination": receiver.url("/a"), "headers": {"Svc-Forward-X-N": "1", "Content-Type": "text/plain"}, "body": "first"},
        {"destination": "pair", "headers": {}, "body": "grouped"},
        {"destination": "no-such-group", "headers": {}, "body": null},
        {"destination": receiver.url("/b"), "body": null},
        {"destination": receiver.url("/c"), "body": {"step": 1, "ok": true}},
    ]);
    let (status, answers) = send(server.queue(Method::POST, "/v2/batch").json(&batch)).await;
    assert_eq!(status, StatusCode::OK, "{answers}");
    assert!(answers[0]["messageId"].is_string());
    assert_eq!(answers[1].as_array().unwrap().len(), 2);
    assert!(answers[2]["error"].as_str().unwrap().contains("no-such-group"));
    assert!(answers[3]["messageId"].is_string());
    assert!(answers[4]["messageId"].is_string());
    // A string body is delivered as is, a missing one as nothing, and any other JSON value as its text.
    let delivered = receiver.wait_for(5, WAIT).await;
    let bodies: std::collections::BTreeMap<String, String> = delivered
        .iter()
        .map(|r| {
            (
                r.uri.path().to_owned(),
                String::from_utf8_lossy(&r.body).into_owned(),
            )
        })
        .collect();
    let expected = [
        ("/a", "first"),
        ("/b", ""),
        ("/c", r#"{"ok":true,"step":1}"#),
        ("/g1", "grouped"),
        ("/g2", "grouped"),
    ]
    .map(|(path, body)| (path.to_owned(), body.to_owned()));
    assert_eq!(bodies, expected.into_iter().collect());

    let (status, _) = send(server.queue(Method::POST, "/v2/batch").body("[{oops")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = send(
        server
            .queue(Method::POST, "/v2/batch")
            .json(&json!({"destination": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn bad_publishes_are_clear_4xx_and_store_nothing() {
    let server = TestServer::with_config(|config| config.queue.max_message_bytes = 1024).await;
    for (destination, headers, status) in [
        (
            "http://127.0.0.1:9/x",
            vec![("Svc-Callback", "not a url")],
            StatusCode::BAD_REQUEST,
        ),
        (
            "http://127.0.0.1:9/x",
            vec![("Svc-Retries", "lots")],
            StatusCode::BAD_REQUEST,
        ),
        (
            "http://127.0.0.1:9/x",
            vec![("Svc-Delay", "tomorrow")],
            StatusCode::BAD_REQUEST,
        ),
        (
            "http://127.0.0.1:9/x",
            vec![("Svc-Flow-Control-Value", "rate=1")],
            StatusCode::BAD_REQUEST,
        ),
        ("not a destination!", vec![], StatusCode::BAD_REQUEST),
        ("unknown-group", vec![], StatusCode::NOT_FOUND),
    ] {
        let (got, error) = publish(&server, destination, &headers, "x").await;
        assert_eq!(got, status, "{destination} {headers:?}: {error}");
        assert!(error["error"].is_string(), "{error}");
    }
    let (status, error) = publish(&server, "http://127.0.0.1:9/x", &[], &"x".repeat(2048)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{error}");
    let (_, events) = send(server.queue(Method::GET, "/v2/events")).await;
    assert_eq!(events["events"], json!([]), "nothing was stored");
}

#[tokio::test]
async fn internal_destinations_are_refused_unless_allowed() {
    let server = TestServer::with_config(|config| config.queue.allow_private_destinations = false).await;
    for destination in [
        "http://127.0.0.1:8080/x",
        "http://localhost/x",
        "http://169.254.169.254/latest",
        "http://[::1]/x",
        "http://10.0.0.1/x",
    ] {
        let (status, error) = publish(&server, destination, &[], "x").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{destination}: {error}");
        assert!(error["error"].as_str().unwrap().contains("not allowed"));
    }
    let (status, _) = publish(
        &server,
        "https://example.com/x",
        &[("Svc-Callback", "http://127.0.0.1:1/cb"), ("Svc-Delay", "1h")],
        "x",
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "an internal callback is refused too"
    );
}

#[tokio::test]
async fn queue_routes_need_a_valid_token_and_the_read_only_token_only_reads() {
    let server = TestServer::embedded().await;
    let (status, error) = send(server.client().get(server.url("/v2/topics"))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{error}");
    let (status, _) = send(server.client().get(server.url("/v2/topics")).bearer_auth("wrong")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let token = server.account().queue_token.clone();
    let (status, published) = send(
        server
            .client()
            .post(server.url(&format!(
                "/v2/publish/http://127.0.0.1:9/q?svc_token={token}&svc-delay=1h"
            )))
            .body("webhook"),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the token may come in the query: {published}"
    );
    let (_, message) = send(server.queue(
        Method::GET,
        &format!("/v2/messages/{}", published["messageId"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(
        message["url"], "http://127.0.0.1:9/q",
        "token and configuration are not part of the destination"
    );

    let read_only = server.account().queue_read_only_token.clone();
    let reader = |method: Method, path: &str| {
        server
            .client()
            .request(method, server.url(path))
            .bearer_auth(&read_only)
    };
    for (method, path) in [
        (Method::GET, "/v2/topics"),
        (Method::GET, "/v2/dlq"),
        (Method::GET, "/v2/events"),
        (Method::GET, "/v2/keys"),
    ] {
        let (status, _) = send(reader(method, path)).await;
        assert_eq!(status, StatusCode::OK, "{path}");
    }
    for (method, path) in [
        (Method::POST, "/v2/publish/http://127.0.0.1:9/x"),
        (Method::POST, "/v2/batch"),
        (Method::POST, "/v2/topics/g/endpoints"),
        (Method::DELETE, "/v2/messages"),
        (Method::POST, "/v2/keys/rotate"),
    ] {
        let (status, error) = send(reader(method.clone(), path).json(&json!([]))).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {error}");
    }
    let other = server.create_account("other@example.com").await;
    let (status, _) = send(
        server
            .client()
            .get(server.url(&format!(
                "/v2/messages/{}",
                published["messageId"].as_str().unwrap()
            )))
            .bearer_auth(&other.queue_token),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another account cannot see the message"
    );
}

#[tokio::test]
async fn keys_are_served_and_rotation_makes_next_current() {
    let server = TestServer::embedded().await;
    let (_, keys) = send(server.queue(Method::GET, "/v2/keys")).await;
    assert_eq!(
        keys,
        json!({"current": server.account().current_signing_key, "next": server.account().next_signing_key})
    );
    let (status, rotated) = send(server.queue(Method::POST, "/v2/keys/rotate")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(rotated["current"], keys["next"]);
    assert_ne!(rotated["next"], keys["next"]);
    let receiver = Receiver::start().await;
    publish(&server, &receiver.url("/signed"), &[], "k").await;
    let delivered = receiver.wait_for(1, WAIT).await.remove(0);
    verify_signature(
        &delivered,
        rotated["current"].as_str().unwrap(),
        &receiver.url("/signed"),
    );
}

#[tokio::test]
async fn pending_messages_survive_a_restart_and_are_delivered_after_it() {
    let mut server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let (_, published) = publish(
        &server,
        &receiver.url("/after-restart"),
        &[("Svc-Delay", "30s")],
        "durable",
    )
    .await;
    let message_id = published["messageId"].as_str().unwrap().to_owned();
    server.restart().await;
    let (status, message) = send(server.queue(Method::GET, &format!("/v2/messages/{message_id}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(message["body"], "durable");
    server.clock().advance(Duration::from_secs(31));
    let delivered = receiver.wait_for(1, WAIT).await.remove(0);
    assert_eq!(delivered.header("upstash-message-id"), Some(message_id.as_str()));
    let _ = server.clock().now();
    server.stop().await;
}

#[tokio::test]
async fn redacted_fields_are_masked_when_read_back_but_delivered_as_sent() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let masked = |value: &str| {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(value.as_bytes());
        format!(
            "REDACTED:{}",
            digest.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    };
    let (status, published) = publish(
        &server,
        &receiver.url("/secret"),
        &[
            ("Svc-Delay", "1h"),
            ("Svc-Redact-Fields", "body, header[Authorization]"),
            ("Svc-Forward-Authorization", "Bearer s3cret"),
            ("Svc-Forward-X-Plain", "visible"),
        ],
        "card=4242",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    let id = published["messageId"].as_str().unwrap();
    let (_, message) = send(server.queue(Method::GET, &format!("/v2/messages/{id}"))).await;
    assert_eq!(message["body"], masked("card=4242"));
    assert_eq!(
        message["header"]["Authorization"],
        json!([masked("Bearer s3cret")])
    );
    assert_eq!(message["header"]["X-Plain"], json!(["visible"]));

    server.clock().advance(Duration::from_secs(3_600));
    let delivered = receiver.wait_for(1, WAIT).await.remove(0);
    assert_eq!(&delivered.body[..], b"card=4242");
    assert_eq!(delivered.header("Authorization"), Some("Bearer s3cret"));

    let (status, refused) = publish(
        &server,
        &receiver.url("/x"),
        &[("Svc-Redact-Fields", "everything")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
}
