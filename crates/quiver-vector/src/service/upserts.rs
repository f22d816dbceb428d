//! Upserts to one index that arrive while another write holds it are written together.
//!
//! Each write to an index holds its lock through the store's commit, so single-record upserts from many
//! clients went one commit after another. Now an upsert joins its index's waiting list before it takes
//! the lock, and whoever takes the lock writes every upsert waiting then as one write (one commit, one
//! entry of the feed), in the order they arrived, and answers each. Each keeps its own checks and
//! answer: the plan's vector count is counted as if they ran one after another, and one that would go
//! beyond it is refused alone. The write runs as a task of its own, so a caller that goes away (a client
//! that disconnects) cancels neither its upsert nor the others written with it: each is committed and
//! put in memory, or neither, and every caller still waiting gets its answer.

use std::collections::HashMap;
use std::sync::Arc;

use quiver_core::StoreError;
use quiver_core::plan::Limit;
use tokio::sync::oneshot;

use super::{IndexRef, LoadedIndex, Vectors, read, write};
use crate::error::VectorError;
use crate::namespace::Namespace;
use crate::record::{Record, StoredRecord};
use crate::store::Change;

/// An upsert waiting for its index's lock.
struct Waiting {
    namespace: String,
    records: Vec<Record>,
    max_vector_count: Limit,
    reply: oneshot::Sender<Result<(), VectorError>>,
}

/// One index's upserts waiting for its lock, in arrival order.
#[derive(Default)]
pub(super) struct WaitingUpserts {
    waiting: std::sync::Mutex<Vec<Waiting>>,
}

impl std::fmt::Debug for WaitingUpserts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitingUpserts").finish_non_exhaustive()
    }
}

impl WaitingUpserts {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Waiting>> {
        // The list is whole even if a holder panicked: each change to it is one push or one take.
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The same failure for each upsert of a write that failed as a whole: a store error as it is (a
/// conflict with another node's write is retried by each), anything else by its message.
fn shared(error: &VectorError) -> VectorError {
    if let VectorError::Store(error) = error {
        VectorError::Store(error.clone())
    } else {
        VectorError::Store(StoreError::Backend(error.to_string()))
    }
}

impl Vectors {
    /// Writes checked, non-empty `records` to `namespace` of a loaded index, together with the upserts
    /// to it waiting at the same time.
    pub(super) async fn upsert_checked(
        self: &Arc<Self>,
        index: &IndexRef,
        state: Arc<LoadedIndex>,
        namespace: &str,
        records: Vec<Record>,
    ) -> Result<(), VectorError> {
        let (reply, answer) = oneshot::channel();
        state.upserts.lock().push(Waiting {
            namespace: namespace.to_owned(),
            records,
            max_vector_count: index.limits.max_vector_count,
            reply,
        });
        let (vectors, index) = (Arc::clone(self), index.clone());
        tokio::spawn(async move {
            let mut position = state.writes.lock().await;
            let taken = std::mem::take(&mut *state.upserts.lock());
            // Empty when the write before took this upsert along.
            if !taken.is_empty() {
                vectors.write_upserts(&index, &state, &mut position, taken).await;
            }
        });
        answer
            .await
            .unwrap_or(Err(VectorError::Store(StoreError::Closed)))
    }

    /// Writes `taken` as one write and answers each.
    async fn write_upserts(
        &self,
        index: &IndexRef,
        state: &LoadedIndex,
        position: &mut crate::store::FeedPosition,
        taken: Vec<Waiting>,
    ) {
        if let Err(error) = self.catch_up(index.id, state, position).await {
            for waiting in taken {
                let _ = waiting.reply.send(Err(shared(&error)));
            }
            return;
        }
        let mut answers = Vec::with_capacity(taken.len());
        let mut changes = Vec::with_capacity(taken.len());
        {
            let namespaces = read(&state.namespaces);
            let mut total: usize = namespaces.values().map(Namespace::len).sum();
            // Sequences handed out by this write, by namespace: a record new to the index keeps the one
            // an earlier upsert of the write gave it, as it would have had that upsert committed first.
            let mut given: HashMap<String, (u64, HashMap<String, u64>)> = HashMap::new();
            for waiting in taken {
                let Waiting {
                    namespace,
                    records,
                    max_vector_count: max,
                    reply,
                } = waiting;
                let existing = namespaces.get(&namespace);
                let (next, ours) = given
                    .entry(namespace.clone())
                    .or_insert_with(|| (existing.map_or(1, Namespace::next_sequence), HashMap::new()));
                let mut next_here = *next;
                let mut new_here: HashMap<String, u64> = HashMap::new();
                let mut stored = Vec::with_capacity(records.len());
                for record in records {
                    let known = existing
                        .and_then(|n| n.sequence_of(&record.id))
                        .or_else(|| ours.get(&record.id).copied())
                        .or_else(|| new_here.get(&record.id).copied());
                    let sequence = known.unwrap_or_else(|| {
                        new_here.insert(record.id.clone(), next_here);
                        next_here += 1;
                        next_here - 1
                    });
                    stored.push(StoredRecord { sequence, record });
                }
                if !max.allows((total + new_here.len()) as u64) {
                    let refused = VectorError::LimitExceeded(format!(
                        "the index may hold at most {max} vectors on its plan; it holds {total} and this request adds {}",
                        new_here.len()
                    ));
                    answers.push((reply, Some(refused)));
                    continue;
                }
                total += new_here.len();
                *next = next_here;
                ours.extend(new_here);
                changes.push(Change::Put {
                    namespace,
                    records: stored,
                });
                answers.push((reply, None));
            }
        }
        let written = if changes.is_empty() {
            Ok(())
        } else {
            self.commit(index.id, position, changes.clone()).await
        };
        if written.is_ok() {
            let mut namespaces = write(&state.namespaces);
            for change in changes {
                super::feed::apply_change(&mut namespaces, &state.spec, change);
            }
            drop(namespaces);
            self.indexing.notify_one();
        }
        for (reply, refused) in answers {
            let answer = match (refused, &written) {
                (Some(refused), _) => Err(refused),
                (None, Ok(())) => Ok(()),
                (None, Err(error)) => Err(shared(error)),
            };
            let _ = reply.send(answer);
        }
    }
}
