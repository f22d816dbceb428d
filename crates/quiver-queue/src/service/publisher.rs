//! Publishing: a request to a URL, a URL group or a FIFO queue becomes messages, stored in one commit.
//! A publish that carries a workflow run id starts the run or adds its step.

use std::sync::Arc;
use std::time::Duration;

use quiver_core::{AccountId, Timestamp};
use sha2::{Digest, Sha256};
use tokio::sync::OwnedSemaphorePermit;

use crate::answered::{Written, answer_when_delivered};
use crate::context::{Context, opaque_debug};
use crate::early::{Early, EarlyPublish, early};
use crate::error::QueueError;
use crate::message::{Message, MessageId, MessageKind, MessageSpec, NewMessage};
use crate::names::{QueueName, RunId, UrlGroupName};
use crate::publish::{PublishOptions, parse_publish_options};
use crate::store::{FifoQueueStore, MessageStore, UrlGroupStore, WorkflowRunStore};
use crate::workflow::{RunState, RunStep, WorkflowRun};

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

/// The run step a message of a publish carries: the message's place in the publish, its run and id.
struct RunStepOf {
    place: usize,
    account: AccountId,
    run: String,
    message: MessageId,
}

/// Whether a message handed over at publish may be delivered while the publish is stored (see
/// [`crate::early`]): one that no part of its publish's write can turn away (a deduplication key may
/// find an earlier message) and whose delivery reads nothing the same write creates (a workflow run).
fn may_go_early(new: &NewMessage) -> bool {
    new.dedup.is_none() && new.message.spec.workflow_run_id.is_none()
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

/// What a publish that starts a run already started answers: the run's first message, deduplicated.
fn run_started_before(request: &PublishRequest, message_id: String) -> PublishOutcome {
    PublishOutcome::Url(Published {
        message_id: MessageId(message_id),
        url: normalise_url(request.destination.trim()),
        deduplicated: true,
    })
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

/// Turns publish requests into stored messages: the one way a message enters the queue, shared by
/// publish, enqueue, batches, schedules, workflow steps and dead-letter retries of a run.
#[derive(Clone)]
pub struct Publisher {
    messages: Arc<dyn MessageStore>,
    url_groups: Arc<dyn UrlGroupStore>,
    fifo_queues: Arc<dyn FifoQueueStore>,
    runs: Arc<dyn WorkflowRunStore>,
    context: Context,
}

opaque_debug!(Publisher);

impl Publisher {
    pub(crate) fn new(
        messages: Arc<dyn MessageStore>,
        url_groups: Arc<dyn UrlGroupStore>,
        fifo_queues: Arc<dyn FifoQueueStore>,
        runs: Arc<dyn WorkflowRunStore>,
        context: Context,
    ) -> Publisher {
        Publisher {
            messages,
            url_groups,
            fifo_queues,
            runs,
            context,
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
                return Ok(run_started_before(&request, message_id));
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
                        return Ok(run_started_before(request, message_id));
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

    async fn store_messages(&self, mut messages: Vec<NewMessage>) -> Result<Vec<Published>, QueueError> {
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.context.now();
        let urls: Vec<String> = messages.iter().map(|m| m.message.spec.url.clone()).collect();
        // Messages due at once, outside FIFO queues and flow control, go straight to the running worker
        // while it has delivery slots free (see `handoff`); the rest wait to be claimed.
        let handoff = self.context.signals.handoff.get();
        let mut handed: Vec<Option<(Message, OwnedSemaphorePermit)>> = Vec::with_capacity(messages.len());
        let mut published: Vec<EarlyPublish> = Vec::new();
        let mut earliest: Option<Timestamp> = None;
        for new in &mut messages {
            let message = &new.message;
            let slot = (message.not_before <= now
                && message.spec.queue_name.is_none()
                && message.spec.flow_control.is_none())
            .then(|| handoff.and_then(|h| h.slot(now)))
            .flatten();
            match (slot, handoff) {
                (Some((slot, lease_until)), Some(handoff)) => {
                    new.leased_until = Some(lease_until);
                    if may_go_early(new) {
                        // Delivered while the publish is stored (see `early`).
                        let (cell, publish_side, delivery_side) = early();
                        new.early = Some(cell);
                        published.push(publish_side);
                        handoff.deliver(new.message.clone(), now, slot, Some(delivery_side));
                        handed.push(None);
                    } else {
                        handed.push(Some((new.message.clone(), slot)));
                    }
                }
                _ => {
                    earliest = Some(earliest.map_or(message.not_before, |e| e.min(message.not_before)));
                    handed.push(None);
                }
            }
        }
        // Every message goes early: the publish may be answered once they are all delivered (see
        // `crate::answered`), with their ids.
        let early_cells = (!published.is_empty() && published.len() == messages.len()).then(|| {
            let cells: Vec<Arc<Early>> = messages.iter().filter_map(|new| new.early.clone()).collect();
            let ids: Vec<MessageId> = messages.iter().map(|new| new.message.id.clone()).collect();
            (cells, ids)
        });
        // The run steps these messages carry, written before them (see `track_workflow`), by place.
        let steps: Vec<RunStepOf> = messages
            .iter()
            .enumerate()
            .filter_map(|(place, new)| {
                let message = &new.message;
                (message.spec.workflow_run_id.clone()).map(|run| RunStepOf {
                    place,
                    account: message.account_id,
                    run,
                    message: message.id.clone(),
                })
            })
            .collect();
        let store = Arc::clone(&self.messages);
        let write = async move {
            let enqueued = store.enqueue(messages, now).await;
            let committed = enqueued.is_ok();
            for publish_side in published {
                publish_side.tell(committed);
            }
            enqueued
        };
        let enqueued = match (early_cells, handoff) {
            (Some((cells, ids)), Some(handoff)) => {
                match answer_when_delivered(
                    &self.context.signals.answered,
                    &self.context.signals.deliveries,
                    write,
                    cells,
                    handoff,
                )
                .await
                {
                    Written::Answered => {
                        return Ok(ids
                            .into_iter()
                            .zip(urls)
                            .map(|(message_id, url)| Published {
                                message_id,
                                url,
                                deduplicated: false,
                            })
                            .collect());
                    }
                    Written::Committed(enqueued) => enqueued,
                }
            }
            _ => write.await,
        };
        let enqueued = match enqueued {
            Ok(enqueued) => enqueued,
            Err(error) => {
                self.take_back_steps(steps.iter()).await;
                return Err(error.into());
            }
        };
        // A duplicate was not stored: the step it would have been (the start of a run, or one more step)
        // is taken back, so no run is left waiting for a message that does not exist.
        self.take_back_steps(
            steps
                .iter()
                .filter(|step| enqueued.get(step.place).is_some_and(|e| e.deduplicated)),
        )
        .await;
        if let Some(earliest) = earliest {
            self.context.signals.wake_worker_for(earliest);
        }
        for (enqueued, handed) in enqueued.iter().zip(handed) {
            // A duplicate was not stored: its slot goes back unused.
            if let (Some((message, slot)), false) = (handed, enqueued.deduplicated)
                && let Some(handoff) = handoff
            {
                handoff.deliver(message, now, slot, None);
            }
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

    /// Takes back the run steps of messages that were not stored. A failure is logged, not returned:
    /// the publish's own answer (its error, or the duplicates it met) stays what it was.
    async fn take_back_steps(&self, steps: impl Iterator<Item = &RunStepOf>) {
        for step in steps {
            let taken = match RunId::parse(&step.run) {
                Ok(run) => {
                    self.runs
                        .take_back_step(step.account, &run, &step.message.0)
                        .await
                }
                // Not met: `track_workflow` parsed the id before the message was built.
                Err(_) => continue,
            };
            if let Err(error) = taken {
                tracing::warn!(%error, run = %step.run, message.id = %step.message, "could not take back the run step of a message that was not stored");
            }
        }
    }

    /// Turns a request into the messages it creates, and whether it went to a group.
    /// A publish to `api/llm`, as the publish to the configured language-model API's chat completions
    /// it stands for: the provider's token is forwarded, and added to what reads back redacted.
    fn llm_request(&self, request: &PublishRequest) -> Result<PublishRequest, QueueError> {
        let mut rewritten = PublishRequest {
            destination: self
                .context
                .config
                .llm_chat_url()
                .ok_or(QueueError::LlmNotConfigured)?,
            ..request.clone()
        };
        let key = &self.context.config.llm_api_key;
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
        if request.body.len() > self.context.config.max_message_bytes {
            return Err(QueueError::PayloadTooLarge {
                size: request.body.len(),
                limit: self.context.config.max_message_bytes,
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
        let now = self.context.now();
        if is_url(destination) {
            let url = normalise_url(destination);
            let parsed =
                url::Url::parse(&url).map_err(|e| QueueError::InvalidDestination(format!("`{url}`: {e}")))?;
            if parsed.host_str().is_none_or(str::is_empty) {
                return Err(QueueError::InvalidDestination(format!("`{url}` has no host")));
            }
            self.context
                .policy
                .check_parsed(&parsed)
                .map_err(QueueError::DestinationForbidden)?;
            let options = parse_publish_options(&request.headers, &request.query)?;
            self.check_callbacks(&options)?;
            self.ensure_queue_of(account, &options).await?;
            let message = self.build(account, url, None, None, &options, request, now)?;
            self.track_workflow(account, &options, &message, request).await?;
            return Ok((vec![message], false));
        }
        let Ok(group_name) = UrlGroupName::parse(destination) else {
            return Err(QueueError::InvalidDestination(format!(
                "`{destination}` is neither an http(s) URL nor a URL group name ([A-Za-z0-9._-])"
            )));
        };
        let group = self
            .url_groups
            .url_group(account, &group_name)
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
                Some(group.name.to_string()),
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
            let name = QueueName::parse(name.as_str())?;
            self.fifo_queues
                .ensure_fifo_queue(account, &name, 1, self.context.now())
                .await?;
        }
        Ok(())
    }

    fn check_callbacks(&self, options: &PublishOptions) -> Result<(), QueueError> {
        for callback in [&options.callback, &options.failure_callback]
            .into_iter()
            .flatten()
        {
            self.context
                .policy
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
        let config = &self.context.config;
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
            leased_until: None,
            early: None,
        })
    }

    /// Publishes into a queue (created with parallelism 1 when missing): delivered in order, at most the
    /// queue's parallelism at once, each waiting for the retries of those before it.
    ///
    /// # Errors
    /// As [`Publisher::publish`].
    pub async fn enqueue(
        &self,
        account: AccountId,
        queue: &QueueName,
        mut request: PublishRequest,
    ) -> Result<PublishOutcome, QueueError> {
        request
            .headers
            .retain(|(name, _)| !name.to_ascii_lowercase().ends_with("-queue-name"));
        request.headers.push(("Svc-Queue-Name".into(), queue.to_string()));
        self.publish(account, request).await
    }

    /// Starts a run (`Init: true`, or no init header) or appends a step (`Init: false`) for a message
    /// about to be stored.
    ///
    /// # Errors
    /// [`QueueError::WorkflowRunExists`] for a duplicate start; a step for a run that is not running
    /// (400, which the SDK takes as "stop quietly"); store failures.
    pub(crate) async fn track_workflow(
        &self,
        account: AccountId,
        options: &PublishOptions,
        message: &NewMessage,
        request: &PublishRequest,
    ) -> Result<(), QueueError> {
        let Some(run_id) = &options.workflow_run_id else {
            return Ok(());
        };
        let run_id = &RunId::parse(run_id.as_str())?;
        // A run started by `context.invoke` gets the invoke's payload as its own, and keeps its invoker.
        let (payload, invoker) = if options.workflow_invoke && options.workflow_init != Some(false) {
            let invoke: crate::workflow::InvokeRequest =
                serde_json::from_slice(&request.body).map_err(|e| {
                    QueueError::InvalidRequest(format!(
                        "an invoking publish (Svc-Workflow-Invoke) needs the SDK's invoke body: {e}"
                    ))
                })?;
            (invoke.body.unwrap_or_default().into_bytes(), Some(invoke.invoker))
        } else {
            (request.body.clone(), None)
        };
        let step = RunStep::of(&message.message, payload);
        if options.workflow_init == Some(false) {
            if !forwards_workflow_protocol(options) {
                // A third-party call of the run: tagged with the run (so cancelling stops it), no step.
                return Ok(());
            }
            if !self.runs.append_step(account, run_id, &step).await? {
                return Err(QueueError::WorkflowRunNotRunning(run_id.to_string()));
            }
            return Ok(());
        }
        let run = WorkflowRun {
            id: run_id.clone(),
            account_id: account,
            url: message
                .message
                .spec
                .workflow_url
                .clone()
                .unwrap_or_else(|| message.message.spec.url.clone()),
            state: RunState::Started,
            created_at: self.context.now(),
            completed_at: None,
            caller_ip: request.caller_ip.clone(),
            steps: vec![step],
            response: None,
            labels: options.labels.clone(),
            flow_control_key: options.flow_control.as_ref().map(|f| f.key.clone()),
            invoker,
        };
        if !self.runs.start_run(&run).await? {
            let existing = self.runs.run(account, run_id).await?;
            let message_id = existing
                .and_then(|r| r.steps.first().map(|s| s.message_id.clone()))
                .unwrap_or_default();
            return Err(QueueError::WorkflowRunExists {
                run_id: run_id.to_string(),
                message_id,
            });
        }
        Ok(())
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
}
