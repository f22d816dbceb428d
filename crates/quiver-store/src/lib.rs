//! The embedded storage backend: SQLite in WAL mode.
//!
//! - [`database`]: [`Database`], one file with one group-committing writer thread and a read pool.
//! - [`migrations`]: schema versions per database file, applied at open.
//! - [`admin`]: [`SqliteAdminStore`], the management domain's store (`catalog.db`).
//! - [`queue`]: [`SqliteQueueStore`], the queue domain's store (`queue.db`).
//! - [`queue_control`]: schedules, FIFO queue records and workflow runs in `queue.db`.
//! - [`flow_control`]: flow-control keys and the claim step for keyed messages in `queue.db`.
//! - [`waiters`]: workflow runs waiting for events, and events kept for a later wait, in `queue.db`.
//! - [`vectors`]: [`SqliteVectorStore`], the vector engine's store (`vectors.db`).
//! - [`config`]: [`StorageConfig`], the `[storage]` section.
#![warn(missing_docs)]

pub mod admin;
pub mod config;
pub mod database;
pub mod flow_control;
pub mod migrations;
pub mod queue;
pub mod queue_control;
mod queue_listing;
mod queue_log;
pub mod vectors;
pub mod waiters;

pub use admin::SqliteAdminStore;
pub use config::StorageConfig;
pub use database::Database;
pub use queue::SqliteQueueStore;
pub use vectors::SqliteVectorStore;
