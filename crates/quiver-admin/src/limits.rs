//! Plan limits that count over time, enforced where a vector request enters: queries and writes per
//! second, daily queries and updates (UTC days), monthly bandwidth (UTC months).
//!
//! Each index keeps counters in memory. They start from the meter's record of the current day and month
//! (stored and unflushed usage) the first time the index is seen in that day, so a restart does not reset
//! a daily quota. A request reserves its place when it is admitted, so concurrent requests cannot
//! overshoot a limit; a request that fails gives its place back ([`Limiter::release`]), as it is not
//! metered either.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use quiver_core::plan::{Limit, PlanLimits};
use quiver_core::{Clock, IndexId, StoreError, Timestamp};

use crate::meter::{Meter, UsageKind};
use crate::usage::day_and_month_start;

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitExceeded {
    /// Too many requests of a kind in the current second.
    #[error("Exceeded the rate limit of {limit} {} per second for this index; retry in a second", noun(*.kind))]
    Rate {
        /// Queries or writes.
        kind: UsageKind,
        /// The plan's limit.
        limit: u64,
    },
    /// The daily quota of a kind is used up.
    #[error(
        "Exceeded the daily limit of {limit} {} for this index; it resets at 00:00 UTC in {retry_after_secs} s",
        noun(*.kind)
    )]
    Daily {
        /// Queries or updates.
        kind: UsageKind,
        /// The plan's limit.
        limit: u64,
        /// Seconds until the next UTC day.
        retry_after_secs: i64,
    },
    /// The monthly bandwidth is used up.
    #[error(
        "Exceeded the monthly bandwidth limit of {limit} bytes for this index; it resets at the start of the next \
         UTC month in {retry_after_secs} s"
    )]
    Bandwidth {
        /// The plan's limit in bytes.
        limit: u64,
        /// Seconds until the next UTC month.
        retry_after_secs: i64,
    },
}

fn noun(kind: UsageKind) -> &'static str {
    match kind {
        UsageKind::Query => "queries",
        UsageKind::Update => "updates",
    }
}

impl LimitExceeded {
    /// Seconds a client should wait (`Retry-After`).
    pub fn retry_after_secs(&self) -> i64 {
        match self {
            LimitExceeded::Rate { .. } => 1,
            LimitExceeded::Daily { retry_after_secs, .. }
            | LimitExceeded::Bandwidth { retry_after_secs, .. } => (*retry_after_secs).max(1),
        }
    }
}

/// Why a request could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum AdmitError {
    /// A limit is reached.
    #[error(transparent)]
    Exceeded(#[from] LimitExceeded),
    /// The day's usage could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A place taken by an admitted request.
#[derive(Debug, Clone, Copy)]
pub struct Admission {
    index: IndexId,
    kind: UsageKind,
    day: i64,
    second: i64,
}

#[derive(Debug, Default)]
struct Counters {
    day: i64,
    queries_today: i64,
    updates_today: i64,
    bytes_this_month: i64,
    second: i64,
    queries_this_second: i64,
    writes_this_second: i64,
    /// When the day's and month's counts were last read from the meter (unix seconds).
    synced_at: i64,
}

/// The time-based limits of every index.
pub struct Limiter {
    meter: Arc<Meter>,
    enforce_rates: bool,
    clock: Arc<dyn Clock>,
    counters: Mutex<HashMap<IndexId, Counters>>,
    /// Where other nodes share the store: how often the day's and month's counts are read again, so that
    /// quotas see every node's usage (per-second rates stay per node).
    resync_secs: Option<i64>,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter").finish_non_exhaustive()
    }
}

impl Limiter {
    /// Limits counted from `meter`'s usage, on `clock`'s time; per-second rates only if `enforce_rates`.
    pub fn new(meter: Arc<Meter>, clock: Arc<dyn Clock>, enforce_rates: bool) -> Limiter {
        Limiter {
            meter,
            enforce_rates,
            clock,
            counters: Mutex::new(HashMap::new()),
            resync_secs: None,
        }
    }

    /// Reads each index's daily and monthly counts from the store again every `every`, where other
    /// nodes meter into the same store: quotas then count every node's usage, up to `every` (plus their
    /// flush interval) late. Per-second rates stay per node.
    #[must_use]
    pub fn resync_every(mut self, every: std::time::Duration) -> Limiter {
        self.resync_secs = Some(i64::try_from(every.as_secs()).unwrap_or(i64::MAX).max(1));
        self
    }

    /// Whether `counters` must be read again from the meter at `second` of `day`.
    fn stale(&self, counters: &Counters, day: i64, second: i64) -> bool {
        counters.day != day
            || self
                .resync_secs
                .is_some_and(|every| second >= counters.synced_at + every)
    }

