//! Usage metering: requests record into per-minute buckets in memory (no request waits on storage); a
//! supervised loop flushes them to the store; reads merge stored minutes with unflushed ones.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quiver_core::{Clock, IndexId, StoreError};
use tokio_util::sync::CancellationToken;

use crate::stats::earliest_minute;
use crate::store::AdminStore;
use crate::usage::{MinuteUsage, Period, SLOT_MINUTES, slot_of};

/// How often buckets are flushed to the store.
pub const FLUSH_EVERY: Duration = Duration::from_secs(10);

/// What kind of operation a request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageKind {
    /// A read: query, fetch, range, info, resumable query, random.
    Query,
    /// A write: upsert, update, delete, reset, namespace changes.
    Update,
}

/// One metered request.
#[derive(Debug, Clone, Copy)]
pub struct UsageEvent {
    /// The index.
    pub index: IndexId,
    /// Read or write.
    pub kind: UsageKind,
    /// Time to answer.
    pub latency: Duration,
    /// Request and response bytes.
    pub bytes: u64,
    /// Vectors and bytes held after a write, when known.
    pub snapshot: Option<(u64, u64)>,
}

/// The meter of every index.
pub struct Meter {
    store: Arc<dyn AdminStore>,
    clock: Arc<dyn Clock>,
    pending: Mutex<HashMap<(IndexId, i64), MinuteUsage>>,
}

impl std::fmt::Debug for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meter").finish_non_exhaustive()
    }
}

impl Meter {
    /// A meter writing to `store`, reading time from `clock`.
    pub fn new(store: Arc<dyn AdminStore>, clock: Arc<dyn Clock>) -> Meter {
        Meter {
            store,
            clock,
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// The current UTC minute (minutes since the epoch).
    pub fn current_minute(&self) -> i64 {
        self.clock.now().as_secs().div_euclid(60)
    }

    /// Records a request in the current minute's bucket. Never waits on storage.
    pub fn record(&self, event: UsageEvent) {
        let minute = self.current_minute();
        let micros = u64::try_from(event.latency.as_micros()).unwrap_or(u64::MAX);
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let usage = pending.entry((event.index, minute)).or_default();
        usage.bytes += event.bytes;
        match event.kind {
            UsageKind::Query => {
                usage.queries += 1;
                usage.query_latency.record(micros);
            }
            UsageKind::Update => {
                usage.updates += 1;
                usage.update_latency.record(micros);
            }
        }
        if let Some((vectors, bytes)) = event.snapshot {
            usage.vector_count = Some(vectors);
            usage.data_size = Some(bytes);
        }
    }

    /// Writes every unflushed bucket to the store. On failure the buckets are kept for the next flush.
    ///
    /// # Errors
    /// Store failures.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let taken: Vec<((IndexId, i64), MinuteUsage)> = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        if taken.is_empty() {
            return Ok(());
        }
        let batch = taken
            .iter()
            .map(|((index, minute), usage)| (*index, *minute, usage.clone()))
            .collect();
        if let Err(error) = self.store.add_usage(batch).await {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            for (key, usage) in taken {
                pending.entry(key).or_default().merge(&usage);
            }
            return Err(error);
        }
        Ok(())
    }

    /// Flushes every [`FLUSH_EVERY`] until `shutdown`, then once more.
    ///
    /// # Cancel safety
    /// Meant to run to completion under the supervisor; the final flush happens after cancellation.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(FLUSH_EVERY) => {}
            }
            if let Err(error) = self.flush().await {
                tracing::warn!(%error, "flushing usage failed; it is kept for the next flush");
            }
        }
        if let Err(error) = self.flush().await {
            tracing::warn!(%error, "the final usage flush failed");
        }
    }

    /// What [`crate::stats::compute`] needs to answer `period` at `now_minute`: usage keyed by the
    /// first minute it covers, oldest first. Intervals that are whole slots (and everything before the
    /// period's first point) come from [`SLOT_MINUTES`] rollups; one-minute and three-minute points from
    /// minutes.
    ///
    /// # Errors
    /// Store failures.
    pub async fn usage_for(
        &self,
        index: IndexId,
        period: Period,
        now_minute: i64,
    ) -> Result<Vec<(i64, MinuteUsage)>, StoreError> {
        let earliest = slot_of(earliest_minute(period, now_minute));
        let (width, _) = period.shape();
        let first_start = period
            .point_starts(now_minute)
            .first()
            .copied()
            .unwrap_or(now_minute);
        let split = if width % SLOT_MINUTES == 0 {
            now_minute + 1
        } else {
            slot_of(first_start).max(earliest)
        };
        let mut usage = self.slots(index, earliest, split - 1).await?;
        if split <= now_minute {
            usage.extend(self.minutes(index, split, now_minute).await?);
        }
        Ok(usage)
    }

    /// Everything `index` used in minutes `from..=to` (`from` a slot start, as every UTC day and month
    /// start is), stored and unflushed, summed.
    ///
    /// # Errors
    /// Store failures.
    pub async fn totals(&self, index: IndexId, from: i64, to: i64) -> Result<MinuteUsage, StoreError> {
        let mut total = MinuteUsage::default();
        for (_, usage) in self.slots(index, from, to).await? {
            total.merge(&usage);
        }
        Ok(total)
    }

    /// Usage of `index` per slot for slots covering minutes `from..=to` (`from` a slot start): stored
    /// slots merged with unflushed minutes, keyed by slot start, oldest first.
    async fn slots(&self, index: IndexId, from: i64, to: i64) -> Result<Vec<(i64, MinuteUsage)>, StoreError> {
        if to < from {
            return Ok(Vec::new());
        }
        let mut merged: BTreeMap<i64, MinuteUsage> = self
            .store
            .usage_slots(index, from, slot_of(to))
            .await?
            .into_iter()
            .collect();
        for (minute, usage) in self.pending_of(index, from, to) {
            merged.entry(slot_of(minute)).or_default().merge(&usage);
        }
        Ok(merged.into_iter().collect())
    }

    /// Unflushed usage of `index` for minutes `from..=to`, oldest first.
    fn pending_of(&self, index: IndexId, from: i64, to: i64) -> Vec<(i64, MinuteUsage)> {
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let mut found: Vec<(i64, MinuteUsage)> = pending
            .iter()
            .filter(|((pending_index, minute), _)| *pending_index == index && (from..=to).contains(minute))
            .map(|((_, minute), usage)| (*minute, usage.clone()))
            .collect();
        found.sort_by_key(|(minute, _)| *minute);
        found
    }

    /// Usage of `index` for minutes `from..=to`: stored minutes merged with unflushed ones, oldest first.
    ///
    /// # Errors
    /// Store failures.
    pub async fn minutes(
        &self,
        index: IndexId,
        from: i64,
        to: i64,
    ) -> Result<Vec<(i64, MinuteUsage)>, StoreError> {
        let mut merged: BTreeMap<i64, MinuteUsage> =
            self.store.usage(index, from, to).await?.into_iter().collect();
        for (minute, usage) in self.pending_of(index, from, to) {
            merged.entry(minute).or_default().merge(&usage);
        }
        Ok(merged.into_iter().collect())
    }
}
