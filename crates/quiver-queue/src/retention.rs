//! Log retention: the events of a finished message leave the log `log_retention_days` after its last
//! event. A pending message, however old, keeps all of its events.

use std::time::Duration;

use quiver_core::StoreError;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::error::QueueError;
use crate::service::Queue;

/// Events of each account looked at per store round, oldest first.
const WINDOW: usize = 2_000;
/// How often the log is pruned.
const EVERY: Duration = Duration::from_secs(600);

impl Queue {
    /// Deletes the events of messages that finished more than `log_retention_days` ago (nothing when it
    /// is 0). Returns how many events went.
    ///
    /// # Errors
    /// Store failures.
    pub async fn prune_log(&self) -> Result<u64, QueueError> {
        let days = self.config().log_retention_days;
        if days == 0 {
            return Ok(0);
        }
        let older_than = self
            .clock()
            .now()
            .saturating_sub(Duration::from_secs(u64::from(days) * 86_400));
        let mut total = 0;
        loop {
            // Each round deletes from the oldest events on, so the next one looks further.
            let deleted = self.store().prune_log(older_than, WINDOW).await?;
            if deleted == 0 {
                return Ok(total);
            }
            total += deleted;
        }
    }
}

/// Prunes the log now and then every ten minutes (on the queue's clock) until `shutdown`.
pub async fn run_log_retention(queue: Queue, shutdown: CancellationToken) {
    loop {
        match queue.prune_log().await {
            Ok(0) => {}
            Ok(deleted) => info!(deleted, "pruned the events log"),
            Err(QueueError::Store(StoreError::Closed)) => return,
            Err(error) => warn!(%error, "pruning the events log failed"),
        }
        let next = queue.clock().now().saturating_add(EVERY);
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            () = queue.clock().sleep_until(next) => {}
        }
    }
}
