//! The sparse inverted index of a namespace: for each dimension, the slots whose sparse vector has it,
//! with the value, and how many live records have it (for IDF).
//!
//! A query adds up, term at a time, the products of the records that share a dimension with it, in
//! ascending dimension order, which is the order `score::sparse_dot` adds them in: scores are bitwise
//! the ones a scan of every record gives. Slots are never reused, so a removed record's postings are
//! skipped by the map of live slots and dropped when they become half of all postings.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::record::SparseVector;

/// Postings and document frequencies of one namespace's sparse vectors.
#[derive(Debug, Default)]
pub(crate) struct Postings {
    lists: HashMap<u32, Vec<(u32, f32)>>,
    frequency: HashMap<u32, u32>,
    /// Live records with a sparse vector.
    records: usize,
    /// Postings in `lists`, and how many of them belong to removed records.
    total: usize,
    stale: usize,
    /// Which slots hold a live record with a sparse vector.
    live: Vec<bool>,
    /// Accumulators that queries borrow, so that a query neither allocates nor clears one per slot.
    scratch: Mutex<Vec<Scratch>>,
}

/// Running totals by slot; a slot's total counts only when its stamp is this query's.
#[derive(Debug, Default)]
struct Scratch {
    totals: Vec<f32>,
    stamps: Vec<u32>,
    stamp: u32,
}

/// Stale postings are dropped once they are at least this many and half of all.
const COMPACT_AFTER: usize = 4_096;

impl Postings {
    /// Adds the sparse vector of the record in `slot`.
    pub(crate) fn add(&mut self, slot: usize, sparse: &SparseVector) {
        if self.live.len() <= slot {
            self.live.resize(slot + 1, false);
        }
        self.live[slot] = true;
        // A namespace of more than 4 billion slots is far beyond memory; postings keep slots as u32.
        let slot = u32::try_from(slot).unwrap_or(u32::MAX);
        for (index, value) in sparse.indices.iter().zip(&sparse.values) {
            self.lists.entry(*index).or_default().push((slot, *value));
            *self.frequency.entry(*index).or_default() += 1;
        }
        self.records += 1;
        self.total += sparse.indices.len();
    }

    /// Forgets the sparse vector of the record removed from `slot`.
    pub(crate) fn remove(&mut self, slot: usize, sparse: &SparseVector) {
        if let Some(live) = self.live.get_mut(slot) {
            *live = false;
        }
        for index in &sparse.indices {
            if let Some(count) = self.frequency.get_mut(index) {
                *count -= 1;
                if *count == 0 {
                    self.frequency.remove(index);
                }
            }
        }
        self.records = self.records.saturating_sub(1);
        self.stale += sparse.indices.len();
        if self.stale >= COMPACT_AFTER && self.stale * 2 >= self.total {
            let live = &self.live;
            self.lists.retain(|_, list| {
                list.retain(|(slot, _)| live.get(*slot as usize).copied().unwrap_or(false));
                !list.is_empty()
            });
            self.total -= self.stale;
            self.stale = 0;
        }
    }

    /// Live records with a sparse vector.
    pub(crate) fn records(&self) -> usize {
        self.records
    }

    /// How many live records have `index`.
    pub(crate) fn frequency(&self, index: u32) -> usize {
        self.frequency.get(&index).map_or(0, |count| *count as usize)
    }

    /// The inner product of `query` (sorted by index) with every live record that shares a dimension
    /// with it, each query value weighted: `(slot, score)`, in no particular order.
    pub(crate) fn scores(&self, query: &SparseVector, weight: impl Fn(u32) -> f32) -> Vec<(usize, f32)> {
        // An empty pool, or one poisoned by a panic while held, means fresh buffers: the pool only
        // saves allocations, and nothing in it is state.
        let mut scratch = self
            .scratch
            .lock()
            .map(|mut pool| pool.pop())
            .ok()
            .flatten()
            .unwrap_or_default();
        let slots = self.live.len();
        if scratch.totals.len() < slots {
            scratch.totals.resize(slots, 0.0);
            scratch.stamps.resize(slots, 0);
        }
        scratch.stamp = scratch.stamp.wrapping_add(1);
        if scratch.stamp == 0 {
            scratch.stamps.iter_mut().for_each(|stamp| *stamp = 0);
            scratch.stamp = 1;
        }
        let Scratch {
            totals,
            stamps,
            stamp,
        } = &mut scratch;
        let mut found = Vec::new();
        for (index, value) in query.indices.iter().zip(&query.values) {
            let Some(list) = self.lists.get(index) else {
                continue;
            };
            let weighted = value * weight(*index);
            for &(slot, document) in list {
                let slot = slot as usize;
                if slot >= slots {
                    continue;
                }
                if stamps[slot] == *stamp {
                    totals[slot] += weighted * document;
                } else {
                    stamps[slot] = *stamp;
                    // As a scan adds: from 0.
                    totals[slot] = 0.0 + weighted * document;
                    found.push(slot);
                }
            }
        }
        let scores = found
            .into_iter()
            .filter(|slot| self.live[*slot])
            .map(|slot| (slot, totals[slot]))
            .collect();
        if let Ok(mut pool) = self.scratch.lock() {
            pool.push(scratch);
        }
        scores
    }
}
