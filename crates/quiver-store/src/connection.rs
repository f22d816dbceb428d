//! How every connection to a database is set up: timeouts, durability, plans that stay prepared, and
//! the SQL functions the event log's filters use.

use std::time::Duration;

use rusqlite::Connection;

use crate::config::StorageConfig;

/// The writer's settings: lock waits, foreign keys, a sync at every commit, and [`stable_plans`].
pub(crate) fn configure(connection: &Connection, config: &StorageConfig) -> rusqlite::Result<()> {
    connection.busy_timeout(Duration::from_millis(config.busy_timeout_ms))?;
    connection.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")?;
    stable_plans(connection)
}

/// Keeps each cached statement's query plan. Without this, SQLite re-prepares a statement whenever a new
/// value is bound to a parameter that the planner looked at (a `LIMIT ?`, a range next to a partial
/// index): the claim of due messages was parsed and planned again on every run.
///
/// Also registers `url_host(url)` and `url_path(url)`, which the event log's `host` and `path` filters
/// use (`NULL` for text that is not a URL with a host).
pub(crate) fn stable_plans(connection: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    connection.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    connection.create_scalar_function("url_host", 1, flags, |context| {
        let text: Option<String> = context.get(0)?;
        Ok(text
            .and_then(|t| url::Url::parse(&t).ok())
            .and_then(|u| u.host_str().map(str::to_owned)))
    })?;
    connection.create_scalar_function("url_path", 1, flags, |context| {
        let text: Option<String> = context.get(0)?;
        Ok(text
            .and_then(|t| url::Url::parse(&t).ok())
            .map(|u| u.path().to_owned()))
    })
}
