//! The sparse inverted index of a namespace: for each dimension, the slots whose sparse vector has it,
//! with the value, and how many live records have it (for IDF).
//!
//! A record's score adds its products with the query in ascending dimension order, which is the order
//! `score::sparse_dot` adds them in: scores are bitwise the ones a scan of every record gives.
//!
//! Top k stops early where it safely can (no filter, and no product that takes away): terms are added
//! into accumulators strongest first, by the most each list can add, and once what the lists left could
//! add together is below the k-th best running total, no record first met in them could make the top k.
//! The lists left are then only read for the records whose running totals could still make it (looked
//! up, a galloping search in slot order, where they are few for the list; otherwise the list is read
//! through, counting only their postings), each list narrowing them further, and the scores of the few
//! left are added again in dimension order. With BM25 weights the strongest terms are the rare ones, so
//! the longest lists are the ones read for contenders only. Otherwise a query adds term at a time, in
//! dimension order. Accumulators are borrowed from a pool, so a query neither allocates nor clears one
//! per slot. Slots are never reused, so a removed record's postings are skipped by the map of live slots
//! and dropped when they become half of all.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::dense::TopK;
use crate::record::SparseVector;

/// One dimension's postings in slot order, and the extremes of their values (bounds: a removed
/// record's value stays counted until the next compaction, which only loosens them).
#[derive(Debug, Default)]
struct List {
    entries: Vec<(u32, f32)>,
    lowest: f32,
    highest: f32,
}

impl List {
    fn push(&mut self, slot: u32, value: f32) {
        if self.entries.is_empty() {
            (self.lowest, self.highest) = (value, value);
        } else {
            self.lowest = self.lowest.min(value);
            self.highest = self.highest.max(value);
        }
        self.entries.push((slot, value));
    }

    /// Keeps the postings of live slots, and tightens the extremes to them.
    fn retain_live(&mut self, live: &[bool]) {
        self.entries
            .retain(|(slot, _)| live.get(*slot as usize).copied().unwrap_or(false));
        let values = self.entries.iter().map(|(_, value)| *value);
        self.lowest = values.clone().fold(f32::INFINITY, f32::min);
        self.highest = values.fold(f32::NEG_INFINITY, f32::max);
    }
}

/// Postings and document frequencies of one namespace's sparse vectors.
#[derive(Debug, Default)]
pub(crate) struct Postings {
    lists: HashMap<u32, List>,
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

/// Running totals by slot; a slot's total counts only when its stamp is this query's. `found` lists the
/// slots stamped by this query, and `kept` is room to rank their totals.
#[derive(Debug, Default)]
struct Scratch {
    totals: Vec<f32>,
    stamps: Vec<u32>,
    stamp: u32,
    found: Vec<u32>,
    kept: Vec<f32>,
}

/// A list left after the strongest terms is looked up contender by contender (sorted, then a galloping
/// search each) where it holds more than this many postings a contender, and read through otherwise
/// (each posting's stamp tells whether its slot is still a contender). Measured on the sparse benchmark
/// (100,000 documents, queries of 2 to 6 terms, one thread): a query kept about 1,070 contenders for
/// lists of about 7,700 postings in all, and spent 15 us choosing and sorting them and 16 us looking
/// them up (of 71 us a query). QPS with every list looked up: 14,100 to 15,600; with this share 4:
/// 18,600 to 19,100; 16: 19,000 to 20,000; 64: 20,200 to 21,100; 256: 19,400 to 19,800; every list
/// read through: 19,400 to 20,500. A few contenders for a long list are still looked up.
const LOOKUP_SHARE: usize = 64;

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
            self.lists.entry(*index).or_default().push(slot, *value);
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
                list.retain_live(live);
                !list.entries.is_empty()
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

