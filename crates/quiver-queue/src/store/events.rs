//! The events log: every state change of every message, listed and pruned.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};

use super::listing::{Filter, Page};
use crate::message::Event;

/// Where a pass over the events log goes on from: an account, and the last event of it looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPosition {
    /// The account's id, as stored.
    pub account: String,
    /// The `seq` of the last event looked at; the next window starts after it.
    pub seq: i64,
}

/// Where the events log lives. Events are written by the other stores' writes (a publish, a claim, an
/// attempt, a cancel); this trait reads and prunes them.
#[async_trait]
pub trait EventLogStore: Send + Sync + 'static {
    /// Log events, newest first, after `cursor`.
    async fn events(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> StoreResult<Page<Event>>;

    /// Whether the caller runs the retention round due at `now`: `true` for one caller, after which every
    /// caller (on any node sharing the store) is told `false` until `next_round`.
    async fn claim_retention_round(&self, now: Timestamp, next_round: Timestamp) -> StoreResult<bool>;

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
}
