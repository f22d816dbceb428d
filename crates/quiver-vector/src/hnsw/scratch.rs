//! The buffers a search reuses (`Scratch`): one set a thread, and spares handed from one parallel
//! step's spawned thread to the next.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Mutex, PoisonError};

use super::Hnsw;
use super::candidates::Near;
use super::marks::{Verdicts, Visited};

/// Buffers one thread reuses across searches, so a search allocates only its answer.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    pub(super) visited: Visited,
    pub(super) verdicts: Verdicts,
    pub(super) candidates: BinaryHeap<Reverse<Near>>,
    pub(super) results: BinaryHeap<Near>,
    pub(super) fresh: Vec<u32>,
    pub(super) bridges: Vec<u32>,
    /// Exhaustive search: each passing node with the distance of its 8-bit code.
    pub(super) scored: Vec<Near>,
}

thread_local! {
    pub(super) static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Scratch left by the threads a parallel step spawned ([`Hnsw::with_spare_scratch`]), for the next
/// step's.
static SPARE_SCRATCH: Mutex<Vec<Scratch>> = Mutex::new(Vec::new());

/// The most scratch kept spare: enough for the spawned lanes of a few parallel steps at once (a step
/// on two threads spawns one).
const MOST_SPARE: usize = 4;

impl Hnsw {
    /// Runs `work` on a thread spawned for one parallel step with the scratch an earlier step's thread
    /// left, and leaves this one's for the next. A fresh thread's scratch sizes its visit marks to the
    /// graph on its first search: a build on two threads spawned one a batch, so every batch paid for
    /// that memory anew, page faults and zeroing included (about 4 % of a 100,000 x 384 build's samples
    /// on an Intel instance; BENCHMARKS.md, session 34). A spare holds marks for the largest graph its
    /// threads searched, 4 bytes a node, as every thread's own scratch does.
    pub(super) fn with_spare_scratch<R>(work: impl FnOnce() -> R) -> R {
        let spare = SPARE_SCRATCH.lock().unwrap_or_else(PoisonError::into_inner).pop();
        if let Some(spare) = spare {
            SCRATCH.with(|cell| *cell.borrow_mut() = spare);
        }
        let answer = work();
        let used = SCRATCH.with(|cell| std::mem::take(&mut *cell.borrow_mut()));
        let mut spares = SPARE_SCRATCH.lock().unwrap_or_else(PoisonError::into_inner);
        if spares.len() < MOST_SPARE {
            spares.push(used);
        }
        answer
    }
}
