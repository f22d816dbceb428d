//! What the delivery worker counts for `GET /metrics`: attempts by outcome, their durations, and the
//! deliveries in flight now. Plain atomics (see `quiver_core::observe`), read when metrics are scraped.

use std::sync::atomic::{AtomicU64, Ordering};

use quiver_core::observe::{DURATION_BOUNDS_US, Histogram};

/// Counters of this process's delivery attempts.
#[derive(Debug)]
pub struct DeliveryStats {
    /// Attempts the destination accepted.
    pub delivered: AtomicU64,
    /// Attempts that failed and were scheduled again.
    pub retried: AtomicU64,
    /// Attempts that failed for the last time (the message went to the DLQ or ended its run).
    pub failed: AtomicU64,
    /// Attempts put off before they were made (a flow-control rate, a destination not allowed yet).
    pub postponed: AtomicU64,
    /// Messages claimed ahead of the free slots that waited for one longer than their lease left room
    /// for, and were not started: each goes again when its lease ends. Slots too few for the load.
    pub waited_too_long: AtomicU64,
    /// First-try deliveries that finished before their publish was written, and were logged with it
    /// instead of stored and then deleted (see [`crate::early`]).
    pub logged_with_publish: AtomicU64,
    /// Publishes answered once all their messages were delivered, before their write (which then only
    /// logs them) committed (see `crate::answered`).
    pub answered_when_delivered: AtomicU64,
    /// How long each attempt's HTTP exchange took, in microseconds.
    pub attempt_durations: Histogram,
    /// Deliveries under way now.
    pub in_flight: AtomicU64,
}

impl Default for DeliveryStats {
    fn default() -> Self {
        DeliveryStats {
            delivered: AtomicU64::new(0),
            retried: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            postponed: AtomicU64::new(0),
            waited_too_long: AtomicU64::new(0),
            logged_with_publish: AtomicU64::new(0),
            answered_when_delivered: AtomicU64::new(0),
            attempt_durations: Histogram::new(&DURATION_BOUNDS_US),
            in_flight: AtomicU64::new(0),
        }
    }
}

impl DeliveryStats {
    pub(crate) fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts a delivery in flight while it lives.
pub(crate) struct InFlight<'a>(&'a DeliveryStats);

impl<'a> InFlight<'a> {
    pub(crate) fn start(stats: &'a DeliveryStats) -> InFlight<'a> {
        stats.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(stats)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}
