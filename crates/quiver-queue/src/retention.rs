//! The loop that runs retention (`service::retention`) every ten minutes on the injected clock.

use std::time::Duration;

use quiver_core::StoreError;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::error::QueueError;
use crate::service::Queue;

/// How often retention runs.
const EVERY: Duration = Duration::from_secs(600);

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
    let context = queue.context();
    loop {
        context.signals.retention.round_starts();
        let ours = match queue.retention.claim_round(EVERY).await {
            Ok(ours) => ours,
            Err(QueueError::Store(StoreError::Closed)) => return,
            Err(error) => {
                warn!(%error, "claiming the retention round failed; running it here");
                true
            }
        };
        if ours
            && (!report("dead letter queue", queue.retention.prune_dead_letters().await)
                || !report("events log", queue.retention.prune_log().await))
        {
            return;
        }
        let next = context.clock.now().saturating_add(EVERY);
        context.signals.retention.sleeps_until(Some(next));
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            () = context.clock.sleep_until(next) => {}
        }
    }
}
