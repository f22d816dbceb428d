//! An HNSW graph (Malkov and Yashunin) over flat arrays: the vectors as written, in chunks
//! (`hnsw::rows`), which are the namespace's only f32 copy (cosine ranks them through each one's
//! inverse norm, so a fetch returns exactly what was written); packed half-precision copies of the
//! vectors as ranked (unit length for cosine), which rank the build's beams and a query's candidates
//! ([`crate::half`]); 8-bit copies, which the build and queries walk and a filtered scan scores by
//! ([`crate::int8`]); level-0 neighbour lists in one `Vec<u32>` with a fixed stride; and per-thread
//! search buffers reused across searches. Deleted nodes stay in the graph as waypoints and are never
//! returned.
//!
//! Small namespaces are searched exhaustively (exact, and faster below a few thousand vectors); how a
//! filtered search is planned is described in `hnsw/search.rs`.

mod candidates;
mod crew;
mod distances;
mod image;
mod marks;
mod partition;
mod patience;
mod read_ahead;
mod regions;
mod rows;
mod scratch;
mod search;
mod skim;

use std::collections::HashMap;

use quiver_core::index::SimilarityFunction;

use crate::dense::DenseIndex;
use crate::score::norm;
use crate::{half, int8};
use candidates::{Accept, Near, Probe, Start};
use rows::Rows;

pub(crate) use image::{Derived, Source};
pub use partition::{REGIONS_FROM, RegionSample, TrainedRegions};

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

/// The graph.
#[derive(Debug)]
pub struct Hnsw {
    similarity: SimilarityFunction,
    dimension: usize,
    params: HnswParams,
    level_multiplier: f64,
    /// The vectors as inserted.
    vectors: Rows,
    /// Cosine only: by node, 1 over the vector's norm (1 for a zero vector), which turns a dot product
    /// with a unit query into the cosine. Empty for the other functions, whose vectors rank as they are.
    inverse_norms: Vec<f32>,
    /// Half-precision copies, `half_words` per node (see [`crate::half`]).
    halves: Vec<u32>,
    half_words: usize,
    /// 8-bit copies of the vectors as ranked, which searches walk by (see [`crate::int8`]).
    codes: int8::Codes,
    levels: Vec<u8>,
    deleted: Vec<bool>,
    /// Level 0: `stride` slots per node: a count, then neighbours.
    level0: Vec<u32>,
    upper: HashMap<u32, Vec<Vec<u32>>>,
    entry: Option<u32>,
    max_level: u8,
    live: usize,
    random_state: u64,
    /// The largest norm of a prepared vector: bounds what half precision gets wrong (see `rerank`).
    max_norm: f32,
    /// Whether a vector half precision cannot hold was inserted (see [`half::holds`]: coordinates in
    /// the millions, or all below a thousandth, as Euclidean and dot-product indexes may hold). The
    /// build and the walks then rank by the f32 vectors where they would rank by the halves: slower,
    /// but an overflowed or vanished copy would leave the graph's neighbour lists unrelated to the
    /// vectors.
    exact_traversal: bool,
    /// The nodes partitioned by their nearest centre, for filtered searches (see `hnsw::regions`);
    /// `None` until trained.
    regions: Option<partition::Regions>,
    /// Whether filtered searches read the regions (a benchmark compares both in one run).
    regions_used: bool,
}

impl Hnsw {
    /// An empty graph.
    pub fn new(similarity: SimilarityFunction, dimension: usize, params: HnswParams) -> Hnsw {
        Hnsw {
            similarity,
            dimension,
            params,
            level_multiplier: 1.0 / (params.m.max(2) as f64).ln(),
            vectors: Rows::new(dimension),
            inverse_norms: Vec::new(),
            halves: Vec::new(),
            half_words: half::packed_words(dimension),
            codes: int8::Codes::new(dimension),
            levels: Vec::new(),
            deleted: Vec::new(),
            level0: Vec::new(),
            upper: HashMap::new(),
            entry: None,
            max_level: 0,
            live: 0,
            random_state: 0x9E37_79B9_7F4A_7C15,
            max_norm: 0.0,
            exact_traversal: false,
            regions: None,
            regions_used: true,
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
        self.vectors.get(node as usize)
    }

    /// What `node`'s vector is multiplied by to rank (see `inverse_norms`).
    #[inline]
    fn scale(&self, node: u32) -> f32 {
        scale_in(&self.inverse_norms, node as usize)
    }

    /// `node`'s vector as the graph ranks it (a cosine graph's vectors are stored with their norm
    /// apart).
    fn prepared(&self, node: u32) -> impl Iterator<Item = f32> + '_ {
        let scale = self.scale(node);
        self.vector(node).iter().map(move |x| x * scale)
    }

