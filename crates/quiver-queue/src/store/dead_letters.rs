//! Where dead letters are kept, listed, retried and pruned.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};

use super::listing::{Filter, Page};
use crate::message::{DeadLetter, MessageId, NewMessage};

/// Where messages that ran out of retries are kept. Every write is durable when it returns.
#[async_trait]
pub trait DeadLetterStore: Send + Sync + 'static {
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

    /// Marks a dead letter's failure callback cancelled, where it is in progress; `false` when the dead
    /// letter is gone or its callback is not in progress (delivered, failed or cancelled meanwhile).
    async fn cancel_failure_callback(&self, account: AccountId, dlq_id: &str) -> StoreResult<bool>;

    /// Removes a dead letter and stores `replacement` in its place, atomically; `None` when there was no
    /// such dead letter.
    async fn retry_dead_letter(
        &self,
        account: AccountId,
        dlq_id: &str,
        replacement: NewMessage,
        now: Timestamp,
    ) -> StoreResult<Option<MessageId>>;

    /// Deletes the dead letters that failed before `older_than`, looking at up to `window` of the oldest.
    /// Returns how many were deleted; 0 means none in the window could go.
    async fn prune_dead_letters(&self, older_than: Timestamp, window: usize) -> StoreResult<u64>;
}
