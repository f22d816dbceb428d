//! Retention, by age:
//! - the events of a finished message leave the log `log_retention_days` after its last event; a pending
//!   message, however old, keeps all of its events;
//! - a dead letter leaves the DLQ `dlq_retention_days` after its message failed.

use std::sync::Arc;
use std::time::Duration;

use quiver_core::Timestamp;

use crate::context::{Context, opaque_debug};
use crate::error::QueueError;
use crate::store::{DeadLetterStore, EventLogStore};

/// Rows one store call looks at, oldest first: dead letters, or the events after a log position.
const WINDOW: usize = 2_000;

/// Prunes the events log and the dead letter queue by age.
#[derive(Clone)]
pub struct Retention {
    log: Arc<dyn EventLogStore>,
    dead_letters: Arc<dyn DeadLetterStore>,
    context: Context,
}

opaque_debug!(Retention);

impl Retention {
    pub(crate) fn new(
        log: Arc<dyn EventLogStore>,
        dead_letters: Arc<dyn DeadLetterStore>,
        context: Context,
    ) -> Retention {
        Retention {
            log,
            dead_letters,
            context,
        }
    }

    /// Whether this node runs the round due now (one node per round, where several share the store),
    /// holding the next round back for `every`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn claim_round(&self, every: Duration) -> Result<bool, QueueError> {
        let now = self.context.now();
        Ok(self
            .log
            .claim_retention_round(now, now.saturating_add(every))
            .await?)
    }

    /// The time `days` before now; `None` when `days` is 0 (kept forever).
    fn cutoff(&self, days: u32) -> Option<Timestamp> {
        (days > 0).then(|| {
            self.context
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
        let Some(older_than) = self.cutoff(self.context.config.log_retention_days) else {
            return Ok(0);
        };
        // One pass, a window at a time, so that pending messages at the head of a log do not hold back
        // the finished ones behind them, and no write holds the store for long.
        let (mut total, mut from) = (0, None);
        loop {
            let (deleted, next) = self.log.prune_log(older_than, WINDOW, from).await?;
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
        let Some(older_than) = self.cutoff(self.context.config.dlq_retention_days) else {
            return Ok(0);
        };
        let mut total = 0;
        loop {
            match self.dead_letters.prune_dead_letters(older_than, WINDOW).await? {
                0 => return Ok(total),
                deleted => total += deleted,
            }
        }
    }
}
