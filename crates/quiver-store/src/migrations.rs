//! Schema versions, embedded in the binary and applied in order when a database opens.

use rusqlite::Connection;

/// One schema step: applied once, in order, inside a transaction.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Position in the sequence, starting at 1.
    pub version: i64,
    /// What the step does, for logs.
    pub name: &'static str,
    /// The SQL it runs.
    pub sql: &'static str,
}

/// The schema of `catalog.db` (accounts and the index catalogue).
pub const CATALOG: &[Migration] = &[
    Migration {
        version: 1,
        name: "accounts and indexes",
        sql: include_str!("../migrations/catalog/0001_accounts_and_indexes.sql"),
    },
    Migration {
        version: 2,
        name: "usage per minute",
        sql: include_str!("../migrations/catalog/0002_usage.sql"),
    },
    Migration {
        version: 3,
        name: "usage per 12 minutes",
        sql: include_str!("../migrations/catalog/0003_usage_slots.sql"),
    },
];

/// The schema of `queue.db` (messages, dead letters, events, URL groups).
pub const QUEUE: &[Migration] = &[
    Migration {
        version: 1,
        name: "messages, dead letters, events, url groups",
        sql: include_str!("../migrations/queue/0001_messages.sql"),
    },
    Migration {
        version: 2,
        name: "schedules",
        sql: include_str!("../migrations/queue/0002_schedules.sql"),
    },
    Migration {
        version: 3,
        name: "queues",
        sql: include_str!("../migrations/queue/0003_queues.sql"),
    },
    Migration {
        version: 4,
        name: "workflow runs",
        sql: include_str!("../migrations/queue/0004_workflow_runs.sql"),
    },
    Migration {
        version: 5,
        name: "flow control",
        sql: include_str!("../migrations/queue/0005_flow_control.sql"),
    },
    Migration {
        version: 6,
        name: "workflow waiters",
        sql: include_str!("../migrations/queue/0006_waiters.sql"),
    },
    Migration {
        version: 7,
        name: "queue index only over queued messages",
        sql: include_str!("../migrations/queue/0007_partial_queue_index.sql"),
    },
    Migration {
        version: 8,
        name: "messages and events keyed by account",
        sql: include_str!("../migrations/queue/0008_fewer_indexes.sql"),
    },
    Migration {
        version: 9,
        name: "CREATED events written at a message's first change",
        sql: include_str!("../migrations/queue/0009_unlogged_created.sql"),
    },
    Migration {
        version: 10,
        name: "failure-callback state of dead letters",
        sql: include_str!("../migrations/queue/0010_failure_callback_state.sql"),
    },
    Migration {
        version: 11,
        name: "an attempt's ACTIVE and its message's CREATED event in the outcome's row",
        sql: include_str!("../migrations/queue/0011_delivery_in_one_row.sql"),
    },
];

/// The schema of `vectors.db` (namespaces and vectors of every index).
pub const VECTORS: &[Migration] = &[Migration {
    version: 1,
    name: "vector namespaces and vectors",
    sql: include_str!("../migrations/vectors/0001_vectors.sql"),
}];

