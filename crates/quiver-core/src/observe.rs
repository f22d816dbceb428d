//! Counters the domains keep for `GET /metrics`: plain atomics, updated on the hot path without a lock
//! or an allocation and read when metrics are scraped, so that no domain crate depends on a metrics
//! library.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bucket bounds of durations, in microseconds: 50 us to 60 s.
pub const DURATION_BOUNDS_US: [u64; 16] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    10_000_000, 60_000_000,
];

/// Bucket bounds of sizes (writes per commit, texts per batch): 1 to 4,096.
pub const SIZE_BOUNDS: [u64; 13] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1_024, 2_048, 4_096];

/// A histogram with fixed bucket bounds.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [u64],
    /// One per bound, then one for values above the last.
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
}

/// What a [`Histogram`] holds at one moment, buckets cumulative as Prometheus wants them.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// `(upper bound, observations at or below it)`, the last bound being `+Inf`.
    pub buckets: Vec<(f64, u64)>,
    /// Sum of every observation.
    pub sum: u64,
    /// Number of observations.
    pub count: u64,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending).
    pub fn new(bounds: &'static [u64]) -> Histogram {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
        }
    }

    /// Counts `value`.
    pub fn observe(&self, value: u64) {
        let bucket = self.bounds.partition_point(|bound| *bound < value);
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    /// Counts a duration, in microseconds.
    pub fn observe_duration(&self, duration: std::time::Duration) {
        self.observe(u64::try_from(duration.as_micros()).unwrap_or(u64::MAX));
    }

    /// The counts now.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut running = 0;
        let mut buckets = Vec::with_capacity(self.counts.len());
        for (index, count) in self.counts.iter().enumerate() {
            running += count.load(Ordering::Relaxed);
            let bound = self.bounds.get(index).map_or(f64::INFINITY, |b| *b as f64);
            buckets.push((bound, running));
        }
        HistogramSnapshot {
            buckets,
            sum: self.sum.load(Ordering::Relaxed),
            count: running,
        }
    }
}

/// What one database's writer did: the writes it folded into each commit, and how long commits took.
#[derive(Debug)]
pub struct WriterStats {
    /// Writes per commit.
    pub batch_sizes: Histogram,
    /// Duration of each commit (the writes and the sync), in microseconds.
    pub commit_durations: Histogram,
}

impl Default for WriterStats {
    fn default() -> Self {
        WriterStats {
            batch_sizes: Histogram::new(&SIZE_BOUNDS),
            commit_durations: Histogram::new(&DURATION_BOUNDS_US),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_that_holds_them_and_buckets_are_cumulative() {
        let histogram = Histogram::new(&SIZE_BOUNDS);
        for value in [1, 2, 3, 4, 5_000] {
            histogram.observe(value);
        }
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.count, 5);
        assert_eq!(snapshot.sum, 5_010);
        assert_eq!(&snapshot.buckets[..3], &[(1.0, 1), (2.0, 2), (4.0, 4)]);
        assert_eq!(snapshot.buckets[12], (4_096.0, 4));
        assert_eq!(snapshot.buckets[13], (f64::INFINITY, 5));
    }
}
