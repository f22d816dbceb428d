//! Searching the graph: the beam search on one level (by 8-bit codes for a query, by half-precision
//! copies while building), exhaustive search, and the planner that picks between them for a filter.
//!
//! A filter that few records pass is answered exhaustively over the passing slots: exact, and cheaper
//! than a walk, which needs enough passing nodes near each step to move on. A filter that more records
//! pass walks the graph, scoring only passing nodes: a rejected neighbour is a bridge whose own
//! neighbours are taken in its place (the two-hop expansion of ACORN, Patel et al. 2024). The walk then
//! does about the work of an unfiltered search over the passing subgraph, and judges each node once. It
//! starts where the descent through the upper levels ends, near the query, and where the filter rejects
//! that node, also from the nearest passing nodes of the planner's sample, so a filter that rejects the
//! query's whole neighbourhood (one that keeps some clusters only) still has passing regions to walk in.
//! Where most records pass (three in four or more), rejected nodes are rarely in the way: the walk goes
//! through them as an unfiltered walk would, only not returning them, which costs fewer distances than
//! their bridges.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use quiver_core::index::SimilarityFunction;

use super::Hnsw;
use super::candidates::{Accept, Near, Probe, Start};
use super::read_ahead::Trial;
use super::scratch::{SCRATCH, Scratch};
use crate::dense::{ExactIndex, TopK};
use crate::score::{norm, prefetch};
use crate::slots::{Slots, bit};
use crate::{half, int8};

/// Below this share of passing records a walk, even through bridges, cannot find enough of them nearby.
const MIN_WALK_SELECTIVITY: f64 = 0.02;

/// How many nodes ahead a re-ranking loads the vectors it reads next (codes: see `read_ahead`).
const AHEAD: usize = 4;

/// Below [`MIN_WALK_SELECTIVITY`], a filter that the planner's whole sample finds passing at least this
/// share is searched through the regions, where the graph reads them, instead of scanned: a scan judges
/// every node, and a region search stops once the nearest regions stop improving its best. Measured on
/// the benchmark's clusters (100,000 x 384): a random 1 % filter 1.0x to 1.1x the unfiltered QPS through
/// the regions (recall@10 0.983) against a scan's 0.55x; a random 0.1 % filter reads nearly every
/// region, 0.5x against a scan's 0.7x.
const REGIONS_FROM_SHARE: f64 = 0.005;

/// Where the graph reads regions, a longer listing is searched through them, not scanned: a scan reads
/// each listed node's code (about 33 ns a node at 384 dimensions), a region search costs about as much
/// as a 4,096-node scan at any length. On the benchmark's clusters regions overtake a scan at about
/// 2,800 listed nodes (random) and 5,000 (whole clusters), and read a 10 % listing 5.0x and 1.5x faster.
const LISTED_SCAN_MOST: usize = 4_096;

/// A filtered walk that starts at a rejected node also starts from this many of the planner's sampled
/// passing nodes, the nearest.
const WALK_SEEDS: usize = 4;

/// How many nodes a walk over a metadata index's listing draws to find its seeds among (as many as the
/// planner's sample draws at most).
const SEED_DRAWS: usize = 1024;

/// From this share of passing records on, a filtered walk goes through rejected nodes as an unfiltered
/// walk would instead of bridging them (see [`Accept::Mostly`]): at 90 % the bridges cost a third of
/// the QPS and some recall; at 50 % walking through rejected nodes costs more than bridging them.
const MOSTLY_PASSING: f64 = 0.75;

/// How a walk treats a filter that `share` of the live records pass.
fn walking(filter: &dyn Fn(usize) -> bool, share: f64) -> Accept<'_> {
    if share >= MOSTLY_PASSING {
        Accept::Mostly(filter)
    } else {
        Accept::Filter(filter)
    }
}

