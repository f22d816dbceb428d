//! The running delivery worker's door for messages a publish hands straight over.
//!
//! A message due at once, outside FIFO queues and flow control, needs no claim when the worker has a
//! free delivery slot: the publish stores it already leased (`NewMessage::leased_until`) and, once that
//! is committed, gives it to the worker, which starts the attempt at once. That saves the claim's
//! statement, its read of the message back from the store, the worker's look for the next due time,
//! and a wake-up. Everything else about the delivery is as for a claimed message.

use std::sync::Arc;
use std::time::Duration;

use quiver_core::Timestamp;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::early::EarlyDelivery;
use crate::message::Message;

/// Starts the delivery of a handed-over message in the slot it holds; the time is when it was handed over,
/// and the early side is given when the message is not yet stored (see [`crate::early`]).
pub(crate) type Start =
    Box<dyn Fn(Message, Timestamp, OwnedSemaphorePermit, Option<EarlyDelivery>) + Send + Sync>;

/// What a publish needs of the running worker.
pub(crate) struct Handoff {
    slots: Arc<Semaphore>,
    stopped: CancellationToken,
    lease: Duration,
    start: Start,
    /// The worker's tasks, which its shutdown waits for.
    tasks: TaskTracker,
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoff")
            .field("free_slots", &self.slots.available_permits())
            .finish_non_exhaustive()
    }
}

impl Handoff {
    /// The worker's door: its delivery slots, its stop signal, its lease, how it starts a delivery, and
    /// the tasks its shutdown waits for.
    pub(crate) fn new(
        slots: Arc<Semaphore>,
        stopped: CancellationToken,
        lease: Duration,
        start: Start,
        tasks: TaskTracker,
    ) -> Handoff {
        Handoff {
            slots,
            stopped,
            lease,
            start,
            tasks,
        }
    }

    /// Runs a publish's write among the worker's tasks, so that it ends before the stores close even
    /// when the publish was answered first (see [`crate::answered`]).
    pub(crate) fn spawn_write<F>(&self, write: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(write)
    }

    /// A delivery slot and the lease to store the message with, while the worker runs and has a slot free.
    pub(crate) fn slot(&self, now: Timestamp) -> Option<(OwnedSemaphorePermit, Timestamp)> {
        if self.stopped.is_cancelled() {
            return None;
        }
        // No free slot (or the slots closed): the message waits to be claimed like any other.
        let slot = Arc::clone(&self.slots).try_acquire_owned().ok()?;
        Some((slot, now.saturating_add(self.lease)))
    }

    /// Starts the delivery of `message`, stored leased (or being stored, when `early` is given), in
    /// `slot`.
    pub(crate) fn deliver(
        &self,
        message: Message,
        handed_over: Timestamp,
        slot: OwnedSemaphorePermit,
        early: Option<EarlyDelivery>,
    ) {
        (self.start)(message, handed_over, slot, early);
    }
}
