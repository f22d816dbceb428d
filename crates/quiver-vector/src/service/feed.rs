//! Following the store's feed of writes, where other nodes write to the same store: each write first
//! brings the index's memory up to the feed and then takes the next position (or, when another node took
//! it meanwhile, runs again); reads by id catch up first, so they see every acknowledged write; a
//! background follower keeps queries within a poll interval of the feed.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use quiver_core::{IndexId, StoreError};

use super::{LoadedIndex, Vectors, write};
use crate::error::VectorError;
use crate::namespace::Namespace;
use crate::record::IndexSpec;
use crate::store::{Change, FEED_BEHIND, FeedPosition, VectorFeed};

/// Writes read from the feed per round trip while catching up.
const CATCH_UP_BATCH: usize = 256;

/// How long a write keeps running again while other nodes keep writing to its index first.
const WRITE_PATIENCE: Duration = Duration::from_secs(10);

/// The longest pause before a write runs again, in microseconds (50 ms).
const LONGEST_PAUSE_MICROS: u64 = 50_000;

/// Runs `attempt` again when another node wrote to the index between this node's catch-up and its
/// write (the write was decided on memory that was behind, so it is decided again). Between runs it
/// pauses a random part of a span that doubles from 1 ms up to [`LONGEST_PAUSE_MICROS`]: a node whose catch-up takes
/// longer than another node's next write would otherwise lose every time while that node keeps
/// writing. It gives up after [`WRITE_PATIENCE`], with the conflict.
pub(super) async fn retry_behind<T, F, Fut>(mut attempt: F) -> Result<T, VectorError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, VectorError>>,
{
    let started = tokio::time::Instant::now();
    let mut span_micros: u64 = 1_000;
    loop {
        match attempt().await {
            Err(VectorError::Store(StoreError::Conflict(what)))
                if what == FEED_BEHIND && started.elapsed() < WRITE_PATIENCE =>
            {
                tokio::time::sleep(random_part(span_micros)).await;
                span_micros = (span_micros * 2).min(LONGEST_PAUSE_MICROS);
            }
            outcome => return outcome,
        }
    }
}

/// A random duration shorter than `span_micros` microseconds.
fn random_part(span_micros: u64) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    // Each `RandomState` is seeded afresh, which is randomness enough to spread nodes' retries apart.
    let random = std::hash::RandomState::new().build_hasher().finish();
    Duration::from_micros(random % span_micros.max(1))
}

/// Applies one change of the feed to memory, as the store applied it.
pub(super) fn apply_change(namespaces: &mut BTreeMap<String, Namespace>, spec: &IndexSpec, change: Change) {
    match change {
        Change::Put { namespace, records } => {
            let target = namespaces
                .entry(namespace)
                .or_insert_with(|| Namespace::new(spec));
            for record in records {
                target.put(record);
            }
        }
        Change::Delete { namespace, ids } => {
            if let Some(found) = namespaces.get_mut(&namespace) {
                for id in &ids {
                    found.remove(id);
                }
            }
        }
        Change::Reset { namespace } => {
            namespaces.insert(namespace, Namespace::new(spec));
        }
        Change::DropNamespace { namespace } => {
            if !namespace.is_empty() {
                namespaces.remove(&namespace);
            }
        }
        Change::RenameNamespace { from, to } => {
            if let Some(moved) = namespaces.remove(&from) {
                moved.unsave_whole();
                namespaces.insert(to, moved);
            }
        }
    }
}

/// The position of an index's last write in the feed (0 before its first: it has no head yet).
async fn head_of(feed: &dyn VectorFeed, index: IndexId) -> Result<FeedPosition, VectorError> {
    Ok(feed.heads(&[index]).await?.first().map_or(0, |(_, head)| *head))
}

impl Vectors {
    /// Brings an index's memory up to the store's feed (other nodes' writes); the caller holds the
    /// index's write lock, whose value is the memory's position. Nothing to do where this node is the
    /// only writer.
    pub(super) async fn catch_up(
        &self,
        index: IndexId,
        state: &LoadedIndex,
        position: &mut FeedPosition,
    ) -> Result<(), VectorError> {
        let Some(feed) = self.store.feed() else {
            return Ok(());
        };
        // One look at the head (one statement) usually finds memory current, as before most writes:
        // reading the feed takes a read-only transaction of its own (five round trips).
        if *position >= head_of(feed, index).await? {
            return Ok(());
        }
        self.read_feed(feed, index, state, position).await
    }

