//! Workflow run operations of the queue: tracking runs as their messages are published, cancelling
//! one or many, ending them, reading their steps.

use quiver_core::{AccountId, Timestamp};

use crate::error::QueueError;
use crate::message::NewMessage;
use crate::publish::PublishOptions;
use crate::service::{PublishOutcome, PublishRequest, Queue};
use crate::workflow::{CancelFailure, InvokeOutcome, RunState, RunStep, WorkflowRun};

/// Which runs a bulk cancel or a run listing addresses: those that every filter given matches (the
/// values of one filter are alternatives). With none, every run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSelection {
    /// These runs.
    pub run_ids: Vec<String>,
    /// Workflow URLs: prefixes, or whole URLs when `url_exact`.
    pub urls: Vec<String>,
    /// Whether `urls` are whole URLs rather than prefixes.
    pub url_exact: bool,
    /// Hosts of the workflow URL.
    pub hosts: Vec<String>,
    /// Paths of the workflow URL.
    pub paths: Vec<String>,
    /// Labels (a run matches when it carries any of them).
    pub labels: Vec<String>,
    /// Flow-control keys.
    pub flow_control_keys: Vec<String>,
    /// Addresses the runs were started from.
    pub caller_ips: Vec<String>,
    /// Started at or after.
    pub from: Option<Timestamp>,
    /// Started at or before.
    pub to: Option<Timestamp>,
    /// At most this many runs are cancelled.
    pub count: Option<usize>,
    /// Created at exactly this time.
    pub created_at: Option<Timestamp>,
    /// In one of these states (any, when empty; a cancel takes running runs only whatever this says).
    pub states: Vec<RunState>,
    /// Runs one of whose steps was carried by one of these messages.
    pub message_ids: Vec<String>,
}

impl RunSelection {
    /// Whether `run` is selected (its state aside).
    pub fn matches(&self, run: &WorkflowRun) -> bool {
        let one = |wanted: &[String], value: Option<&str>| {
            wanted.is_empty() || value.is_some_and(|v| wanted.iter().any(|w| w == v))
        };
        let url = url::Url::parse(&run.url).ok();
        let url_matches = self.urls.is_empty()
            || self.urls.iter().any(|wanted| {
                if self.url_exact {
                    run.url == *wanted
                } else {
                    run.url.starts_with(wanted.as_str())
                }
            });
        (self.run_ids.is_empty() || self.run_ids.contains(&run.id))
            && url_matches
            && one(&self.hosts, url.as_ref().and_then(url::Url::host_str))
            && one(&self.paths, url.as_ref().map(url::Url::path))
            && (self.labels.is_empty() || run.labels.iter().any(|l| self.labels.contains(l)))
            && one(&self.flow_control_keys, run.flow_control_key.as_deref())
            && one(&self.caller_ips, run.caller_ip.as_deref())
            && self.from.is_none_or(|from| run.created_at >= from)
            && self.to.is_none_or(|to| run.created_at <= to)
            && self.created_at.is_none_or(|at| run.created_at == at)
            && (self.states.is_empty() || self.states.contains(&run.state))
            && (self.message_ids.is_empty()
                || run
                    .steps
                    .iter()
                    .any(|step| self.message_ids.contains(&step.message_id)))
    }
}

/// How a run whose step was dead-lettered starts again, as a new run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRecovery {
    /// From the failed step, with the history before it.
    Resume,
    /// From the beginning, with the initial payload.
    Restart,
}

