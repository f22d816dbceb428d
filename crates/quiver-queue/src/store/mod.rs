//! The storage traits of the queue domain, one per noun. Each documents its contract, and the
//! conformance suite (`testing`, feature `testing`) proves it for a backend.
//!
//! - [`MessageStore`]: pending messages (publish, read, cancel).
//! - [`DeliveryStore`]: leases on due messages, and each attempt's outcome applied atomically.
//! - [`DeadLetterStore`]: the dead letter queue.
//! - [`EventLogStore`]: the events log.
//! - [`UrlGroupStore`], [`ScheduleStore`], [`FifoQueueStore`], [`WorkflowRunStore`],
//!   [`FlowControlStore`], [`WaiterStore`]: the other nouns of the queue API.
//!
//! [`QueueStore`] is every one of them together: what a backend implements and what the server wires.
//! Each service of the domain holds only the traits it uses.

mod dead_letters;
mod delivery;
mod events;
mod fifo_queues;
mod listing;
mod messages;
mod schedules;
mod url_groups;
mod workflow_runs;

pub use crate::flow::FlowControlStore;
pub use crate::waiters::WaiterStore;
pub use dead_letters::DeadLetterStore;
pub use delivery::{AttemptRecord, AttemptResolution, DeliveryStore};
pub use events::{EventLogStore, LogPosition};
pub use fifo_queues::{FifoQueue, FifoQueueStore};
pub use listing::{Filter, Page};
pub use messages::{CancelFilter, MessageStore, QueueDepth, pending_page};
pub use schedules::ScheduleStore;
pub use url_groups::{Endpoint, UrlGroup, UrlGroupStore};
pub use workflow_runs::WorkflowRunStore;

/// Every storage trait of the queue domain: what a backend implements. Implemented for any type that
/// implements each of them.
pub trait QueueStore:
    MessageStore
    + DeliveryStore
    + DeadLetterStore
    + EventLogStore
    + UrlGroupStore
    + ScheduleStore
    + FifoQueueStore
    + WorkflowRunStore
    + FlowControlStore
    + WaiterStore
{
}

impl<T> QueueStore for T where
    T: MessageStore
        + DeliveryStore
        + DeadLetterStore
        + EventLogStore
        + UrlGroupStore
        + ScheduleStore
        + FifoQueueStore
        + WorkflowRunStore
        + FlowControlStore
        + WaiterStore
{
}
