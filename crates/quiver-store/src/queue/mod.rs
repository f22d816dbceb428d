//! The queue domain's store in `queue.db`, one module per noun of the queue's store traits.
//!
//! - `messages`: messages, attempts and dead letters; `events`: the log's reads and retention;
//!   `url_groups`: URL groups.
//! - `control`: schedules, FIFO queues and workflow runs; `flow_control`: flow-control keys; `waiters`.
//! - `log`: the message log's events; `listing`: pages, filters and pruning; `rows`: row conversions.

mod control;
mod events;
mod flow_control;
mod listing;
mod log;
mod messages;
mod rows;
mod url_groups;
mod waiters;

use std::path::Path;

use quiver_core::store::StoreResult;

use crate::config::StorageConfig;
use crate::database::Database;
use crate::migrations;

/// Messages, dead letters, events and URL groups in SQLite.
#[derive(Debug, Clone)]
pub struct SqliteQueueStore {
    pub(crate) database: Database,
    /// When the next retention round is due. One process owns the files, so memory is enough: a restart
    /// runs a round at once, as it always has.
    pub(crate) next_retention_round: std::sync::Arc<std::sync::Mutex<Option<quiver_core::Timestamp>>>,
    /// Where each account's log ends, as the writer last wrote it (see `log::LogEnds`).
    pub(crate) log_ends: std::sync::Arc<log::LogEnds>,
}

impl SqliteQueueStore {
    /// Opens `queue.db` in `data_dir`, creating and migrating it as needed.
    ///
    /// # Errors
    /// The file cannot be opened or migrated.
    pub fn open(data_dir: &Path, config: &StorageConfig) -> StoreResult<SqliteQueueStore> {
        let database = Database::open(&data_dir.join("queue.db"), migrations::QUEUE, config)?;
        Ok(SqliteQueueStore {
            database,
            next_retention_round: std::sync::Arc::default(),
            log_ends: std::sync::Arc::default(),
        })
    }

    /// The underlying database (for shutdown).
    pub fn database(&self) -> &Database {
        &self.database
    }
}