    /// The best `k` live records that share a dimension with `query` (sorted by index) and that `accept`
    /// keeps (all, without it), by the inner product with each query value weighted: `(rank, score)`
    /// best first, where `rank(slot)` is the record's place in insertion order. Of equal scores the lower
    /// rank wins.
    pub(crate) fn top(
        &self,
        query: &SparseVector,
        weight: impl Fn(u32) -> f32,
        k: usize,
        rank: impl Fn(usize) -> usize,
        accept: Option<&dyn Fn(usize) -> bool>,
    ) -> Vec<(usize, f32)> {
        let terms: Vec<Term<'_>> = query
            .indices
            .iter()
            .zip(&query.values)
            .filter_map(|(index, value)| {
                let list = self.lists.get(index)?;
                Some(Term::new(list, value * weight(*index)))
            })
            .collect();
        let mut best = TopK::new(k);
        // A filter could leave out the records that set the bar, and a product that takes away makes a
        // running total no floor: then every record is scored.
        if let Some(accept) = accept {
            for (slot, score) in self.term_at_a_time(&terms) {
                if accept(slot) {
                    best.offer(rank(slot), score);
                }
            }
        } else if k == 0 || terms.iter().any(|term| term.least < 0.0) {
            for (slot, score) in self.term_at_a_time(&terms) {
                best.offer(rank(slot), score);
            }
        } else {
            for slot in self.contenders(&terms, k).slots {
                best.offer(rank(slot as usize), exact_score(&terms, slot));
            }
        }
        best.into_sorted()
    }

