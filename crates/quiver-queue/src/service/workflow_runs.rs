//! Workflow runs: trigger, read, cancel one or many, end; start a dead-lettered run again; hand an
//! invoked run's outcome to its invoker.

use std::sync::Arc;

use quiver_core::AccountId;

use super::dead_letters::DeadLetters;
use super::publisher::{PublishOutcome, PublishRequest, Publisher};
use crate::context::{Context, opaque_debug};
use crate::error::QueueError;
use crate::names::RunId;
use crate::store::{CancelFilter, MessageStore, WorkflowRunStore};
use crate::workflow::{CancelFailure, InvokeOutcome, RunState, RunStep, WorkflowRun};
use crate::workflows::{RunRecovery, RunSelection};

/// The workflow runs of every account.
#[derive(Clone)]
pub struct WorkflowRuns {
    store: Arc<dyn WorkflowRunStore>,
    messages: Arc<dyn MessageStore>,
    dead_letters: DeadLetters,
    publisher: Publisher,
    context: Context,
}

opaque_debug!(WorkflowRuns);

impl WorkflowRuns {
    pub(crate) fn new(
        store: Arc<dyn WorkflowRunStore>,
        messages: Arc<dyn MessageStore>,
        dead_letters: DeadLetters,
        publisher: Publisher,
        context: Context,
    ) -> WorkflowRuns {
        WorkflowRuns {
            store,
            messages,
            dead_letters,
            publisher,
            context,
        }
    }

    /// Starts a new run from a dead-lettered step of a run (`POST /v2/workflows/dlq/resume` and
    /// `/restart`): the dead letter leaves the queue, and its message goes again under a new run id,
    /// with the publish settings in `headers` (retries, flow control) replacing its own. Returns the new
    /// run's id and creation time.
    ///
    /// # Errors
    /// An unknown dead letter (404); one that is not a step of a workflow run (400); malformed settings;
    /// store failures.
    pub async fn recover(
        &self,
        account: AccountId,
        dlq_id: &str,
        headers: &[(String, String)],
        how: RunRecovery,
    ) -> Result<(RunId, i64), QueueError> {
        let dead = self.dead_letters.get(account, dlq_id).await?;
        let spec = &dead.message.spec;
        let Some(old_id) = spec.workflow_run_id.as_deref().filter(|_| spec.workflow_history) else {
            return Err(QueueError::InvalidRequest(format!(
                "dead letter `{dlq_id}` is not a step of a workflow run"
            )));
        };
        let old = self.get(account, &RunId::parse(old_id)?).await?;
        let now = self.context.now();
        let mut replacement = self.dead_letters.replacement_for(&dead, headers, now)?;
        let run_id = RunId::generate();
        let message = &mut replacement.message;
        message.spec.workflow_run_id = Some(run_id.to_string());
        let mut steps = match how {
            RunRecovery::Restart => {
                message.body = old.steps.first().map(|s| s.body.clone()).unwrap_or_default();
                Vec::new()
            }
            RunRecovery::Resume => old
                .steps
                .iter()
                .take_while(|step| step.message_id != dead.message.id.0)
                .cloned()
                .collect(),
        };
        steps.push(RunStep::of(message, message.body.clone()));
        let run = WorkflowRun {
            id: run_id.clone(),
            account_id: account,
            url: old.url,
            state: RunState::Started,
            created_at: now,
            completed_at: None,
            caller_ip: old.caller_ip,
            steps,
            response: None,
            labels: old.labels,
            flow_control_key: message.spec.flow_control.as_ref().map(|f| f.key.clone()),
            invoker: old.invoker,
        };
        if !self.store.start_run(&run).await? {
            return Err(QueueError::WorkflowRunExists {
                run_id: run_id.to_string(),
                message_id: String::new(),
            });
        }
        if self
            .dead_letters
            .store()
            .retry_dead_letter(account, dlq_id, replacement, now)
            .await?
            .is_none()
        {
            // Taken meanwhile by another resume, restart or delete: the new run has nothing to run.
            self.store
                .finish_run(account, &run.id, RunState::Canceled, now, None)
                .await?;
            return Err(QueueError::DeadLetterNotFound(dlq_id.to_owned()));
        }
        self.context.signals.wake_worker();
        Ok((run_id, now.as_millis()))
    }

