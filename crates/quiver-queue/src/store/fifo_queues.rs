//! FIFO queues: named lanes delivered in order, at most their parallelism at once.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};

use crate::names::QueueName;

/// A FIFO queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FifoQueue {
    /// Name.
    pub name: QueueName,
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
pub trait FifoQueueStore: Send + Sync + 'static {
    /// Creates a queue, or changes its parallelism and pause state.
    async fn put_fifo_queue(
        &self,
        account: AccountId,
        name: &QueueName,
        parallelism: u32,
        paused: bool,
        now: Timestamp,
    ) -> StoreResult<()>;

    /// Creates a queue with these settings only if it does not exist.
    async fn ensure_fifo_queue(
        &self,
        account: AccountId,
        name: &QueueName,
        parallelism: u32,
        now: Timestamp,
    ) -> StoreResult<()>;

    /// A queue with its lag.
    async fn fifo_queue(&self, account: AccountId, name: &QueueName) -> StoreResult<Option<FifoQueue>>;

    /// Every queue of the account, by name.
    async fn fifo_queues(&self, account: AccountId) -> StoreResult<Vec<FifoQueue>>;

    /// Deletes a queue (its waiting messages are then delivered without order); `false` if missing.
    async fn delete_fifo_queue(&self, account: AccountId, name: &QueueName) -> StoreResult<bool>;
}
