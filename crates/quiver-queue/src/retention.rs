//! Retention, by age:
//! - the events of a finished message leave the log `log_retention_days` after its last event; a pending
//!   message, however old, keeps all of its events;
//! - a dead letter leaves the DLQ `dlq_retention_days` after its message failed.

use std::time::Duration;

use quiver_core::{StoreError, Timestamp};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::error::QueueError;
use crate::service::Queue;

/// Rows one store call looks at, oldest first: dead letters, or the events after a log position.
const WINDOW: usize = 2_000;
/// How often retention runs.
const EVERY: Duration = Duration::from_secs(600);

impl Queue {
    /// The time `days` before now; `None` when `days` is 0 (kept forever).
    fn cutoff(&self, days: u32) -> Option<Timestamp> {
        (days > 0).then(|| {
            self.clock()
                .now()
                .saturating_sub(Duration::from_secs(u64::from(days) * 86_400))
        })
    }

    /// Deletes the events of messages that finished more than `log_retention_days` ago (nothing when it
    /// is 0). Returns how many events went.
    ///
    /// # Errors
    /// Store failures.
    pub async fn prune_log(&self) -> Result<u64, QueueError> {
        let Some(older_than) = self.cutoff(self.config().log_retention_days) else {
            return Ok(0);
        };
        // One pass, a window at a time, so that pending messages at the head of a log do not hold back
        // the finished ones behind them, and no write holds the store for long.
        let (mut total, mut from) = (0, None);
        loop {
            let (deleted, next) = self.store().prune_log(older_than, WINDOW, from).await?;
            total += deleted;
            match next {
                Some(position) => from = Some(position),
                None => return Ok(total),
            }
        }
    }

    /// Deletes the dead letters that failed more than `dlq_retention_days` ago (nothing when it is 0).
    /// Returns how many went.
    ///
    /// # Errors
    /// Store failures.
    pub async fn prune_dead_letters(&self) -> Result<u64, QueueError> {
        let Some(older_than) = self.cutoff(self.config().dlq_retention_days) else {
            return Ok(0);
        };
        let mut total = 0;
        loop {
            match self.store().prune_dead_letters(older_than, WINDOW).await? {
                0 => return Ok(total),
                deleted => total += deleted,
            }
        }
    }
}

/// Logs one pruning's outcome; `false` when the store has closed.
fn report(what: &str, outcome: Result<u64, QueueError>) -> bool {
    match outcome {
        Ok(0) => true,
        Ok(deleted) => {
            info!(deleted, "pruned the {what}");
            true
        }
        Err(QueueError::Store(StoreError::Closed)) => false,
        Err(error) => {
            warn!(%error, "pruning the {what} failed");
            true
        }
    }
}

/// Prunes the events log and the DLQ now and then every ten minutes (on the queue's clock) until
/// `shutdown`.
pub async fn run_retention(queue: Queue, shutdown: CancellationToken) {
    loop {
        queue.retention_state().round_starts();
        if !report("dead letter queue", queue.prune_dead_letters().await)
            || !report("events log", queue.prune_log().await)
        {
            return;
        }
        let next = queue.clock().now().saturating_add(EVERY);
        queue.retention_state().sleeps_until(Some(next));
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            () = queue.clock().sleep_until(next) => {}
        }
    }
}
