//! FIFO queues: named lanes whose messages are delivered in order, at most the queue's parallelism at
//! once (the `/v2/queues` API). Publishing into one is [`Publisher::enqueue`](super::publisher::Publisher::enqueue).

use std::sync::Arc;

use quiver_core::AccountId;

use crate::context::{Context, opaque_debug};
use crate::error::QueueError;
use crate::names::QueueName;
use crate::store::{FifoQueue, FifoQueueStore};

/// Most messages a queue may deliver at once.
pub const MAX_PARALLELISM: u32 = 1_000;

/// The FIFO queues of every account.
#[derive(Clone)]
pub struct FifoQueues {
    store: Arc<dyn FifoQueueStore>,
    context: Context,
}

opaque_debug!(FifoQueues);

impl FifoQueues {
    pub(crate) fn new(store: Arc<dyn FifoQueueStore>, context: Context) -> FifoQueues {
        FifoQueues { store, context }
    }

    /// Creates a queue or changes it.
    ///
    /// # Errors
    /// An invalid parallelism (400); store failures.
    pub async fn upsert(
        &self,
        account: AccountId,
        name: &QueueName,
        parallelism: u32,
        paused: bool,
    ) -> Result<(), QueueError> {
        if !(1..=MAX_PARALLELISM).contains(&parallelism) {
            return Err(QueueError::InvalidRequest(format!(
                "parallelism must be between 1 and {MAX_PARALLELISM}"
            )));
        }
        self.store
            .put_fifo_queue(account, name, parallelism, paused, self.context.now())
            .await?;
        self.context.signals.wake_worker();
        Ok(())
    }

    /// A queue.
    ///
    /// # Errors
    /// [`QueueError::QueueNotFound`]; store failures.
    pub async fn get(&self, account: AccountId, name: &QueueName) -> Result<FifoQueue, QueueError> {
        self.store
            .fifo_queue(account, name)
            .await?
            .ok_or_else(|| QueueError::QueueNotFound(name.to_string()))
    }

    /// Every queue.
    ///
    /// # Errors
    /// Store failures.
    pub async fn list(&self, account: AccountId) -> Result<Vec<FifoQueue>, QueueError> {
        Ok(self.store.fifo_queues(account).await?)
    }

    /// Deletes a queue; its waiting messages are then delivered without order.
    ///
    /// # Errors
    /// [`QueueError::QueueNotFound`]; store failures.
    pub async fn delete(&self, account: AccountId, name: &QueueName) -> Result<(), QueueError> {
        if !self.store.delete_fifo_queue(account, name).await? {
            return Err(QueueError::QueueNotFound(name.to_string()));
        }
        self.context.signals.wake_worker();
        Ok(())
    }

    /// Pauses or resumes a queue.
    ///
    /// # Errors
    /// [`QueueError::QueueNotFound`]; store failures.
    pub async fn set_paused(
        &self,
        account: AccountId,
        name: &QueueName,
        paused: bool,
    ) -> Result<(), QueueError> {
        let record = self.get(account, name).await?;
        self.store
            .put_fifo_queue(account, name, record.parallelism, paused, self.context.now())
            .await?;
        self.context.signals.wake_worker();
        Ok(())
    }
}
