//! The events log: every state change of every message.

use std::sync::Arc;
use std::time::Duration;

use quiver_core::AccountId;

use crate::answered::AnsweredWrites;
use crate::context::opaque_debug;
use crate::error::QueueError;
use crate::message::Event;
use crate::store::{EventLogStore, Filter, Page};

/// The events log of every account.
#[derive(Clone)]
pub struct EventLog {
    store: Arc<dyn EventLogStore>,
    /// The publish writes still committing, which a read waits for.
    answered: Arc<AnsweredWrites>,
}

/// How long a read of the log waits at most for the publishes answered before it to be logged.
const CATCH_UP: Duration = Duration::from_secs(2);

opaque_debug!(EventLog);

impl EventLog {
    pub(crate) fn new(store: Arc<dyn EventLogStore>, answered: Arc<AnsweredWrites>) -> EventLog {
        EventLog { store, answered }
    }

    /// A page of the event log. It shows every publish this process answered before the read: one
    /// answered while its write was still committing (see `crate::answered`) is waited for.
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
        self.answered.caught_up(CATCH_UP).await;
        Ok(self
            .store
            .events(account, filter, cursor, count.clamp(1, 1000))
            .await?)
    }
}
