//! Pending messages: read one, cancel one or many.

use std::sync::Arc;

use quiver_core::AccountId;

use crate::context::{Context, opaque_debug};
use crate::error::QueueError;
use crate::message::{Message, MessageId};
use crate::store::{CancelFilter, MessageStore, Page};

/// How many pending messages one page of [`Messages::pending`] reads at most, matched or not: a page
/// with a narrow filter over a long queue answers in bounded time.
const PENDING_SCAN: usize = 2_000;

/// The pending messages of every account.
#[derive(Clone)]
pub struct Messages {
    store: Arc<dyn MessageStore>,
    context: Context,
}

opaque_debug!(Messages);

impl Messages {
    pub(crate) fn new(store: Arc<dyn MessageStore>, context: Context) -> Messages {
        Messages { store, context }
    }

    /// A pending message.
    ///
    /// # Errors
    /// [`QueueError::MessageNotFound`]; store failures.
    pub async fn get(&self, account: AccountId, id: &str) -> Result<Message, QueueError> {
        self.store
            .message(account, &MessageId(id.to_owned()))
            .await?
            .ok_or_else(|| QueueError::MessageNotFound(id.to_owned()))
    }

    /// A page of the pending messages `filter` matches, oldest first, from `cursor` (a page's cursor;
    /// the first page when `None`): at most `count`, and fewer when the page has read 2,000 messages
    /// without finding as many (a page's cursor says whether more are left).
    ///
    /// # Errors
    /// Store failures.
    pub async fn pending(
        &self,
        account: AccountId,
        filter: CancelFilter,
        cursor: Option<String>,
        count: usize,
    ) -> Result<Page<Message>, QueueError> {
        Ok(self
            .store
            .pending(account, filter, cursor.map(MessageId), count, PENDING_SCAN)
            .await?)
    }

    /// Cancels one pending message.
    ///
    /// # Errors
    /// [`QueueError::MessageNotFound`] when it is not pending; store failures.
    pub async fn cancel(&self, account: AccountId, id: &str) -> Result<(), QueueError> {
        let cancelled = self
            .store
            .cancel(
                account,
                Some(vec![MessageId(id.to_owned())]),
                CancelFilter::default(),
                None,
                self.context.now(),
            )
            .await?;
        if cancelled == 0 {
            return Err(QueueError::MessageNotFound(id.to_owned()));
        }
        Ok(())
    }

    /// Cancels the given messages, or (when `ids` is `None`) the pending messages `filter` matches, at most
    /// `limit` of them; returns the count.
    ///
    /// # Errors
    /// Store failures.
    pub async fn cancel_many(
        &self,
        account: AccountId,
        ids: Option<Vec<String>>,
        filter: CancelFilter,
        limit: Option<usize>,
    ) -> Result<u64, QueueError> {
        let ids = ids.map(|ids| ids.into_iter().map(MessageId).collect());
        Ok(self
            .store
            .cancel(account, ids, filter, limit, self.context.now())
            .await?)
    }
}
