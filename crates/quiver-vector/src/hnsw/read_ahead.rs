//! How many nodes ahead of their scoring a search loads the codes it scores, chosen by timing walks.
//!
//! Scoring a node by its code waits on memory unless the code was asked for early enough; asking for
//! too many at once asks for more lines than the core keeps in flight. Where the balance lies depends
//! on the CPU: on the benchmark's graph (100,000 x 384) an AMD core that runs a 512-bit instruction as
//! two halves walked 1.07x to 1.24x faster loading 4 nodes ahead than loading every fresh neighbour at
//! once, and one that runs it whole walked 1.12x (ef 16) to 1.17x (ef 32) faster loading 16 ahead than
//! 4. So the first walks of a graph too large for the cache take the distances in turns, timed, and the
//! one with the lowest median time is kept for the process. The distance never changes an answer, only
//! how long it takes.

use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::Hnsw;
use super::candidates::{Near, Probe};

/// The distances tried, in nodes.
const CHOICES: [usize; 3] = [4, 8, 16];

/// The distance used before one is kept.
const FIRST: usize = CHOICES[0];

/// Walks timed with each distance before one is kept: walks vary with their query, and a median of
/// this many is steady to a few percent.
const TRIALS: usize = 512;

/// Graphs whose codes take fewer bytes than this mostly find them in the cache, where the distance
/// hardly matters: their walks are not timed.
const TIMED_FROM_BYTES: usize = 16 << 20;

/// The distance kept; 0 until one is.
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// Walks started under trial, which takes the distances in turns.
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// The trials' times, in nanoseconds, by distance.
static TIMES: Mutex<[Vec<u64>; CHOICES.len()]> = Mutex::new([Vec::new(), Vec::new(), Vec::new()]);

thread_local! {
    /// The distance this thread's walk is timed with, 0 outside trials.
    static TRYING: Cell<usize> = const { Cell::new(0) };
}

/// The distance searches on this thread load codes ahead by now.
fn distance() -> usize {
    match TRYING.get() {
        0 => match KEPT.load(Ordering::Relaxed) {
            0 => FIRST,
            kept => kept,
        },
        trying => trying,
    }
}

/// A walk timed with one of the distances, from [`Trial::begin`] until it is dropped.
pub(super) struct Trial {
    choice: usize,
    started: Instant,
}

impl Trial {
    /// Times this walk where no distance is kept yet and the graph's codes take `code_bytes`
    /// (enough to miss the cache); `None` otherwise.
    pub(super) fn begin(code_bytes: usize) -> Option<Trial> {
        if code_bytes < TIMED_FROM_BYTES || KEPT.load(Ordering::Relaxed) != 0 {
            return None;
        }
        let choice = STARTED.fetch_add(1, Ordering::Relaxed) % CHOICES.len();
        TRYING.set(CHOICES[choice]);
        Some(Trial {
            choice,
            started: Instant::now(),
        })
    }
}

impl Drop for Trial {
    fn drop(&mut self) {
        TRYING.set(0);
        let nanos = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // A poisoned lock only means another walk panicked while it held it: the times are still good.
        let mut times = TIMES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        times[self.choice].push(nanos);
        if KEPT.load(Ordering::Relaxed) != 0 || times.iter().any(|t| t.len() < TRIALS) {
            return;
        }
        let medians = times.each_mut().map(|t| {
            t.sort_unstable();
            t[t.len() / 2]
        });
        let best = (0..CHOICES.len()).min_by_key(|&c| medians[c]).unwrap_or(0);
        KEPT.store(CHOICES[best], Ordering::Relaxed);
        tracing::debug!(
            nodes_ahead = CHOICES[best],
            median_walk_ns = ?medians,
            "searches load codes this many nodes ahead of their scoring",
        );
    }
}

impl Hnsw {
    /// The code distances from `probe` to `nodes`, in their order, each node's code loaded
    /// [`distance`] nodes before it is scored.
    pub(super) fn probe_distances<'a>(
        &'a self,
        probe: Probe<'a>,
        nodes: &'a [u32],
    ) -> impl Iterator<Item = Near> + 'a {
        let ahead = distance();
        for &node in nodes.iter().take(ahead) {
            self.probe_prefetch(probe, node);
        }
        nodes.iter().enumerate().map(move |(position, &node)| {
            if let Some(&later) = nodes.get(position + ahead) {
                self.probe_prefetch(probe, later);
            }
            Near(self.probe_distance(probe, node), node)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trials_keep_one_distance_then_stop_and_small_graphs_are_never_timed() {
        assert!(Trial::begin(TIMED_FROM_BYTES - 1).is_none());
        assert_eq!(distance(), FIRST);
        for _ in 0..CHOICES.len() * TRIALS {
            let trial = Trial::begin(TIMED_FROM_BYTES).expect("timed until a distance is kept");
            assert!(CHOICES.contains(&distance()));
            drop(trial);
            assert_eq!(TRYING.get(), 0);
        }
        let kept = KEPT.load(Ordering::Relaxed);
        assert!(CHOICES.contains(&kept));
        assert!(Trial::begin(TIMED_FROM_BYTES).is_none());
        assert_eq!(distance(), kept);
    }
}
