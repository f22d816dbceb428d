//! Publishes answered before their write committed: every message of such a publish was delivered while
//! it was being stored (see [`crate::early`]), so the answer waits for nothing that keeps a message; the
//! write, which only logs the messages' events, commits a moment later ([`answer_when_delivered`]).
//! [`AnsweredWrites`] lets a read of the log wait for those writes, so that a log read after a publish's
//! answer shows its messages.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use quiver_core::StoreError;
use quiver_core::store::StoreResult;
use tokio::sync::Notify;
use tokio::time::Duration;

use crate::early::Early;
use crate::handoff::Handoff;
use crate::message::Enqueued;
use crate::observe::DeliveryStats;

/// How a publish whose messages all went early was answered (see [`answer_when_delivered`]).
pub(crate) enum Written {
    /// Its write committed (or failed) first.
    Committed(StoreResult<Vec<Enqueued>>),
    /// Its messages were all delivered first, and the write goes on.
    Answered,
}

/// Runs `write`, the publish of messages that all go early (`cells`), tracked in `writes` and counted in
/// `stats`, and answers as soon as it commits or every message was delivered before the store wrote it,
/// whichever comes first. In the second case nothing is left that keeps a message: the write only logs
/// their events (see [`crate::early`]), so it goes on among the worker's tasks, and reads of the log
/// wait for it (see [`AnsweredWrites`]). A crash before it commits loses those log entries, never a
/// message.
pub(crate) async fn answer_when_delivered(
    writes: &Arc<AnsweredWrites>,
    stats: &DeliveryStats,
    write: impl Future<Output = StoreResult<Vec<Enqueued>>> + Send + 'static,
    cells: Vec<Arc<Early>>,
    handoff: &Handoff,
) -> Written {
    let going = writes.begin();
    // Set by whichever comes second of a failed write and an answer given before it.
    let settled = Arc::new(AtomicBool::new(false));
    let mut task = handoff.spawn_write({
        let settled = Arc::clone(&settled);
        async move {
            let enqueued = write.await;
            drop(going);
            if let Err(error) = &enqueued
                && settled.swap(true, Ordering::AcqRel)
            {
                tracing::warn!(
                    %error,
                    "a publish answered once its messages were delivered could not log them"
                );
            }
            enqueued
        }
    });
    let delivered = async {
        for cell in &cells {
            if !cell.finished_first().await {
                return false;
            }
        }
        true
    };
    tokio::select! {
        biased;
        written = &mut task => return Written::Committed(joined(written)),
        true = delivered => {}
    }
    if settled.swap(true, Ordering::AcqRel) {
        // The write failed just now: the publish answers with its error.
        return Written::Committed(joined(task.await));
    }
    DeliveryStats::count(&stats.answered_when_delivered);
    Written::Answered
}

/// A publish write's outcome, from its task.
fn joined(joined: Result<StoreResult<Vec<Enqueued>>, tokio::task::JoinError>) -> StoreResult<Vec<Enqueued>> {
    joined.unwrap_or_else(|error| {
        Err(StoreError::Backend(format!(
            "the publish's write failed: {error}"
        )))
    })
}

/// The publish writes this process is still committing, each under the number it began with.
#[derive(Debug, Default)]
pub(crate) struct AnsweredWrites {
    state: Mutex<Writes>,
    /// Told whenever a write ends.
    ended: Notify,
}

#[derive(Debug, Default)]
struct Writes {
    next: u64,
    going: BTreeSet<u64>,
}

/// A write under way; ends it when dropped, however the write went.
#[derive(Debug)]
pub(crate) struct Going {
    writes: Arc<AnsweredWrites>,
    number: u64,
}

impl Drop for Going {
    fn drop(&mut self) {
        let mut state = self.writes.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.going.remove(&self.number);
        drop(state);
        self.writes.ended.notify_waiters();
    }
}

impl AnsweredWrites {
    /// Counts a write that began, until the guard is dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> Going {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let number = state.next;
        state.next += 1;
        state.going.insert(number);
        Going {
            writes: Arc::clone(self),
            number,
        }
    }

    /// Waits until every write that began before this call has ended, at most `longest`: writes that
    /// begin meanwhile are not waited for, so a steady stream of publishes cannot hold it up.
    pub(crate) async fn caught_up(&self, longest: Duration) {
        let before = self.state.lock().unwrap_or_else(PoisonError::into_inner).next;
        let ended = async {
            loop {
                // Made before the state is read, so that an end in between still wakes it.
                let ended = self.ended.notified();
                let oldest = self
                    .state
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .going
                    .first()
                    .copied();
                if oldest.is_none_or(|oldest| oldest >= before) {
                    return;
                }
                ended.await;
            }
        };
        // A write that outlasts this is failing, or the store is stalled: the read goes ahead.
        let _ = tokio::time::timeout(longest, ended).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_read_waits_for_the_writes_begun_before_it_and_no_others() {
        let writes = Arc::new(AnsweredWrites::default());
        let first = writes.begin();
        let second = writes.begin();
        let started = tokio::time::Instant::now();
        let reading = {
            let writes = Arc::clone(&writes);
            tokio::spawn(async move { writes.caught_up(Duration::from_secs(10)).await })
        };
        tokio::time::sleep(Duration::from_millis(1)).await;
        let later = writes.begin();
        drop(second);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(!reading.is_finished(), "the first write is still going");
        drop(first);
        reading.await.unwrap();
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(2),
            "the read went on once the first two writes ended, while a later one was still going"
        );
        drop(later);
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_waits_no_longer_than_it_is_told() {
        let writes = Arc::new(AnsweredWrites::default());
        let _stalled = writes.begin();
        let started = tokio::time::Instant::now();
        writes.caught_up(Duration::from_millis(250)).await;
        assert_eq!(started.elapsed(), Duration::from_millis(250));
        let idle = AnsweredWrites::default();
        let started = tokio::time::Instant::now();
        idle.caught_up(Duration::from_millis(250)).await;
        assert_eq!(started.elapsed(), Duration::ZERO, "nothing to wait for");
    }
}
