//! Filters and pages shared by the listings of dead letters and events.

use quiver_core::Timestamp;

use crate::message::MessageState;

/// Filters of the DLQ and the event log: every filter given must match, and the values of one filter are
/// alternatives. An empty filter matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Message ids.
    pub message_ids: Vec<String>,
    /// Dead letter ids.
    pub dlq_ids: Vec<String>,
    /// States (events).
    pub states: Vec<MessageState>,
    /// Destination URLs.
    pub urls: Vec<String>,
    /// Destination hosts (events).
    pub hosts: Vec<String>,
    /// Destination paths (events).
    pub paths: Vec<String>,
    /// URL groups.
    pub topic_names: Vec<String>,
    /// FIFO queues.
    pub queue_names: Vec<String>,
    /// Schedules.
    pub schedule_ids: Vec<String>,
    /// Last response statuses (DLQ).
    pub response_statuses: Vec<u16>,
    /// Labels (a message matches when it carries any of them).
    pub labels: Vec<String>,
    /// From this time on (inclusive).
    pub from: Option<Timestamp>,
    /// Up to this time (inclusive).
    pub to: Option<Timestamp>,
    /// Flow-control keys.
    pub flow_control_keys: Vec<String>,
    /// Publisher addresses.
    pub caller_ips: Vec<String>,
    /// Only messages of workflow runs (DLQ, `source=workflow`).
    pub workflow_only: bool,
    /// Runs (DLQ of workflows).
    pub workflow_run_ids: Vec<String>,
    /// Workflow URLs (DLQ of workflows).
    pub workflow_urls: Vec<String>,
    /// When the message's workflow run was created (DLQ of workflows).
    pub workflow_created_at: Option<Timestamp>,
    /// States of the dead letter's failure callback (DLQ of workflows).
    pub failure_callback_states: Vec<crate::message::FailureCallbackState>,
}

/// A page of results and the cursor of the next page (`None` at the end).
#[derive(Debug, Clone)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// Where the next page starts.
    pub cursor: Option<String>,
}

impl<T> Page<T> {
    /// The first `count` of `items` (newest first, with their sequence numbers), read as `count + 1` to
    /// tell whether another page follows: then the cursor is the last kept item's number.
    pub fn from_newest(mut items: Vec<(i64, T)>, count: usize) -> Page<T> {
        let cursor = if items.len() > count {
            items.truncate(count);
            items.last().map(|(seq, _)| seq.to_string())
        } else {
            None
        };
        Page {
            items: items.into_iter().map(|(_, item)| item).collect(),
            cursor,
        }
    }
}
