//! Whether a background loop has anything left to do at the current time. The delivery worker, the
//! scheduler and retention each keep a [`LoopState`], so that tests wait for idleness on the manual clock
//! instead of waiting for real time.

use std::sync::atomic::{AtomicI64, Ordering};

use quiver_core::Timestamp;

/// The loop is in a round: it looks for due work before it sleeps again.
const BUSY: i64 = i64::MIN;
/// The loop has been woken and has not yet started its next round.
const WAKE_PENDING: i64 = i64::MIN + 1;

/// When a background loop next runs: busy, woken, or asleep until a time (`i64::MAX`: until woken).
#[derive(Debug)]
pub struct LoopState(AtomicI64);

impl Default for LoopState {
    fn default() -> Self {
        LoopState::new()
    }
}

impl LoopState {
    /// A loop that has not finished its first round.
    pub fn new() -> LoopState {
        LoopState(AtomicI64::new(BUSY))
    }

    /// Records a wake-up: the loop counts as busy from here until it has looked and gone back to sleep,
    /// so [`LoopState::is_idle`] never reads a sleep that a wake-up already ended.
    pub fn wake(&self) {
        self.0.store(WAKE_PENDING, Ordering::SeqCst);
    }

    /// The loop starts a round.
    pub fn round_starts(&self) {
        self.0.store(BUSY, Ordering::SeqCst);
    }

    /// The loop ends a round and sleeps until `wake` (`None`: until woken). A wake-up recorded during the
    /// round is kept: the loop goes round again at once.
    pub fn sleeps_until(&self, wake: Option<Timestamp>) {
        let _ = self.0.compare_exchange(
            BUSY,
            wake.map_or(i64::MAX, Timestamp::as_millis),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }

    /// Whether work due at `due` would wait past it unless the loop is woken.
    pub fn needs_wake_for(&self, due: Timestamp) -> bool {
        let next = self.0.load(Ordering::SeqCst);
        next == BUSY || next == WAKE_PENDING || due.as_millis() < next
    }

    /// Whether the loop has nothing to do at `now`: it has looked since its last wake-up and sleeps until
    /// a time still ahead of `now`.
    pub fn is_idle(&self, now: Timestamp) -> bool {
        let next = self.0.load(Ordering::SeqCst);
        next != BUSY && next != WAKE_PENDING && next > now.as_millis()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_during_a_round_outlives_the_sleep_that_ends_it() {
        let state = LoopState::new();
        let now = Timestamp::from_millis(1_000);
        assert!(!state.is_idle(now), "busy until its first round ends");
        state.sleeps_until(Some(Timestamp::from_millis(2_000)));
        assert!(state.is_idle(now));
        assert!(
            !state.is_idle(Timestamp::from_millis(2_000)),
            "due at its wake time"
        );
        state.round_starts();
        state.wake();
        state.sleeps_until(None);
        assert!(!state.is_idle(now), "woken during the round: it goes round again");
        state.round_starts();
        state.sleeps_until(None);
        assert!(state.is_idle(now));
    }

    #[test]
    fn work_due_before_the_planned_wake_needs_a_wake_up() {
        let state = LoopState::new();
        state.sleeps_until(Some(Timestamp::from_millis(2_000)));
        assert!(state.needs_wake_for(Timestamp::from_millis(1_500)));
        assert!(!state.needs_wake_for(Timestamp::from_millis(2_500)));
    }
}
