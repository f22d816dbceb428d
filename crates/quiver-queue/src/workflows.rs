//! Workflow run operations of the queue: tracking runs as their messages are published, cancelling
//! one or many, ending them, reading their steps.

use quiver_core::AccountId;

use crate::error::QueueError;
use crate::message::NewMessage;
use crate::publish::PublishOptions;
use crate::service::{PublishOutcome, PublishRequest, Queue};
use crate::workflow::{CancelFailure, RunState, RunStep, WorkflowRun};

/// Which runs a bulk cancel addresses.
#[derive(Debug, Clone, Default)]
pub struct RunSelection {
    /// These runs (wins over the URL).
    pub run_ids: Vec<String>,
    /// Runs whose URL starts with (or, when exact, equals) this.
    pub url: Option<(String, bool)>,
}

impl Queue {
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
        let step = RunStep {
            message_id: message.message.id.0.clone(),
            body: request.body.clone(),
            call_type: "step".into(),
        };
        if options.workflow_init == Some(false) {
            if !crate::service::forwards_workflow_protocol(options) {
                // A third-party call of the run: tagged with the run (so cancelling stops it), no step.
                return Ok(());
            }
            if !self.store().append_step(account, run_id, &step).await? {
                return Err(QueueError::InvalidRequest(format!(
                    "workflow run `{run_id}` is not running"
                )));
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
        Ok(())
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
        self.workflow_run(account, run_id).await?;
        self.store()
            .finish_run(account, run_id, RunState::Success, self.clock().now(), response)
            .await?;
        Ok(())
    }

    /// Cancels every running run that `selection` addresses (all runs when it is empty). Runs that
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
        for run in runs.into_iter().filter(|run| run.state == RunState::Started) {
            let selected = if !selection.run_ids.is_empty() {
                selection.run_ids.contains(&run.id)
            } else {
                match &selection.url {
                    Some((url, true)) => run.url == *url,
                    Some((prefix, false)) => run.url.starts_with(prefix.as_str()),
                    None => true,
                }
            };
            if !selected {
                continue;
            }
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
