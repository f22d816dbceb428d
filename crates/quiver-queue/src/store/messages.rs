//! Where pending messages are stored, read and cancelled.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};

use crate::message::{Enqueued, Message, MessageId, NewMessage};
use crate::store::Page;

/// Which pending messages a bulk cancel by filter takes: every filter given must match, and the values of
/// one filter are alternatives. An empty filter matches every message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CancelFilter {
    /// Destination URLs.
    pub urls: Vec<String>,
    /// Destination hosts.
    pub hosts: Vec<String>,
    /// Destination paths.
    pub paths: Vec<String>,
    /// URL groups.
    pub topic_names: Vec<String>,
    /// FIFO queues.
    pub queue_names: Vec<String>,
    /// Labels (a message matches when it carries any of them).
    pub labels: Vec<String>,
    /// Flow-control keys.
    pub flow_control_keys: Vec<String>,
    /// Schedules.
    pub schedule_ids: Vec<String>,
    /// Publisher addresses.
    pub caller_ips: Vec<String>,
    /// Created at or after.
    pub from: Option<Timestamp>,
    /// Created at or before.
    pub to: Option<Timestamp>,
}

impl CancelFilter {
    /// Whether `message` matches.
    pub fn matches(&self, message: &crate::message::Message) -> bool {
        let spec = &message.spec;
        let one = |wanted: &[String], value: Option<&str>| {
            wanted.is_empty() || value.is_some_and(|v| wanted.iter().any(|w| w == v))
        };
        // A destination that does not parse as a URL has no host or path to match.
        let url = url::Url::parse(&spec.url).ok();
        one(&self.urls, Some(&spec.url))
            && one(&self.hosts, url.as_ref().and_then(url::Url::host_str))
            && one(&self.paths, url.as_ref().map(url::Url::path))
            && one(&self.topic_names, spec.topic_name.as_deref())
            && one(&self.queue_names, spec.queue_name.as_deref())
            && (self.labels.is_empty() || spec.labels.iter().any(|l| self.labels.contains(l)))
            && one(
                &self.flow_control_keys,
                spec.flow_control.as_ref().map(|f| f.key.as_str()),
            )
            && one(&self.schedule_ids, spec.schedule_id.as_deref())
            && one(&self.caller_ips, spec.caller_ip.as_deref())
            && self.from.is_none_or(|from| message.created_at >= from)
            && self.to.is_none_or(|to| message.created_at <= to)
    }
}

/// Where pending messages live: stored by publish, read and cancelled by the API. Every write is durable
/// when it returns.
#[async_trait]
pub trait MessageStore: Send + Sync + 'static {
    /// Stores messages (with a CREATED event each) in one transaction. A message whose deduplication key
    /// is still live is not stored; the earlier message's id is returned instead.
    async fn enqueue(&self, messages: Vec<NewMessage>, now: Timestamp) -> StoreResult<Vec<Enqueued>>;

    /// A pending message.
    async fn message(&self, account: AccountId, id: &MessageId) -> StoreResult<Option<Message>>;

    /// A page of the account's pending messages that `filter` matches, in id order (which is creation
    /// order), starting after the message id `after` (from the first when `None`). The page holds at most
    /// `count` messages and stops once `scan` messages have been read, so that a narrow filter over a
    /// long queue still answers in bounded time; its cursor is the id of the last message read, and
    /// `None` only when no message is left to read.
    async fn pending(
        &self,
        account: AccountId,
        filter: CancelFilter,
        after: Option<MessageId>,
        count: usize,
        scan: usize,
    ) -> StoreResult<Page<Message>>;

    /// Cancels the given pending messages, or every pending message of the account when `ids` is
    /// `None`; records CANCEL_REQUESTED and CANCELED. Returns how many were cancelled.
    async fn cancel(
        &self,
        account: AccountId,
        ids: Option<Vec<MessageId>>,
        filter: CancelFilter,
        limit: Option<usize>,
        now: Timestamp,
    ) -> StoreResult<u64>;

    /// How much work the store holds, over every account (for metrics): pending messages, of them
    /// those due at `now` and not leased, and dead letters.
    async fn depth(&self, now: Timestamp) -> StoreResult<QueueDepth>;
}

/// Counts of what waits in a store (see [`MessageStore::depth`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueDepth {
    /// Pending messages: due, delayed, or leased by a delivery.
    pub pending: u64,
    /// Of those, due now and not leased.
    pub due: u64,
    /// Messages in the dead letter queue.
    pub dead_letters: u64,
}

/// Gathers a page of [`MessageStore::pending`] from the messages a backend read in id order, at most
/// `scan` of them: the first `count` that `filter` matches, and where the next page starts.
///
/// # Errors
/// The first error among the messages read.
pub fn pending_page(
    read: impl Iterator<Item = StoreResult<Message>>,
    filter: &CancelFilter,
    count: usize,
    scan: usize,
) -> StoreResult<Page<Message>> {
    let mut items = Vec::new();
    let mut last = None;
    let mut seen = 0;
    for message in read {
        let message = message?;
        seen += 1;
        last = Some(message.id.0.clone());
        if filter.matches(&message) {
            items.push(message);
            if items.len() >= count {
                break;
            }
        }
    }
    let is_exhausted = seen < scan && items.len() < count;
    Ok(Page {
        items,
        cursor: if is_exhausted { None } else { last },
    })
}
