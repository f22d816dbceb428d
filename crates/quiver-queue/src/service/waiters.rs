//! The queue's waiting operations: register a waiter, notify an event, time out, call a webhook.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use quiver_core::AccountId;
use serde_json::{Value, json};
use tracing::warn;

use super::publisher::{PublishOutcome, PublishRequest, Publisher};
use crate::context::{Context, opaque_debug};
use crate::duration::parse_duration;
use crate::error::QueueError;
use crate::names::RunId;
use crate::store::WorkflowRunStore;
use crate::waiters::{Notified, StoredWaiter, WaitSpec, WaiterStore, WebhookCall};

/// How long a wait lasts when the request does not say.
const DEFAULT_TIMEOUT: &str = "7d";

fn header<'a>(headers: &'a BTreeMap<String, Vec<String>>, name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .and_then(|(_, values)| values.first())
        .map(String::as_str)
}

/// Workflow runs waiting for events, and the events they wait for.
#[derive(Clone)]
pub struct Waiters {
    store: Arc<dyn WaiterStore>,
    runs: Arc<dyn WorkflowRunStore>,
    publisher: Publisher,
    context: Context,
}

opaque_debug!(Waiters);

impl Waiters {
    pub(crate) fn new(
        store: Arc<dyn WaiterStore>,
        runs: Arc<dyn WorkflowRunStore>,
        publisher: Publisher,
        context: Context,
    ) -> Waiters {
        Waiters {
            store,
            runs,
            publisher,
            context,
        }
    }

    /// When the earliest waiter times out.
    pub(crate) async fn next_deadline(
        &self,
    ) -> Result<Option<quiver_core::Timestamp>, quiver_core::StoreError> {
        self.store.next_waiter_deadline().await
    }

    /// Registers a waiter for `event_id` (or, when the event already came for this run, answers it now).
    ///
    /// # Errors
    /// A malformed request or timeout (400); store failures.
    pub async fn wait_for_event(
        &self,
        account: AccountId,
        event_id: &str,
        spec: WaitSpec,
        timeout: Option<&str>,
    ) -> Result<(), QueueError> {
        if spec.url.trim().is_empty() {
            return Err(QueueError::InvalidRequest("url: is required".into()));
        }
        let timeout = timeout
            .filter(|t| !t.trim().is_empty())
            .unwrap_or(DEFAULT_TIMEOUT);
        let timeout =
            parse_duration(timeout).map_err(|e| QueueError::InvalidRequest(format!("timeout: {e}")))?;
        let now = self.context.now();
        let run_id = header(&spec.timeout_headers, "Upstash-Workflow-RunId").map(str::to_owned);
        let waiter = StoredWaiter {
            seq: 0,
            account_id: account,
            event_id: event_id.to_owned(),
            deadline: now.saturating_add(timeout),
            spec,
        };
        if let Some(run) = &run_id
            && let Some(data) = self.store.take_early_event(account, run, event_id).await?
        {
            self.publish_wait_result(&waiter, Some(&data)).await?;
            return Ok(());
        }
        self.store
            .add_waiter(
                account,
                event_id,
                run_id.as_deref(),
                waiter.deadline,
                &waiter.spec,
            )
            .await?;
        // An event for this run may have been kept between the look above and the waiter's arrival (its
        // notifier found no waiter yet): take it again, now that the waiter is there to be handed it.
        if let Some(run) = &run_id
            && let Some(data) = self.store.take_early_event(account, run, event_id).await?
        {
            self.hand_over(account, event_id, run, &data).await?;
        }
        self.context.signals.wake_scheduler();
        Ok(())
    }

    /// Hands a kept event, taken back by the caller, to the waiters of `event_id` of run `run`; keeps it
    /// again when there are none (another caller handed them one meanwhile).
    async fn hand_over(
        &self,
        account: AccountId,
        event_id: &str,
        run: &str,
        data: &[u8],
    ) -> Result<Vec<Notified>, QueueError> {
        let notified = self.deliver(account, event_id, Some(run), data).await?;
        if notified.is_empty() {
            self.store
                .keep_early_event(account, run, event_id, data, self.context.now())
                .await?;
        }
        Ok(notified)
    }

