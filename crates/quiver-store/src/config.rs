//! The `[storage]` configuration section.

use serde::{Deserialize, Serialize};

/// Settings of the embedded store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
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
            group_commit_max_batch: 1024,
            write_queue_capacity: 16_384,
            read_connections: 4,
            busy_timeout_ms: 5_000,
        }
    }
}