    /// As [`Vectors::catch_up`], for a caller that found the memory behind the head: reads the feed from
    /// the memory's position (or loads the index afresh where the feed no longer reaches back to it).
    async fn read_feed(
        &self,
        feed: &dyn VectorFeed,
        index: IndexId,
        state: &LoadedIndex,
        position: &mut FeedPosition,
    ) -> Result<(), VectorError> {
        loop {
            let Some(writes) = feed.changes_after(index, *position, CATCH_UP_BATCH).await? else {
                // The feed no longer reaches back to this memory: load the index afresh.
                let (namespaces, at) = self
                    .build(index, state.spec, |parts| {
                        super::snapshots::feed_in_parts(feed, index, parts)
                    })
                    .await?;
                *write(&state.namespaces) = namespaces;
                *position = at;
                self.indexing.notify_one();
                return Ok(());
            };
            let done = writes.len() < CATCH_UP_BATCH;
            if !writes.is_empty() {
                let mut namespaces = write(&state.namespaces);
                for (at, changes) in writes {
                    for change in changes {
                        apply_change(&mut namespaces, &state.spec, change);
                    }
                    *position = at;
                }
                drop(namespaces);
                self.indexing.notify_one();
            }
            if done {
                return Ok(());
            }
        }
    }

    /// Writes `changes` to the store as the write after the memory's `position` (which moves to it).
    pub(super) async fn commit(
        &self,
        index: IndexId,
        position: &mut FeedPosition,
        changes: Vec<Change>,
    ) -> Result<(), VectorError> {
        match self.store.feed() {
            None => self.store.apply(index, changes).await?,
            Some(feed) => *position = feed.apply_after(index, changes, *position).await?,
        }
        Ok(())
    }

    /// Catches an index up before a read that must see every acknowledged write (fetch, range, info),
    /// where other nodes write to the store.
    pub(super) async fn fresh(&self, index: IndexId, state: &LoadedIndex) -> Result<(), VectorError> {
        let Some(feed) = self.store.feed() else {
            return Ok(());
        };
        // One look at the head (one statement) usually finds memory current; only then read the feed.
        let head = head_of(feed, index).await?;
        let mut position = state.writes.lock().await;
        if *position >= head {
            return Ok(());
        }
        self.read_feed(feed, index, state, &mut position).await
    }

    /// Wakes the feed follower: another node wrote vectors (a hint; the follower polls anyway).
    pub fn feed_moved(&self) {
        self.feed_moved.notify_one();
    }

    /// Follows the store's feed until `shutdown`: every `every`, catches up the loaded indexes that
    /// other nodes wrote to. Returns at once where this node is the only writer.
    pub async fn follow_feed(
        self: Arc<Self>,
        every: Duration,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        let Some(feed) = self.store.feed() else {
            return;
        };
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                () = self.feed_moved.notified() => {}
                () = tokio::time::sleep(every) => {}
            }
            let states = self.loaded_states();
            if states.is_empty() {
                continue;
            }
            let ids: Vec<IndexId> = states.iter().map(|(id, _)| *id).collect();
            let heads = match feed.heads(&ids).await {
                Ok(heads) => heads,
                Err(error) => {
                    tracing::warn!(%error, "reading the vector feed's heads failed; trying again");
                    continue;
                }
            };
            for (id, head) in heads {
                let Some((_, state)) = states.iter().find(|(loaded, _)| *loaded == id) else {
                    continue;
                };
                let mut position = state.writes.lock().await;
                if *position >= head {
                    continue;
                }
                if let Err(error) = self.read_feed(feed, id, state, &mut position).await {
                    tracing::warn!(%error, index = %id, "catching up with other nodes' vector writes failed");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_write_that_keeps_losing_to_other_nodes_runs_again_until_it_lands() {
        let runs = AtomicUsize::new(0);
        let landed = retry_behind(|| async {
            if runs.fetch_add(1, Ordering::Relaxed) < 12 {
                Err(VectorError::Store(StoreError::Conflict(FEED_BEHIND.to_owned())))
            } else {
                Ok("landed")
            }
        })
        .await;
        assert_eq!(landed.expect("the write lands"), "landed");
        assert_eq!(runs.load(Ordering::Relaxed), 13);
    }

    #[tokio::test]
    async fn other_errors_are_not_run_again() {
        let runs = AtomicUsize::new(0);
        let failed: Result<(), _> = retry_behind(|| async {
            runs.fetch_add(1, Ordering::Relaxed);
            Err(VectorError::Store(StoreError::Conflict(
                "another conflict".into(),
            )))
        })
        .await;
        assert!(failed.is_err());
        assert_eq!(runs.load(Ordering::Relaxed), 1);
    }
}