    /// The live slots that could make the top `k` of `terms` (in dimension order, no product below 0):
    /// every slot whose score could reach the `k`-th best, found adding the strongest terms first and
    /// stopping once the terms left could not lift a slot not met yet that far.
    fn contenders(&self, terms: &[Term<'_>], k: usize) -> Contenders {
        let mut strongest_first: Vec<&Term<'_>> = terms.iter().collect();
        strongest_first.sort_by(|a, b| b.most.total_cmp(&a.most));
        let reach: f64 = terms.iter().map(|term| term.most).sum();
        // Running totals add in another order than the final scores and round differently, by far less
        // than this share of what all terms can add.
        let margin = 1e-4 * reach + f64::from(f32::MIN_POSITIVE);
        let mut left = reach;
        self.with_scratch(|scratch| {
            let Scratch {
                totals,
                stamps,
                stamp,
                found,
                kept,
            } = scratch;
            let slots = self.live.len();
            let mut highest = f32::NEG_INFINITY;
            let mut bar = f64::NEG_INFINITY;
            // Where the strongest terms were enough: the terms after it are looked up, not read.
            let mut cut = None;
            for (position, term) in strongest_first.iter().enumerate() {
                for &(slot, document) in term.entries {
                    let at = slot as usize;
                    if at >= slots {
                        continue;
                    }
                    let total = if stamps[at] == *stamp {
                        totals[at] + term.weighted * document
                    } else {
                        stamps[at] = *stamp;
                        found.push(slot);
                        term.weighted * document
                    };
                    totals[at] = total;
                    highest = highest.max(total);
                }
                left = (left - term.most).max(0.0);
                let is_last = position + 1 == strongest_first.len();
                // The k-th best running total is worth finding only when the terms left could not lift
                // even the best one past it.
                if !is_last && left + margin < f64::from(highest) {
                    bar = kth_best(found, totals, &self.live, k, kept);
                    if left + margin < bar {
                        cut = Some(position);
                        break;
                    }
                }
            }
            let could_reach = |totals: &[f32], slot: &u32, left: f64, bar: f64| {
                f64::from(totals[*slot as usize]) + left + margin >= bar
            };
            let Some(cut) = cut else {
                let bar = kth_best(found, totals, &self.live, k, kept);
                return Contenders {
                    slots: found
                        .iter()
                        .copied()
                        .filter(|slot| self.live[*slot as usize] && could_reach(totals, slot, 0.0, bar))
                        .collect(),
                    lists_read: terms.len(),
                };
            };
            // The lists left add only the contenders' postings, strongest first; each narrows what the
            // rest could add, and so the contenders. A slot stays a contender while its stamp is this
            // query's: the others found lose it.
            let mut contenders: Vec<u32> = Vec::with_capacity(found.len());
            for &slot in found.iter() {
                let at = slot as usize;
                if self.live[at] && could_reach(totals, &slot, left, bar) {
                    contenders.push(slot);
                } else {
                    stamps[at] = stamp.wrapping_sub(1);
                }
            }
            let mut sorted = false;
            for term in &strongest_first[cut + 1..] {
                if contenders.len() * LOOKUP_SHARE < term.entries.len() {
                    // Few contenders for a long list: each is looked up, in slot order.
                    if !sorted {
                        contenders.sort_unstable();
                        sorted = true;
                    }
                    let mut at = 0;
                    for &slot in &contenders {
                        at += first_at_or_after(&term.entries[at..], slot);
                        if let Some((found_slot, document)) = term.entries.get(at)
                            && *found_slot == slot
                        {
                            totals[slot as usize] += term.weighted * document;
                        }
                    }
                } else {
                    // Otherwise the list is read through, its postings counted for contenders only:
                    // cheaper than sorting them to look each up.
                    for &(slot, document) in term.entries {
                        let at = slot as usize;
                        if at < slots && stamps[at] == *stamp {
                            totals[at] += term.weighted * document;
                        }
                    }
                }
                left = (left - term.most).max(0.0);
                bar = kth_best(&contenders, totals, &self.live, k, kept);
                contenders.retain(|slot| {
                    let reaches = could_reach(totals, slot, left, bar);
                    if !reaches {
                        stamps[*slot as usize] = stamp.wrapping_sub(1);
                    }
                    reaches
                });
            }
            Contenders {
                slots: contenders,
                lists_read: cut + 1,
            }
        })
    }

    /// Every live record that shares a dimension with `terms`, and its score, added term at a time.
    fn term_at_a_time(&self, terms: &[Term<'_>]) -> Vec<(usize, f32)> {
        self.with_scratch(|scratch| {
            let slots = self.live.len();
            for term in terms {
                for &(slot, document) in term.entries {
                    let at = slot as usize;
                    if at >= slots {
                        continue;
                    }
                    if scratch.stamps[at] == scratch.stamp {
                        scratch.totals[at] += term.weighted * document;
                    } else {
                        scratch.stamps[at] = scratch.stamp;
                        // As a scan adds: from 0.
                        scratch.totals[at] = 0.0 + term.weighted * document;
                        scratch.found.push(slot);
                    }
                }
            }
            scratch
                .found
                .iter()
                .map(|slot| *slot as usize)
                .filter(|at| self.live[*at])
                .map(|at| (at, scratch.totals[at]))
                .collect()
        })
    }

    /// Runs `work` with accumulators for every slot, stamped for this query, borrowed from the pool.
    fn with_scratch<T>(&self, work: impl FnOnce(&mut Scratch) -> T) -> T {
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
        scratch.found.clear();
        let answer = work(&mut scratch);
        if let Ok(mut pool) = self.scratch.lock() {
            pool.push(scratch);
        }
        answer
    }
}

/// What [`Postings::contenders`] found: the slots to score, and how many of the query's lists it read
/// through (the others it only looked up).
struct Contenders {
    slots: Vec<u32>,
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "the tests check through it that lists are left unread")
    )]
    lists_read: usize,
}

/// The `k`-th best running total of the live slots in `found` (`kept` is room to find it in), or
/// minus infinity when fewer than `k` are live.
fn kth_best(found: &[u32], totals: &[f32], live: &[bool], k: usize, kept: &mut Vec<f32>) -> f64 {
    kept.clear();
    kept.extend(
        found
            .iter()
            .map(|slot| *slot as usize)
            .filter(|at| live[*at])
            .map(|at| totals[at]),
    );
    if kept.len() < k {
        return f64::NEG_INFINITY;
    }
    let (_, kth, _) = kept.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    f64::from(*kth)
}

/// How many of `entries` (in slot order) come before `slot`: a galloping search, cheap when the answer
/// is near the start, as it is for contenders looked up in slot order.
fn first_at_or_after(entries: &[(u32, f32)], slot: u32) -> usize {
    let mut high = 1;
    while high < entries.len() && entries[high - 1].0 < slot {
        high *= 2;
    }
    let low = high / 2;
    let high = high.min(entries.len());
    low + entries[low..high].partition_point(|(s, _)| *s < slot)
}