/// The node a sample's `draw` looks at among `nodes`: pseudo-random positions (a multiplicative hash of
/// the draw number), since an evenly strided sample would alias with filters that follow insertion
/// order.
fn sampled_node(draw: u64, nodes: usize) -> usize {
    ((draw.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize * nodes) >> 32
}

impl Hnsw {
    /// Beam search on one level from `start`; up to `ef` accepted nodes, nearest first, by the
    /// distance `probe` ranks by. Where `accept` rejects the start's entry, the search also
    /// starts from the nearest few of its seeds (nodes known to pass).
    pub(super) fn search_level(
        &self,
        probe: Probe<'_>,
        start: Start<'_>,
        ef: usize,
        level: u8,
        accept: Accept<'_>,
    ) -> Vec<Near> {
        match accept {
            Accept::Any => self.beam(probe, start, ef, level, |_| true, false),
            Accept::Live => self.beam(
                probe,
                start,
                ef,
                level,
                |node| !self.deleted[node as usize],
                false,
            ),
            Accept::Filter(filter) | Accept::Mostly(filter) => self.beam(
                probe,
                start,
                ef,
                level,
                |node| !self.deleted[node as usize] && filter(node as usize),
                matches!(accept, Accept::Filter(_)),
            ),
        }
    }

    fn beam(
        &self,
        probe: Probe<'_>,
        Start { entry, seeds }: Start<'_>,
        ef: usize,
        level: u8,
        accept: impl Fn(u32) -> bool,
        through_bridges: bool,
    ) -> Vec<Near> {
        // A step takes every passing neighbour, then at most `m` more through bridges (ACORN-1 truncates
        // its expanded neighbourhood to `m`).
        let through_limit = self.params.m;
        SCRATCH.with(|cell| {
            let scratch = &mut *cell.borrow_mut();
            let Scratch {
                visited,
                verdicts,
                candidates,
                results,
                fresh,
                bridges,
                ..
            } = scratch;
            visited.reset(self.levels.len());
            if through_bridges {
                verdicts.reset(self.levels.len());
            }
            let mut accept = |node: u32| {
                if through_bridges {
                    verdicts.judge(node, &accept)
                } else {
                    accept(node)
                }
            };
            candidates.clear();
            results.clear();
            visited.first_visit(entry.1);
            candidates.push(Reverse(entry));
            if accept(entry.1) {
                results.push(entry);
            } else if !seeds.is_empty() {
                // The entry may sit in a neighbourhood the filter rejects whole (filters that follow
                // the clusters), where a walk finds no passing node to move on: start from the
                // nearest seeds too, which lie in passing regions.
                let mut nearest: Vec<Near> = seeds
                    .iter()
                    .map(|&node| Near(self.probe_distance(probe, node), node))
                    .collect();
                nearest.sort_unstable();
                for &seed in nearest.iter().take(WALK_SEEDS) {
                    if visited.first_visit(seed.1) {
                        candidates.push(Reverse(seed));
                        if accept(seed.1) {
                            results.push(seed);
                        }
                    }
                }
                while results.len() > ef {
                    results.pop();
                }
            }
            let mut worst = if results.len() >= ef {
                results.peek().map_or(f32::INFINITY, |w| w.0)
            } else {
                f32::INFINITY
            };
            while let Some(Reverse(nearest)) = candidates.pop() {
                if nearest.0 > worst {
                    break;
                }
                // The nearest candidate left is likely expanded next: its list loads meanwhile.
                if level == 0
                    && let Some(Reverse(next)) = candidates.peek()
                {
                    self.prefetch_neighbours(next.1);
                }
                // Gather the unvisited neighbours, then score them through `probe_distances`, which
                // loads their codes a few nodes ahead (see `read_ahead`).
                fresh.clear();
                bridges.clear();
                // The node's passing neighbourhood: passing neighbours, then up to `through_limit`
                // passing neighbours of rejected ones (visited or not), as if the graph held only passing
                // nodes.
                for &neighbour in self.neighbours(nearest.1, level) {
                    if through_bridges && !accept(neighbour) {
                        bridges.push(neighbour);
                        continue;
                    }
                    if visited.first_visit(neighbour) {
                        fresh.push(neighbour);
                    }
                }
                let mut passing = 0;
                for &bridge in bridges.iter() {
                    if passing >= through_limit {
                        break;
                    }
                    for &next in self.neighbours(bridge, level) {
                        if passing >= through_limit {
                            break;
                        }
                        if accept(next) {
                            passing += 1;
                            if visited.first_visit(next) {
                                fresh.push(next);
                            }
                        }
                    }
                }
                for Near(distance, neighbour) in self.probe_distances(probe, fresh) {
                    if distance < worst {
                        candidates.push(Reverse(Near(distance, neighbour)));
                        if through_bridges || accept(neighbour) {
                            results.push(Near(distance, neighbour));
                            if results.len() > ef {
                                results.pop();
                            }
                            if results.len() >= ef {
                                worst = results.peek().map_or(f32::INFINITY, |w| w.0);
                            }
                        }
                    }
                }
            }
            let mut sorted: Vec<Near> = results.drain().collect();
            sorted.sort_unstable();
            sorted
        })
    }

    /// Exhaustive search over the live nodes that `accept` passes: the passing nodes are gathered first,
    /// then scored by their 8-bit codes, loaded a few nodes ahead. Only nodes whose code distance lies
    /// within twice the codes' error (six standard deviations of their rounding, as a walk takes it) of
    /// the `k`-th best code distance can be among the `k` best; they (and at least the `2 k` best by
    /// code) are ranked by their half-precision copies and re-ranked with f32 vectors as after a walk,
    /// where the half-precision band covers runs of near ties. The filter judges each node once, sixteen
    /// verdicts gathered in a mask before any is acted on, and only a passing node's deletion looked up
    /// (a removed node may be judged): a call a node and a branch per sixteen, 1.5x the QPS of judging
    /// and branching node by node for a 0.1 % filter of 100,000 nodes.
    fn exact(&self, query: &[f32], k: usize, accept: impl Fn(usize) -> bool) -> Vec<(usize, f32)> {
        let mut passing = Vec::new();
        for start in (0..self.deleted.len()).step_by(16) {
            let mut mask = (start..(start + 16).min(self.deleted.len())).fold(0_u32, |mask, node| {
                mask | (u32::from(accept(node)) << (node - start))
            });
            while mask != 0 {
                let node = start + mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if !self.deleted[node] {
                    passing.push(node as u32);
                }
            }
        }
        self.exact_among(query, k, passing.into_iter())
    }

    /// Exhaustive search over `passing` (live nodes), as [`Hnsw::exact`].
    fn exact_among(
        &self,
        query: &[f32],
        k: usize,
        passing_nodes: impl Iterator<Item = u32>,
    ) -> Vec<(usize, f32)> {
        let coded = int8::Query::new(query);
        let probe = Probe::Int8(&coded);
        let found = SCRATCH.with(|cell| {
            let Scratch {
                fresh: passing,
                scored,
                ..
            } = &mut *cell.borrow_mut();
            passing.clear();
            passing.extend(passing_nodes);
            scored.clear();
            let mut head = BinaryHeap::with_capacity(2 * k + 1);
            for near in self.probe_distances(probe, passing) {
                scored.push(near);
                keep_head(&mut head, 2 * k, near);
            }
            self.within_band(&coded, k, head, scored)
        });
        if found.is_empty() {
            return Vec::new();
        }
        self.rerank_half(query, &half::pad_query(query), k, found)
    }

    /// Ranks the nodes a region search scored by their codes (`scored`, and `head` as [`keep_head`]
    /// keeps it) as [`Hnsw::exact_among`] does.
    pub(super) fn finish_scan(
        &self,
        query: &[f32],
        coded: &int8::Query,
        k: usize,
        head: BinaryHeap<Near>,
        scored: &[Near],
    ) -> Vec<(usize, f32)> {
        let found = self.within_band(coded, k, head, scored);
        if found.is_empty() {
            return Vec::new();
        }
        self.rerank_half(query, &half::pad_query(query), k, found)
    }

    /// Of the nodes scored by their codes (`scored`, every one; `head`, the `2 k` best of them as
    /// [`keep_head`] keeps them), the `2 k` best and any others within twice the codes' error of the
    /// `k`-th best: those that can be among the `k` best. The head kept as nodes are scored spares two
    /// selections over all of them, a tenth of a whole-cluster region search's samples (2,079 scored).
    fn within_band(
        &self,
        coded: &int8::Query,
        k: usize,
        head: BinaryHeap<Near>,
        scored: &[Near],
    ) -> Vec<Near> {
        let head = head.into_sorted_vec();
        if k == 0 || head.is_empty() {
            return Vec::new();
        }
        let within = head[k.min(head.len()) - 1].0 + 2.0 * self.code_error(coded);
        // Where the band holds `2 k` or more, the `2 k` best are among them: one pass finds all.
        // Where it holds fewer, they are all among the `2 k` best.
        let band: Vec<Near> = scored.iter().filter(|near| near.0 < within).copied().collect();
        if band.len() >= head.len() { band } else { head }
    }

    /// The `k` best of `found` (by half-precision distance, or any order up to `2 k`) by f32 distance.
    /// The first `2 k` are always re-ranked; after them, each next one while its half-precision
    /// distance is within what rounding to half precision can get wrong of the `k`-th best so far, so a
    /// run of near ties (near-parallel vectors) cannot hide the true nearest behind its look-alikes.
    fn rerank(&self, query: &[f32], k: usize, found: &[Near]) -> Vec<(usize, f32)> {
        // Candidates past the first `2 k` are loaded `AHEAD` ahead, while they may still be needed.
        let load = |near: &Near| prefetch(self.vector(near.1));
        found.iter().take(2 * k + AHEAD).for_each(load);
        let error = self.half_error_bound(query);
        let mut best = TopK::new(k);
        for (rank, near) in found.iter().enumerate() {
            if rank >= 2 * k && best.threshold().is_some_and(|worst| near.0 - error >= -worst) {
                break;
            }
            if rank >= 2 * k
                && let Some(later) = found.get(rank + AHEAD)
            {
                load(later);
            }
            best.offer(near.1 as usize, -self.distance(query, near.1));
        }
        best.into_sorted()
    }

    /// How far a half-precision distance from `query` can be from the f32 one, for any node. Rounding
    /// to half precision changes each coordinate by at most 2^-11 of itself (2^-10 here, to be safe),
    /// so a dot product moves by at most that share of |q| |x| (Cauchy-Schwarz), and a squared
    /// distance by twice that share of |q - x| |x|; values below half precision's normal range add
    /// at most 2^-24 each.
    fn half_error_bound(&self, query: &[f32]) -> f32 {
        const SHARE: f32 = 1.0 / 1024.0;
        let (query_norm, largest) = (norm(query), self.max_norm);
        let subnormal = self.dimension as f32 * (query_norm + largest) / 16_777_216.0;
        match self.similarity {
            SimilarityFunction::Cosine | SimilarityFunction::DotProduct => {
                SHARE * query_norm * largest + subnormal
            }
            SimilarityFunction::Euclidean => 2.0 * SHARE * (query_norm + largest) * largest + subnormal,
        }
    }

    /// Up to `k` nodes that `accept` passes, nearest first, as [`crate::dense::DenseIndex::search`],
    /// with `accept` of its own type: a scan or a region search that judges node after node calls it
    /// inline (a cheap filter's 0.1 % scan of 100,000 nodes took 41 us a query where the call through
    /// a pointer took 126 us; BENCHMARKS.md). The namespace's judge comes this way.
    pub fn search_with<F: Fn(usize) -> bool>(
        &self,
        query: &[f32],
        k: usize,
        accept: &F,
    ) -> Vec<(usize, f32)> {
        self.search_planned(query, k, Some(accept))
    }

    /// Searches with an optional filter: without one, no selectivity estimate is needed. Generic over
    /// the filter's type, so that a scan and a region search, which judge node after node, call a
    /// filter of a known type inline rather than through a pointer (a `dyn` filter works as before).
    pub(super) fn search_planned<F: Fn(usize) -> bool + ?Sized>(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<&F>,
    ) -> Vec<(usize, f32)> {
        if k == 0 || self.live == 0 {
            return Vec::new();
        }
        // No more than the live nodes can be found, whatever count was asked for.
        let k = k.min(self.live);
        let query = ExactIndex::prepare(self.similarity, query);
        let ef = self.params.ef_search.max(k);
        if self.live <= self.params.exact_below {
            return self.exact(&query, k, |slot| filter.is_none_or(|f| f(slot)));
        }
        // Passing nodes the planner's sample found: seeds for a filtered walk (see `search_level`).
        let mut sampled = Vec::new();
        // The walk and the planner's sample judge few nodes: they take the filter through a pointer.
        let judge = filter.map(|filter| move |node: usize| filter(node));
        let accept = match judge.as_ref() {
            None => Accept::Live,
            Some(filter) => {
                // The planner: exhaustive search costs one distance per passing record; a walk costs
                // about `ef * m` distances whatever the filter, once enough records pass to walk on.
                let walk_from = MIN_WALK_SELECTIVITY.max((ef * self.params.m) as f64 / self.live as f64);
                // Where regions can serve a filter that passes too few to walk, its share below the
                // walk's is measured on the whole sample: a scan would judge every node anyway.
                let regions = self.regions_readable();
                let selectivity = self.selectivity(filter, walk_from, regions, &mut sampled);
                let passing = selectivity * self.live as f64;
                if selectivity < MIN_WALK_SELECTIVITY || passing <= (ef * self.params.m) as f64 {
                    if regions
                        && selectivity >= REGIONS_FROM_SHARE
                        && let Some(found) = self.search_regions(&query, k, |node| filter(node as usize))
                    {
                        return found;
                    }
                    return self.exact(&query, k, filter);
                }
                // A filter that keeps some regions of the space only (whole clusters) can leave the
                // query's neighbourhood rejected, where a walk finds passing nodes only through
                // rejected ones; the regions find them by their centres (see `hnsw::regions`), and a
                // filter that keeps records at random stops after its own region and a few more.
                if selectivity < MOSTLY_PASSING
                    && let Some(found) = self.search_regions(&query, k, |node| filter(node as usize))
                {
                    return found;
                }
                walking(filter, selectivity)
            }
        };
        self.walk(&query, k, ef, accept, &sampled)
    }

    /// Searches the live nodes that `accept` passes, knowing that only nodes in `listed` can pass (as
    /// a metadata index tells; it may hold removed nodes, and nodes past the graph's end). The planner
    /// then counts instead of sampling. A scan costs one code distance per listed node, read in order;
    /// a walk costs about `ef * m` distances at random, and about that over the listing's share where
    /// it must go through rejected nodes (bridges). So a listing is scanned while its length times its
    /// share stays within `ef * m`: a 10 % listing up to 10 times a walk's work, a 50 % one up to
    /// twice, and a 90 % one is walked almost as if unfiltered. A walk tests membership in a bitmap of
    /// the listing before `accept`, which judges only listed nodes, and not at all where `exact` says
    /// every listed live node passes. With regions, a listing is scanned up to `LISTED_SCAN_MOST` nodes.
    pub fn search_listed(
        &self,
        query: &[f32],
        k: usize,
        listed: &Slots<'_>,
        exact: bool,
        accept: &dyn Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        if k == 0 || self.live == 0 {
            return Vec::new();
        }
        // No more than the live nodes can be found, whatever count was asked for.
        let k = k.min(self.live);
        let query = ExactIndex::prepare(self.similarity, query);
        let ef = self.params.ef_search.max(k);
        let nodes = self.levels.len();
        let passes = |node: u32| {
            (node as usize) < nodes && !self.deleted[node as usize] && (exact || accept(node as usize))
        };
        let share = listed.len() as f64 / self.live as f64;
        let scanned = if self.regions_readable() {
            listed.len() <= LISTED_SCAN_MOST
        } else {
            share < MIN_WALK_SELECTIVITY || listed.len() as f64 * share <= (ef * self.params.m) as f64
        };
        if self.live <= self.params.exact_below || scanned {
            return self.exact_among(&query, k, listed.iter().filter(|&node| passes(node)));
        }
        let members = listed.bitmap();
        let filter = |node: usize| bit(&members, node as u32) && (exact || accept(node));
        if share < MOSTLY_PASSING
            && let Some(found) = self.search_regions(&query, k, |node| filter(node as usize))
        {
            return found;
        }
        // Seeds for a walk that starts in a rejected neighbourhood, as the planner's sample gives them:
        // listed nodes at pseudo-random positions. They are not judged: a seed is only a place to walk
        // from, and the walk judges it before returning it.
        let seeds: Vec<u32> = (0..SEED_DRAWS as u64)
            .map(|draw| sampled_node(draw, nodes) as u32)
            .filter(|&node| bit(&members, node) && !self.deleted[node as usize])
            .collect();
        self.walk(&query, k, ef, walking(&filter, share), &seeds)
    }

    /// The walk: a greedy descent through the upper levels and a beam search on level 0 from where it
    /// ends (and from the nearest `seeds` where `accept` rejects that node), both by the 8-bit codes;
    /// then the beam ranked by the half-precision copies, and the f32 re-ranking.
    fn walk(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        accept: Accept<'_>,
        seeds: &[u32],
    ) -> Vec<(usize, f32)> {
        let Some(entry) = self.entry else {
            return Vec::new();
        };
        let _timed = Trial::begin(self.codes.bytes());
        let padded = half::pad_query(query);
        let coded = int8::Query::new(query);
        let probe = Probe::Int8(&coded);
        let mut current = Near(self.probe_distance(probe, entry), entry);
        for level in (1..=self.max_level).rev() {
            current = self.greedy(probe, current, level);
        }
        let start = Start {
            entry: current,
            seeds,
        };
        let found = self.search_level(probe, start, ef, 0, accept);
        // A full beam whose every node lies within twice the codes' error of the first may be a run of
        // near ties longer than the beam, whose order the codes cannot tell, and which may have left
        // out the best node the walk scored (each node kept scored below it by its code, and above
        // its distance less the error). Such a walk is done again by the half-precision copies,
        // whose band the re-ranking covers. Any other beam is ranked by the halves, then re-ranked.
        let flat = found.len() >= ef
            && match (found.first(), found.last()) {
                (Some(first), Some(last)) => last.0 - first.0 < 2.0 * self.code_error(&coded),
                _ => false,
            };
        if !flat {
            return self.rerank_half(query, &padded, k, found);
        }
        let entry = Near(self.traversal_distance(&padded, start.entry.1), start.entry.1);
        let found = self.search_level(Probe::Half(&padded), Start { entry, seeds }, ef, 0, accept);
        self.rerank(query, k, &found)
    }

    /// How far a distance by the codes strays from the f32 one (see [`int8::Query::typical_error`]).
    pub(super) fn code_error(&self, coded: &int8::Query) -> f32 {
        let error = coded.typical_error(self.codes.largest_scale());
        match self.similarity {
            SimilarityFunction::Cosine | SimilarityFunction::DotProduct => error,
            SimilarityFunction::Euclidean => 2.0 * error,
        }
    }

    /// [`Hnsw::rerank`] of `found` (ranked by their codes) after ranking them by their half-precision
    /// copies, since the re-ranking's band is what half precision gets wrong. Loads the copies a few
    /// nodes ahead; skipped where `found` holds no more than the `2 k` always re-ranked (ef 16 for 10).
    fn rerank_half(
        &self,
        query: &[f32],
        padded: &[f32],
        k: usize,
        mut found: Vec<Near>,
    ) -> Vec<(usize, f32)> {
        if found.len() <= 2 * k {
            return self.rerank(query, k, &found);
        }
        found
            .iter()
            .take(AHEAD)
            .for_each(|near| prefetch(self.packed(near.1)));
        for position in 0..found.len() {
            if let Some(later) = found.get(position + AHEAD) {
                prefetch(self.packed(later.1));
            }
            let node = found[position].1;
            found[position].0 = self.traversal_distance(padded, node);
        }
        found.sort_unstable();
        self.rerank(query, k, &found)
    }

    /// The share of live vectors that pass `accept`, estimated from a sample of up to 1,024 slots. The
    /// sample stops early, from 128 slots on, once the share is clearly (three standard errors) above or
    /// below `decides`, the share where the planner turns from scanning to walking: a filter is judged
    /// on far fewer slots when the choice is plain, which matters when judging one reads metadata.
    /// The sampled nodes that pass are added to `passed`. With `whole_below`, a share clearly below
    /// `decides` does not stop the sample (the planner then tells a scan from a region search).
    fn selectivity(
        &self,
        accept: &dyn Fn(usize) -> bool,
        decides: f64,
        whole_below: bool,
        passed: &mut Vec<u32>,
    ) -> f64 {
        const SAMPLE: usize = 1024;
        const FIRST_LOOK: usize = 128;
        let nodes = self.levels.len();
        let (mut live, mut passing) = (0_usize, 0_usize);
        let draws = SAMPLE.min(nodes);
        for draw in 0..draws as u64 {
            let node = if draws == nodes {
                draw as usize
            } else {
                sampled_node(draw, nodes)
            };
            if !self.deleted[node] {
                live += 1;
                if accept(node) {
                    passing += 1;
                    passed.push(node as u32);
                }
            }
            if live >= FIRST_LOOK && live % 64 == 0 {
                let share = passing as f64 / live as f64;
                let error = (share * (1.0 - share) / live as f64).sqrt();
                if share - 3.0 * error > decides || (!whole_below && share + 3.0 * error < decides) {
                    break;
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

/// Keeps `near` in `head` (the `room` best scored so far, the worst on top) where it is among them,
/// and says whether it is.
pub(super) fn keep_head(head: &mut BinaryHeap<Near>, room: usize, near: Near) -> bool {
    if head.len() < room {
        head.push(near);
        return true;
    }
    match head.peek_mut() {
        Some(mut worst) if near < *worst => {
            *worst = near;
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_kept_while_scoring_is_the_best_scored_whatever_their_order() {
        // Distances with ties (broken by the node, as `Near` orders), in an order that is neither
        // nearest nor farthest first; fewer nodes than room, and more.
        for count in [0_u32, 3, 20, 21, 500] {
            let scored: Vec<Near> = (0..count)
                .map(|node| Near((node.wrapping_mul(2_654_435_761) % 97) as f32 - 40.0, node))
                .collect();
            let mut head = BinaryHeap::new();
            for &near in &scored {
                keep_head(&mut head, 20, near);
            }
            let mut sorted = scored.clone();
            sorted.sort_unstable();
            sorted.truncate(20);
            assert_eq!(head.into_sorted_vec(), sorted, "{count} scored");
        }
    }

    #[test]
    fn the_planner_sample_stops_once_the_choice_is_plain() {
        use quiver_core::index::SimilarityFunction;

        use crate::dense::DenseIndex;
        use crate::hnsw::HnswParams;

        let params = HnswParams {
            exact_below: 0,
            ..HnswParams::default()
        };
        let mut graph = Hnsw::new(SimilarityFunction::Cosine, 4, params);
        for slot in 0..5_000 {
            graph.insert(slot, &[slot as f32 + 1.0, 1.0, 0.5, 0.25]);
        }
        let judged = std::cell::Cell::new(0);
        let counted = |passes: bool| {
            judged.set(judged.get() + 1);
            passes
        };
        let every = graph.selectivity(&|_| counted(true), 0.05, false, &mut Vec::new());
        assert_eq!(
            (every, judged.replace(0)),
            (1.0, 128),
            "all pass: decided at the first look"
        );
        let none = graph.selectivity(&|_| counted(false), 0.05, false, &mut Vec::new());
        assert_eq!(
            (none, judged.replace(0)),
            (0.0, 128),
            "none pass: decided at the first look"
        );
        let none = graph.selectivity(&|_| counted(false), 0.05, true, &mut Vec::new());
        assert_eq!(
            (none, judged.replace(0)),
            (0.0, 1_024),
            "none pass, and the share below is wanted: sampled whole"
        );
        let near = graph.selectivity(&|slot| counted(slot % 20 == 0), 0.05, false, &mut Vec::new());
        assert_eq!(
            judged.get(),
            1_024,
            "a share near where the choice turns is sampled whole"
        );
        assert!((0.03..0.07).contains(&near), "{near}");
    }

    #[test]
    fn a_walk_where_most_records_pass_judges_only_nodes_near_enough_to_return() {
        use crate::hnsw::tests::{scattered, walked_graph};

        let (data, mut graph) = walked_graph();
        graph.set_ef_search(64);
        // Nine in ten of the 5,000 nodes listed; each must still be judged (`exact` is false).
        let listed: Vec<u32> = (0..5_000_u32)
            .filter(|&slot| !scattered(slot as usize, 10))
            .collect();
        let listed = Slots::List(listed.as_slice().into());
        let judged = std::cell::RefCell::new(std::collections::HashSet::new());
        let judge = |slot: usize| {
            judged.borrow_mut().insert(slot);
            !scattered(slot, 10)
        };
        let mut through_rejected = 0;
        for query in data.iter().step_by(500) {
            let hits = graph.search_listed(query, 10, &listed, false, &judge);
            assert_eq!(hits.len(), 10);
            through_rejected += judged.take().len();
        }
        // The same walks bridging rejected nodes judge every neighbour of each node they expand.
        let mut bridging = 0;
        for query in data.iter().step_by(500) {
            let prepared = ExactIndex::prepare(graph.similarity, query);
            let hits = graph.walk(&prepared, 10, 64, Accept::Filter(&judge), &[]);
            assert_eq!(hits.len(), 10);
            bridging += judged.take().len();
        }
        assert!(
            2 * through_rejected < bridging,
            "judged {through_rejected} walking through rejected nodes, {bridging} bridging them"
        );
    }
}