    /// Sends a workflow dead letter's failure callback again (`POST /v2/workflows/dlq/callback/{dlqId}`),
    /// with the body it had: the step's last response and the dead letter id. Returns the run's id and
    /// creation time.
    ///
    /// # Errors
    /// An unknown dead letter (404); one without a failure callback, or whose callback is in progress
    /// (400); store failures.
    pub async fn retry_failure_callback(
        &self,
        account: AccountId,
        dlq_id: &str,
    ) -> Result<(RunId, i64), QueueError> {
        let dead = self.dead_letters.get(account, dlq_id).await?;
        let spec = &dead.message.spec;
        let (Some(callback), Some(run_id)) = (&spec.failure_callback, spec.workflow_run_id.as_deref()) else {
            return Err(QueueError::InvalidRequest(format!(
                "dead letter `{dlq_id}` has no failure callback of a workflow run"
            )));
        };
        let run_id = RunId::parse(run_id)?;
        if dead
            .failure_callback
            .as_ref()
            .is_some_and(|info| info.state == crate::message::FailureCallbackState::InProgress)
        {
            return Err(QueueError::InvalidRequest(format!(
                "the failure callback of dead letter `{dlq_id}` is in progress"
            )));
        }
        let now = self.context.now();
        let response = crate::callback::ResponseRecord {
            status: dead.response_status,
            headers: dead.response_headers.clone(),
            body: dead.response_body.clone(),
        };
        let body =
            crate::callback::callback_body(&dead.message, &response, dead.message.retried, Some(dlq_id));
        let mut message = crate::callback::callback_message(
            &dead.message,
            callback,
            crate::message::MessageKind::FailureCallback,
            body,
            now,
            self.context.config.default_timeout_ms,
        );
        message.message.spec.reports_dead_letter = Some(dlq_id.to_owned());
        if !self
            .dead_letters
            .store()
            .retry_failure_callback(account, dlq_id, message, now)
            .await?
        {
            return Err(QueueError::DeadLetterNotFound(dlq_id.to_owned()));
        }
        self.context.signals.wake_worker();
        let created_at = self.created_at(account, &run_id).await?;
        Ok((run_id, created_at))
    }

    /// Cancels a workflow dead letter's failure callback while it is in progress (`DELETE
    /// /v2/workflows/dlq/callback/{dlqId}`): its message is cancelled, pending or being delivered, and
    /// the dead letter's `failureCallbackInfo` reads `CALLBACK_CANCELED`. Returns the run's id and
    /// creation time, as sending it again does.
    ///
    /// # Errors
    /// An unknown dead letter (404); one whose failure callback is not in progress, or stopped being so
    /// meanwhile (400); store failures.
    pub async fn cancel_failure_callback(
        &self,
        account: AccountId,
        dlq_id: &str,
    ) -> Result<(RunId, i64), QueueError> {
        let dead = self.dead_letters.get(account, dlq_id).await?;
        let not_in_progress = || {
            QueueError::InvalidRequest(format!(
                "dead letter `{dlq_id}` has no failure callback in progress"
            ))
        };
        let Some(info) = dead
            .failure_callback
            .as_ref()
            .filter(|info| info.state == crate::message::FailureCallbackState::InProgress)
        else {
            return Err(not_in_progress());
        };
        let run_id = dead
            .message
            .spec
            .workflow_run_id
            .as_deref()
            .map(RunId::parse)
            .transpose()?
            .ok_or_else(not_in_progress)?;
        // A delivery of the callback that ends after this records nothing: its message is gone. A dead
        // letter written before callbacks kept their message id only has its state changed.
        if let Some(message_id) = &info.message_id {
            self.messages
                .cancel(
                    account,
                    Some(vec![message_id.clone()]),
                    CancelFilter::default(),
                    None,
                    self.context.now(),
                )
                .await?;
        }
        if !self
            .dead_letters
            .store()
            .cancel_failure_callback(account, dlq_id)
            .await?
        {
            return Err(not_in_progress());
        }
        let created_at = self.created_at(account, &run_id).await?;
        Ok((run_id, created_at))
    }

    /// When the run was created, in milliseconds (0 once it is gone).
    async fn created_at(&self, account: AccountId, run_id: &RunId) -> Result<i64, QueueError> {
        Ok(self
            .store
            .run(account, run_id)
            .await?
            .map_or(0, |run| run.created_at.as_millis()))
    }

    /// Starts a run of the workflow at `request.destination` (`POST /v2/trigger/...`).
    ///
    /// # Errors
    /// A malformed run id (400); as [`Publisher::publish`].
    pub async fn trigger(
        &self,
        account: AccountId,
        request: PublishRequest,
    ) -> Result<Triggered, QueueError> {
        let (run_id, request) = as_trigger(request)?;
        let outcome = self.publisher.publish(account, request).await?;
        self.triggered(account, run_id, &outcome).await
    }

