//! The sparse inverted index of a namespace: for each dimension, the slots whose sparse vector has it,
//! with the value, and how many live records have it (for IDF).
//!
//! A query adds up, term at a time, the products of the records that share a dimension with it, in
//! ascending dimension order, which is the order `score::sparse_dot` adds them in: scores are bitwise
//! the ones a scan of every record gives. Slots are never reused, so a removed record's postings are
//! skipped by its empty slot and dropped when they become half of all postings.

use std::collections::HashMap;

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
}

/// Stale postings are dropped once they are at least this many and half of all.
const COMPACT_AFTER: usize = 4_096;

impl Postings {
    /// Adds the sparse vector of the record in `slot`.
    pub(crate) fn add(&mut self, slot: usize, sparse: &SparseVector) {
        let slot = u32::try_from(slot).unwrap_or(u32::MAX);
        for (index, value) in sparse.indices.iter().zip(&sparse.values) {
            self.lists.entry(*index).or_default().push((slot, *value));
            *self.frequency.entry(*index).or_default() += 1;
        }
        self.records += 1;
        self.total += sparse.indices.len();
    }

    /// Forgets the sparse vector of a removed record; `live` tells whether a slot still holds a record.
    pub(crate) fn remove(&mut self, sparse: &SparseVector, live: impl Fn(usize) -> bool) {
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
            self.lists.retain(|_, list| {
                list.retain(|(slot, _)| live(*slot as usize));
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
    pub(crate) fn scores(
        &self,
        query: &SparseVector,
        weight: impl Fn(u32) -> f32,
        slots: usize,
        live: impl Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        let mut totals = vec![0.0_f32; slots];
        let mut touched = vec![false; slots];
        let mut found = Vec::new();
        for (index, value) in query.indices.iter().zip(&query.values) {
            let Some(list) = self.lists.get(index) else {
                continue;
            };
            let weighted = value * weight(*index);
            for &(slot, document) in list {
                let slot = slot as usize;
                let Some(total) = totals.get_mut(slot) else {
                    continue;
                };
                *total += weighted * document;
                if !touched[slot] {
                    touched[slot] = true;
                    found.push(slot);
                }
            }
        }
        found
            .into_iter()
            .filter(|slot| live(*slot))
            .map(|slot| (slot, totals[slot]))
            .collect()
    }
}
