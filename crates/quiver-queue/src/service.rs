//! The queue's operations: publish (to a URL or a URL group), batches, messages, the dead letter queue
//! and the event log; URL groups in the `url_groups` submodule.

use std::sync::Arc;
use std::time::Duration;

use quiver_core::{AccountId, Clock, Timestamp};
use sha2::{Digest, Sha256};
use tokio::sync::{Mutex, Notify};

use crate::config::QueueConfig;
use crate::error::QueueError;
use crate::idle::LoopState;
use crate::message::{DeadLetter, Event, Message, MessageId, MessageKind, MessageSpec, NewMessage};
use crate::names::is_valid_name;
use crate::publish::{PublishOptions, parse_publish_options};
use crate::ssrf::DestinationPolicy;
use crate::store::{CancelFilter, Filter, Page, QueueStore};

mod flow_control;
mod url_groups;
mod waiters;

/// A publish, as received.
#[derive(Debug, Clone, Default)]
pub struct PublishRequest {
    /// A URL (with the query parameters that belong to it) or a URL group name.
    pub destination: String,
    /// Request headers (name, value), repeated names joined with `", "`.
    pub headers: Vec<(String, String)>,
    /// Configuration query parameters (`svc-*` / `upstash-*`).
    pub query: Vec<(String, String)>,
    /// The body, byte for byte.
    pub body: Vec<u8>,
    /// The publisher's address.
    pub caller_ip: Option<String>,
    /// The schedule that fired this publish, if any.
    pub schedule_id: Option<String>,
}

/// One stored (or deduplicated) message of a publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The message id.
    pub message_id: MessageId,
    /// Its destination URL.
    pub url: String,
    /// Whether an earlier duplicate answered instead.
    pub deduplicated: bool,
}

/// What a publish produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishOutcome {
    /// A publish to a URL.
    Url(Published),
    /// A publish to a URL group: one message per endpoint.
    Group(Vec<Published>),
}

/// The message queue of every account.
#[derive(Clone)]
pub struct Queue {
    store: Arc<dyn QueueStore>,
    clock: Arc<dyn Clock>,
    config: Arc<QueueConfig>,
    policy: Arc<DestinationPolicy>,
    wakeup: Arc<Notify>,
    schedules_changed: Arc<Notify>,
    worker: Arc<LoopState>,
    scheduler: Arc<LoopState>,
    retention: Arc<LoopState>,
    group_changes: Arc<Mutex<()>>,
    llm_client: reqwest::Client,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Repairs `https:/host` (a double slash merged by a proxy) into `https://host`.
fn normalise_url(destination: &str) -> String {
    for scheme in ["http:", "https:"] {
        if let Some(rest) = destination.strip_prefix(scheme)
            && !rest.starts_with("//")
        {
            return format!("{scheme}//{}", rest.trim_start_matches('/'));
        }
    }
    destination.to_owned()
}

fn is_url(destination: &str) -> bool {
    let lower = destination.to_ascii_lowercase();
    lower.starts_with("http:") || lower.starts_with("https:")
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Whether a message forwards `Upstash-Workflow-Sdk-Version`: it is addressed to the workflow.
pub(crate) fn forwards_workflow_protocol(options: &PublishOptions) -> bool {
    options
        .forward_headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("upstash-workflow-sdk-version"))
}

/// Headers of `defaults` not overridden (by name, any case) in `own`, followed by `own`.
fn merge_headers(defaults: &[(String, String)], own: &[(String, String)]) -> Vec<(String, String)> {
    let mut merged: Vec<(String, String)> = defaults
        .iter()
        .filter(|(name, _)| !own.iter().any(|(other, _)| other.eq_ignore_ascii_case(name)))
        .cloned()
        .collect();
    merged.extend(own.iter().cloned());
    merged
}

impl Queue {
    /// The queue over `store`.
    pub fn new(
        store: Arc<dyn QueueStore>,
        clock: Arc<dyn Clock>,
        config: QueueConfig,
        policy: DestinationPolicy,
    ) -> Queue {
        Queue {
            store,
            clock,
            config: Arc::new(config),
            policy: Arc::new(policy),
            wakeup: Arc::new(Notify::new()),
            schedules_changed: Arc::new(Notify::new()),
            worker: Arc::new(LoopState::new()),
            scheduler: Arc::new(LoopState::new()),
            retention: Arc::new(LoopState::new()),
            group_changes: Arc::new(Mutex::new(())),
            llm_client: reqwest::Client::new(),
        }
    }

