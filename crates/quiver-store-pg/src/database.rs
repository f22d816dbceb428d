//! A pool of connections to one PostgreSQL database, migrated when it opens.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Transaction};
use quiver_core::StoreError;
use quiver_core::store::StoreResult;
use tokio_postgres::error::SqlState;

use crate::hints::{Hint, Hints};
use crate::tls::Secured;

/// A step of the schema: its version and the SQL that takes the schema there.
struct Migration {
    version: i64,
    name: &'static str,
    sql: &'static str,
}

/// The schema, oldest step first. Never change a step that has shipped; add one.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "accounts, indexes and usage",
        sql: include_str!("../migrations/0001_catalog.sql"),
    },
    Migration {
        version: 2,
        name: "vector namespaces and vectors",
        sql: include_str!("../migrations/0002_vectors.sql"),
    },
    Migration {
        version: 3,
        name: "url groups and waiters",
        sql: include_str!("../migrations/0003_url_groups_and_waiters.sql"),
    },
    Migration {
        version: 4,
        name: "schedules",
        sql: include_str!("../migrations/0004_schedules.sql"),
    },
    Migration {
        version: 5,
        name: "messages, dead letters, events, fifo queues, workflow runs, flow control",
        sql: include_str!("../migrations/0005_messages.sql"),
    },
    Migration {
        version: 6,
        name: "rounds of work one node runs at a time",
        sql: include_str!("../migrations/0006_rounds.sql"),
    },
    Migration {
        version: 7,
        name: "the feed of vector writes",
        sql: include_str!("../migrations/0007_vector_feed.sql"),
    },
    Migration {
        version: 8,
        name: "an attempt's ACTIVE event in the row of its outcome",
        sql: include_str!("../migrations/0008_events_active.sql"),
    },
    Migration {
        version: 9,
        name: "a message delivered before its publish was written: its CREATED event in its attempt's row",
        sql: include_str!("../migrations/0009_events_created.sql"),
    },
    Migration {
        version: 10,
        name: "the log listed in one pass, and its rare states through an index of their own",
        sql: include_str!("../migrations/0010_events_one_pass.sql"),
    },
];

/// The advisory lock that migrations hold, so that nodes starting together migrate once.
const MIGRATION_LOCK: i64 = 0x5155_4956_4552; // "QUIVER"

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// `postgres://USER@HOST:PORT/DATABASE` (the `tokio-postgres` forms, key-value too).
    pub url: String,
    /// The schema that holds Quiver's tables, created when missing; `None`: the connection's default.
    /// One database can hold several Quivers, one per schema (the tests use one schema each).
    pub schema: Option<String>,
    /// Most connections open at once.
    pub pool_size: usize,
}

/// Connections to one database, whose schema is current, and this node's presence in it.
#[derive(Clone)]
pub struct PgDatabase {
    pool: Pool,
    presence: Arc<Presence>,
    hints: Arc<Hints>,
    secured: Arc<Secured>,
}

/// A node's presence: a session advisory lock on `(PRESENCE_CLASS, node)` held by a connection of its
/// own for as long as the node lives. Leases carry the node; another node tells a dead node's leases by
/// its lock being free (the server frees it when the connection ends, however the process ended). When
/// the holding connection is lost (a database restart, a network fault), a task takes the lock again
/// under the same number as soon as it can; meanwhile other nodes may release this node's leases, and a
/// delivery then in flight may run twice (the queue delivers at least once).
struct Presence {
    node: i32,
    stop: tokio_util::sync::CancellationToken,
}

impl Drop for Presence {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The first key of every presence lock (the second is the node).
pub(crate) const PRESENCE_CLASS: i32 = 0x5155_4956; // "QUIV"

/// An error inside a transaction body: the driver's (whose code tells whether to run the body again)
/// or the store's.
#[derive(Debug)]
pub(crate) enum TxError {
    Driver(tokio_postgres::Error),
    Store(StoreError),
}

impl From<tokio_postgres::Error> for TxError {
    fn from(error: tokio_postgres::Error) -> TxError {
        TxError::Driver(error)
    }
}

impl From<StoreError> for TxError {
    fn from(error: StoreError) -> TxError {
        TxError::Store(error)
    }
}

/// A transaction body's future.
pub(crate) type TxFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, TxError>> + Send + 'a>>;

/// How often a transaction that lost a deadlock or a serialization race runs again.
const TX_ATTEMPTS: usize = 5;

impl std::fmt::Debug for PgDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgDatabase")
            .field("status", &self.pool.status())
            .finish()
    }
}

/// Whether `name` may name a schema here: a lowercase SQL identifier that needs no quoting.
fn is_schema_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63
}

