//! The wire shapes of workflow runs as serde types: the run log (`/v2/workflows/logs`), started and
//! recovered runs, and bulk cancels.

use quiver_queue::workflow::{CancelFailure, RunStep, WorkflowRun};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::queue::wire::HeaderArrays;

/// A run just started: by a trigger, a resume, a restart or a failure callback sent again.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStartedOut {
    /// The run.
    pub workflow_run_id: String,
    /// When it was created, in Unix milliseconds.
    pub workflow_created_at: i64,
}

/// One item of `POST /v2/batch/trigger`: the run it started (or found started), or why it was refused.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum TriggeredOut {
    /// The run.
    Run {
        /// The run.
        #[serde(rename = "workflowRunId")]
        workflow_run_id: String,
        /// When it was created, in Unix milliseconds.
        #[serde(rename = "workflowCreatedAt")]
        workflow_created_at: i64,
        /// Whether it had been started before (its id given again).
        deduplicated: bool,
    },
    /// The item was refused.
    Error {
        /// Why.
        error: String,
    },
}

/// Runs started again from a page of dead letters, and where the next page starts (empty at the end,
/// which the SDKs read as the end).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveredRunsOut {
    /// The new runs.
    pub workflow_runs: Vec<RunStartedOut>,
    /// The next page.
    pub cursor: String,
}

/// A bulk cancel of runs (DESIGN §10.13): how many were cancelled, and those that could not be.
#[derive(Debug, Serialize)]
pub struct RunsCancelledOut {
    /// The count.
    pub cancelled: u64,
    /// The runs left running, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<CancelFailureOut>,
}

/// A run a bulk cancel left running.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelFailureOut {
    workflow_run_id: String,
    error: String,
}

impl CancelFailureOut {
    /// The failure as the API shows it.
    pub fn of(failure: CancelFailure) -> CancelFailureOut {
        CancelFailureOut {
            workflow_run_id: failure.run_id,
            error: failure.error,
        }
    }
}

/// A page of the run log.
#[derive(Debug, Serialize)]
pub struct RunsPageOut {
    /// The runs, newest first.
    pub runs: Vec<RunOut>,
    /// Where the next page starts; absent at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// A run in the log.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOut {
    workflow_run_id: String,
    workflow_url: String,
    workflow_state: &'static str,
    workflow_run_created_at: i64,
    steps: Vec<StepGroupOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workflow_run_completed_at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workflow_run_caller_ip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workflow_run_response: Option<String>,
    /// The labels joined with `,`.
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    labels: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_control_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    invoker: Option<InvokerOut>,
}

/// The run that invoked a run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct InvokerOut {
    workflow_run_id: String,
    workflow_url: String,
    workflow_run_created_at: i64,
}

/// Steps that ran one after another (each step of the log is a group of one).
#[derive(Debug, Serialize)]
struct StepGroupOut {
    #[serde(rename = "type")]
    kind: &'static str,
    steps: [StepOut; 1],
}

/// One step of a run's log. The workflow SDK publishes each finished step as a JSON object (`stepId`,
/// `stepName`, `stepType`, `out`, `concurrent`, and the fields of waits, sleeps and calls), which the
/// log shows as it came (`sdk`); the first step is the run's initial payload.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StepOut {
    #[serde(flatten)]
    sdk: Map<String, Value>,
    message_id: String,
    call_type: String,
    state: &'static str,
    created_at: i64,
    retries: u32,
    headers: HeaderArrays,
}

impl StepOut {
    fn of(position: usize, step: &RunStep) -> StepOut {
        let mut sdk = match serde_json::from_slice::<Value>(&step.body) {
            Ok(Value::Object(fields)) if position > 0 && fields.contains_key("stepId") => fields,
            // Anything else (any payload the user chose, JSON or not) is the run's initial payload.
            Ok(_) | Err(_) => {
                let mut fields = Map::new();
                fields.insert("stepId".into(), Value::from(0));
                fields.insert("stepName".into(), Value::from("init"));
                fields.insert("stepType".into(), Value::from("Initial"));
                fields.insert("out".into(), Value::from(String::from_utf8_lossy(&step.body)));
                fields
            }
        };
        sdk.entry("concurrent").or_insert(Value::from(1));
        // The typed fields below are ours: the SDK's own spelling of them never shows twice.
        for ours in [
            "messageId",
            "callType",
            "state",
            "createdAt",
            "retries",
            "headers",
        ] {
            sdk.remove(ours);
        }
        StepOut {
            sdk,
            message_id: step.message_id.clone(),
            call_type: step.call_type.clone(),
            state: "STEP_SUCCESS",
            created_at: step.created_at.as_millis(),
            retries: step.retries,
            headers: HeaderArrays::of(&step.headers),
        }
    }
}

