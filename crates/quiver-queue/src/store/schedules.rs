//! Cron schedules.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};

use crate::names::ScheduleId;

/// Where schedules live (part of every queue backend).
#[async_trait]
pub trait ScheduleStore: Send + Sync + 'static {
    /// Creates or replaces a schedule.
    async fn put_schedule(&self, schedule: &crate::schedule::Schedule) -> StoreResult<()>;

    /// A schedule of the account.
    async fn schedule(
        &self,
        account: AccountId,
        id: &ScheduleId,
    ) -> StoreResult<Option<crate::schedule::Schedule>>;

    /// Every schedule of the account, oldest first.
    async fn schedules(&self, account: AccountId) -> StoreResult<Vec<crate::schedule::Schedule>>;

    /// Deletes a schedule; `false` when it did not exist.
    async fn delete_schedule(&self, account: AccountId, id: &ScheduleId) -> StoreResult<bool>;

    /// Takes up to `limit` unpaused schedules due at or before `now` to fire, earliest first (as they
    /// were stored): each one's stored next firing moves to `hold_until`, so that no other caller (another
    /// node on a shared store) takes it meanwhile. The firing's `put_schedule` then stores its real next
    /// time; a firing that never finishes leaves the schedule due again at `hold_until`.
    async fn claim_due_schedules(
        &self,
        now: Timestamp,
        limit: usize,
        hold_until: Timestamp,
    ) -> StoreResult<Vec<crate::schedule::Schedule>>;

    /// When the earliest unpaused schedule fires.
    async fn next_schedule_due(&self) -> StoreResult<Option<Timestamp>>;
}