    /// Appends `node`'s vector as ranked to `out`, padded for the half-precision kernels.
    fn extend_padded_prepared(&self, node: u32, out: &mut Vec<f32>) {
        let start = out.len();
        out.extend(self.prepared(node));
        out.resize(start + half::padded(self.dimension), 0.0);
    }

    /// `node`'s vector as ranked, padded for the half-precision kernels.
    fn padded_prepared(&self, node: u32) -> Vec<f32> {
        let mut padded = Vec::with_capacity(half::padded(self.dimension));
        self.extend_padded_prepared(node, &mut padded);
        padded
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

    /// Starts loading `node`'s level-0 neighbour list.
    #[inline]
    fn prefetch_neighbours(&self, node: u32) {
        let start = node as usize * self.stride();
        crate::score::prefetch(&self.level0[start..start + self.stride()]);
    }

    /// Greedy descent on one level from `current`, with a padded query; each step's neighbours are
    /// scored with their copies loaded a few ahead, as on level 0.
    fn greedy(&self, probe: Probe<'_>, mut current: Near, level: u8) -> Near {
        loop {
            let mut improved = false;
            for Near(distance, neighbour) in self.probe_distances(probe, self.neighbours(current.1, level)) {
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

    /// The neighbour-selection heuristic: keep a candidate only if it is closer to the new node than
    /// to every neighbour already kept (keeps the graph navigable across clusters). A candidate is
    /// compared with the kept neighbours as the build ranks it (its half-precision copy against each
    /// kept neighbour's vector as ranked, made once per kept neighbour): the search that found the
    /// candidate has just read its copy, where its f32 vector, twice the bytes, would come from
    /// memory, and the two threads of a build share that memory's bandwidth.
    fn select(&self, candidates: &[Near], keep: usize) -> Vec<u32> {
        let width = half::padded(self.dimension);
        let mut chosen: Vec<u32> = Vec::with_capacity(keep);
        let mut kept_padded: Vec<f32> = Vec::with_capacity(keep * width);
        for candidate in candidates {
            if chosen.len() >= keep {
                break;
            }
            let dominated = kept_padded
                .chunks_exact(width)
                .any(|kept| self.traversal_distance(kept, candidate.1) < candidate.0);
            if !dominated {
                chosen.push(candidate.1);
                self.extend_padded_prepared(candidate.1, &mut kept_padded);
            }
        }
        chosen
    }

    /// The neighbours a new node links to on each of its levels, from the top: the heuristic's pick
    /// among what a search of the graph finds there and among `peers`, nodes of the same batch before
    /// it, which the search cannot reach yet.
    /// Reads the graph and the vectors only, so a batch's choices run on several threads.
    fn choose(&self, node: u32, prepared: &[f32], peers: &[u32]) -> Chosen {
        let level = self.levels[node as usize];
        let padded = half::pad_query(prepared);
        let coded = int8::Query::new(prepared);
        // The search walks by the 8-bit codes, as a query does (half the bytes of the halves a node,
        // and memory is what the two threads of a build share), and its beam is ranked again by the
        // halves for the heuristic, which so ranks as it did when the build walked by the halves. A
        // graph holding vectors the halves cannot hold walks by the f32 vectors (`traversal_distance`).
        let probe = if self.exact_traversal {
            Probe::Half(&padded)
        } else {
            Probe::Int8(&coded)
        };
        let mut layers = Vec::with_capacity(level as usize + 1);
        let mut current = self
            .entry
            .map(|entry| Near(self.probe_distance(probe, entry), entry));
        if let Some(start) = current.as_mut() {
            for upper in (level + 1..=self.max_level).rev() {
                *start = self.greedy(probe, *start, upper);
            }
        }
        let mut beam: Vec<u32> = Vec::new();
        for layer in (0..=level).rev() {
            let mut candidates = match current {
                Some(start) if layer <= self.max_level => {
                    let mut found = self.search_level(
                        probe,
                        Start::at(start),
                        self.params.ef_construction,
                        layer,
                        Accept::Any,
                    );
                    if let Some(nearest) = found.first() {
                        current = Some(*nearest);
                    }
                    if let Probe::Int8(_) = probe {
                        beam.clear();
                        beam.extend(found.iter().map(|near| near.1));
                        found.clear();
                        found.extend(self.probe_distances(Probe::Half(&padded), &beam));
                        found.sort_unstable();
                    }
                    found
                }
                Some(_) | None => Vec::new(),
            };
            let searched = candidates.len();
            candidates.extend(
                peers
                    .iter()
                    .filter(|&&peer| self.levels[peer as usize] >= layer)
                    .map(|&peer| Near(self.traversal_distance(&padded, peer), peer)),
            );
            if candidates.len() > searched {
                candidates = merge_sorted(candidates, searched);
            }
            // A new node links to `m` neighbours on every level, as in the paper and hnswlib; level-0 lists
            // grow to twice that through the links others make to it.
            layers.push((layer, self.select(&candidates, self.params.m)));
        }
        Chosen { node, layers }
    }

    /// Links new nodes as `chosen`, in order: each to its neighbours, and each neighbour back to the
    /// new nodes that chose it. A neighbour list that grows past its limit is pruned by the same
    /// heuristic, once for all the nodes of the batch that chose it; the prunings read the graph only,
    /// so they run on `threads` threads.
    fn link_all(&mut self, chosen: Vec<Chosen>, threads: usize) {
        let mut back: Vec<BackLink> = Vec::new();
        for Chosen { node, layers } in &chosen {
            for (layer, neighbours) in layers {
                self.set_neighbours(*node, *layer, neighbours);
                back.extend(neighbours.iter().map(|&neighbour| (*layer, neighbour, *node)));
            }
        }
        back.sort_unstable();
        let groups: Vec<&[BackLink]> = back.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)).collect();
        let graph = &*self;
        // A pruning costs a few microseconds: the threads take them in blocks, so that handing them
        // out (one shared counter) and gathering them cost less than the prunings.
        let blocks: Vec<&[&[BackLink]]> = groups.chunks(PRUNINGS_PER_CLAIM).collect();
        let lists: Vec<Vec<(u8, u32, Vec<u32>)>> = in_parallel(&blocks, threads, |block| {
            block
                .iter()
                .map(|group| {
                    let (layer, neighbour) = (group[0].0, group[0].1);
                    graph.grown_list(neighbour, layer, group.iter().map(|&(_, _, node)| node))
                })
                .collect()
        });
        for (layer, neighbour, list) in lists.into_iter().flatten() {
            self.set_neighbours(neighbour, layer, &list);
        }
        for Chosen { node, .. } in &chosen {
            let level = self.levels[*node as usize];
            if self.entry.is_none() || level > self.max_level {
                self.max_level = level;
                self.entry = Some(*node);
            }
        }
        self.add_to_regions(chosen.iter().map(|chosen| chosen.node));
    }

    /// `neighbour`'s list on `layer` with `new` nodes added, pruned by the heuristic to its limit.
    fn grown_list(&self, neighbour: u32, layer: u8, new: impl Iterator<Item = u32>) -> (u8, u32, Vec<u32>) {
        let limit = if layer == 0 {
            2 * self.params.m
        } else {
            self.params.m
        };
        let mut list = self.neighbours(neighbour, layer).to_vec();
        for node in new {
            if node != neighbour && !list.contains(&node) {
                list.push(node);
            }
        }
        if list.len() > limit {
            let base = self.padded_prepared(neighbour);
            let mut scored: Vec<Near> = list
                .iter()
                .map(|&n| Near(self.traversal_distance(&base, n), n))
                .collect();
            scored.sort();
            list = self.select(&scored, limit);
        }
        (layer, neighbour, list)
    }

    /// Makes room for `slot` (and the unused slots before it) and stores its vector, its
    /// half-precision copy and its level; returns the vector as ranked (scaled for cosine). A node
    /// appended not `live` counts as deleted (no search returns it) until [`Hnsw::make_live`].
    fn append(&mut self, slot: usize, vector: &[f32], live: bool) -> Vec<f32> {
        assert!(slot >= self.levels.len(), "HNSW slots are never reused");
        let is_cosine = self.similarity == SimilarityFunction::Cosine;
        // Scaled as `derive_halves` scales a loaded graph's vectors, so both make the same halves.
        let scale = if is_cosine { inverse_norm(vector) } else { 1.0 };
        let prepared: Vec<f32> = vector.iter().map(|x| x * scale).collect();
        let stride = self.stride();
        let unused = vec![0.0; self.dimension];
        let added = slot + 1 - self.levels.len();
        crate::huge::reserve(&mut self.level0, added * stride);
        crate::huge::reserve(&mut self.halves, added * self.half_words);
        for node in self.levels.len()..=slot {
            self.vectors.push(if node == slot { vector } else { &unused });
            if is_cosine {
                self.inverse_norms.push(1.0);
            }
            self.levels.push(0);
            self.deleted.push(true);
            self.level0.extend(std::iter::repeat_n(0, stride));
            self.halves.extend(std::iter::repeat_n(0, self.half_words));
        }
        let mut packed = Vec::with_capacity(self.half_words);
        half::pack_into(&prepared, &mut packed);
        self.halves[slot * self.half_words..(slot + 1) * self.half_words].copy_from_slice(&packed);
        self.codes.set(slot, &prepared);
        if is_cosine {
            self.inverse_norms[slot] = scale;
        }
        if live {
            self.deleted[slot] = false;
            self.live += 1;
        }
        self.max_norm = self.max_norm.max(norm(&prepared));
        self.exact_traversal |= !half::holds(&prepared);
        let level = self.random_level();
        self.levels[slot] = level;
        if level > 0 {
            self.upper.insert(slot as u32, vec![Vec::new(); level as usize]);
        }
        prepared
    }

    /// Inserts many vectors on `threads` threads, in batches: each node of a batch chooses its
    /// neighbours in parallel (`Hnsw::choose`: a search of the graph as it stands, and the batch's
    /// earlier nodes), then the batch is linked (`Hnsw::link_all`: lists written on one thread, the
    /// prunings of grown lists in parallel). A batch is at most 1/16 of the graph (and
    /// [`INSERT_BATCH`]), so a small graph grows one node at a time. One thread inserts one vector
    /// after the other.
    pub fn insert_many(&mut self, items: &[(usize, &[f32])], threads: usize) {
        if threads <= 1 {
            for &(slot, vector) in items {
                self.insert(slot, vector);
            }
            return;
        }
        let mut at = 0;
        while at < items.len() {
            let size = self.batch_size(items.len() - at);
            let batch = self.append_batch(&items[at..at + size], true);
            at += size;
            let chosen = self.choose_batch(&batch, threads);
            self.link_batch(chosen, threads);
        }
    }

    /// How many of `wanted` vectors the next batch takes: at most 1/16 of the graph's live nodes (at
    /// least one) and [`INSERT_BATCH`].
    pub fn batch_size(&self, wanted: usize) -> usize {
        (self.live / 16).clamp(1, INSERT_BATCH).min(wanted)
    }

    /// The first step of inserting a batch (see [`Hnsw::insert_many`]): its vectors are stored, with
    /// their levels, but nothing links to them yet. Not `live`, they count as deleted until
    /// [`Hnsw::make_live`], so a search (which cannot reach them yet) never scans them either: the
    /// caller still serves them from where they were before.
    pub fn append_batch(&mut self, items: &[(usize, &[f32])], live: bool) -> Batch {
        let nodes = items
            .iter()
            .map(|&(slot, vector)| (slot as u32, self.append(slot, vector, live)))
            .collect();
        Batch {
            nodes,
            appended_at: self.levels.len(),
        }
    }

    /// The second step: each node of `batch` chooses its neighbours, on `threads` threads. Reads the
    /// graph only, so searches run meanwhile. Nothing but the batch's own nodes may be appended between
    /// [`Hnsw::append_batch`] and this (removals may).
    ///
    /// The first thread to start backs the room for the next batches with memory first: the kernel
    /// zeroes fresh pages, and a build on several threads would otherwise wait while the one thread
    /// that appends takes those faults.
    pub fn choose_batch(&self, batch: &Batch, threads: usize) -> Linking {
        assert_eq!(
            batch.appended_at,
            self.levels.len(),
            "a batch is chosen in the graph it was appended to"
        );
        let nodes: Vec<u32> = batch.nodes.iter().map(|(node, _)| *node).collect();
        // `None` stands for the prefault, taken first.
        let steps: Vec<Option<usize>> = std::iter::once(None)
            .filter(|_| threads > 1)
            .chain((0..nodes.len()).map(Some))
            .collect();
        let chosen = in_parallel(&steps, threads, |&step| {
            let Some(position) = step else {
                self.prefault(PREFAULT_AHEAD);
                return None;
            };
            let (node, prepared) = &batch.nodes[position];
            Some(self.choose(*node, prepared, &nodes[..position]))
        });
        Linking {
            chosen: chosen.into_iter().flatten().collect(),
            appended_at: batch.appended_at,
        }
    }

    /// Makes room for `nodes` more nodes, so a backlog's appends never move the arrays (a growing
    /// array is copied to one twice its size, into fresh pages). Memory is only backed as it is
    /// written (or prefaulted just ahead of that).
    pub fn reserve(&mut self, nodes: usize) {
        let stride = self.stride();
        crate::huge::reserve(&mut self.level0, nodes * stride);
        crate::huge::reserve(&mut self.halves, nodes * self.half_words);
        self.codes.reserve(nodes);
        self.levels.reserve(nodes);
        self.deleted.reserve(nodes);
        if self.similarity == SimilarityFunction::Cosine {
            self.inverse_norms.reserve(nodes);
        }
    }

    /// Backs the room for the next `nodes` nodes' arrays with memory (see [`crate::huge::prefault`]).
    fn prefault(&self, nodes: usize) {
        crate::huge::prefault(&self.level0, nodes * self.stride());
        crate::huge::prefault(&self.halves, nodes * self.half_words);
        self.codes.prefault(nodes);
        self.vectors.prefault(nodes);
    }

    /// The last step: links the batch's nodes as they chose, on `threads` threads.
    pub fn link_batch(&mut self, linking: Linking, threads: usize) {
        assert_eq!(
            linking.appended_at,
            self.levels.len(),
            "a batch is linked in the graph it was appended to"
        );
        self.link_all(linking.chosen, threads);
    }

    /// Counts a node appended not live (see [`Hnsw::append_batch`]) as live: searches return it.
    pub fn make_live(&mut self, slot: usize) {
        if let Some(deleted) = self.deleted.get_mut(slot)
            && *deleted
        {
            *deleted = false;
            self.live += 1;
        }
    }
}

/// A batch's nodes, stored but not linked: each with its vector as ranked.
#[derive(Debug)]
pub struct Batch {
    nodes: Vec<(u32, Vec<f32>)>,
    /// The graph's node count once the batch was appended.
    appended_at: usize,
}

impl Batch {
    /// The batch's slots, in order.
    pub fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().map(|(node, _)| *node as usize)
    }
}

/// The neighbours a batch's nodes chose, to be linked.
#[derive(Debug)]
pub struct Linking {
    chosen: Vec<Chosen>,
    appended_at: usize,
}

/// `work` on each of `items` on up to `threads` threads, each taking the next item not yet taken (so a
/// thread that drew quick items takes more), the answers in the items' order: the outcome does not
/// depend on which thread ran what.
fn in_parallel<T: Sync, R: Send>(items: &[T], threads: usize, work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let lanes = threads.min(items.len()).max(1);
    if lanes == 1 {
        return items.iter().map(&work).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (work, next) = (&work, &next);
    let lane = move || -> Vec<(usize, R)> {
        let mut done = Vec::new();
        loop {
            let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(at) else {
                return done;
            };
            done.push((at, work(item)));
        }
    };
    // The kept threads take a lane each (see `crew`); where another step holds them, the step spawns
    // its own.
    let helped = std::sync::Mutex::new(Vec::new());
    let help = || {
        let done = lane();
        helped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(done);
    };
    let mut done: Vec<(usize, R)> = match crew::alongside(lanes - 1, &help, lane) {
        Some(mut done) => {
            done.extend(
                helped
                    .into_inner()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            done
        }
        None => std::thread::scope(|scope| {
            let others: Vec<_> = (1..lanes)
                .map(|_| scope.spawn(|| Hnsw::with_spare_scratch(lane)))
                .collect();
            let mut done = lane();
            for other in others {
                done.extend(
                    other
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                );
            }
            done
        }),
    };
    done.sort_unstable_by_key(|(at, _)| *at);
    done.into_iter().map(|(_, answer)| answer).collect()
}

/// The most nodes a batch of [`Hnsw::insert_many`] searches for at once. Larger batches spend less of
/// a build waiting at the start and end of each parallel step (128 built 2-9 % faster than 64 on two
/// threads of a Zen 2 instance, 5-7 % on Zen 4; 256 gained nothing: BENCHMARKS.md); the background
/// indexer holds the write lock only to append and to link a batch, not while it searches.
pub const INSERT_BATCH: usize = 128;

/// Nodes past the last whose room a batch's choices back with memory: the next two batches'.
const PREFAULT_AHEAD: usize = 2 * INSERT_BATCH;

/// A link to add back from a neighbour to a new node that chose it: (layer, neighbour, new node).
type BackLink = (u8, u32, u32);

/// How many neighbour lists a thread of [`Hnsw::link_all`] takes to prune at once.
const PRUNINGS_PER_CLAIM: usize = 32;

/// The neighbours a new node chose on each of its levels (see `Hnsw::choose`), from the top.
#[derive(Debug)]
struct Chosen {
    node: u32,
    layers: Vec<(u8, Vec<u32>)>,
}

/// `candidates` sorted, where those before `sorted` are sorted already (a search's, with a batch's peers
/// after them): the rest are sorted and merged in, which costs a fraction of sorting them all again
/// (the same order: `Near`'s is total).
fn merge_sorted(mut candidates: Vec<Near>, sorted: usize) -> Vec<Near> {
    candidates[sorted..].sort_unstable();
    let (left, right) = candidates.split_at(sorted);
    let mut merged = Vec::with_capacity(candidates.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() && j < right.len() {
        if left[i] <= right[j] {
            merged.push(left[i]);
            i += 1;
        } else {
            merged.push(right[j]);
            j += 1;
        }
    }
    merged.extend_from_slice(&left[i..]);
    merged.extend_from_slice(&right[j..]);
    merged
}

/// `node`'s factor among `inverse_norms` (1 where there are none: vectors ranked as they are).
#[inline]
fn scale_in(inverse_norms: &[f32], node: usize) -> f32 {
    inverse_norms.get(node).copied().unwrap_or(1.0)
}

/// 1 over `vector`'s norm, and 1 for a zero vector (which cosine ranks as it is, as `prepare` leaves it).
fn inverse_norm(vector: &[f32]) -> f32 {
    let length = norm(vector);
    if length == 0.0 { 1.0 } else { 1.0 / length }
}

impl DenseIndex for Hnsw {
    fn insert(&mut self, slot: usize, vector: &[f32]) {
        let prepared = self.append(slot, vector, true);
        let chosen = self.choose(slot as u32, &prepared, &[]);
        self.link_all(vec![chosen], 1);
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
        self.search_planned::<dyn Fn(usize) -> bool>(query, k, None)
    }

    fn memory_bytes(&self) -> usize {
        self.vectors.bytes()
            + self.inverse_norms.len() * 4
            + self.halves.len() * 4
            + self.codes.bytes()
            + self.level0.len() * 4
            + self.levels.len() * 2
            + self.regions.as_ref().map_or(0, partition::Regions::bytes)
            + self
                .upper
                .values()
                .map(|levels| levels.iter().map(|l| l.len() * 4 + 24).sum::<usize>())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests;
