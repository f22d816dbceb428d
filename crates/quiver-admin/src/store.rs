//! The storage trait of the management domain.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, IndexId};

use crate::account::Account;
use crate::catalog::{IndexKind, IndexRecord};

/// Where accounts and the index catalogue live. Every write is durable when it returns `Ok`.
#[async_trait]
pub trait AdminStore: Send + Sync + 'static {
    /// Adds an account. [`quiver_core::StoreError::Conflict`] when its email or a token is taken, or
    /// when it is a second bootstrap account.
    async fn insert_account(&self, account: &Account) -> StoreResult<()>;

    /// Replaces the account with the same id; `false` when there is none. Conflicts as for insert.
    async fn update_account(&self, account: &Account) -> StoreResult<bool>;

    /// The account with this email (exact match).
    async fn account_by_email(&self, email: &str) -> StoreResult<Option<Account>>;

    /// The account with this id.
    async fn account_by_id(&self, id: AccountId) -> StoreResult<Option<Account>>;

    /// The account whose queue token or read-only queue token is `token`.
    async fn account_by_queue_token(&self, token: &str) -> StoreResult<Option<Account>>;

    /// The account made at first start, if any.
    async fn bootstrap_account(&self) -> StoreResult<Option<Account>>;

    /// Every account, oldest first.
    async fn accounts(&self) -> StoreResult<Vec<Account>>;

    /// Adds an index. [`quiver_core::StoreError::Conflict`] when its id, endpoint or a token is taken.
    async fn insert_index(&self, index: &IndexRecord) -> StoreResult<()>;

    /// The index with this id, only if `account` owns it.
    async fn index(&self, account: AccountId, id: IndexId) -> StoreResult<Option<IndexRecord>>;

    /// The account's indexes of one kind, oldest first.
    async fn indexes(&self, account: AccountId, kind: IndexKind) -> StoreResult<Vec<IndexRecord>>;

    /// Replaces the index with the same id (its owner may change); `false` when there is none.
    /// Conflicts as for insert.
    async fn update_index(&self, index: &IndexRecord) -> StoreResult<bool>;

    /// Removes the index if `account` owns it; `false` when it did not exist for that account.
    async fn delete_index(&self, account: AccountId, id: IndexId) -> StoreResult<bool>;

    /// Adds usage to the stored minutes and to their [`crate::usage::SLOT_MINUTES`] slots, merging with
    /// what each already holds, in minute order (so the latest snapshot wins).
    async fn add_usage(&self, usage: Vec<(IndexId, i64, crate::usage::MinuteUsage)>) -> StoreResult<()>;

    /// The stored usage of an index per slot of [`crate::usage::SLOT_MINUTES`] minutes, for slots
    /// starting at minutes `from..=to`, keyed by each slot's first minute, oldest first.
    async fn usage_slots(
        &self,
        index: IndexId,
        from: i64,
        to: i64,
    ) -> StoreResult<Vec<(i64, crate::usage::MinuteUsage)>>;

    /// The stored usage of an index for minutes `from..=to`, oldest first.
    async fn usage(
        &self,
        index: IndexId,
        from: i64,
        to: i64,
    ) -> StoreResult<Vec<(i64, crate::usage::MinuteUsage)>>;

    /// The index whose read-write or read-only token is `token`.
    async fn index_by_token(&self, token: &str) -> StoreResult<Option<IndexRecord>>;
}
