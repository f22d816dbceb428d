//! The storage trait of the vector engine. The store is the source of truth; memory mirrors it.

use async_trait::async_trait;
use quiver_core::IndexId;
use quiver_core::store::{StoreError, StoreResult};

use crate::record::StoredRecord;

/// A part of an index's records as [`VectorStore::load_in_parts`] sends them: a namespace and some of
/// its records.
pub type LoadPart = (String, Vec<StoredRecord>);

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

    /// What [`VectorStore::load`] answers, sent to `parts` as it is read, so that a caller that takes
    /// each part as it comes never holds every record at once (a large index's vectors are most of its
    /// size). Every namespace comes in at least one part (an empty one in a part without records), a
    /// namespace's records may be split over several parts, in any order; together the parts hold
    /// exactly what one `load` would. Returns once every part is sent; a failure may come after some
    /// parts were sent, which the caller then drops. A caller that stops receiving ends the load with
    /// an error.
    ///
    /// The default sends `load`'s answer, one part per namespace.
    async fn load_in_parts(
        &self,
        index: IndexId,
        parts: tokio::sync::mpsc::Sender<LoadPart>,
    ) -> StoreResult<()> {
        for part in self.load(index).await? {
            parts.send(part).await.map_err(|_| StoreError::Closed)?;
        }
        Ok(())
    }

    /// Applies changes atomically, in order.
    async fn apply(&self, index: IndexId, changes: Vec<Change>) -> StoreResult<()>;

    /// Forgets an index entirely.
    async fn drop_index(&self, index: IndexId) -> StoreResult<()>;

    /// The store's ordered feed of writes, where other nodes write to it too (`None`: this node is the
    /// only writer, and its memory is always current).
    fn feed(&self) -> Option<&dyn VectorFeed> {
        None
    }
}

/// How many writes an index has had: its place in its feed (0 before the first).
pub type FeedPosition = u64;

/// What [`VectorFeed::apply_after`] answers when another node wrote to the index since `based_on`: the
/// caller catches up and decides again (`StoreError::Conflict` with this text).
pub const FEED_BEHIND: &str = "the index's feed moved on";

/// The ordered feed of each index's writes in a store that several nodes share. Each node keeps the
/// indexes in memory and follows the feed, so that a write acknowledged by any node reaches all of them.
/// Every write, [`VectorStore::apply`]'s too, takes the next position.
#[async_trait]
pub trait VectorFeed: Send + Sync {
    /// An index's namespaces and records, and the position they stand at (one snapshot).
    async fn load_at(&self, index: IndexId) -> StoreResult<(Vec<(String, Vec<StoredRecord>)>, FeedPosition)>;

    /// Applies changes atomically, in order, as the write after `based_on`, and returns its position;
    /// `StoreError::Conflict(FEED_BEHIND)` (and nothing written) when the index has moved past `based_on`.
    async fn apply_after(
        &self,
        index: IndexId,
        changes: Vec<Change>,
        based_on: FeedPosition,
    ) -> StoreResult<FeedPosition>;

    /// Up to `limit` writes after `position`, oldest first, each with its position and its changes as
    /// the records now stand (a record put then deleted comes back as deleted). `None` when the feed no
    /// longer holds the write after `position`: the caller loads the index again.
    async fn changes_after(
        &self,
        index: IndexId,
        position: FeedPosition,
        limit: usize,
    ) -> StoreResult<Option<Vec<(FeedPosition, Vec<Change>)>>>;

    /// The positions of these indexes' latest writes (an index never written to is left out).
    async fn heads(&self, indexes: &[IndexId]) -> StoreResult<Vec<(IndexId, FeedPosition)>>;
}