impl RunOut {
    /// The run as the log shows it.
    pub fn of(run: &WorkflowRun) -> RunOut {
        RunOut {
            workflow_run_id: run.id.to_string(),
            workflow_url: run.url.clone(),
            workflow_state: run.state.as_str(),
            workflow_run_created_at: run.created_at.as_millis(),
            steps: run
                .steps
                .iter()
                .enumerate()
                .map(|(position, step)| StepGroupOut {
                    kind: "sequential",
                    steps: [StepOut::of(position, step)],
                })
                .collect(),
            workflow_run_completed_at: run.completed_at.map(quiver_core::Timestamp::as_millis),
            workflow_run_caller_ip: run.caller_ip.clone(),
            workflow_run_response: run.response.clone(),
            label: (!run.labels.is_empty()).then(|| run.labels.join(",")),
            labels: run.labels.clone(),
            flow_control_key: run.flow_control_key.clone(),
            invoker: run.invoker.as_ref().map(|invoker| InvokerOut {
                workflow_run_id: invoker.workflow_run_id.clone(),
                workflow_url: invoker.workflow_url.clone(),
                workflow_run_created_at: invoker.workflow_run_created_at,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use quiver_core::{AccountId, Timestamp};
    use quiver_queue::workflow::RunState;
    use serde_json::json;

    use super::*;

    fn step(body: &str, position_ms: i64) -> RunStep {
        RunStep {
            message_id: format!("msg_{position_ms}"),
            body: body.as_bytes().to_vec(),
            call_type: "step".into(),
            created_at: Timestamp::from_millis(position_ms),
            headers: vec![("Upstash-Workflow-RunId".into(), "wfr_1".into())],
            retries: 3,
        }
    }

    #[test]
    fn the_log_shows_the_initial_payload_then_each_sdk_step_as_it_came() {
        let run = WorkflowRun {
            id: quiver_queue::names::RunId::parse("wfr_1").unwrap(),
            account_id: AccountId::random(),
            url: "https://example.com/wf".into(),
            state: RunState::Success,
            created_at: Timestamp::from_millis(1),
            completed_at: Some(Timestamp::from_millis(9)),
            caller_ip: None,
            steps: vec![
                step("{\"order\":1}", 1),
                step(
                    r#"{"stepId":1,"stepName":"charge","stepType":"Run","out":"\"ok\"","state":"x"}"#,
                    2,
                ),
            ],
            response: Some("done".into()),
            labels: vec!["a".into(), "b".into()],
            flow_control_key: None,
            invoker: None,
        };
        let shown = serde_json::to_value(RunOut::of(&run)).unwrap();
        assert_eq!(shown["workflowState"], "RUN_SUCCESS");
        assert_eq!(shown["workflowRunCompletedAt"], 9);
        assert_eq!(shown["label"], "a,b");
        assert!(shown.get("invoker").is_none() && shown.get("workflowRunCallerIp").is_none());
        let first = &shown["steps"][0];
        assert_eq!(first["type"], "sequential");
        assert_eq!(
            first["steps"][0],
            json!({"stepId": 0, "stepName": "init", "stepType": "Initial", "out": "{\"order\":1}",
                   "concurrent": 1, "messageId": "msg_1", "callType": "step", "state": "STEP_SUCCESS",
                   "createdAt": 1, "retries": 3, "headers": {"Upstash-Workflow-RunId": ["wfr_1"]}})
        );
        let second = &shown["steps"][1]["steps"][0];
        assert_eq!(
            (&second["stepName"], &second["out"], &second["state"]),
            (&json!("charge"), &json!("\"ok\""), &json!("STEP_SUCCESS")),
            "the SDK's fields show as they came, and ours win"
        );
    }
}