    /// Admits one request of `kind` to `index` under `limits`, or says which limit it would break.
    ///
    /// # Errors
    /// [`AdmitError::Exceeded`]; [`AdmitError::Store`] when the day's usage cannot be read.
    pub async fn admit(
        &self,
        index: IndexId,
        kind: UsageKind,
        limits: &PlanLimits,
    ) -> Result<Admission, AdmitError> {
        let now = self.clock.now();
        let minute = now.as_secs().div_euclid(60);
        let (day, month) = day_and_month_start(minute);
        {
            let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(entry) = counters
                .get_mut(&index)
                .filter(|c| !self.stale(c, day, now.as_secs()))
            {
                return Ok(self.take(entry, index, kind, limits, now)?);
            }
        }
        // First request of the index today: start from what the meter recorded.
        let month_usage = self.meter.totals(index, month, minute).await?;
        let day_usage = self.meter.totals(index, day, minute).await?;
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = counters.entry(index).or_default();
        if self.stale(entry, day, now.as_secs()) {
            // This node's per-second counts carry over a read of the same day.
            let (second, queries_this_second, writes_this_second) = if entry.day == day {
                (entry.second, entry.queries_this_second, entry.writes_this_second)
            } else {
                (0, 0, 0)
            };
            *entry = Counters {
                day,
                queries_today: day_usage.queries as i64,
                updates_today: day_usage.updates as i64,
                bytes_this_month: month_usage.bytes as i64,
                second,
                queries_this_second,
                writes_this_second,
                synced_at: now.as_secs(),
            };
        }
        Ok(self.take(entry, index, kind, limits, now)?)
    }

    /// Takes a place in `entry` (the index's counters for today) for one request at `now`.
    fn take(
        &self,
        entry: &mut Counters,
        index: IndexId,
        kind: UsageKind,
        limits: &PlanLimits,
        now: Timestamp,
    ) -> Result<Admission, LimitExceeded> {
        let second = now.as_secs();
        if entry.second != second {
            entry.second = second;
            entry.queries_this_second = 0;
            entry.writes_this_second = 0;
        }
        let (per_second, rate_limit, today, daily_limit) = match kind {
            UsageKind::Query => (
                &mut entry.queries_this_second,
                limits.max_query_per_second,
                &mut entry.queries_today,
                limits.max_daily_queries,
            ),
            UsageKind::Update => (
                &mut entry.writes_this_second,
                limits.max_writes_per_second,
                &mut entry.updates_today,
                limits.max_daily_updates,
            ),
        };
        // The limit a count has reached, so that one more would pass it.
        let reached = |limit: Limit, used: i64| {
            limit
                .at_most()
                .filter(|&max| u64::try_from(used).unwrap_or(0) >= max)
        };
        if let Some(limit) = reached(daily_limit, *today) {
            return Err(LimitExceeded::Daily {
                kind,
                limit,
                retry_after_secs: (entry.day + 1440) * 60 - second,
            });
        }
        if let Some(limit) = reached(rate_limit, *per_second).filter(|_| self.enforce_rates) {
            return Err(LimitExceeded::Rate { kind, limit });
        }
        if let Some(limit) = reached(limits.max_monthly_bandwidth, entry.bytes_this_month) {
            return Err(LimitExceeded::Bandwidth {
                limit,
                retry_after_secs: next_month_start(second.div_euclid(60)) * 60 - second,
            });
        }
        *today += 1;
        *per_second += 1;
        Ok(Admission {
            index,
            kind,
            day: entry.day,
            second,
        })
    }

    /// Gives back the place of a request that failed (and so is not metered).
    pub fn release(&self, admission: Admission) {
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = counters.get_mut(&admission.index) {
            let (today, per_second) = match admission.kind {
                UsageKind::Query => (&mut entry.queries_today, &mut entry.queries_this_second),
                UsageKind::Update => (&mut entry.updates_today, &mut entry.writes_this_second),
            };
            if entry.day == admission.day {
                *today -= 1;
            }
            if entry.second == admission.second {
                *per_second -= 1;
            }
        }
    }

    /// Counts the bytes of a finished request toward the month's bandwidth.
    pub fn add_bandwidth(&self, admission: Admission, bytes: u64) {
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = counters.get_mut(&admission.index) {
            entry.bytes_this_month = entry.bytes_this_month.saturating_add(bytes as i64);
        }
    }
}

/// The first minute of the UTC month after the one holding `minute`.
fn next_month_start(minute: i64) -> i64 {
    let month = day_and_month_start(minute).1;
    // Every month is at most 31 days, so 32 days after its first lands in the next one.
    day_and_month_start(month + 32 * 1440).1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::days_from_civil;

    #[test]
    fn the_next_month_starts_on_its_first_day_from_any_day_of_this_one() {
        let minute = |y, m, d| days_from_civil(y, m, d) * 1440;
        assert_eq!(next_month_start(minute(2026, 1, 31) + 600), minute(2026, 2, 1));
        assert_eq!(next_month_start(minute(2026, 1, 1)), minute(2026, 2, 1));
        assert_eq!(next_month_start(minute(2026, 12, 31)), minute(2027, 1, 1));
        assert_eq!(next_month_start(minute(2028, 2, 29)), minute(2028, 3, 1));
    }
}
