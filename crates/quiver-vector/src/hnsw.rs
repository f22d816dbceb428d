//! An HNSW graph (Malkov and Yashunin) over flat arrays: vectors in one `Vec<f32>`, level-0 neighbour
//! lists in one `Vec<u32>` with a fixed stride, a generation-stamped visited set reused across
//! searches. Deleted nodes stay in the graph as waypoints and are never returned.
//!
//! Small namespaces are searched exhaustively (exact, and faster below a few thousand vectors), and a
//! filtered search falls back to exhaustive search over the matching slots when few records pass.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use quiver_core::index::SimilarityFunction;

use crate::dense::{DenseIndex, ExactIndex, TopK};
use crate::score::{dot, prefetch, squared_distance};

/// Graph parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswParams {
    /// Neighbours per node above level 0 (level 0 keeps twice as many).
    pub m: usize,
    /// Candidate list size while inserting.
    pub ef_construction: usize,
    /// Candidate list size while searching (raised to k when k is larger).
    pub ef_search: usize,
    /// At or below this many live vectors, search is exhaustive.
    pub exact_below: usize,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: 16,
            ef_construction: 128,
            ef_search: 128,
            exact_below: 2_000,
        }
    }
}

/// A candidate: (distance, node). Ordered by distance.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Near(f32, u32);

impl Eq for Near {}
impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then_with(|| self.1.cmp(&other.1))
    }
}

/// Marks of visited nodes, cleared in O(1) by moving to a new generation.
#[derive(Debug, Default)]
struct Visited {
    marks: Vec<u32>,
    generation: u32,
}

impl Visited {
    /// Starts a new search over `size` nodes.
    fn reset(&mut self, size: usize) {
        if self.marks.len() < size {
            self.marks.resize(size, 0);
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.marks.iter_mut().for_each(|m| *m = 0);
            self.generation = 1;
        }
    }

    /// Marks `node`; whether this is its first visit in this search.
    #[inline]
    fn first_visit(&mut self, node: u32) -> bool {
        let mark = &mut self.marks[node as usize];
        if *mark == self.generation {
            false
        } else {
            *mark = self.generation;
            true
        }
    }
}

thread_local! {
    static VISITED: RefCell<Visited> = RefCell::new(Visited::default());
}

/// Runs `f` with a cleared visited set of at least `size` entries.
fn with_visited<R>(size: usize, f: impl FnOnce(&mut Visited) -> R) -> R {
    VISITED.with(|cell| {
        let mut visited = cell.borrow_mut();
        visited.reset(size);
        f(&mut visited)
    })
}

/// The graph.
#[derive(Debug)]
pub struct Hnsw {
    similarity: SimilarityFunction,
    dimension: usize,
    params: HnswParams,
    level_multiplier: f64,
    vectors: Vec<f32>,
    levels: Vec<u8>,
    deleted: Vec<bool>,
    /// Level 0: `stride` slots per node: a count, then neighbours.
    level0: Vec<u32>,
    upper: HashMap<u32, Vec<Vec<u32>>>,
    entry: Option<u32>,
    max_level: u8,
    live: usize,
    random_state: u64,
}

