//! What the delivery worker needs of storage: leases on due messages, and attempts applied atomically.

use async_trait::async_trait;
use quiver_core::Timestamp;
use quiver_core::store::StoreResult;

use crate::message::{DeadLetter, Message, NewEvent, NewMessage};

/// What happened to a claimed message, to be applied atomically.
#[derive(Debug, Clone)]
pub enum AttemptResolution {
    /// Delivered, or dead-lettered: the message leaves the queue (into the DLQ when given).
    Finished {
        /// The dead letter to keep, when retries ran out.
        dead_letter: Option<Box<DeadLetter>>,
    },
    /// Failed with retries left: try again.
    Retry {
        /// Retries made after this attempt.
        retried: u32,
        /// When to try again.
        at: Timestamp,
    },
}

/// The result of one delivery attempt, applied in one transaction.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    /// The attempted message, as claimed (or handed over at publish).
    pub message: Message,
    /// What happens to it.
    pub resolution: AttemptResolution,
    /// Log lines: ACTIVE (when the attempt began), then ERROR, RETRY, DELIVERED or FAILED.
    pub events: Vec<NewEvent>,
    /// Callback messages to start.
    pub follow_ups: Vec<NewMessage>,
    /// For a workflow step's failure callback: its dead letter and how the callback stands now.
    pub failure_callback_report: Option<(String, crate::message::FailureCallbackInfo)>,
}

impl AttemptRecord {
    /// Whether applying the record only deletes its message and appends its events: a delivery (or a
    /// failure without a dead letter) that starts nothing and reports nothing.
    pub fn is_plain(&self) -> bool {
        matches!(self.resolution, AttemptResolution::Finished { dead_letter: None })
            && self.follow_ups.is_empty()
            && self.failure_callback_report.is_none()
    }

    /// Whether applying the record may make work due that was not: a retry, callbacks to start, or the
    /// next message of the finished one's FIFO queue or flow-control key. A plain first-try delivery
    /// makes nothing due, so nothing need wake for it.
    pub fn may_make_work_due(&self) -> bool {
        let spec = &self.message.spec;
        !self.follow_ups.is_empty()
            || matches!(self.resolution, AttemptResolution::Retry { .. })
            || spec.queue_name.is_some()
            || spec.flow_control.is_some()
    }
}

/// Where the delivery worker claims due messages and applies each attempt's outcome. Every write is
/// durable when it returns.
#[async_trait]
pub trait DeliveryStore: Send + Sync + 'static {
    /// Leases up to `limit` messages due at or before `now` until `lease_until`. The log is not written:
    /// the attempt's record carries its ACTIVE event (with the claim's time) along with its outcome, so a
    /// delivery costs the log one write, and an attempt cut off by a crash is not logged. An expired
    /// lease makes a message due again. Messages stored leased (see `NewMessage::leased_until`) are not
    /// due until their lease ends.
    async fn claim_due(
        &self,
        now: Timestamp,
        limit: usize,
        lease_until: Timestamp,
    ) -> StoreResult<Vec<Message>>;

    /// When the earliest message falls due, if any.
    async fn next_due(&self) -> StoreResult<Option<Timestamp>>;

    /// Makes every leased message due at `now` (at start, when no delivery can be in flight).
    async fn release_leases(&self, now: Timestamp) -> StoreResult<u64>;

    /// Applies an attempt's outcome. Does nothing if the message is gone (cancelled meanwhile). A message
    /// whose CREATED event the store still keeps unwritten (one handed over at publish) has it written
    /// first, before the record's events.
    async fn record_attempt(&self, record: AttemptRecord) -> StoreResult<()>;
}
