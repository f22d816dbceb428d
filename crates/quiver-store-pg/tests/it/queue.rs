use std::sync::Arc;

use quiver_core::{AccountId, Timestamp};
use quiver_queue::QueueStore;
use quiver_queue::message::{Message, MessageId, MessageSpec, NewMessage};
use quiver_queue::store::MessageStore;
use quiver_store_pg::{PgDatabase, PgOptions, PgQueueStore};

use crate::TestSchema;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_queue_store_passes_the_conformance_suite() {
    let schema = TestSchema::new();
    let store = PgQueueStore::open(&schema.options)
        .await
        .expect("the store opens");
    quiver_queue::testing::conformance(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_queue_store_keeps_acknowledged_writes_across_a_restart() {
    let schema = TestSchema::new();
    let open = || async {
        let store = PgQueueStore::open(&schema.options)
            .await
            .expect("the store opens");
        Arc::new(store) as Arc<dyn QueueStore>
    };
    quiver_queue::testing::restart_keeps_every_acknowledged_write(open).await;
}

/// A message of `account`, due at once, with neither a deduplication id nor a flow-control key: the
/// publish writer stores it on its own connection, in one statement.
fn plain_message(account: AccountId, now: Timestamp) -> NewMessage {
    let spec: MessageSpec = serde_json::from_value(serde_json::json!({
        "kind": "publish", "url": "https://example.com/hook", "method": "POST", "headers": [],
        "max_retries": 3, "timeout_ms": 1000, "labels": [],
    }))
    .expect("a valid spec");
    NewMessage {
        message: Message {
            id: MessageId::generate(now),
            account_id: account,
            spec,
            body: b"hello".to_vec(),
            retried: 0,
            not_before: now,
            created_at: now,
        },
        dedup: None,
        leased_until: None,
        early: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_are_stored_again_once_the_publish_writers_connection_was_lost() {
    let schema = TestSchema::new();
    // The name tells this test's connections from those of tests running beside it.
    let name = format!("t{}", uuid::Uuid::new_v4().simple());
    let separator = if schema.options.url.contains('?') {
        '&'
    } else {
        '?'
    };
    let options = PgOptions {
        url: format!("{}{separator}application_name={name}", schema.options.url),
        ..schema.options.clone()
    };
    let database = PgDatabase::open(&options).await.expect("the database opens");
    let store = PgQueueStore::new(database.clone());
    let (account, now) = (AccountId::random(), Timestamp::from_millis(1_767_225_600_000));
    let first = plain_message(account, now);
    let first_id = first.message.id.clone();
    store.enqueue(vec![first], now).await.expect("stored");
    let admin = database.client().await.expect("a connection");
    let writers = || async {
        admin
            .query(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'WITH stored%'",
                &[&name],
            )
            .await
            .expect("pg_stat_activity answers")
            .iter()
            .map(|row| row.get::<_, i32>(0))
            .collect::<Vec<i32>>()
    };
    let lost = writers().await;
    assert_eq!(lost.len(), 1, "one connection stored the publish");
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&lost[0]])
        .await
        .expect("the connection is ended");

    // A publish caught by the loss may fail, as one on a lost pooled connection does; the writer then
    // connects again.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let second_id = loop {
        let second = plain_message(account, now);
        let id = second.message.id.clone();
        match store.enqueue(vec![second], now).await {
            Ok(_) => break id,
            Err(error) if std::time::Instant::now() < deadline => {
                eprintln!("a publish after the loss failed, as it may: {error}");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(error) => panic!("publishes still fail after the writer's connection was lost: {error}"),
        }
    };
    let found = writers().await;
    assert_eq!(found.len(), 1, "one connection stored the next publish");
    assert_ne!(found, lost, "a new connection took the lost one's place");
    for id in [&first_id, &second_id] {
        assert!(
            store.message(account, id).await.expect("read").is_some(),
            "message {id:?} is stored"
        );
    }
}
