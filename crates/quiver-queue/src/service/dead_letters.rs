//! The dead letter queue: list, read, delete, and publish again.

use std::sync::Arc;
use std::time::Duration;

use quiver_core::{AccountId, Timestamp};

use crate::context::{Context, opaque_debug};
use crate::error::QueueError;
use crate::message::{DeadLetter, Message, MessageId, NewMessage};
use crate::publish::parse_publish_options;
use crate::store::{DeadLetterStore, Filter, Page};

/// The dead letters of every account.
#[derive(Clone)]
pub struct DeadLetters {
    store: Arc<dyn DeadLetterStore>,
    context: Context,
}

opaque_debug!(DeadLetters);

impl DeadLetters {
    pub(crate) fn new(store: Arc<dyn DeadLetterStore>, context: Context) -> DeadLetters {
        DeadLetters { store, context }
    }

    /// The store, for the services that change a dead letter together with their own records.
    pub(crate) fn store(&self) -> &Arc<dyn DeadLetterStore> {
        &self.store
    }

    /// A page of dead letters.
    ///
    /// # Errors
    /// Store failures.
    pub async fn list(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> Result<Page<DeadLetter>, QueueError> {
        Ok(self
            .store
            .dead_letters(account, filter, cursor, count.clamp(1, 100))
            .await?)
    }

    /// One dead letter.
    ///
    /// # Errors
    /// [`QueueError::DeadLetterNotFound`]; store failures.
    pub async fn get(&self, account: AccountId, dlq_id: &str) -> Result<DeadLetter, QueueError> {
        let filter = Filter {
            dlq_ids: vec![dlq_id.to_owned()],
            ..Filter::default()
        };
        let page = self.store.dead_letters(account, &filter, None, 1).await?;
        page.items
            .into_iter()
            .next()
            .ok_or_else(|| QueueError::DeadLetterNotFound(dlq_id.to_owned()))
    }

    /// Deletes dead letters; returns how many existed.
    ///
    /// # Errors
    /// Store failures.
    pub async fn delete(&self, account: AccountId, dlq_ids: &[String]) -> Result<u64, QueueError> {
        Ok(self.store.delete_dead_letters(account, dlq_ids).await?)
    }

    /// Publishes a dead letter again (same destination, body and headers; configuration headers of the
    /// retry request override the original's) and removes it from the DLQ.
    ///
    /// # Errors
    /// [`QueueError::DeadLetterNotFound`]; malformed configuration; store failures.
    pub async fn retry(
        &self,
        account: AccountId,
        dlq_id: &str,
        headers: &[(String, String)],
    ) -> Result<MessageId, QueueError> {
        let dead = self.get(account, dlq_id).await?;
        let now = self.context.now();
        let replacement = self.replacement_for(&dead, headers, now)?;
        let id = self
            .store
            .retry_dead_letter(account, dlq_id, replacement, now)
            .await?
            .ok_or_else(|| QueueError::DeadLetterNotFound(dlq_id.to_owned()))?;
        self.context.signals.wake_worker();
        Ok(id)
    }

    /// A new message for `dead`, with the publish settings in `headers` (retries, method, callbacks,
    /// retry delay, flow control, delay) replacing its own.
    ///
    /// # Errors
    /// Malformed settings.
    pub(crate) fn replacement_for(
        &self,
        dead: &DeadLetter,
        headers: &[(String, String)],
        now: Timestamp,
    ) -> Result<NewMessage, QueueError> {
        let overrides = parse_publish_options(headers, &[])?;
        let mut spec = dead.message.spec.clone();
        if let Some(retries) = overrides.retries {
            spec.max_retries = self.context.config.effective_retries(Some(retries));
        }
        if let Some(method) = overrides.method {
            spec.method = method;
        }
        if let Some(callback) = overrides.callback {
            spec.callback = Some(callback);
        }
        if let Some(callback) = overrides.failure_callback {
            spec.failure_callback = Some(callback);
        }
        if overrides.retry_delay.is_some() {
            spec.retry_delay = overrides.retry_delay;
        }
        if overrides.flow_control.is_some() {
            spec.flow_control = overrides.flow_control;
        }
        let not_before = overrides
            .not_before
            .unwrap_or_else(|| now.saturating_add(overrides.delay.unwrap_or(Duration::ZERO)));
        Ok(NewMessage {
            message: Message {
                id: MessageId::generate(now),
                account_id: dead.message.account_id,
                spec,
                body: dead.message.body.clone(),
                retried: 0,
                not_before,
                created_at: now,
            },
            dedup: None,
            leased_until: None,
            early: None,
        })
    }
}