    pub(crate) fn llm_client(&self) -> &reqwest::Client {
        &self.llm_client
    }

    pub(crate) fn store(&self) -> &Arc<dyn QueueStore> {
        &self.store
    }

    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The queue's configuration.
    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// Which destinations deliveries may reach.
    pub fn policy(&self) -> &Arc<DestinationPolicy> {
        &self.policy
    }

    /// Notified whenever a schedule is created, changed or removed.
    pub fn schedules_changed(&self) -> &Arc<Notify> {
        &self.schedules_changed
    }

    /// Notified whenever new work may be due now. Wake the worker with [`Queue::wake_worker`].
    pub fn wakeup(&self) -> &Arc<Notify> {
        &self.wakeup
    }

    /// Wakes the delivery worker: new work may be due now.
    pub fn wake_worker(&self) {
        self.worker.wake();
        self.wakeup.notify_one();
    }

    /// Wakes the scheduler: a schedule or a wait deadline changed.
    pub(crate) fn wake_scheduler(&self) {
        self.scheduler.wake();
        self.schedules_changed.notify_one();
    }

    /// Whether the delivery worker has nothing to start at the current time. Deliveries it started may
    /// still be in flight.
    pub fn worker_is_idle(&self) -> bool {
        self.worker.is_idle(self.clock.now())
    }

    /// Whether the scheduler, retention and the delivery worker all have nothing to do at the current
    /// time. Read in that order: the scheduler and retention hand work to the worker, never back, so a
    /// round they start after their check wakes the worker before its check. Tests wait for this
    /// instead of waiting for time.
    pub fn is_idle(&self) -> bool {
        let now = self.clock.now();
        self.scheduler.is_idle(now) && self.retention.is_idle(now) && self.worker.is_idle(now)
    }

    /// The delivery worker's state.
    pub(crate) fn worker_state(&self) -> &LoopState {
        &self.worker
    }

    /// The scheduler's state.
    pub(crate) fn scheduler_state(&self) -> &LoopState {
        &self.scheduler
    }

    /// Retention's state.
    pub(crate) fn retention_state(&self) -> &LoopState {
        &self.retention
    }

    /// Wakes the worker if a message due at `due` would otherwise wait past it.
    fn wake_for(&self, due: Timestamp) {
        if self.worker.needs_wake_for(due) {
            self.wake_worker();
        }
    }

    /// Publishes to a URL or a URL group.
    ///
    /// # Errors
    /// Malformed configuration or destination (400), an internal destination (400), an unknown group
    /// (404), an oversized body (413), store failures.
    pub async fn publish(
        &self,
        account: AccountId,
        request: PublishRequest,
    ) -> Result<PublishOutcome, QueueError> {
        let messages = match self.prepare(account, &request).await {
            Err(QueueError::WorkflowRunExists { message_id, .. }) => {
                let url = normalise_url(request.destination.trim());
                return Ok(PublishOutcome::Url(Published {
                    message_id: MessageId(message_id),
                    url,
                    deduplicated: true,
                }));
            }
            other => other?,
        };
        let is_group = messages.1;
        let published = self.store_messages(messages.0).await?;
        if is_group {
            Ok(PublishOutcome::Group(published))
        } else {
            published
                .into_iter()
                .next()
                .map(PublishOutcome::Url)
                .ok_or_else(|| QueueError::InvalidRequest("nothing was published".into()))
        }
    }

