//! The storage trait of the vector engine. The store is the source of truth; memory mirrors it.

use async_trait::async_trait;
use quiver_core::IndexId;
use quiver_core::store::StoreResult;

use crate::record::StoredRecord;

/// A change to apply in one transaction.
#[derive(Debug, Clone)]
pub enum Change {
    /// Insert or replace records of a namespace (creating it).
    Put {
        /// The namespace.
        namespace: String,
        /// The records.
        records: Vec<StoredRecord>,
    },
    /// Delete records of a namespace by id.
    Delete {
        /// The namespace.
        namespace: String,
        /// The ids.
        ids: Vec<String>,
    },
    /// Empty a namespace (it stays).
    Reset {
        /// The namespace.
        namespace: String,
    },
    /// Remove a namespace and its records.
    DropNamespace {
        /// The namespace.
        namespace: String,
    },
    /// Move every record of `from` to `to` (which must not exist or have been dropped before).
    RenameNamespace {
        /// Old name.
        from: String,
        /// New name.
        to: String,
    },
}

/// Where vectors live. Every write is durable when it returns.
#[async_trait]
pub trait VectorStore: Send + Sync + 'static {
    /// Every namespace of an index (the default one included once it exists) and their records.
    async fn load(&self, index: IndexId) -> StoreResult<Vec<(String, Vec<StoredRecord>)>>;

    /// Applies changes atomically, in order.
    async fn apply(&self, index: IndexId, changes: Vec<Change>) -> StoreResult<()>;

    /// Forgets an index entirely.
    async fn drop_index(&self, index: IndexId) -> StoreResult<()>;
}