impl Hnsw {
    /// An empty graph.
    pub fn new(similarity: SimilarityFunction, dimension: usize, params: HnswParams) -> Hnsw {
        Hnsw {
            similarity,
            dimension,
            params,
            level_multiplier: 1.0 / (params.m.max(2) as f64).ln(),
            vectors: Vec::new(),
            levels: Vec::new(),
            deleted: Vec::new(),
            level0: Vec::new(),
            upper: HashMap::new(),
            entry: None,
            max_level: 0,
            live: 0,
            random_state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// Changes the search beam width (benchmarks sweep it).
    pub fn set_ef_search(&mut self, ef: usize) {
        self.params.ef_search = ef;
    }

    /// Live vectors.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether the graph holds no live vector.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn stride(&self) -> usize {
        2 * self.params.m + 1
    }

    fn vector(&self, node: u32) -> &[f32] {
        let start = node as usize * self.dimension;
        &self.vectors[start..start + self.dimension]
    }

    #[inline]
    fn distance(&self, query: &[f32], node: u32) -> f32 {
        let candidate = self.vector(node);
        match self.similarity {
            SimilarityFunction::Cosine | SimilarityFunction::DotProduct => -dot(query, candidate),
            SimilarityFunction::Euclidean => squared_distance(query, candidate),
        }
    }

    fn neighbours(&self, node: u32, level: u8) -> &[u32] {
        if level == 0 {
            let start = node as usize * self.stride();
            let count = self.level0[start] as usize;
            &self.level0[start + 1..start + 1 + count]
        } else {
            self.upper
                .get(&node)
                .and_then(|levels| levels.get(level as usize - 1))
                .map_or(&[], Vec::as_slice)
        }
    }

    fn set_neighbours(&mut self, node: u32, level: u8, list: &[u32]) {
        if level == 0 {
            let stride = self.stride();
            let start = node as usize * stride;
            let count = list.len().min(stride - 1);
            self.level0[start] = count as u32;
            self.level0[start + 1..start + 1 + count].copy_from_slice(&list[..count]);
        } else if let Some(levels) = self.upper.get_mut(&node) {
            levels[level as usize - 1] = list.to_vec();
        }
    }

    fn random_level(&mut self) -> u8 {
        // xorshift64*: deterministic per graph, good enough for level draws.
        self.random_state ^= self.random_state >> 12;
        self.random_state ^= self.random_state << 25;
        self.random_state ^= self.random_state >> 27;
        let bits = self.random_state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        let uniform = (bits as f64 + 0.5) / (1u64 << 53) as f64;
        ((-uniform.ln() * self.level_multiplier).floor() as usize).min(16) as u8
    }

    /// Greedy descent on one level from `start`.
    fn greedy(&self, query: &[f32], mut current: Near, level: u8) -> Near {
        loop {
            let mut improved = false;
            for &neighbour in self.neighbours(current.1, level) {
                let distance = self.distance(query, neighbour);
                if distance < current.0 {
                    current = Near(distance, neighbour);
                    improved = true;
                }
            }
            if !improved {
                return current;
            }
        }
    }

    /// Beam search on one level; returns up to `ef` nearest (of those `accept`ed, when results are
    /// filtered), nearest first.
    fn search_level(
        &self,
        query: &[f32],
        entry: Near,
        ef: usize,
        level: u8,
        accept: &dyn Fn(u32) -> bool,
    ) -> Vec<Near> {
        with_visited(self.levels.len(), |visited| {
            visited.first_visit(entry.1);
            let mut candidates = BinaryHeap::new();
            candidates.push(std::cmp::Reverse(entry));
            let mut results: BinaryHeap<Near> = BinaryHeap::new();
            if accept(entry.1) {
                results.push(entry);
            }
            let mut fresh: Vec<u32> = Vec::with_capacity(2 * self.params.m);
            while let Some(std::cmp::Reverse(nearest)) = candidates.pop() {
                if results.len() >= ef && results.peek().is_some_and(|worst| nearest.0 > worst.0) {
                    break;
                }
                // Gather the unvisited neighbours and start loading their vectors before scoring any.
                fresh.clear();
                for &neighbour in self.neighbours(nearest.1, level) {
                    if visited.first_visit(neighbour) {
                        prefetch(self.vector(neighbour));
                        fresh.push(neighbour);
                    }
                }
                for &neighbour in &fresh {
                    let distance = self.distance(query, neighbour);
                    let worst = results.peek().map_or(f32::INFINITY, |w| w.0);
                    if results.len() < ef || distance < worst {
                        candidates.push(std::cmp::Reverse(Near(distance, neighbour)));
                        if accept(neighbour) {
                            results.push(Near(distance, neighbour));
                            if results.len() > ef {
                                results.pop();
                            }
                        }
                    }
                }
            }
            let mut sorted = results.into_vec();
            sorted.sort();
            sorted
        })
    }

    /// The neighbour-selection heuristic: keep a candidate only if it is closer to the new node than
    /// to every neighbour already kept (keeps the graph navigable across clusters).
    fn select(&self, candidates: &[Near], keep: usize) -> Vec<u32> {
        let mut chosen: Vec<Near> = Vec::with_capacity(keep);
        for candidate in candidates {
            if chosen.len() >= keep {
                break;
            }
            let vector = self.vector(candidate.1);
            let dominated = chosen
                .iter()
                .any(|kept| self.distance(vector, kept.1) < candidate.0);
            if !dominated {
                chosen.push(*candidate);
            }
        }
        chosen.into_iter().map(|near| near.1).collect()
    }

    fn connect(&mut self, node: u32, neighbour: u32, level: u8) {
        let limit = if level == 0 {
            2 * self.params.m
        } else {
            self.params.m
        };
        let mut list = self.neighbours(neighbour, level).to_vec();
        if list.contains(&node) {
            return;
        }
        list.push(node);
        if list.len() > limit {
            let base = self.vector(neighbour).to_vec();
            let mut scored: Vec<Near> = list.iter().map(|&n| Near(self.distance(&base, n), n)).collect();
            scored.sort();
            list = self.select(&scored, limit);
        }
        self.set_neighbours(neighbour, level, &list);
    }

    fn add(&mut self, node: u32, vector: &[f32]) {
        let level = self.random_level();
        self.levels[node as usize] = level;
        if level > 0 {
            self.upper.insert(node, vec![Vec::new(); level as usize]);
        }
        let Some(entry) = self.entry else {
            self.entry = Some(node);
            self.max_level = level;
            return;
        };
        let mut current = Near(self.distance(vector, entry), entry);
        for upper in (level + 1..=self.max_level).rev() {
            current = self.greedy(vector, current, upper);
        }
        for layer in (0..=level.min(self.max_level)).rev() {
            let found = self.search_level(vector, current, self.params.ef_construction, layer, &|_| true);
            let keep = if layer == 0 {
                2 * self.params.m
            } else {
                self.params.m
            };
            let chosen = self.select(&found, keep);
            self.set_neighbours(node, layer, &chosen);
            for neighbour in chosen {
                self.connect(node, neighbour, layer);
            }
            if let Some(nearest) = found.first() {
                current = *nearest;
            }
        }
        if level > self.max_level {
            self.max_level = level;
            self.entry = Some(node);
        }
    }

    fn exact(&self, query: &[f32], k: usize, accept: &dyn Fn(usize) -> bool) -> Vec<(usize, f32)> {
        let mut best = TopK::new(k);
        for node in 0..self.levels.len() {
            if !self.deleted[node] && accept(node) {
                best.offer(node, -self.distance(query, node as u32));
            }
        }
        best.into_sorted()
    }

    /// Searches with an optional filter: without one, no selectivity estimate is needed.
    fn search_planned(
        &self,
        query: &[f32],
        k: usize,
        accept: Option<&dyn Fn(usize) -> bool>,
    ) -> Vec<(usize, f32)> {
        if k == 0 || self.live == 0 {
            return Vec::new();
        }
        let query = ExactIndex::prepare(self.similarity, query);
        let keep = |slot: usize| !self.deleted[slot] && accept.is_none_or(|accept| accept(slot));
        if self.live <= self.params.exact_below {
            return self.exact(&query, k, &keep);
        }
        // The planner: when few records pass, exhaustive search over them is both exact and cheap;
        // otherwise the beam widens in proportion to the share filtered out.
        let selectivity = if accept.is_some() {
            self.selectivity(&keep)
        } else {
            1.0
        };
        let widened_ef = (self.params.ef_search.max(k) as f64) / selectivity.max(1e-9);
        let graph_work = widened_ef * (2 * self.params.m) as f64;
        let exact_work = selectivity * self.live as f64;
        if exact_work <= graph_work {
            return self.exact(&query, k, &keep);
        }
        let Some(entry) = self.entry else {
            return Vec::new();
        };
        let ef = ((self.params.ef_search.max(k) as f64) / selectivity).ceil() as usize;
        let mut current = Near(self.distance(&query, entry), entry);
        for level in (1..=self.max_level).rev() {
            current = self.greedy(&query, current, level);
        }
        let found = self.search_level(&query, current, ef, 0, &|node| keep(node as usize));
        found
            .into_iter()
            .take(k)
            .map(|near| (near.1 as usize, -near.0))
            .collect()
    }

    /// The share of live vectors that pass `accept`, estimated from an evenly strided sample.
    fn selectivity(&self, accept: &dyn Fn(usize) -> bool) -> f64 {
        const SAMPLE: usize = 1024;
        let nodes = self.levels.len();
        let step = (nodes / SAMPLE).max(1);
        let (mut live, mut passing) = (0_usize, 0_usize);
        for node in (0..nodes).step_by(step) {
            if !self.deleted[node] {
                live += 1;
                if accept(node) {
                    passing += 1;
                }
            }
        }
        if live == 0 {
            1.0
        } else {
            passing as f64 / live as f64
        }
    }
}

impl DenseIndex for Hnsw {
    fn insert(&mut self, slot: usize, vector: &[f32]) {
        assert!(slot >= self.levels.len(), "HNSW slots are never reused");
        let prepared = ExactIndex::prepare(self.similarity, vector);
        let stride = self.stride();
        for _ in self.levels.len()..=slot {
            self.vectors.extend(std::iter::repeat_n(0.0, self.dimension));
            self.levels.push(0);
            self.deleted.push(true);
            self.level0.extend(std::iter::repeat_n(0, stride));
        }
        self.vectors[slot * self.dimension..(slot + 1) * self.dimension].copy_from_slice(&prepared);
        self.deleted[slot] = false;
        self.live += 1;
        self.add(slot as u32, &prepared);
    }

