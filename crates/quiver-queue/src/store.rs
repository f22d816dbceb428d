//! The storage trait of the queue domain.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::message::{DeadLetter, Enqueued, Event, Message, MessageId, MessageState, NewEvent, NewMessage};

/// An endpoint of a URL group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Optional name, unique in the group.
    pub name: Option<String>,
    /// Where messages go.
    pub url: String,
}

/// A URL group: publishing to its name fans out to every endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlGroup {
    /// Name.
    pub name: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// Endpoints, in the order they were added.
    pub endpoints: Vec<Endpoint>,
    /// Headers merged under each publish's own.
    pub default_headers: Vec<(String, String)>,
}

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
    /// Owner.
    pub account_id: AccountId,
    /// The attempted message.
    pub message_id: MessageId,
    /// What happens to it.
    pub resolution: AttemptResolution,
    /// Log lines (ERROR, RETRY, DELIVERED, FAILED).
    pub events: Vec<NewEvent>,
    /// Callback messages to start.
    pub follow_ups: Vec<NewMessage>,
    /// For a workflow step's failure callback: its dead letter and how the callback stands now.
    pub failure_callback_report: Option<(String, crate::message::FailureCallbackInfo)>,
}

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

/// A page of results and the cursor of the next page (`None` at the end).
#[derive(Debug, Clone)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// Where the next page starts.
    pub cursor: Option<String>,
}

/// Where a pass over the events log goes on from: an account, and the last event of it looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPosition {
    /// The account's id, as stored.
    pub account: String,
    /// The `seq` of the last event looked at; the next window starts after it.
    pub seq: i64,
}