impl Queue {
    /// Starts a new run from a dead-lettered step of a run (`POST /v2/workflows/dlq/resume` and
    /// `/restart`): the dead letter leaves the queue, and its message goes again under a new run id,
    /// with the publish settings in `headers` (retries, flow control) replacing its own. Returns the new
    /// run's id and creation time.
    ///
    /// # Errors
    /// An unknown dead letter (404); one that is not a step of a workflow run (400); malformed settings;
    /// store failures.
    pub async fn recover_run(
        &self,
        account: AccountId,
        dlq_id: &str,
        headers: &[(String, String)],
        how: RunRecovery,
    ) -> Result<(String, i64), QueueError> {
        let dead = self.dead_letter(account, dlq_id).await?;
        let spec = &dead.message.spec;
        let Some(old_id) = spec.workflow_run_id.clone().filter(|_| spec.workflow_history) else {
            return Err(QueueError::InvalidRequest(format!(
                "dead letter `{dlq_id}` is not a step of a workflow run"
            )));
        };
        let old = self.workflow_run(account, &old_id).await?;
        let now = self.clock().now();
        let mut replacement = self.replacement_for(&dead, headers, now)?;
        let run_id = format!("wfr_{}", quiver_core::secret::random_token(16));
        let message = &mut replacement.message;
        message.spec.workflow_run_id = Some(run_id.clone());
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
        if !self.store().start_run(&run).await? {
            return Err(QueueError::WorkflowRunExists {
                run_id,
                message_id: String::new(),
            });
        }
        if self
            .store()
            .retry_dead_letter(account, dlq_id, replacement, now)
            .await?
            .is_none()
        {
            // Taken meanwhile by another resume, restart or delete: the new run has nothing to run.
            self.store()
                .finish_run(account, &run.id, RunState::Canceled, now, None)
                .await?;
            return Err(QueueError::DeadLetterNotFound(dlq_id.to_owned()));
        }
        self.wake_worker();
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
    ) -> Result<(String, i64), QueueError> {
        let dead = self.dead_letter(account, dlq_id).await?;
        let spec = &dead.message.spec;
        let (Some(callback), Some(run_id)) = (&spec.failure_callback, &spec.workflow_run_id) else {
            return Err(QueueError::InvalidRequest(format!(
                "dead letter `{dlq_id}` has no failure callback of a workflow run"
            )));
        };
        if dead
            .failure_callback
            .as_ref()
            .is_some_and(|info| info.state == crate::message::FailureCallbackState::InProgress)
        {
            return Err(QueueError::InvalidRequest(format!(
                "the failure callback of dead letter `{dlq_id}` is in progress"
            )));
        }
        let now = self.clock().now();
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
            self.config().default_timeout_ms,
        );
        message.message.spec.reports_dead_letter = Some(dlq_id.to_owned());
        if !self
            .store()
            .retry_failure_callback(account, dlq_id, message, now)
            .await?
        {
            return Err(QueueError::DeadLetterNotFound(dlq_id.to_owned()));
        }
        self.wake_worker();
        let created_at = self
            .store()
            .run(account, run_id)
            .await?
            .map_or(0, |run| run.created_at.as_millis());
        Ok((run_id.clone(), created_at))
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
            if !crate::service::forwards_workflow_protocol(options) {
                // A third-party call of the run: tagged with the run (so cancelling stops it), no step.
                return Ok(());
            }
            if !self.store().append_step(account, run_id, &step).await? {
                return Err(QueueError::WorkflowRunNotRunning(run_id.clone()));
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
            created_at: self.clock().now(),
            completed_at: None,
            caller_ip: request.caller_ip.clone(),
            steps: vec![step],
            response: None,
            labels: options.labels.clone(),
            flow_control_key: options.flow_control.as_ref().map(|f| f.key.clone()),
            invoker,
        };
        if !self.store().start_run(&run).await? {
            let existing = self.store().run(account, run_id).await?;
            let message_id = existing
                .and_then(|r| r.steps.first().map(|s| s.message_id.clone()))
                .unwrap_or_default();
            return Err(QueueError::WorkflowRunExists {
                run_id: run_id.clone(),
                message_id,
            });
        }
        Ok(())
    }

    /// Starts a run of the workflow at `request.destination` (`POST /v2/trigger/...`); returns the run
    /// id and its creation time.
    ///
    /// # Errors
    /// As [`Queue::publish`].
    pub async fn trigger(
        &self,
        account: AccountId,
        mut request: PublishRequest,
    ) -> Result<(String, i64), QueueError> {
        let run_id = request
            .headers
            .iter()
            .find(|(name, _)| crate::headers::config_key(name).as_deref() == Some("workflow-runid"))
            .map(|(_, value)| value.clone())
            .unwrap_or_else(|| format!("wfr_{}", quiver_core::secret::random_token(16)));
        request.headers.retain(|(name, _)| {
            !matches!(
                crate::headers::config_key(name).as_deref(),
                Some("workflow-runid" | "workflow-init" | "workflow-url")
            )
        });
        request
            .headers
            .push(("Svc-Workflow-RunId".into(), run_id.clone()));
        request.headers.push(("Svc-Workflow-Init".into(), "true".into()));
        request
            .headers
            .push(("Svc-Workflow-Url".into(), request.destination.clone()));
        match self.publish(account, request).await? {
            PublishOutcome::Url(_) | PublishOutcome::Group(_) => {}
        }
        let run = self
            .store()
            .run(account, &run_id)
            .await?
            .ok_or_else(|| QueueError::WorkflowRunNotFound(run_id.clone()))?;
        Ok((run_id, run.created_at.as_millis()))
    }

    /// A run.
    ///
    /// # Errors
    /// [`QueueError::WorkflowRunNotFound`]; store failures.
    pub async fn workflow_run(&self, account: AccountId, run_id: &str) -> Result<WorkflowRun, QueueError> {
        self.store()
            .run(account, run_id)
            .await?
            .ok_or_else(|| QueueError::WorkflowRunNotFound(run_id.to_owned()))
    }

    /// Every run, newest first.
    ///
    /// # Errors
    /// Store failures.
    pub async fn workflow_runs(&self, account: AccountId) -> Result<Vec<WorkflowRun>, QueueError> {
        Ok(self.store().runs(account).await?)
    }

    /// Cancels a running run: its pending messages are cancelled and it ends as `RUN_CANCELED`.
    ///
    /// # Errors
    /// An unknown run (404); a run that has ended or whose step is being delivered right now (400,
    /// and nothing changes); store failures.
    pub async fn cancel_run(&self, account: AccountId, run_id: &str) -> Result<(), QueueError> {
        let run = self.workflow_run(account, run_id).await?;
        if run.state != RunState::Started {
            return Err(QueueError::InvalidRequest(format!(
                "workflow run `{run_id}` has already ended ({})",
                run.state.as_str()
            )));
        }
        let now = self.clock().now();
        let messages = self.store().run_messages(account, run_id, now).await?;
        if messages.iter().any(|(_, in_flight)| *in_flight) {
            return Err(QueueError::InvalidRequest(format!(
                "a step of workflow run `{run_id}` is being delivered right now; cancel again to stop the run"
            )));
        }
        let ids = messages.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
        if !ids.is_empty() {
            self.store()
                .cancel(
                    account,
                    Some(ids),
                    crate::store::CancelFilter::default(),
                    None,
                    now,
                )
                .await?;
        }
        self.store()
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
        if let Err(error) = self.publish(run.account_id, request).await {
            tracing::warn!(workflow.run = %run.id, workflow.invoker = %invoker.workflow_run_id, %error,
                "could not hand an invoked run's outcome to its invoker");
        }
    }

    /// Ends a run as finished, with the workflow's result (the SDK's `cancel=false`).
    ///
    /// # Errors
    /// An unknown run (404); store failures.
    pub async fn finish_run(
        &self,
        account: AccountId,
        run_id: &str,
        response: Option<String>,
    ) -> Result<(), QueueError> {
        let run = self.workflow_run(account, run_id).await?;
        let ended = self
            .store()
            .finish_run(
                account,
                run_id,
                RunState::Success,
                self.clock().now(),
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
    pub async fn cancel_runs(
        &self,
        account: AccountId,
        selection: &RunSelection,
    ) -> Result<(u64, Vec<CancelFailure>), QueueError> {
        let runs = self.store().runs(account).await?;
        let mut cancelled = 0;
        let mut failures = Vec::new();
        let selected = runs
            .into_iter()
            .filter(|run| run.state == RunState::Started && selection.matches(run))
            .take(selection.count.unwrap_or(usize::MAX));
        for run in selected {
            match self.cancel_run(account, &run.id).await {
                Ok(()) => cancelled += 1,
                Err(QueueError::Store(error)) => return Err(QueueError::Store(error)),
                Err(error) => failures.push(CancelFailure {
                    run_id: run.id.clone(),
                    error: error.to_string(),
                }),
            }
        }
        Ok((cancelled, failures))
    }
}
