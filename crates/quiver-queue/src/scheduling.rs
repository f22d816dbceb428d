//! The loop that fires schedules, and times out workflow waits, on the injected clock.

use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::error::QueueError;
use crate::service::Queue;

/// Fires schedules, and times out workflow waits, as the clock reaches them, until `shutdown`.
///
/// # Cancel safety
/// Stopping between firings is safe; a firing interrupted before its schedule was updated fires again
/// at the next start (at least once).
pub async fn run_scheduler(queue: Queue, shutdown: CancellationToken) {
    let context = queue.context();
    let signals = &context.signals;
    loop {
        let changed = signals.schedules_changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        signals.scheduler.round_starts();
        let mut busy = false;
        for result in [queue.schedules.fire_due().await, queue.waiters.time_out().await] {
            match result {
                Ok(fired) => busy |= fired > 0,
                Err(QueueError::Store(quiver_core::StoreError::Closed)) => return,
                Err(error) => warn!(%error, "firing schedules or timing out waits failed"),
            }
        }
        if busy {
            continue;
        }
        // A failed look-up is not "nothing is due": look again shortly.
        let next = match (
            queue.schedules.next_due().await,
            queue.waiters.next_deadline().await,
        ) {
            (Ok(schedule), Ok(deadline)) => Ok(match (schedule, deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }),
            (Err(quiver_core::StoreError::Closed), _) | (_, Err(quiver_core::StoreError::Closed)) => return,
            (Err(error), _) | (_, Err(error)) => Err(error),
        };
        let sleep = match next {
            Ok(Some(due)) => {
                signals.scheduler.sleeps_until(Some(due));
                context.clock.sleep_until(due)
            }
            Ok(None) => {
                signals.scheduler.sleeps_until(None);
                Box::pin(std::future::pending())
            }
            // Still busy: it looks again shortly.
            Err(error) => {
                warn!(%error, "finding the next schedule or wait deadline failed; looking again shortly");
                Box::pin(tokio::time::sleep(std::time::Duration::from_millis(200)))
            }
        };
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            () = &mut changed => {}
            () = sleep => {}
            () = signals.poll_sleep() => {}
        }
    }
}