    /// Publishes each request on its own: one that is invalid does not stop the others, and all valid
    /// ones are stored in one commit.
    ///
    /// # Errors
    /// The commit failed: nothing was stored.
    pub async fn batch(
        &self,
        account: AccountId,
        requests: Vec<PublishRequest>,
    ) -> Result<Vec<Result<PublishOutcome, QueueError>>, QueueError> {
        let mut prepared = Vec::with_capacity(requests.len());
        for request in &requests {
            prepared.push(self.prepare(account, request).await);
        }
        // Store every valid message in one group commit, then hand each request its share.
        let all: Vec<NewMessage> = prepared
            .iter()
            .filter_map(|p| p.as_ref().ok())
            .flat_map(|(messages, _)| messages.iter().cloned())
            .collect();
        // A failed commit stored none of them: the whole request fails (a 5xx), it is no one item's fault.
        let mut stored = self.store_messages(all).await?.into_iter();
        Ok(prepared
            .into_iter()
            .zip(&requests)
            .map(|(result, request)| {
                let (messages, is_group) = match result {
                    Err(QueueError::WorkflowRunExists { message_id, .. }) => {
                        let url = normalise_url(request.destination.trim());
                        return Ok(PublishOutcome::Url(Published {
                            message_id: MessageId(message_id),
                            url,
                            deduplicated: true,
                        }));
                    }
                    other => other?,
                };
                let mine: Vec<Published> = stored.by_ref().take(messages.len()).collect();
                Ok(if is_group {
                    PublishOutcome::Group(mine)
                } else {
                    PublishOutcome::Url(
                        mine.into_iter()
                            .next()
                            .ok_or_else(|| QueueError::InvalidRequest("nothing was published".into()))?,
                    )
                })
            })
            .collect())
    }

    async fn store_messages(&self, messages: Vec<NewMessage>) -> Result<Vec<Published>, QueueError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let urls: Vec<String> = messages.iter().map(|m| m.message.spec.url.clone()).collect();
        let earliest = messages.iter().map(|m| m.message.not_before).min();
        let enqueued = self.store.enqueue(messages, self.clock.now()).await?;
        if let Some(earliest) = earliest {
            self.wake_for(earliest);
        }
        Ok(enqueued
            .into_iter()
            .zip(urls)
            .map(|(enqueued, url)| Published {
                message_id: enqueued.message_id,
                url,
                deduplicated: enqueued.deduplicated,
            })
            .collect())
    }

    /// Turns a request into the messages it creates, and whether it went to a group.
    /// A publish to `api/llm`, as the publish to the configured language-model API's chat completions
    /// it stands for: the provider's token is forwarded, and added to what reads back redacted.
    fn llm_request(&self, request: &PublishRequest) -> Result<PublishRequest, QueueError> {
        let mut rewritten = PublishRequest {
            destination: self.config.llm_chat_url().ok_or(QueueError::LlmNotConfigured)?,
            ..request.clone()
        };
        let key = &self.config.llm_api_key;
        if key.is_empty() {
            return Ok(rewritten);
        }
        rewritten
            .headers
            .push(("Svc-Forward-Authorization".into(), format!("Bearer {key}")));
        // The caller's own redactions stay; a query parameter wins over a header, as in every publish.
        let is_redact = |name: &str| crate::headers::config_key(name).as_deref() == Some("redact-fields");
        let existing = match rewritten.query.iter_mut().find(|(name, _)| is_redact(name)) {
            Some(entry) => Some(entry),
            None => rewritten.headers.iter_mut().find(|(name, _)| is_redact(name)),
        };
        match existing {
            Some((_, fields)) => fields.push_str(",header[Authorization]"),
            None => rewritten
                .headers
                .push(("Svc-Redact-Fields".into(), "header[Authorization]".into())),
        }
        Ok(rewritten)
    }