    fn remove(&mut self, slot: usize) {
        if let Some(deleted) = self.deleted.get_mut(slot)
            && !*deleted
        {
            *deleted = true;
            self.live -= 1;
        }
    }

    fn search(&self, query: &[f32], k: usize, accept: &dyn Fn(usize) -> bool) -> Vec<(usize, f32)> {
        self.search_planned(query, k, Some(accept))
    }

    fn search_all(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        self.search_planned(query, k, None)
    }

    fn memory_bytes(&self) -> usize {
        self.vectors.len() * 4
            + self.level0.len() * 4
            + self.levels.len() * 2
            + self
                .upper
                .values()
                .map(|levels| levels.iter().map(|l| l.len() * 4 + 24).sum::<usize>())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random unit vectors in clusters.
    fn clustered(count: usize, dimension: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) as f64 / (1u64 << 31) as f64) as f32 - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..20)
            .map(|_| (0..dimension).map(|_| next()).collect())
            .collect();
        (0..count)
            .map(|i| {
                let v: Vec<f32> = centres[i % 20].iter().map(|c| c + 0.3 * next()).collect();
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect()
    }

    fn recall(similarity: SimilarityFunction, accept: &dyn Fn(usize) -> bool) -> f64 {
        let (dimension, k) = (24, 10);
        let data = clustered(5_000, dimension, 7);
        let params = HnswParams {
            exact_below: 0,
            ..HnswParams::default()
        };
        let mut graph = Hnsw::new(similarity, dimension, params);
        let mut exact = ExactIndex::new(similarity, dimension);
        for (slot, vector) in data.iter().enumerate() {
            graph.insert(slot, vector);
            exact.insert(slot, vector);
        }
        let queries = clustered(100, dimension, 99);
        let mut found = 0;
        for query in &queries {
            let truth: std::collections::HashSet<usize> = exact
                .search(query, k, accept)
                .into_iter()
                .map(|(s, _)| s)
                .collect();
            found += graph
                .search(query, k, accept)
                .into_iter()
                .filter(|(s, _)| truth.contains(s))
                .count();
        }
        found as f64 / (queries.len() * k) as f64
    }

    #[test]
    fn graph_search_recalls_what_exhaustive_search_finds() {
        for similarity in [
            SimilarityFunction::Cosine,
            SimilarityFunction::Euclidean,
            SimilarityFunction::DotProduct,
        ] {
            let recall = recall(similarity, &|_| true);
            assert!(recall >= 0.95, "{similarity}: recall@10 {recall}");
        }
    }

    #[test]
    fn filtered_search_keeps_recall_at_every_selectivity() {
        for modulus in [2, 10, 100] {
            let recall = recall(SimilarityFunction::Cosine, &|slot| slot % modulus == 0);
            assert!(recall >= 0.95, "1/{modulus} pass: recall@10 {recall}");
        }
    }

    #[test]
    fn deleted_nodes_are_never_returned() {
        let data = clustered(3_000, 8, 3);
        let mut graph = Hnsw::new(
            SimilarityFunction::Cosine,
            8,
            HnswParams {
                exact_below: 0,
                ..HnswParams::default()
            },
        );
        for (slot, vector) in data.iter().enumerate() {
            graph.insert(slot, vector);
        }
        for slot in (0..3_000).step_by(2) {
            graph.remove(slot);
        }
        let hits = graph.search(&data[0], 20, &|_| true);
        assert_eq!(hits.len(), 20);
        assert!(hits.iter().all(|(slot, _)| slot % 2 == 1));
    }
}