impl PgDatabase {
    /// Connects, and brings the schema up to date (a database from a newer build is refused).
    ///
    /// # Errors
    /// A malformed URL or schema name, an unreachable server, a failed migration, or a schema newer
    /// than this build.
    pub async fn open(options: &PgOptions) -> StoreResult<PgDatabase> {
        let mut secured = crate::tls::secured(&options.url)?;
        // Quiver's statements are short: a plan whose estimate passes `jit_above_cost` (a look-up
        // over a table full of dead rows, say) would spend far longer compiling than running.
        let mut settings = vec![
            secured.config.get_options().unwrap_or_default().to_owned(),
            "-c jit=off".into(),
        ];
        if let Some(schema) = &options.schema {
            if !is_schema_name(schema) {
                return Err(StoreError::Backend(format!(
                    "`{schema}` cannot name a schema: use lowercase letters, digits and `_`"
                )));
            }
            settings.push(format!("-c search_path={schema}"));
        }
        secured.config.options(settings.join(" ").trim_start());
        let presence = Arc::new(Presence::take(&secured).await?);
        let manager = Manager::from_config(
            secured.config.clone(),
            secured.connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .build()
            .map_err(|e| StoreError::Backend(format!("cannot build the PostgreSQL pool: {e}")))?;
        let hints = Arc::new(Hints::start(pool.clone()));
        let database = PgDatabase {
            pool,
            presence,
            hints,
            secured: Arc::new(secured),
        };
        database.migrate(options.schema.as_deref()).await?;
        Ok(database)
    }

    /// A connection from the pool.
    ///
    /// # Errors
    /// The server cannot be reached.
    pub async fn client(&self) -> StoreResult<Object> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::Backend(format!("no PostgreSQL connection: {e}")))
    }

    /// Whether the database takes writes now: a connection answers, and the server is not a read-only
    /// standby.
    ///
    /// # Errors
    /// No connection, or the server is in recovery (a standby).
    pub async fn check_writable(&self) -> StoreResult<()> {
        let client = self.client().await?;
        let standby: bool = client
            .query_one("SELECT pg_is_in_recovery()", &[])
            .await
            .map_err(|e| StoreError::Backend(format!("PostgreSQL did not answer: {e}")))?
            .get(0);
        if standby {
            return Err(StoreError::Backend(
                "the PostgreSQL server is a read-only standby".into(),
            ));
        }
        Ok(())
    }

    /// The hints other nodes (and this one) send, until `stop`, from a connection of its own that
    /// connects again when lost (see [`crate::hints`]).
    pub fn listen(
        &self,
        stop: tokio_util::sync::CancellationToken,
    ) -> tokio::sync::mpsc::UnboundedReceiver<Hint> {
        crate::hints::listen((*self.secured).clone(), stop)
    }

    /// Tells other nodes, soon and at most once per [`crate::hints::COALESCE`], that `hint` happened.
    pub(crate) fn hint(&self, hint: Hint) {
        self.hints.send(hint);
    }

    /// This node's number in leases (see [`Presence`]).
    pub(crate) fn node(&self) -> i32 {
        self.presence.node
    }

    /// Runs `body` in a transaction and commits it, running it again (up to a few times) when it lost a
    /// deadlock or a serialization race to another node; nothing of a failed attempt stays.
    ///
    /// # Errors
    /// The body's error, or the server's.
    pub(crate) async fn write<T, F>(&self, mut body: F) -> StoreResult<T>
    where
        F: for<'a> FnMut(&'a Transaction<'a>) -> TxFuture<'a, T> + Send,
        T: Send,
    {
        let mut client = self.client().await?;
        let mut attempt = 1;
        loop {
            let transaction = client.transaction().await.map_err(backend_error)?;
            let outcome = match body(&transaction).await {
                Ok(value) => transaction
                    .commit()
                    .await
                    .map(|()| value)
                    .map_err(TxError::Driver),
                Err(error) => Err(error),
            };
            match outcome {
                Ok(value) => return Ok(value),
                Err(TxError::Driver(error)) if attempt < TX_ATTEMPTS && is_retryable(&error) => {
                    attempt += 1;
                    tracing::debug!(%error, attempt, "a PostgreSQL transaction runs again");
                }
                Err(TxError::Driver(error)) => return Err(backend_error(error)),
                Err(TxError::Store(error)) => return Err(error),
            }
        }
    }

    /// How this database's connections are made (a connection outside the pool, as
    /// `crate::own::OwnConnection` makes, is made the same way).
    pub(crate) fn secured(&self) -> Arc<Secured> {
        Arc::clone(&self.secured)
    }

    /// Runs one statement in a transaction of its own (no `BEGIN` or `COMMIT` round trips), again when it
    /// lost a deadlock, as [`PgDatabase::write`] runs a transaction again. Returns the rows it changed.
    pub(crate) async fn execute_alone(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> StoreResult<u64> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await.map_err(backend_error)?;
        execute_retrying(&client, &statement, params).await
    }

    async fn migrate(&self, schema: Option<&str>) -> StoreResult<()> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(backend_error)?;
        // Nodes starting together: the first takes the lock and migrates; the others wait for it, then
        // find nothing left to do. The lock ends with the transaction.
        transaction
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(backend_error)?;
        if let Some(schema) = schema {
            transaction
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .await
                .map_err(backend_error)?;
        }
        transaction
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (
                     version BIGINT PRIMARY KEY, name TEXT NOT NULL,
                     applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            )
            .await
            .map_err(backend_error)?;
        let current: i64 = transaction
            .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", &[])
            .await
            .map_err(backend_error)?
            .get(0);
        let newest = MIGRATIONS.last().map_or(0, |m| m.version);
        if current > newest {
            return Err(StoreError::Backend(format!(
                "the database schema is at version {current}, newer than this build knows ({newest}); \
                 upgrade Quiver"
            )));
        }
        for migration in MIGRATIONS.iter().filter(|m| m.version > current) {
            tracing::info!(
                migration.version = migration.version,
                "applying the PostgreSQL migration `{}`",
                migration.name
            );
            transaction
                .batch_execute(migration.sql)
                .await
                .map_err(backend_error)?;
            transaction
                .execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                    &[&migration.version, &migration.name],
                )
                .await
                .map_err(backend_error)?;
        }
        transaction.commit().await.map_err(backend_error)
    }
}