/// Where messages, dead letters, events and URL groups live. Every write is durable when it returns.
#[async_trait]
pub trait QueueStore:
    ScheduleStore + QueueRecordStore + WorkflowStore + crate::flow::FlowControlStore + crate::waiters::WaiterStore
{
    /// Stores messages (with a CREATED event each) in one transaction. A message whose deduplication key
    /// is still live is not stored; the earlier message's id is returned instead.
    async fn enqueue(&self, messages: Vec<NewMessage>, now: Timestamp) -> StoreResult<Vec<Enqueued>>;

    /// Leases up to `limit` messages due at or before `now` until `lease_until`, recording ACTIVE for
    /// each. An expired lease makes a message due again.
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

    /// Applies an attempt's outcome. Does nothing if the message is gone (cancelled meanwhile).
    async fn record_attempt(&self, record: AttemptRecord) -> StoreResult<()>;

    /// A pending message.
    async fn message(&self, account: AccountId, id: &MessageId) -> StoreResult<Option<Message>>;

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

    /// Dead letters, newest first, after `cursor`.
    async fn dead_letters(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> StoreResult<Page<DeadLetter>>;

    /// Removes dead letters; returns how many existed.
    async fn delete_dead_letters(&self, account: AccountId, dlq_ids: &[String]) -> StoreResult<u64>;

    /// Starts a dead letter's failure callback again: stores `callback` and marks the dead letter's
    /// failure callback in progress, in one transaction. `false` (and nothing stored) when the dead
    /// letter is gone.
    async fn retry_failure_callback(
        &self,
        account: AccountId,
        dlq_id: &str,
        callback: NewMessage,
        now: Timestamp,
    ) -> StoreResult<bool>;

    /// Removes a dead letter and stores `replacement` in its place, atomically; `None` when there was no
    /// such dead letter.
    async fn retry_dead_letter(
        &self,
        account: AccountId,
        dlq_id: &str,
        replacement: NewMessage,
        now: Timestamp,
    ) -> StoreResult<Option<MessageId>>;

    /// One step of a pass over the events log: deletes the events of finished messages (no longer
    /// pending) whose newest event is older than `older_than`, among the messages of up to `window`
    /// events after `from` (from the first account's oldest event when `None`). Returns how many events
    /// were deleted and where the next step starts; `None` when every account's events older than
    /// `older_than` have been looked at.
    async fn prune_log(
        &self,
        older_than: Timestamp,
        window: usize,
        from: Option<LogPosition>,
    ) -> StoreResult<(u64, Option<LogPosition>)>;

    /// Deletes the dead letters that failed before `older_than`, looking at up to `window` of the oldest.
    /// Returns how many were deleted; 0 means none in the window could go.
    async fn prune_dead_letters(&self, older_than: Timestamp, window: usize) -> StoreResult<u64>;

    /// Log events, newest first, after `cursor`.
    async fn events(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> StoreResult<Page<Event>>;

    /// A URL group.
    async fn url_group(&self, account: AccountId, name: &str) -> StoreResult<Option<UrlGroup>>;

    /// Every URL group, by name.
    async fn url_groups(&self, account: AccountId) -> StoreResult<Vec<UrlGroup>>;

    /// Creates or replaces a URL group.
    async fn put_url_group(&self, account: AccountId, group: &UrlGroup) -> StoreResult<()>;

    /// Deletes a URL group; `false` when it did not exist.
    async fn delete_url_group(&self, account: AccountId, name: &str) -> StoreResult<bool>;
}

/// Where schedules live (part of every queue backend).
#[async_trait]
pub trait ScheduleStore: Send + Sync + 'static {
    /// Creates or replaces a schedule.
    async fn put_schedule(&self, schedule: &crate::schedule::Schedule) -> StoreResult<()>;

    /// A schedule of the account.
    async fn schedule(&self, account: AccountId, id: &str) -> StoreResult<Option<crate::schedule::Schedule>>;

    /// Every schedule of the account, oldest first.
    async fn schedules(&self, account: AccountId) -> StoreResult<Vec<crate::schedule::Schedule>>;

    /// Deletes a schedule; `false` when it did not exist.
    async fn delete_schedule(&self, account: AccountId, id: &str) -> StoreResult<bool>;

    /// Up to `limit` unpaused schedules due at or before `now`, earliest first.
    async fn due_schedules(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> StoreResult<Vec<crate::schedule::Schedule>>;

    /// When the earliest unpaused schedule fires.
    async fn next_schedule_due(&self) -> StoreResult<Option<Timestamp>>;
}

/// A FIFO queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRecord {
    /// Name.
    pub name: String,
    /// Messages delivered at once (in order).
    pub parallelism: u32,
    /// Whether delivery is paused.
    pub paused: bool,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// Messages waiting or being delivered.
    pub lag: u64,
}

/// Where FIFO queues live (part of every queue backend).
#[async_trait]
pub trait QueueRecordStore: Send + Sync + 'static {
    /// Creates a queue, or changes its parallelism and pause state.
    async fn put_queue(
        &self,
        account: AccountId,
        name: &str,
        parallelism: u32,
        paused: bool,
        now: Timestamp,
    ) -> StoreResult<()>;

    /// Creates a queue with these settings only if it does not exist.
    async fn ensure_queue(
        &self,
        account: AccountId,
        name: &str,
        parallelism: u32,
        now: Timestamp,
    ) -> StoreResult<()>;

    /// A queue with its lag.
    async fn queue(&self, account: AccountId, name: &str) -> StoreResult<Option<QueueRecord>>;

    /// Every queue of the account, by name.
    async fn queues(&self, account: AccountId) -> StoreResult<Vec<QueueRecord>>;

    /// Deletes a queue (its waiting messages are then delivered without order); `false` if missing.
    async fn delete_queue(&self, account: AccountId, name: &str) -> StoreResult<bool>;
}

/// Where workflow runs live (part of every queue backend).
#[async_trait]
pub trait WorkflowStore: Send + Sync + 'static {
    /// Records a new run; `false` (and nothing changes) when a run with its id exists.
    async fn start_run(&self, run: &crate::workflow::WorkflowRun) -> StoreResult<bool>;

    /// Appends a step to a started run; `false` when the run is missing or has ended.
    async fn append_step(
        &self,
        account: AccountId,
        run_id: &str,
        step: &crate::workflow::RunStep,
    ) -> StoreResult<bool>;

    /// A run.
    async fn run(
        &self,
        account: AccountId,
        run_id: &str,
    ) -> StoreResult<Option<crate::workflow::WorkflowRun>>;

    /// Every run of the account, newest first.
    async fn runs(&self, account: AccountId) -> StoreResult<Vec<crate::workflow::WorkflowRun>>;

    /// Ends a started run in `state`; `false` when it was missing or had ended.
    async fn finish_run(
        &self,
        account: AccountId,
        run_id: &str,
        state: crate::workflow::RunState,
        at: Timestamp,
        response: Option<String>,
    ) -> StoreResult<bool>;

    /// The pending messages of a run, and whether each is being delivered right now.
    async fn run_messages(
        &self,
        account: AccountId,
        run_id: &str,
        now: Timestamp,
    ) -> StoreResult<Vec<(MessageId, bool)>>;
}
