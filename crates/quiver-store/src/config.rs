//! The `[storage]` configuration section.

use serde::{Deserialize, Serialize};

/// Where everything is stored: the embedded SQLite databases in the data directory (the default), or
/// one PostgreSQL database that several nodes share (`url`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// `postgres://USER@HOST:PORT/DATABASE` puts accounts, the catalogue, usage, the queue and the
    /// vectors in that PostgreSQL database; empty means the embedded SQLite databases.
    pub url: String,
    /// The PostgreSQL schema that holds Quiver's tables (created when missing); empty means the
    /// connection's default (`public`).
    pub schema: String,
    /// Most PostgreSQL connections a node opens at once.
    pub pool_size: usize,
    /// PostgreSQL only: how often a node looks for work other nodes made due, in milliseconds (wake-ups
    /// between nodes usually come sooner; this bounds the wait when one is lost).
    pub poll_interval_ms: u64,
    /// Most writes folded into one transaction (one fsync) by a database's writer.
    pub group_commit_max_batch: usize,
    /// Writes that may wait for the writer before callers are slowed down.
    pub write_queue_capacity: usize,
    /// Read-only connections per database file.
    pub read_connections: usize,
    /// How long a connection waits for a lock held by another process, in milliseconds.
    pub busy_timeout_ms: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            url: String::new(),
            schema: String::new(),
            pool_size: 16,
            poll_interval_ms: 500,
            group_commit_max_batch: 1024,
            write_queue_capacity: 16_384,
            read_connections: 4,
            busy_timeout_ms: 5_000,
        }
    }
}