impl Presence {
    /// Takes a presence lock under a random node number, and keeps holding it.
    async fn take(secured: &Secured) -> StoreResult<Presence> {
        loop {
            let mut bytes = [0u8; 4];
            getrandom::fill(&mut bytes).map_err(|e| StoreError::Backend(format!("no randomness: {e}")))?;
            let node = i32::from_le_bytes(bytes);
            if let Some(held) = Presence::hold(secured, node).await? {
                let stop = tokio_util::sync::CancellationToken::new();
                tokio::spawn(Presence::keep(secured.clone(), node, held, stop.clone()));
                return Ok(Presence { node, stop });
            }
        }
    }

    /// Connects and takes the lock of `node`: the connection's driver, which ends with the connection,
    /// and its client (dropping it closes the connection); `None` when another session holds the lock.
    async fn hold(
        secured: &Secured,
        node: i32,
    ) -> StoreResult<Option<(tokio::task::JoinHandle<()>, tokio_postgres::Client)>> {
        let (client, connection) = secured.connect().await.map_err(backend_error)?;
        let driver = tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "the connection that holds this node's presence ended");
            }
        });
        let taken: bool = client
            .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&PRESENCE_CLASS, &node])
            .await
            .map_err(backend_error)?
            .get(0);
        Ok(taken.then_some((driver, client)))
    }

    /// Holds the lock until `stop`, taking it again whenever its connection is lost.
    async fn keep(
        secured: Secured,
        node: i32,
        mut held: (tokio::task::JoinHandle<()>, tokio_postgres::Client),
        stop: tokio_util::sync::CancellationToken,
    ) {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = &mut held.0 => {}
            }
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                }
                match Presence::hold(&secured, node).await {
                    Ok(Some(again)) => {
                        tracing::info!(node, "this node's presence is held again");
                        held = again;
                        break;
                    }
                    Ok(None) => tracing::warn!(node, "another session holds this node's presence lock"),
                    Err(error) => tracing::warn!(%error, "taking this node's presence again failed"),
                }
            }
        }
    }
}

/// Whether a transaction that failed with `error` may simply run again.
fn is_retryable(error: &tokio_postgres::Error) -> bool {
    error.code().is_some_and(|code| {
        code == &SqlState::T_R_DEADLOCK_DETECTED || code == &SqlState::T_R_SERIALIZATION_FAILURE
    })
}

/// Runs a prepared statement on `client`, again when it lost a deadlock. Returns the rows it changed.
pub(crate) async fn execute_retrying(
    client: &tokio_postgres::Client,
    statement: &tokio_postgres::Statement,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> StoreResult<u64> {
    let mut attempt = 1;
    loop {
        match client.execute(statement, params).await {
            Ok(changed) => return Ok(changed),
            Err(error) if attempt < TX_ATTEMPTS && is_retryable(&error) => {
                attempt += 1;
                tracing::debug!(%error, attempt, "a PostgreSQL statement runs again");
            }
            Err(error) => return Err(backend_error(error)),
        }
    }
}

/// A driver error as a store error: a broken uniqueness rule is a conflict naming its constraint.
pub(crate) fn backend_error(error: tokio_postgres::Error) -> StoreError {
    match error.as_db_error() {
        Some(db) if db.code() == &SqlState::UNIQUE_VIOLATION => {
            StoreError::Conflict(db.constraint().unwrap_or("a unique value").to_owned())
        }
        Some(db) => StoreError::Backend(format!("PostgreSQL: {}", db.message())),
        None => match std::error::Error::source(&error) {
            Some(cause) => StoreError::Backend(format!("PostgreSQL: {error}: {cause}")),
            None => StoreError::Backend(format!("PostgreSQL: {error}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain_lowercase_identifiers() {
        assert!(is_schema_name("quiver_test_1"));
        assert!(!is_schema_name("Quiver"));
        assert!(!is_schema_name("1st"));
        assert!(!is_schema_name("a; DROP TABLE accounts"));
        assert!(!is_schema_name(""));
    }
}
