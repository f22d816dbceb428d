//! Deliveries that go wrong. Inputs that cannot be read put a delivery off, never change it: a catalogue
//! that cannot be read delays a delivery instead of stripping its signature. An attempt that cannot
//! finish fails saying why.

use std::time::Duration;

use quiver_testkit::calls::{publish, send};
use quiver_testkit::poll::until;
use quiver_testkit::{Receiver, Reply, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::queue::events_of;

const WAIT: Duration = Duration::from_secs(20);

/// Runs `sql` on a database of the server's data directory, as an operator's tool would.
fn run_sql(server: &TestServer, file: &str, sql: &str) {
    let connection = rusqlite::Connection::open(server.data_dir().join(file)).unwrap();
    connection.busy_timeout(Duration::from_secs(5)).unwrap();
    connection.execute_batch(sql).unwrap();
}

#[tokio::test]
async fn a_delivery_whose_signing_keys_cannot_be_read_is_put_off_never_sent_unsigned() {
    let mut server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let second = server.create_account("second@example.com").await;
    let published: Value = server
        .client()
        .post(server.url(&format!("/v2/publish/{}", receiver.url("/signed"))))
        .bearer_auth(&second.queue_token)
        .header("Svc-Delay", "60s")
        .body("payload")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let message_id = published["messageId"].as_str().unwrap().to_owned();

    // The account's row cannot be read (its email no longer parses) after a restart empties the caches.
    run_sql(
        &server,
        "catalog.db",
        "UPDATE accounts SET email = 'unreadable' WHERE email = 'second@example.com'",
    );
    server.restart().await;
    server.clock().advance(Duration::from_secs(61));
    let put_off = format!(
        "SELECT COUNT(*) FROM events WHERE message_id = '{message_id}' AND state = 'ERROR' AND detail LIKE '%signing keys%'"
    );
    let logged = until("the put-off attempt logged", WAIT, || async {
        let connection = rusqlite::Connection::open(server.data_dir().join("queue.db")).unwrap();
        let logged = connection
            .query_row(&put_off, [], |row| row.get::<_, i64>(0))
            .unwrap();
        (logged > 0).then_some(logged)
    })
    .await;
    assert_eq!(logged, 1, "the attempt was put off and logged");
    assert!(receiver.requests().is_empty(), "nothing went out unsigned");

    run_sql(
        &server,
        "catalog.db",
        "UPDATE accounts SET email = 'second@example.com' WHERE email = 'unreadable'",
    );
    server.clock().advance(Duration::from_secs(5));
    let delivered = receiver.wait_for(1, WAIT).await.remove(0);
    assert!(delivered.header("upstash-signature").is_some(), "signed");
    assert_eq!(
        delivered.header("upstash-retried"),
        Some("0"),
        "putting it off spent no retry"
    );
}

#[tokio::test]
async fn an_attempt_that_cannot_finish_fails_saying_why_and_a_long_answer_is_kept_cut() {
    let server = TestServer::with_config(|config| config.queue.max_message_bytes = 1024).await;
    let slow = Receiver::start().await;
    slow.respond_with(Reply::status(200).after(Duration::from_secs(5)));
    let talkative = Receiver::start().await;
    talkative.respond_with(Reply::status(500).with_body("x".repeat(3000)));
    let once = [("Svc-Retries", "0"), ("Svc-Timeout", "1s")];
    let mut ids = Vec::new();
    for destination in [
        slow.url("/slow"),
        talkative.url("/long"),
        "http://127.0.0.1:9/closed".to_owned(),
    ] {
        let (status, published) = publish(&server, &destination, &once, "job").await;
        assert_eq!(status, StatusCode::OK, "{published}");
        ids.push(published["messageId"].as_str().unwrap().to_owned());
    }
    let mut dead = Vec::new();
    for id in &ids {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let (_, page) = send(server.queue(Method::GET, &format!("/v2/dlq?messageId={id}"))).await;
            if let Some(letter) = page["messages"].as_array().and_then(|m| m.first()) {
                dead.push(letter.clone());
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{id} never reached the DLQ");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let error_of = async |id: &str| {
        let events = events_of(&server, id).await;
        let error = events
            .iter()
            .find(|e| e["state"] == "ERROR")
            .expect("an ERROR event");
        error["error"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(error_of(&ids[0]).await, "the destination did not answer in time");
    assert_eq!(dead[0]["responseStatus"], 0, "no answer came");
    assert_eq!(dead[1]["responseStatus"], 500);
    assert_eq!(
        dead[1]["responseBody"],
        "x".repeat(1024),
        "cut at the message size limit"
    );
    let refused = error_of(&ids[2]).await;
    assert!(refused.to_lowercase().contains("connect"), "{refused}");
}