/// `slot`'s score: its products added in dimension order from 0, as a scan adds them.
fn exact_score(terms: &[Term<'_>], slot: u32) -> f32 {
    let mut score = 0.0_f32;
    for term in terms {
        if let Ok(at) = term.entries.binary_search_by_key(&slot, |(s, _)| *s) {
            score += term.weighted * term.entries[at].1;
        }
    }
    score
}

/// A query term: its list, its weighted value, and the most and least it adds to a score.
struct Term<'a> {
    entries: &'a [(u32, f32)],
    weighted: f32,
    most: f64,
    least: f64,
}

impl<'a> Term<'a> {
    fn new(list: &'a List, weighted: f32) -> Term<'a> {
        let (low, high) = (weighted * list.lowest, weighted * list.highest);
        Term {
            entries: &list.entries,
            weighted,
            most: f64::from(low.max(high)),
            least: f64::from(low.min(high)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record has the weak, common dimension 1; one in 50 also has the strong, rare dimension 2,
    /// and one in 7 the middling dimension 3.
    fn postings() -> Postings {
        let mut postings = Postings::default();
        for slot in 0..5_000_usize {
            let mut sparse = SparseVector {
                indices: vec![1],
                values: vec![0.1 + (slot % 13) as f32 / 100.0],
            };
            if slot % 7 == 0 {
                sparse.indices.push(3);
                sparse.values.push(0.5 + (slot % 5) as f32 / 10.0);
            }
            if slot % 50 == 0 {
                sparse.indices.push(2);
                sparse.values.push(1.0 + (slot % 11) as f32 / 10.0);
            }
            postings.add(slot, &sparse);
        }
        postings
    }

    #[test]
    fn strong_terms_leave_the_common_list_unread_and_the_top_k_unchanged() {
        let postings = postings();
        let query = SparseVector {
            indices: vec![1, 2, 3],
            values: vec![1.0, 4.0, 1.0],
        };
        let weight = |_: u32| 1.0_f32;
        let terms: Vec<Term<'_>> = query
            .indices
            .iter()
            .zip(&query.values)
            .map(|(index, value)| Term::new(&postings.lists[index], value * weight(*index)))
            .collect();
        let contenders = postings.contenders(&terms, 10);
        assert_eq!(
            contenders.lists_read, 1,
            "the strong list alone sets the bar: the other two are looked up, not read"
        );
        assert!(
            contenders.slots.len() < 100,
            "{} of 5,000 records scored",
            contenders.slots.len()
        );
        let mut every = TopK::new(10);
        for (slot, score) in postings.term_at_a_time(&terms) {
            every.offer(slot, score);
        }
        assert_eq!(
            postings.top(&query, weight, 10, |slot| slot, None),
            every.into_sorted()
        );
    }

    #[test]
    fn a_removed_record_never_comes_back_through_the_lookups() {
        let mut postings = postings();
        let query = SparseVector {
            indices: vec![1, 2],
            values: vec![1.0, 4.0],
        };
        let best = postings.top(&query, |_| 1.0, 1, |slot| slot, None);
        let (winner, _) = best[0];
        let sparse = SparseVector {
            indices: vec![1, 2],
            values: vec![
                0.1 + (winner % 13) as f32 / 100.0,
                1.0 + (winner % 11) as f32 / 10.0,
            ],
        };
        postings.remove(winner, &sparse);
        let after = postings.top(&query, |_| 1.0, 1, |slot| slot, None);
        assert_ne!(after[0].0, winner);
    }

    #[test]
    fn galloping_finds_the_first_posting_at_or_after_a_slot() {
        let entries: Vec<(u32, f32)> = (0..100).map(|n| (n * 3, 0.0)).collect();
        for slot in [0, 1, 2, 3, 4, 150, 296, 297, 298, 1_000] {
            let expected = entries.iter().filter(|(s, _)| *s < slot).count();
            assert_eq!(first_at_or_after(&entries, slot), expected, "slot {slot}");
        }
        assert_eq!(first_at_or_after(&[], 5), 0);
    }
}