    /// Starts a run for each of `requests` (`POST /v2/batch/trigger`): one that is invalid does not stop
    /// the others, and the valid ones are published in one commit.
    ///
    /// # Errors
    /// The commit failed: no run was started.
    pub async fn trigger_batch(
        &self,
        account: AccountId,
        requests: Vec<PublishRequest>,
    ) -> Result<Vec<Result<Triggered, QueueError>>, QueueError> {
        let mut runs = Vec::with_capacity(requests.len());
        let mut valid = Vec::with_capacity(requests.len());
        for request in requests {
            runs.push(as_trigger(request).map(|(run_id, request)| {
                valid.push(request);
                run_id
            }));
        }
        let mut outcomes = self.publisher.batch(account, valid).await?.into_iter();
        let mut answers = Vec::with_capacity(runs.len());
        for run in runs {
            // Only the valid requests were published, in their order.
            answers.push(match run {
                Err(error) => Err(error),
                Ok(run_id) => match outcomes.next() {
                    Some(Ok(outcome)) => self.triggered(account, run_id, &outcome).await,
                    Some(Err(error)) => Err(error),
                    None => Err(QueueError::WorkflowRunNotFound(run_id.to_string())),
                },
            });
        }
        Ok(answers)
    }

    /// The run a trigger's publish started, or found started (a run id given twice).
    async fn triggered(
        &self,
        account: AccountId,
        run_id: RunId,
        outcome: &PublishOutcome,
    ) -> Result<Triggered, QueueError> {
        let deduplicated = match outcome {
            PublishOutcome::Url(published) => published.deduplicated,
            PublishOutcome::Group(published) => published.iter().all(|p| p.deduplicated),
        };
        let run = match self.store.run(account, &run_id).await? {
            Some(run) => run,
            // Its message was a duplicate, so the run it named was taken back: the earlier message's
            // run answers.
            None if deduplicated => self.run_of_earlier(account, outcome).await?,
            None => return Err(QueueError::WorkflowRunNotFound(run_id.to_string())),
        };
        Ok(Triggered {
            run_id: run.id,
            created_at: run.created_at.as_millis(),
            deduplicated,
        })
    }

    /// The run of the earlier message a trigger's message was a duplicate of.
    ///
    /// # Errors
    /// That message was delivered or belongs to no run (400, naming it); store failures.
    async fn run_of_earlier(
        &self,
        account: AccountId,
        outcome: &PublishOutcome,
    ) -> Result<WorkflowRun, QueueError> {
        let earlier = match outcome {
            PublishOutcome::Url(published) => Some(&published.message_id),
            PublishOutcome::Group(published) => published.first().map(|p| &p.message_id),
        }
        .ok_or_else(|| QueueError::InvalidRequest("nothing was published".into()))?;
        let run_id = self
            .messages
            .message(account, earlier)
            .await?
            .and_then(|message| message.spec.workflow_run_id)
            // A stored message's run id was parsed when it was published; one that no longer parses
            // names no run, and the answer below says which message was met.
            .and_then(|id| RunId::parse(&id).ok());
        let run = match run_id {
            Some(run_id) => self.store.run(account, &run_id).await?,
            None => None,
        };
        run.ok_or_else(|| {
            QueueError::InvalidRequest(format!(
                "this trigger's deduplication matched message `{earlier}`, which is no longer pending, so \
                 no run was started; send it with its own deduplication id or without one"
            ))
        })
    }