    /// A third party's call of a workflow webhook URL (`createWebhook` / `waitForWebhook`): handed to the
    /// run's waiter of `event_id` as the event data the SDK reads back (`method`, `proto`, `host`, `url`,
    /// `header`, and the body in base64), or kept for the run's later wait.
    ///
    /// # Errors
    /// An unknown run (404); a run that has ended (400); store failures.
    pub async fn call_webhook(
        &self,
        account: AccountId,
        run_id: &RunId,
        event_id: &str,
        call: &WebhookCall,
    ) -> Result<Vec<Notified>, QueueError> {
        let run = self
            .runs
            .run(account, run_id)
            .await?
            .ok_or_else(|| QueueError::WorkflowRunNotFound(run_id.to_string()))?;
        if run.state != crate::workflow::RunState::Started {
            return Err(QueueError::WorkflowRunNotRunning(run_id.to_string()));
        }
        let mut header = serde_json::Map::new();
        for (name, value) in &call.headers {
            if let Value::Array(values) = header
                .entry(name.clone())
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                values.push(Value::String(value.clone()));
            }
        }
        let data = json!({
            "method": call.method,
            "proto": call.proto,
            "host": call.host,
            "url": call.url,
            "header": header,
            "body": base64::engine::general_purpose::STANDARD.encode(&call.body),
        });
        self.notify(
            account,
            event_id,
            data.to_string().as_bytes(),
            Some(run_id.as_str()),
        )
        .await
    }

    /// Hands `data` to every waiter of `event_id` (of `run_id`'s run only, when given). With a run id and
    /// nobody waiting, the event is kept for that run's later wait.
    ///
    /// # Errors
    /// Store failures.
    pub async fn notify(
        &self,
        account: AccountId,
        event_id: &str,
        data: &[u8],
        run_id: Option<&str>,
    ) -> Result<Vec<Notified>, QueueError> {
        let notified = self.deliver(account, event_id, run_id, data).await?;
        if notified.is_empty()
            && let Some(run) = run_id
        {
            self.store
                .keep_early_event(account, run, event_id, data, self.context.now())
                .await?;
            // A waiter that arrived between the look for waiters and the keep looked for a kept event
            // before it was kept: whoever takes the event back hands it over.
            if !self.store.waiters(account, event_id, run_id).await?.is_empty()
                && let Some(kept) = self.store.take_early_event(account, run, event_id).await?
            {
                return self.hand_over(account, event_id, run, &kept).await;
            }
        }
        Ok(notified)
    }

    /// Hands `data` to every waiter of `event_id` (of `run_id`'s run only, when given) that no other
    /// caller removes first.
    async fn deliver(
        &self,
        account: AccountId,
        event_id: &str,
        run_id: Option<&str>,
        data: &[u8],
    ) -> Result<Vec<Notified>, QueueError> {
        let waiters = self.store.waiters(account, event_id, run_id).await?;
        let mut notified = Vec::with_capacity(waiters.len());
        for waiter in waiters {
            if !self.store.remove_waiter(waiter.seq).await? {
                continue;
            }
            let (message_id, error) = match self.publish_wait_result(&waiter, Some(data)).await {
                Ok(id) => (id, None),
                Err(error) => (String::new(), Some(error.to_string())),
            };
            notified.push(Notified {
                waiter,
                message_id,
                error,
            });
        }
        Ok(notified)
    }

    /// The waiters of an event.
    ///
    /// # Errors
    /// Store failures.
    pub async fn list(&self, account: AccountId, event_id: &str) -> Result<Vec<StoredWaiter>, QueueError> {
        Ok(self.store.waiters(account, event_id, None).await?)
    }

    /// Gives every waiter past its deadline its timed-out result. Returns how many timed out.
    ///
    /// # Errors
    /// Store failures.
    pub async fn time_out(&self) -> Result<usize, QueueError> {
        let due = self.store.due_waiters(self.context.now(), 256).await?;
        let count = due.len();
        for waiter in due {
            if !self.store.remove_waiter(waiter.seq).await? {
                continue;
            }
            if let Err(error) = self.publish_wait_result(&waiter, None).await {
                warn!(event = %waiter.event_id, %error, "publishing a timed-out wait failed");
            }
        }
        Ok(count)
    }

    /// Publishes the waiting step's result to the run: the event's data, or (`None`) a timeout.
    async fn publish_wait_result(
        &self,
        waiter: &StoredWaiter,
        data: Option<&[u8]>,
    ) -> Result<String, QueueError> {
        let spec = &waiter.spec;
        let field = |name: &str| spec.step.get(name).cloned().unwrap_or(Value::Null);
        let mut step = json!({
            "stepId": field("stepId"),
            "stepName": field("stepName"),
            "stepType": spec.step.get("stepType").cloned().unwrap_or_else(|| json!("Wait")),
            "waitEventId": waiter.event_id,
            "waitTimeout": data.is_none(),
            "concurrent": spec.step.get("concurrent").cloned().unwrap_or_else(|| json!(1)),
        });
        if let Some(target) = spec.step.get("targetStep").filter(|t| !t.is_null()) {
            step["targetStep"] = target.clone();
        }
        if let Some(data) = data {
            step["out"] = json!(base64::engine::general_purpose::STANDARD.encode(data));
        }
        let destination = match data {
            Some(_) => spec.url.clone(),
            None => spec.timeout_url.clone().unwrap_or_else(|| spec.url.clone()),
        };
        let headers = spec
            .timeout_headers
            .iter()
            .flat_map(|(name, values)| values.iter().map(move |v| (name.clone(), v.clone())))
            .collect();
        let request = PublishRequest {
            destination,
            headers,
            query: Vec::new(),
            body: serde_json::to_vec(&step).unwrap_or_default(),
            caller_ip: None,
            schedule_id: None,
        };
        match self.publisher.publish(waiter.account_id, request).await? {
            PublishOutcome::Url(published) => Ok(published.message_id.0),
            PublishOutcome::Group(all) => {
                Ok(all.into_iter().next().map(|p| p.message_id.0).unwrap_or_default())
            }
        }
    }
}
