//! How a namespace's pending vectors move into its graph: a batch at a time, in three steps that the
//! indexer takes under different locks (see [`Namespace::begin_indexing`]).

use crate::hnsw::Linking;

use super::{Namespace, build_threads};

impl Namespace {
    /// Moves up to `limit` pending vectors into the graph, batch after batch; returns how many it
    /// took.
    pub fn index_pending(&mut self, limit: usize) -> usize {
        let mut taken = 0;
        while taken < limit && self.begin_indexing(limit - taken) {
            let linking = self.choose_indexing().expect("a batch was begun");
            taken += self.finish_indexing(linking);
        }
        taken
    }

    /// The first of the three steps that move a batch of pending vectors (at most `limit`, and what
    /// [`crate::hnsw::Hnsw::batch_size`] allows) into the graph, which the indexer takes under
    /// different locks: this one appends them to the graph, where no search finds them yet; the
    /// records keep their vectors and stay pending (so queries still scan them) until
    /// [`Namespace::finish_indexing`].
    ///
    /// Whether a batch was begun (none where nothing is pending). A batch left in flight (its
    /// namespace moved before it was finished) is finished first.
    pub fn begin_indexing(&mut self, limit: usize) -> bool {
        if self.in_flight.is_some()
            && let Some(linking) = self.choose_indexing()
        {
            self.finish_indexing(linking);
        }
        let size = self.dense.batch_size(limit.min(self.pending.len()));
        if size == 0 {
            return false;
        }
        // Room for the whole backlog at once, so its appends never move the graph's arrays.
        if let Some(&last) = self.pending.last() {
            self.dense
                .reserve((last + 1).saturating_sub(self.dense.node_count()));
        }
        let entries = &self.entries;
        let items: Vec<(usize, &[f32])> = self.pending[..size]
            .iter()
            .map(|&slot| {
                let vector = entries[slot].as_ref().and_then(|entry| entry.vector.as_deref());
                (
                    slot,
                    vector.expect("a pending slot holds a record with its vector"),
                )
            })
            .collect();
        self.in_flight = Some(self.dense.append_batch(&items, false));
        true
    }

    /// The second step: the batch in flight chooses its neighbours (on every core). Reads only, so the
    /// indexer runs it under the read lock and queries run meanwhile. `None` where no batch is in
    /// flight.
    pub fn choose_indexing(&self) -> Option<Linking> {
        let batch = self.in_flight.as_ref()?;
        Some(self.dense.choose_batch(batch, build_threads()))
    }

    /// The last step: links the batch in flight as `linking` (chosen for it) says, and moves its
    /// records out of the pending list; the graph then holds their vectors, and searches find them.
    /// A record removed while its batch was in flight stays a deleted node. Returns how many vectors
    /// the batch took from the pending list (none where no batch is in flight: `linking` was chosen
    /// for a namespace this one replaced).
    pub fn finish_indexing(&mut self, linking: Linking) -> usize {
        let Some(batch) = self.in_flight.take() else {
            return 0;
        };
        self.dense.link_batch(linking, build_threads());
        // The batch was a prefix of the pending list, which since then has only lost slots (removed
        // records) and gained later ones (new records): what is left of the batch is still a prefix.
        let last = batch.slots().last().unwrap_or(0);
        let still = self.pending.partition_point(|&slot| slot <= last);
        for &slot in &self.pending[..still] {
            self.dense.make_live(slot);
            // The graph holds the vector now: the record no longer keeps its own copy.
            if let Some(entry) = self.entries[slot].as_mut() {
                entry.vector = None;
            }
        }
        self.pending.drain(..still);
        self.graph_inserts += still as u64;
        batch.slots().count()
    }
}
