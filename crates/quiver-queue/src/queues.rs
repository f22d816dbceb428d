//! FIFO queues: enqueue, and the queue records (parallelism, pause) of the queue API.

use quiver_core::AccountId;

use crate::error::QueueError;
use crate::names::is_valid_name;
use crate::service::{PublishOutcome, PublishRequest, Queue};
use crate::store::QueueRecord;

/// Most messages a queue may deliver at once.
pub const MAX_PARALLELISM: u32 = 1_000;

fn check_name(name: &str) -> Result<(), QueueError> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(QueueError::InvalidRequest(format!(
            "invalid queue name `{name}`: use A-Z, a-z, 0-9, `.`, `_` and `-`"
        )))
    }
}

impl Queue {
    /// Publishes into a queue (created with parallelism 1 when missing): delivered in order, at most the
    /// queue's parallelism at once, each waiting for the retries of those before it.
    ///
    /// # Errors
    /// As [`Queue::publish`], and an invalid queue name (400).
    pub async fn enqueue(
        &self,
        account: AccountId,
        queue: &str,
        mut request: PublishRequest,
    ) -> Result<PublishOutcome, QueueError> {
        check_name(queue)?;
        request
            .headers
            .retain(|(name, _)| !name.to_ascii_lowercase().ends_with("-queue-name"));
        request.headers.push(("Svc-Queue-Name".into(), queue.to_owned()));
        self.publish(account, request).await
    }

    /// Creates a queue or changes it.
    ///
    /// # Errors
    /// An invalid name or parallelism (400); store failures.
    pub async fn upsert_queue(
        &self,
        account: AccountId,
        name: &str,
        parallelism: u32,
        paused: bool,
    ) -> Result<(), QueueError> {
        check_name(name)?;
        if !(1..=MAX_PARALLELISM).contains(&parallelism) {
            return Err(QueueError::InvalidRequest(format!(
                "parallelism must be between 1 and {MAX_PARALLELISM}"
            )));
        }
        self.store()
            .put_queue(account, name, parallelism, paused, self.clock().now())
            .await?;
        self.wake_worker();
        Ok(())
    }

    /// A queue.
    ///
    /// # Errors
    /// [`QueueError::QueueNotFound`]; store failures.
    pub async fn queue_record(&self, account: AccountId, name: &str) -> Result<QueueRecord, QueueError> {
        self.store()
            .queue(account, name)
            .await?
            .ok_or_else(|| QueueError::QueueNotFound(name.to_owned()))
    }

    /// Every queue.
    ///
    /// # Errors
    /// Store failures.
    pub async fn queue_records(&self, account: AccountId) -> Result<Vec<QueueRecord>, QueueError> {
        Ok(self.store().queues(account).await?)
    }

    /// Deletes a queue; its waiting messages are then delivered without order.
    ///
    /// # Errors
    /// [`QueueError::QueueNotFound`]; store failures.
    pub async fn delete_queue(&self, account: AccountId, name: &str) -> Result<(), QueueError> {
        if !self.store().delete_queue(account, name).await? {
            return Err(QueueError::QueueNotFound(name.to_owned()));
        }
        self.wake_worker();
        Ok(())
    }

    /// Pauses or resumes a queue.
    ///
    /// # Errors
    /// [`QueueError::QueueNotFound`]; store failures.
    pub async fn set_queue_paused(
        &self,
        account: AccountId,
        name: &str,
        paused: bool,
    ) -> Result<(), QueueError> {
        let record = self.queue_record(account, name).await?;
        self.store()
            .put_queue(account, name, record.parallelism, paused, self.clock().now())
            .await?;
        self.wake_worker();
        Ok(())
    }
}