/// Applies every migration newer than the database's version. A database from a newer Quiver (with
/// versions this build does not know) is refused rather than guessed at.
pub(crate) fn apply(connection: &mut Connection, migrations: &[Migration]) -> Result<(), rusqlite::Error> {
    connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version INTEGER PRIMARY KEY NOT NULL, name TEXT NOT NULL)",
    )?;
    let current: i64 = connection.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |row| row.get(0),
    )?;
    let newest = migrations.last().map_or(0, |m| m.version);
    if current > newest {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "database schema version {current} is newer than this build knows ({newest}); upgrade Quiver"
        )));
    }
    for migration in migrations.iter().filter(|m| m.version > current) {
        if current > 0 {
            // An upgrade may copy whole tables (version 8 of the queue does), which takes a while on a big file.
            tracing::info!(
                migration.version,
                migration.name,
                "upgrading the schema of an existing database"
            );
        }
        let transaction = connection.transaction()?;
        transaction.execute_batch(migration.sql)?;
        transaction.execute(
            "INSERT INTO schema_migrations (version, name) VALUES (?1, ?2)",
            (migration.version, migration.name),
        )?;
        transaction.commit()?;
        tracing::info!(migration.version, migration.name, "applied schema migration");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::types::FromSql;

    fn three_columns<A: FromSql, B: FromSql, C: FromSql>(
        connection: &Connection,
        sql: &str,
    ) -> Vec<(A, B, C)> {
        connection
            .prepare(sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn rekeying_keeps_every_pending_message_in_its_order_and_every_event_in_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let mut connection = Connection::open(dir.path().join("queue.db")).unwrap();
        apply(&mut connection, &QUEUE[..7]).unwrap();
        for (id, account, queue) in [
            ("msg_b", "acct-1", Some("q")),
            ("msg_a", "acct-2", None),
            ("msg_c", "acct-1", None),
        ] {
            connection
                .execute(
                    "INSERT INTO messages (id, account_id, due_at, not_before, created_at, spec, body, queue_name)
                     VALUES (?1, ?2, 5, 5, 1, '{}', x'01', ?3)",
                    (id, account, queue),
                )
                .unwrap();
        }
        for (account, state) in [
            ("acct-1", "CREATED"),
            ("acct-2", "CREATED"),
            ("acct-1", "DELIVERED"),
        ] {
            connection
                .execute(
                    "INSERT INTO events (account_id, message_id, time, state, url, labels, detail)
                     VALUES (?1, 'msg_b', 1, ?2, 'http://x', '[]', '{}')",
                    (account, state),
                )
                .unwrap();
        }
        apply(&mut connection, QUEUE).unwrap();

        let rows: Vec<(String, String, Option<String>)> = three_columns(
            &connection,
            "SELECT id, account_id, queue_name FROM messages ORDER BY rowid",
        );
        let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        assert_eq!(ids, ["msg_b", "msg_a", "msg_c"]);
        assert_eq!(rows[0].2.as_deref(), Some("q"));
        // The same id may not appear twice in an account.
        let duplicate = connection.execute(
            "INSERT INTO messages (id, account_id, due_at, not_before, created_at, spec, body)
             VALUES ('msg_b', 'acct-1', 5, 5, 1, '{}', x'01')",
            [],
        );
        assert!(duplicate.is_err());

        let events: Vec<(String, i64, String)> = three_columns(
            &connection,
            "SELECT account_id, seq, state FROM events ORDER BY account_id, seq",
        );
        let expected = [
            ("acct-1", 1, "CREATED"),
            ("acct-1", 3, "DELIVERED"),
            ("acct-2", 2, "CREATED"),
        ];
        let events: Vec<(&str, i64, &str)> = events
            .iter()
            .map(|(a, s, t)| (a.as_str(), *s, t.as_str()))
            .collect();
        assert_eq!(events, expected);
    }

    #[tokio::test]
    async fn a_message_pending_across_the_upgrade_keeps_its_one_created_event_in_its_place() {
        use quiver_core::{AccountId, Timestamp};
        use quiver_queue::message::{
            EventDetail, Message, MessageId, MessageSpec, MessageState, NewEvent, NewMessage,
        };
        use quiver_queue::store::{
            AttemptRecord, AttemptResolution, DeliveryStore, EventLogStore, Filter, MessageStore,
        };

        let dir = tempfile::tempdir().unwrap();
        let account = AccountId::random();
        let spec = |url: &str| -> MessageSpec {
            serde_json::from_value(
                serde_json::json!({"kind": "publish", "url": url, "method": "POST",
                "headers": [], "max_retries": 0, "timeout_ms": 1000}),
            )
            .unwrap()
        };
        // Before migration 9, a publish wrote the message and its CREATED event.
        {
            let mut connection = Connection::open(dir.path().join("queue.db")).unwrap();
            apply(&mut connection, &QUEUE[..8]).unwrap();
            let spec = serde_json::to_string(&spec("http://old")).unwrap();
            connection
                .execute(
                    "INSERT INTO messages (id, account_id, due_at, not_before, created_at, spec, body)
                     VALUES ('msg_old', ?1, 5, 5, 5, ?2, x'01')",
                    (account.to_string(), &spec),
                )
                .unwrap();
            connection
                .execute(
                    "INSERT INTO events (account_id, seq, message_id, time, state, url, labels, spec, detail)
                     VALUES (?1, 1, 'msg_old', 5, 'CREATED', 'http://old', '[]', ?2, '{}')",
                    (account.to_string(), &spec),
                )
                .unwrap();
        }
        let store =
            crate::queue::SqliteQueueStore::open(dir.path(), &crate::config::StorageConfig::default())
                .unwrap();
        let now = Timestamp::from_millis(10);
        let new = Message {
            id: MessageId("msg_new".into()),
            account_id: account,
            retried: 0,
            not_before: now,
            created_at: now,
            spec: spec("http://new"),
            body: b"x".to_vec(),
        };
        store
            .enqueue(
                vec![NewMessage {
                    message: new,
                    dedup: None,
                    leased_until: None,
                    early: None,
                }],
                now,
            )
            .await
            .unwrap();
        let log = || async {
            let page = store.events(account, &Filter::default(), None, 10).await.unwrap();
            page.items
                .iter()
                .map(|e| (e.sequence, e.message_id.0.clone(), e.state.as_str()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            log().await,
            [
                (2, "msg_new".to_owned(), "CREATED"),
                (1, "msg_old".to_owned(), "CREATED")
            ]
        );

        let claimed = store
            .claim_due(now, 10, Timestamp::from_millis(1_000))
            .await
            .unwrap();
        assert_eq!(claimed.len(), 2);
        assert_eq!(
            log().await,
            [
                (2, "msg_new".to_owned(), "CREATED"),
                (1, "msg_old".to_owned(), "CREATED")
            ],
            "a claim writes nothing to the log"
        );
        for id in ["msg_old", "msg_new"] {
            let message = claimed.iter().find(|m| m.id.0 == id).unwrap().clone();
            let logged = |state| NewEvent {
                time: now,
                state,
                detail: EventDetail::default(),
            };
            store
                .record_attempt(AttemptRecord {
                    message,
                    resolution: AttemptResolution::Finished { dead_letter: None },
                    events: vec![logged(MessageState::Active), logged(MessageState::Delivered)],
                    follow_ups: Vec::new(),
                    failure_callback_report: None,
                })
                .await
                .unwrap();
        }
        assert_eq!(
            log().await,
            [
                (6, "msg_new".to_owned(), "DELIVERED"),
                (5, "msg_new".to_owned(), "ACTIVE"),
                (4, "msg_old".to_owned(), "DELIVERED"),
                (3, "msg_old".to_owned(), "ACTIVE"),
                (2, "msg_new".to_owned(), "CREATED"),
                (1, "msg_old".to_owned(), "CREATED")
            ],
            "each CREATED event once, in its place"
        );
    }
}
