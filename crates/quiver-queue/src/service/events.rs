//! The events log: every state change of every message.

use std::sync::Arc;

use quiver_core::AccountId;

use crate::context::opaque_debug;
use crate::error::QueueError;
use crate::message::Event;
use crate::store::{EventLogStore, Filter, Page};

/// The events log of every account.
#[derive(Clone)]
pub struct EventLog {
    store: Arc<dyn EventLogStore>,
}

opaque_debug!(EventLog);

impl EventLog {
    pub(crate) fn new(store: Arc<dyn EventLogStore>) -> EventLog {
        EventLog { store }
    }

    /// A page of the event log.
    ///
    /// # Errors
    /// Store failures.
    pub async fn list(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> Result<Page<Event>, QueueError> {
        Ok(self
            .store
            .events(account, filter, cursor, count.clamp(1, 1000))
            .await?)
    }
}