    /// A run, or `None`.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) async fn find(
        &self,
        account: AccountId,
        run_id: &RunId,
    ) -> Result<Option<WorkflowRun>, quiver_core::StoreError> {
        self.store.run(account, run_id).await
    }

    /// Ends a running run as failed (its step ran out of retries; the step's dead letter is where it can
    /// be resumed or restarted from) and hands the failure to its invoker.
    ///
    /// # Errors
    /// Store failures.
    pub(crate) async fn fail(
        &self,
        account: AccountId,
        run_id: &RunId,
        now: quiver_core::Timestamp,
    ) -> Result<(), QueueError> {
        if self
            .store
            .finish_run(account, run_id, RunState::Failed, now, None)
            .await?
            && let Some(run) = self.store.run(account, run_id).await?
        {
            self.tell_invoker(&run, InvokeOutcome::Failed, None).await;
        }
        Ok(())
    }

    /// A run.
    ///
    /// # Errors
    /// [`QueueError::WorkflowRunNotFound`]; store failures.
    pub async fn get(&self, account: AccountId, run_id: &RunId) -> Result<WorkflowRun, QueueError> {
        self.store
            .run(account, run_id)
            .await?
            .ok_or_else(|| QueueError::WorkflowRunNotFound(run_id.to_string()))
    }

    /// Every run, newest first.
    ///
    /// # Errors
    /// Store failures.
    pub async fn list(&self, account: AccountId) -> Result<Vec<WorkflowRun>, QueueError> {
        Ok(self.store.runs(account).await?)
    }

    /// Cancels a running run: its pending messages are cancelled and it ends as `RUN_CANCELED`.
    ///
    /// # Errors
    /// An unknown run (404); a run that has ended or whose step is being delivered right now (400,
    /// and nothing changes); store failures.
    pub async fn cancel(&self, account: AccountId, run_id: &RunId) -> Result<(), QueueError> {
        let run = self.get(account, run_id).await?;
        if run.state != RunState::Started {
            return Err(QueueError::InvalidRequest(format!(
                "workflow run `{run_id}` has already ended ({})",
                run.state.as_str()
            )));
        }
        let now = self.context.now();
        let messages = self.store.run_messages(account, run_id, now).await?;
        if messages.iter().any(|(_, in_flight)| *in_flight) {
            return Err(QueueError::InvalidRequest(format!(
                "a step of workflow run `{run_id}` is being delivered right now; cancel again to stop the run"
            )));
        }
        let ids = messages.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
        if !ids.is_empty() {
            self.messages
                .cancel(
                    account,
                    Some(ids),
                    crate::store::CancelFilter::default(),
                    None,
                    now,
                )
                .await?;
        }
        self.store
            .finish_run(account, run_id, RunState::Canceled, now, None)
            .await?;
        self.tell_invoker(&run, InvokeOutcome::Canceled, None).await;
        Ok(())
    }

    /// Publishes an invoked run's outcome to the run that invoked it, as that run's next step. A failure
    /// is logged: the invoked run has ended either way, and its invoker's own retries do not depend on it.
    pub(crate) async fn tell_invoker(&self, run: &WorkflowRun, outcome: InvokeOutcome, result: Option<&str>) {
        let Some(invoker) = &run.invoker else {
            return;
        };
        let request = PublishRequest {
            destination: invoker.workflow_url.clone(),
            headers: invoker
                .headers
                .iter()
                .flat_map(|(name, values)| values.iter().map(move |v| (name.clone(), v.clone())))
                .collect(),
            query: Vec::new(),
            body: invoker.result_step(outcome, result),
            caller_ip: None,
            schedule_id: None,
        };
        if let Err(error) = self.publisher.publish(run.account_id, request).await {
            tracing::warn!(workflow.run = %run.id, workflow.invoker = %invoker.workflow_run_id, %error,
                "could not hand an invoked run's outcome to its invoker");
        }
    }

    /// Ends a run as finished, with the workflow's result (the SDK's `cancel=false`).
    ///
    /// # Errors
    /// An unknown run (404); store failures.
    pub async fn finish(
        &self,
        account: AccountId,
        run_id: &RunId,
        response: Option<String>,
    ) -> Result<(), QueueError> {
        let run = self.get(account, run_id).await?;
        let ended = self
            .store
            .finish_run(
                account,
                run_id,
                RunState::Success,
                self.context.now(),
                response.clone(),
            )
            .await?;
        if ended {
            self.tell_invoker(&run, InvokeOutcome::Finished, response.as_deref())
                .await;
        }
        Ok(())
    }

    /// Cancels the running runs that `selection` addresses, newest first, at most its `count`. Runs that
    /// cannot be cancelled keep their state and are reported; repeating the call cancels the rest.
    ///
    /// # Errors
    /// Store failures.
    pub async fn cancel_many(
        &self,
        account: AccountId,
        selection: &RunSelection,
    ) -> Result<(u64, Vec<CancelFailure>), QueueError> {
        let runs = self.store.runs(account).await?;
        let mut cancelled = 0;
        let mut failures = Vec::new();
        let selected = runs
            .into_iter()
            .filter(|run| run.state == RunState::Started && selection.matches(run))
            .take(selection.count.unwrap_or(usize::MAX));
        for run in selected {
            match self.cancel(account, &run.id).await {
                Ok(()) => cancelled += 1,
                Err(QueueError::Store(error)) => return Err(QueueError::Store(error)),
                Err(error) => failures.push(CancelFailure {
                    run_id: run.id.to_string(),
                    error: error.to_string(),
                }),
            }
        }
        Ok((cancelled, failures))
    }
}

