//! The embedded storage backend: SQLite in WAL mode.
//!
//! - `connection`: how every connection is set up (timeouts, sync, stable plans, SQL functions).
//! - [`database`]: [`Database`], one file with one group-committing writer thread and a read pool.
//! - [`migrations`]: schema versions per database file, applied at open.
//! - [`admin`]: [`SqliteAdminStore`], the management domain's store (`catalog.db`).
//! - [`queue`]: [`SqliteQueueStore`], the queue domain's store (`queue.db`), a module per noun: messages
//!   and dead letters, schedules, FIFO queues and workflow runs, flow-control keys, waiters, the log.
//! - [`vectors`]: [`SqliteVectorStore`], the vector engine's store (`vectors.db`).
//! - [`backup`]: consistent copies of live databases, and the checks a copy passes before a restore.
//! - [`config`]: [`StorageConfig`], the `[storage]` section.
//! - `page_cache`: SQLite's page cache with page swaps kept from slowing every later commit.
#![warn(missing_docs)]

pub mod admin;
pub mod backup;
pub mod config;
mod connection;
pub mod database;
pub mod migrations;
mod page_cache;
pub mod queue;
pub mod vectors;

pub use admin::SqliteAdminStore;
pub use config::StorageConfig;
pub use database::Database;
pub use queue::SqliteQueueStore;
pub use vectors::SqliteVectorStore;