    async fn prepare(
        &self,
        account: AccountId,
        request: &PublishRequest,
    ) -> Result<(Vec<NewMessage>, bool), QueueError> {
        if request.body.len() > self.config.max_message_bytes {
            return Err(QueueError::PayloadTooLarge {
                size: request.body.len(),
                limit: self.config.max_message_bytes,
            });
        }
        let llm_request;
        let request = if request.destination.trim().trim_start_matches('/') == "api/llm" {
            llm_request = self.llm_request(request)?;
            &llm_request
        } else {
            request
        };
        let destination = request.destination.trim();
        if destination.is_empty() {
            return Err(QueueError::InvalidDestination(
                "the destination is missing: /v2/publish/<url or url group>".into(),
            ));
        }
        let now = self.clock.now();
        if is_url(destination) {
            let url = normalise_url(destination);
            let parsed =
                url::Url::parse(&url).map_err(|e| QueueError::InvalidDestination(format!("`{url}`: {e}")))?;
            if parsed.host_str().is_none_or(str::is_empty) {
                return Err(QueueError::InvalidDestination(format!("`{url}` has no host")));
            }
            self.policy
                .check_parsed(&parsed)
                .map_err(QueueError::DestinationForbidden)?;
            let options = parse_publish_options(&request.headers, &request.query)?;
            self.check_callbacks(&options)?;
            self.ensure_queue_of(account, &options).await?;
            let message = self.build(account, url, None, None, &options, request, now)?;
            self.track_workflow(account, &options, &message, request).await?;
            return Ok((vec![message], false));
        }
        if !is_valid_name(destination) {
            return Err(QueueError::InvalidDestination(format!(
                "`{destination}` is neither an http(s) URL nor a URL group name ([A-Za-z0-9._-])"
            )));
        }
        let group = self
            .store
            .url_group(account, destination)
            .await?
            .ok_or_else(|| QueueError::UrlGroupNotFound(destination.to_owned()))?;
        let headers = merge_headers(&group.default_headers, &request.headers);
        let options = parse_publish_options(&headers, &request.query)?;
        self.check_callbacks(&options)?;
        self.ensure_queue_of(account, &options).await?;
        let mut messages = Vec::with_capacity(group.endpoints.len());
        for endpoint in &group.endpoints {
            messages.push(self.build(
                account,
                endpoint.url.clone(),
                Some(group.name.clone()),
                endpoint.name.clone(),
                &options,
                request,
                now,
            )?);
        }
        Ok((messages, true))
    }

    /// Creates the queue a publish names (parallelism 1) if it does not exist yet.
    async fn ensure_queue_of(&self, account: AccountId, options: &PublishOptions) -> Result<(), QueueError> {
        if let Some(name) = &options.queue_name {
            if !is_valid_name(name) {
                return Err(QueueError::InvalidRequest(format!(
                    "queue name `{name}` may only use A-Z, a-z, 0-9, `.`, `_` and `-`"
                )));
            }
            self.store
                .ensure_queue(account, name, 1, self.clock.now())
                .await?;
        }
        Ok(())
    }

