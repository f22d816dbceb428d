//! The queue's flow-control operations: read, list, pin, pause and resume keys.

use std::sync::Arc;

use quiver_core::AccountId;

use crate::context::{Context, opaque_debug};
use crate::error::QueueError;
use crate::flow::{FlowControlChange, FlowControlState, FlowControlStore};

/// The flow-control keys of every account.
#[derive(Clone)]
pub struct FlowControl {
    store: Arc<dyn FlowControlStore>,
    context: Context,
}

opaque_debug!(FlowControl);

impl FlowControl {
    pub(crate) fn new(store: Arc<dyn FlowControlStore>, context: Context) -> FlowControl {
        FlowControl { store, context }
    }

    /// A key's state.
    ///
    /// # Errors
    /// [`QueueError::FlowControlNotFound`] for a key the account never used; store failures.
    pub async fn get(&self, account: AccountId, key: &str) -> Result<FlowControlState, QueueError> {
        self.store
            .flow_control(account, key, self.context.now())
            .await?
            .ok_or_else(|| QueueError::FlowControlNotFound(key.to_owned()))
    }

    /// Every key of the account.
    ///
    /// # Errors
    /// Store failures.
    pub async fn list(&self, account: AccountId) -> Result<Vec<FlowControlState>, QueueError> {
        Ok(self.store.flow_controls(account, self.context.now()).await?)
    }

    /// The most deliveries in flight at once across the process, and the account's deliveries now.
    ///
    /// # Errors
    /// Store failures.
    pub async fn global_parallelism(&self, account: AccountId) -> Result<(usize, u64), QueueError> {
        let count = self.store.in_flight(account, self.context.now()).await?;
        Ok((self.context.config.delivery_concurrency, count))
    }

    /// Pauses, resumes, pins, unpins or resets a key, and lets the delivery worker look again.
    ///
    /// # Errors
    /// [`QueueError::FlowControlNotFound`] for an unknown key; [`QueueError::InvalidRequest`] for a pin
    /// without any limit or with a zero; store failures.
    pub async fn change(
        &self,
        account: AccountId,
        key: &str,
        change: FlowControlChange,
    ) -> Result<(), QueueError> {
        if let FlowControlChange::Pin {
            parallelism,
            rate,
            period_secs,
        } = change
        {
            if parallelism.is_none() && rate.is_none() && period_secs.is_none() {
                return Err(QueueError::InvalidRequest(
                    "pin needs at least one of parallelism, rate or period".into(),
                ));
            }
            if parallelism == Some(0) || rate == Some(0) || period_secs == Some(0) {
                return Err(QueueError::InvalidRequest(
                    "parallelism, rate and period must be at least 1".into(),
                ));
            }
        }
        let found = self
            .store
            .change_flow_control(account, key, change, self.context.now())
            .await?;
        if !found {
            return Err(QueueError::FlowControlNotFound(key.to_owned()));
        }
        self.context.signals.wake_worker();
        Ok(())
    }
}
