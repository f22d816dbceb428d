//! Workflow runs: a run starts with a message carrying `Svc-Workflow-RunId` and
//! `Svc-Workflow-Init: true`; each later message of the run (`Init: false`) appends a step and is
//! delivered with the run's history (a JSON array of steps, the initial payload first) as its body.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use quiver_core::{AccountId, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunState {
    /// Steps may still come.
    #[serde(rename = "RUN_STARTED")]
    Started,
    /// The workflow finished.
    #[serde(rename = "RUN_SUCCESS")]
    Success,
    /// The workflow failed.
    #[serde(rename = "RUN_FAILED")]
    Failed,
    /// The run was cancelled.
    #[serde(rename = "RUN_CANCELED")]
    Canceled,
}

impl RunState {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            RunState::Started => "RUN_STARTED",
            RunState::Success => "RUN_SUCCESS",
            RunState::Failed => "RUN_FAILED",
            RunState::Canceled => "RUN_CANCELED",
        }
    }
}

/// One entry of a run's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStep {
    /// The message that carried it.
    pub message_id: String,
    /// Its body, byte for byte.
    pub body: Vec<u8>,
    /// `step`, `toCallback` or `fromCallback`.
    pub call_type: String,
    /// When its message was published (runs stored before this was kept read the epoch).
    #[serde(default = "epoch")]
    pub created_at: Timestamp,
    /// The headers its message is delivered with.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// How often its message is retried.
    #[serde(default)]
    pub retries: u32,
}

fn epoch() -> Timestamp {
    Timestamp::EPOCH
}

impl RunStep {
    /// The step that `message` carries, with `body` (the request's, byte for byte).
    pub fn of(message: &crate::message::Message, body: Vec<u8>) -> RunStep {
        RunStep {
            message_id: message.id.0.clone(),
            body,
            call_type: "step".into(),
            created_at: message.created_at,
            headers: message.spec.headers.clone(),
            retries: message.spec.max_retries,
        }
    }
}

/// A workflow run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowRun {
    /// Identifier (`wfr_…`).
    pub id: crate::names::RunId,
    /// Owner.
    pub account_id: AccountId,
    /// The workflow's URL.
    pub url: String,
    /// Where it stands.
    pub state: RunState,
    /// When it started.
    pub created_at: Timestamp,
    /// When it ended.
    pub completed_at: Option<Timestamp>,
    /// Who started it.
    pub caller_ip: Option<String>,
    /// The initial payload first, then each step in the order it was published.
    pub steps: Vec<RunStep>,
    /// The result the workflow reported when it finished.
    pub response: Option<String>,
    /// The labels the run was started with.
    #[serde(default)]
    pub labels: Vec<String>,
    /// The flow-control key the run was started with.
    #[serde(default)]
    pub flow_control_key: Option<String>,
    /// The run whose `context.invoke` started this one, told the outcome when this run ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invoker: Option<Invoker>,
}

/// The run that invoked another (`context.invoke`), and what it needs to receive the result as its next
/// step. Read from the body of the invoking publish (`Svc-Workflow-Invoke: true`), as the SDK sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Invoker {
    /// The invoking run.
    pub workflow_run_id: String,
    /// Its creation time, unix milliseconds.
    #[serde(default)]
    pub workflow_run_created_at: i64,
    /// Its workflow URL, where the result step goes.
    pub workflow_url: String,
    /// The headers the result step is published with (the invoking run's own).
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, Vec<String>>,
    /// The invoke step (`stepId`, `stepName`, `concurrent`, `targetStep`).
    #[serde(default)]
    pub step: serde_json::Value,
}

/// How an invoked run ended, as its invoker is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvokeOutcome {
    /// It finished with a result.
    Finished,
    /// It failed.
    Failed,
    /// It was cancelled.
    Canceled,
}

impl Invoker {
    /// The step body the invoking run receives: the invoke step with `out` holding `{body, isFailed,
    /// isCanceled}` as JSON text, which the SDK parses.
    pub fn result_step(&self, outcome: InvokeOutcome, result: Option<&str>) -> Vec<u8> {
        let field = |name: &str| self.step.get(name).cloned().unwrap_or(serde_json::Value::Null);
        let out = json!({
            "body": result,
            "isFailed": outcome == InvokeOutcome::Failed,
            "isCanceled": outcome == InvokeOutcome::Canceled,
        });
        let mut step = json!({
            "stepId": field("stepId"),
            "stepName": field("stepName"),
            "stepType": "Invoke",
            "out": out.to_string(),
            "concurrent": self.step.get("concurrent").cloned().unwrap_or_else(|| json!(1)),
        });
        if let Some(target) = self.step.get("targetStep").filter(|t| !t.is_null()) {
            step["targetStep"] = target.clone();
        }
        step.to_string().into_bytes()
    }
}

/// The body of an invoking publish: the invoked run's payload and its invoker.
#[derive(Debug, Clone, Deserialize)]
pub struct InvokeRequest {
    /// The invoked run's payload, as text.
    #[serde(default)]
    pub body: Option<String>,
    /// The invoker.
    #[serde(flatten)]
    pub invoker: Invoker,
}

impl WorkflowRun {
    /// Takes the step that `message_id` carries out of the run; `false` when the run has no such step.
    pub fn remove_step_of(&mut self, message_id: &str) -> bool {
        let before = self.steps.len();
        self.steps.retain(|step| step.message_id != message_id);
        self.steps.len() != before
    }

    /// The history delivered with each step message: `[{messageId, body (base64), callType}]`.
    pub fn history(&self) -> Vec<u8> {
        let steps: Vec<serde_json::Value> = self
            .steps
            .iter()
            .map(|step| json!({"messageId": step.message_id, "body": STANDARD.encode(&step.body), "callType": step.call_type}))
            .collect();
        serde_json::Value::Array(steps).to_string().into_bytes()
    }
}

/// Why a run could not be cancelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelFailure {
    /// The run.
    pub run_id: String,
    /// Why.
    pub error: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_lists_steps_in_order_with_base64_bodies() {
        let run = WorkflowRun {
            id: crate::names::RunId::parse("wfr_1").unwrap(),
            account_id: AccountId::random(),
            url: "http://x".into(),
            state: RunState::Started,
            created_at: Timestamp::EPOCH,
            completed_at: None,
            caller_ip: None,
            steps: vec![
                RunStep {
                    message_id: "msg_a".into(),
                    body: b"init".to_vec(),
                    call_type: "step".into(),
                    created_at: Timestamp::EPOCH,
                    headers: Vec::new(),
                    retries: 3,
                },
                RunStep {
                    message_id: "msg_b".into(),
                    body: br#"{"stepId":1}"#.to_vec(),
                    call_type: "step".into(),
                    created_at: Timestamp::EPOCH,
                    headers: Vec::new(),
                    retries: 3,
                },
            ],
            response: None,
            labels: Vec::new(),
            flow_control_key: None,
            invoker: None,
        };
        let history: serde_json::Value = serde_json::from_slice(&run.history()).unwrap();
        assert_eq!(
            history[0],
            json!({"messageId": "msg_a", "body": STANDARD.encode("init"), "callType": "step"})
        );
        assert_eq!(history[1]["messageId"], "msg_b");
    }
}
