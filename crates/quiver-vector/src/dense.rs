//! Dense search behind [`DenseIndex`]. [`ExactIndex`] scans every vector with vectorisable kernels: exact
//! recall at every filter selectivity, and the reference an approximate graph is measured against.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use quiver_core::index::SimilarityFunction;

use crate::score::{norm, rank_key};

/// A dense index over slots (small integers the namespace hands out).
pub trait DenseIndex: Send + Sync + std::fmt::Debug {
    /// Adds or replaces the vector of `slot`.
    fn insert(&mut self, slot: usize, vector: &[f32]);
    /// Removes `slot`.
    fn remove(&mut self, slot: usize);
    /// Up to `k` accepted slots, most similar first, with their ranking keys (not wire scores).
    fn search(&self, query: &[f32], k: usize, accept: &dyn Fn(usize) -> bool) -> Vec<(usize, f32)>;
    /// Up to `k` slots nearest to `query`, with no filter (an index may skip its filter planning).
    fn search_all(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        self.search(query, k, &|_| true)
    }
    /// Bytes held.
    fn memory_bytes(&self) -> usize;
}

/// A candidate in a bounded heap: the worst kept candidate sits on top.
#[derive(Debug, PartialEq)]
struct Candidate(f32, usize);

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: a min-heap on the key, ties broken by slot for determinism.
        other.0.total_cmp(&self.0).then_with(|| self.1.cmp(&other.1))
    }
}

/// Keeps the best `k` of a stream of (slot, key).
#[derive(Debug)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Candidate>,
}

impl TopK {
    /// An empty selection of at most `k`. The heap reserves room for at most a few thousand up front
    /// and grows past that only as candidates come: `k` comes from requests (a resumable query may ask
    /// for any count), and reserving it whole could ask the allocator for more than the machine has.
    pub fn new(k: usize) -> TopK {
        const RESERVED_AT_MOST: usize = 4096;
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.saturating_add(1).min(RESERVED_AT_MOST)),
        }
    }

    /// Offers a candidate. Of equal keys the lower slot is kept, whatever order they come in.
    #[inline]
    pub fn offer(&mut self, slot: usize, key: f32) {
        if self.heap.len() < self.k {
            self.heap.push(Candidate(key, slot));
        } else if let Some(worst) = self.heap.peek()
            && (key > worst.0 || key == worst.0 && slot < worst.1)
        {
            self.heap.pop();
            self.heap.push(Candidate(key, slot));
        }
    }

    /// The worst kept key once `k` are kept (a candidate must beat it to get in).
    pub fn threshold(&self) -> Option<f32> {
        (self.heap.len() >= self.k)
            .then(|| self.heap.peek().map(|worst| worst.0))
            .flatten()
    }

    /// The kept candidates, best first.
    pub fn into_sorted(self) -> Vec<(usize, f32)> {
        let mut items: Vec<(usize, f32)> = self
            .heap
            .into_iter()
            .map(|Candidate(key, slot)| (slot, key))
            .collect();
        items.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        items
    }
}

/// Exhaustive search over flat arrays.
#[derive(Debug)]
pub struct ExactIndex {
    similarity: SimilarityFunction,
    dimension: usize,
    vectors: Vec<f32>,
    live: Vec<bool>,
}

impl ExactIndex {
    /// An empty index.
    pub fn new(similarity: SimilarityFunction, dimension: usize) -> ExactIndex {
        ExactIndex {
            similarity,
            dimension,
            vectors: Vec::new(),
            live: Vec::new(),
        }
    }

    /// The vector prepared for ranking: unit length for cosine.
    pub fn prepare(similarity: SimilarityFunction, vector: &[f32]) -> Vec<f32> {
        match similarity {
            SimilarityFunction::Cosine => {
                let length = norm(vector);
                if length == 0.0 {
                    vector.to_vec()
                } else {
                    vector.iter().map(|x| x / length).collect()
                }
            }
            SimilarityFunction::Euclidean | SimilarityFunction::DotProduct => vector.to_vec(),
        }
    }
}

impl DenseIndex for ExactIndex {
    fn insert(&mut self, slot: usize, vector: &[f32]) {
        if self.live.len() <= slot {
            self.live.resize(slot + 1, false);
            self.vectors.resize((slot + 1) * self.dimension, 0.0);
        }
        let prepared = Self::prepare(self.similarity, vector);
        self.vectors[slot * self.dimension..(slot + 1) * self.dimension].copy_from_slice(&prepared);
        self.live[slot] = true;
    }

    fn remove(&mut self, slot: usize) {
        if let Some(live) = self.live.get_mut(slot) {
            *live = false;
        }
    }

    fn search(&self, query: &[f32], k: usize, accept: &dyn Fn(usize) -> bool) -> Vec<(usize, f32)> {
        let query = Self::prepare(self.similarity, query);
        let mut best = TopK::new(k);
        if self.dimension == 0 {
            return Vec::new();
        }
        for (slot, vector) in self.vectors.chunks_exact(self.dimension).enumerate() {
            if self.live[slot] && accept(slot) {
                best.offer(slot, rank_key(self.similarity, &query, vector));
            }
        }
        best.into_sorted()
    }

    fn memory_bytes(&self) -> usize {
        self.vectors.len() * 4 + self.live.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_of_any_size_keeps_what_it_is_offered() {
        let mut best = TopK::new(usize::MAX);
        for (slot, key) in [(0, 1.0), (1, 3.0), (2, 2.0)] {
            best.offer(slot, key);
        }
        let slots: Vec<usize> = best.into_sorted().into_iter().map(|(slot, _)| slot).collect();
        assert_eq!(slots, [1, 2, 0]);
    }

    #[test]
    fn exact_search_returns_the_nearest_accepted_vectors_in_order() {
        let mut index = ExactIndex::new(SimilarityFunction::Euclidean, 2);
        for (slot, point) in [[0.0, 0.0], [1.0, 0.0], [5.0, 5.0], [0.5, 0.0]]
            .iter()
            .enumerate()
        {
            index.insert(slot, point);
        }
        let hits: Vec<usize> = index
            .search(&[0.0, 0.0], 3, &|_| true)
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        assert_eq!(hits, [0, 3, 1]);
        index.remove(0);
        let hits: Vec<usize> = index
            .search(&[0.0, 0.0], 2, &|slot| slot != 3)
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        assert_eq!(hits, [1, 2]);
    }
}
