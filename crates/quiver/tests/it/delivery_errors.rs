//! Deliveries whose inputs cannot be read are put off, never changed: a catalogue that cannot be read
//! delays a delivery instead of stripping its signature.

use std::time::Duration;

use quiver_testkit::{Receiver, TestServer};
use serde_json::Value;

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
    let mut logged = 0;
    for _ in 0..2_000 {
        let connection = rusqlite::Connection::open(server.data_dir().join("queue.db")).unwrap();
        logged = connection
            .query_row(&put_off, [], |row| row.get::<_, i64>(0))
            .unwrap();
        if logged > 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
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
