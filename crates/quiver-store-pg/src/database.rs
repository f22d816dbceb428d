//! A pool of connections to one PostgreSQL database, migrated when it opens.

use std::str::FromStr;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use quiver_core::StoreError;
use quiver_core::store::StoreResult;
use tokio_postgres::NoTls;
use tokio_postgres::error::SqlState;

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

/// Connections to one database, whose schema is current.
#[derive(Clone)]
pub struct PgDatabase {
    pool: Pool,
}

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
        let mut config = tokio_postgres::Config::from_str(&options.url)
            .map_err(|e| StoreError::Backend(format!("the storage URL is not a PostgreSQL URL: {e}")))?;
        if let Some(schema) = &options.schema {
            if !is_schema_name(schema) {
                return Err(StoreError::Backend(format!(
                    "`{schema}` cannot name a schema: use lowercase letters, digits and `_`"
                )));
            }
            config.options(format!("-c search_path={schema}"));
        }
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .build()
            .map_err(|e| StoreError::Backend(format!("cannot build the PostgreSQL pool: {e}")))?;
        let database = PgDatabase { pool };
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

/// A driver error as a store error: a broken uniqueness rule is a conflict naming its constraint.
pub(crate) fn backend_error(error: tokio_postgres::Error) -> StoreError {
    match error.as_db_error() {
        Some(db) if db.code() == &SqlState::UNIQUE_VIOLATION => {
            StoreError::Conflict(db.constraint().unwrap_or("a unique value").to_owned())
        }
        Some(db) => StoreError::Backend(format!("PostgreSQL: {}", db.message())),
        None => StoreError::Backend(format!("PostgreSQL: {error}")),
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