/// The run id that a trigger of `destination` deduplicated by `parts` names: a hash of them.
fn run_named_by(destination: &str, parts: &[&[u8]]) -> RunId {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new().chain_update(destination.as_bytes());
    for part in parts {
        hasher.update([0]);
        hasher.update(part);
    }
    RunId::of_digest(&hasher.finalize())
}

/// A run a trigger started, or found started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triggered {
    /// The run.
    pub run_id: RunId,
    /// When it was created, in Unix milliseconds.
    pub created_at: i64,
    /// Whether the run had been started before (its id given again) and this trigger started nothing.
    pub deduplicated: bool,
}

/// A trigger's publish: the run's id and the workflow headers that make its message the run's first.
/// The id is the one given in `Svc-Workflow-RunId` (a header or a configuration query key); else, where the trigger asks to be deduplicated
/// (`Svc-Deduplication-Id`, or `Svc-Content-Based-Deduplication` over its body and forwarded headers),
/// one that names what it is deduplicated by, so that a trigger sent again finds the run the first one
/// started (the message's own deduplication would turn the second message away after its run had been
/// started, and leave that run without one); else a new one.
///
/// # Errors
/// A malformed run id or publish setting (400).
fn as_trigger(mut request: PublishRequest) -> Result<(RunId, PublishRequest), QueueError> {
    // As for any setting, a configuration query key wins over a header.
    let given = request
        .query
        .iter()
        .chain(&request.headers)
        .find(|(name, _)| crate::headers::config_key(name).as_deref() == Some("workflow-runid"))
        .map(|(_, value)| value.as_str());
    let options = crate::publish::parse_publish_options(&request.headers, &request.query)?;
    let destination = request.destination.trim();
    let run_id = match (given, &options.deduplication_id) {
        (Some(id), _) => RunId::parse(id)?,
        (None, Some(deduplication)) => run_named_by(destination, &[b"id", deduplication.as_bytes()]),
        (None, None) if options.content_based_deduplication => {
            let mut content: Vec<&[u8]> = vec![b"content", &request.body];
            for (name, value) in &options.forward_headers {
                content.extend([name.as_bytes(), value.as_bytes()]);
            }
            run_named_by(destination, &content)
        }
        (None, None) => RunId::generate(),
    };
    let not_workflow = |(name, _): &(String, String)| {
        !matches!(
            crate::headers::config_key(name).as_deref(),
            Some("workflow-runid" | "workflow-init" | "workflow-url")
        )
    };
    request.headers.retain(not_workflow);
    request.query.retain(not_workflow);
    request
        .headers
        .push(("Svc-Workflow-RunId".into(), run_id.to_string()));
    request.headers.push(("Svc-Workflow-Init".into(), "true".into()));
    request
        .headers
        .push(("Svc-Workflow-Url".into(), request.destination.clone()));
    Ok((run_id, request))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deduplication_id_names_the_run_and_a_run_id_wins_over_it() {
        let request = |headers: &[(&str, &str)]| PublishRequest {
            destination: "https://shop.example.com/order".into(),
            headers: headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            query: Vec::new(),
            body: Vec::new(),
            caller_ip: None,
            schedule_id: None,
        };
        let run = |headers: &[(&str, &str)]| as_trigger(request(headers)).unwrap().0;
        let named = run(&[("upstash-deduplication-id", "order-7")]);
        assert_eq!(named, run(&[("Svc-Deduplication-Id", "order-7")]));
        assert_ne!(named, run(&[("Upstash-Deduplication-Id", "order-8")]));
        assert_eq!(
            run(&[
                ("Upstash-Workflow-RunId", "wfr_mine"),
                ("Upstash-Deduplication-Id", "order-7")
            ]),
            RunId::parse("wfr_mine").unwrap()
        );
        assert_ne!(run(&[]), run(&[]), "a new run each time without either");
        let content = run(&[("Upstash-Content-Based-Deduplication", "true")]);
        assert_eq!(content, run(&[("Svc-Content-Based-Deduplication", "true")]));
        assert_ne!(
            content,
            run(&[
                ("Upstash-Content-Based-Deduplication", "true"),
                ("Upstash-Forward-Tenant", "b")
            ]),
            "forwarded headers are content"
        );
        assert_ne!(
            run(&[("Upstash-Deduplication-Id", "")]),
            run(&[("Upstash-Deduplication-Id", "")])
        );
    }
}