    fn check_callbacks(&self, options: &PublishOptions) -> Result<(), QueueError> {
        for callback in [&options.callback, &options.failure_callback]
            .into_iter()
            .flatten()
        {
            self.policy
                .check_url(&callback.url)
                .map_err(QueueError::DestinationForbidden)?;
        }
        Ok(())
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one private constructor; the arguments are the message's parts"
    )]
    fn build(
        &self,
        account: AccountId,
        url: String,
        topic_name: Option<String>,
        endpoint_name: Option<String>,
        options: &PublishOptions,
        request: &PublishRequest,
        now: Timestamp,
    ) -> Result<NewMessage, QueueError> {
        let config = &self.config;
        let delay = options.delay.unwrap_or(Duration::ZERO);
        if millis(delay) > config.max_delay_ms {
            return Err(QueueError::InvalidHeader {
                header: "Svc-Delay".into(),
                message: format!("the longest delay is {} seconds", config.max_delay_ms / 1000),
            });
        }
        let not_before = options.not_before.unwrap_or_else(|| now.saturating_add(delay));
        let timeout_ms = options
            .timeout
            .map_or(config.default_timeout_ms, millis)
            .clamp(1, config.max_timeout_ms);
        let spec = MessageSpec {
            kind: MessageKind::Publish,
            url: url.clone(),
            method: options.method.unwrap_or_default(),
            headers: options.forward_headers.clone(),
            max_retries: config.effective_retries(options.retries),
            retry_delay: options.retry_delay.clone(),
            timeout_ms,
            callback: options.callback.clone(),
            failure_callback: options.failure_callback.clone(),
            topic_name,
            endpoint_name,
            schedule_id: request.schedule_id.clone(),
            queue_name: options.queue_name.clone(),
            caller_ip: request.caller_ip.clone(),
            labels: options.labels.clone(),
            flow_control: options.flow_control.clone(),
            source_message_id: None,
            workflow_run_id: options.workflow_run_id.clone(),
            workflow_url: options
                .workflow_run_id
                .as_ref()
                .map(|_| options.workflow_url.clone().unwrap_or_else(|| url.clone())),
            // Messages that forward the workflow SDK's protocol version go to the workflow itself and carry
            // the run's history; others of the run (third-party calls) carry their own body.
            workflow_history: options.workflow_run_id.is_some() && forwards_workflow_protocol(options),
            redact: options.redact.clone(),
            reports_dead_letter: None,
        };
        let dedup_key = match (&options.deduplication_id, options.content_based_deduplication) {
            (Some(id), _) => Some(format!("id:{id}|{url}")),
            (None, true) => {
                let mut hasher = Sha256::new();
                hasher.update(url.as_bytes());
                hasher.update([0]);
                hasher.update(&request.body);
                for (name, value) in &spec.headers {
                    hasher.update([0]);
                    hasher.update(name.as_bytes());
                    hasher.update(b":");
                    hasher.update(value.as_bytes());
                }
                let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
                Some(format!("content:{digest}"))
            }
            (None, false) => None,
        };
        let window = Duration::from_millis(config.deduplication_window_ms);
        Ok(NewMessage {
            message: Message {
                id: MessageId::generate(now),
                account_id: account,
                spec,
                body: request.body.clone(),
                retried: 0,
                not_before,
                created_at: now,
            },
            dedup: dedup_key.map(|key| (key, now.saturating_add(window))),
        })
    }

    /// A pending message.
    ///
    /// # Errors
    /// [`QueueError::MessageNotFound`]; store failures.
    pub async fn message(&self, account: AccountId, id: &str) -> Result<Message, QueueError> {
        self.store
            .message(account, &MessageId(id.to_owned()))
            .await?
            .ok_or_else(|| QueueError::MessageNotFound(id.to_owned()))
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
                self.clock.now(),
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
            .cancel(account, ids, filter, limit, self.clock.now())
            .await?)
    }

    /// A page of dead letters.
    ///
    /// # Errors
    /// Store failures.
    pub async fn dead_letters(
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
    pub async fn dead_letter(&self, account: AccountId, dlq_id: &str) -> Result<DeadLetter, QueueError> {
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
    pub async fn delete_dead_letters(
        &self,
        account: AccountId,
        dlq_ids: &[String],
    ) -> Result<u64, QueueError> {
        Ok(self.store.delete_dead_letters(account, dlq_ids).await?)
    }

    /// Publishes a dead letter again (same destination, body and headers; configuration headers of the
    /// retry request override the original's) and removes it from the DLQ.
    ///
    /// # Errors
    /// [`QueueError::DeadLetterNotFound`]; malformed configuration; store failures.
    pub async fn retry_dead_letter(
        &self,
        account: AccountId,
        dlq_id: &str,
        headers: &[(String, String)],
    ) -> Result<MessageId, QueueError> {
        let dead = self.dead_letter(account, dlq_id).await?;
        let now = self.clock.now();
        let replacement = self.replacement_for(&dead, headers, now)?;
        let id = self
            .store
            .retry_dead_letter(account, dlq_id, replacement, now)
            .await?
            .ok_or_else(|| QueueError::DeadLetterNotFound(dlq_id.to_owned()))?;
        self.wake_worker();
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
            spec.max_retries = self.config.effective_retries(Some(retries));
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
        })
    }

    /// A page of the event log.
    ///
    /// # Errors
    /// Store failures.
    pub async fn events(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_double_slash_is_repaired() {
        assert_eq!(normalise_url("https:/example.com/x"), "https://example.com/x");
        assert_eq!(normalise_url("http://example.com/x"), "http://example.com/x");
    }

    #[test]
    fn group_defaults_yield_to_the_publish_own_headers() {
        let defaults = vec![
            ("Svc-Retries".to_owned(), "5".to_owned()),
            ("Svc-Header-Forward".to_owned(), "true".to_owned()),
        ];
        let own = vec![("svc-retries".to_owned(), "1".to_owned())];
        let merged = merge_headers(&defaults, &own);
        assert_eq!(merged, vec![defaults[1].clone(), own[0].clone()]);
    }

    #[test]
    fn names_allow_letters_digits_dots_dashes_and_underscores() {
        assert!(is_valid_name("my-group_1.v2"));
        assert!(!is_valid_name("has space"));
        assert!(!is_valid_name(""));
    }
}
