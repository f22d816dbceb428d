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
