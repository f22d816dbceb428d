//! Workflow runs: trigger, end, cancel in bulk, steps, and the run log.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use quiver_queue::workflow::RunState;
use quiver_queue::workflows::RunSelection;
use serde_json::{Value, json};

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, RawBody};
use crate::queue::params::Params;
use crate::queue::request::{PublishForm, query_one, query_pairs};
use crate::state::AppState;

pub(crate) async fn trigger(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    PublishForm(request): PublishForm,
) -> ApiResult<Json<Value>> {
    let (run_id, created_at) = state
        .queue
        .workflow_runs
        .trigger(caller.account.id, request)
        .await?;
    Ok(Json(
        json!({"workflowRunId": run_id, "workflowCreatedAt": created_at}),
    ))
}

/// `DELETE /v2/workflows/runs/{id}`: `?cancel=true` (or no flag) cancels; `?cancel=false` ends the run
/// normally with the body as its result.
pub(crate) async fn end_run(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(id): Path<String>,
    uri: Uri,
    RawBody(body): RawBody,
) -> ApiResult<StatusCode> {
    let pairs = query_pairs(&uri);
    if query_one(&pairs, "cancel") == Some("false") {
        let response = (!body.is_empty()).then(|| String::from_utf8_lossy(&body).into_owned());
        state
            .queue
            .workflow_runs
            .finish(caller.account.id, &id, response)
            .await?;
    } else {
        state.queue.workflow_runs.cancel(caller.account.id, &id).await?;
    }
    Ok(StatusCode::OK)
}

/// `DELETE /v2/workflows/runs` (SPEC C1): by `workflowRunIds`, or the running runs every filter given
/// matches (`workflowUrl` as a prefix, or whole with `workflowUrlExactMatch=true`; `host`, `path`, `label`,
/// `flowControlKey`, `callerIp`, `fromDate`, `toDate`; `count` caps it), or all of them when nothing is
/// given; from the query or a JSON body. A key it does not know is a 400, never "all".
pub(crate) async fn cancel_runs(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    uri: Uri,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    let mut params = Params::new(&uri, &body)?;
    let names_runs = params.has("workflowRunIds");
    let run_ids = params.list("workflowRunIds");
    let mut urls = params.whole_list("workflowUrl");
    let url_exact = params.flag("workflowUrlExactMatch")?;
    let prefixes = params.whole_list("workflowUrlStartingWith");
    if !prefixes.is_empty() && (url_exact || !urls.is_empty()) {
        return Err(ApiError::bad_request(
            "workflowUrlStartingWith: cannot be combined with workflowUrl",
        ));
    }
    urls.extend(prefixes);
    let selection = RunSelection {
        run_ids,
        urls,
        url_exact,
        count: params.count()?,
        ..params.run_selection()?
    };
    params.ignore("cursor");
    params.flag("all")?;
    params.finish()?;
    if names_runs && selection.run_ids.is_empty() {
        return Ok(Json(json!({"cancelled": 0})));
    }
    let (cancelled, failures) = state
        .queue
        .workflow_runs
        .cancel_many(caller.account.id, &selection)
        .await?;
    let mut answer = json!({"cancelled": cancelled});
    if !failures.is_empty() {
        answer["errors"] = Value::Array(
            failures
                .iter()
                .map(|f| json!({"workflowRunId": f.run_id, "error": f.error}))
                .collect(),
        );
    }
    Ok(Json(answer))
}

/// `GET /v2/workflows/runs/{id}`: the steps of a running run (404 once it has ended).
pub(crate) async fn run_steps(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let run = state.queue.workflow_runs.get(caller.account.id, &id).await?;
    if run.state != RunState::Started {
        return Err(quiver_queue::QueueError::WorkflowRunNotFound(id).into());
    }
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        run.history(),
    )
        .into_response())
}

/// One step of a run's log. The workflow SDK publishes each finished step as a JSON object (`stepId`,
/// `stepName`, `stepType`, `out`, `concurrent`, and the fields of waits, sleeps and calls), which the
/// log shows as it came; the first step is the run's initial payload.
pub(crate) fn step_json(position: usize, step: &quiver_queue::workflow::RunStep) -> Value {
    let mut fields = match serde_json::from_slice::<Value>(&step.body) {
        Ok(Value::Object(fields)) if position > 0 && fields.contains_key("stepId") => fields,
        // Anything else (any payload the user chose, JSON or not) is the run's initial payload.
        Ok(_) | Err(_) => {
            let mut fields = serde_json::Map::new();
            fields.insert("stepId".into(), json!(0));
            fields.insert("stepName".into(), json!("init"));
            fields.insert("stepType".into(), json!("Initial"));
            fields.insert("out".into(), json!(String::from_utf8_lossy(&step.body)));
            fields
        }
    };
    fields.entry("concurrent").or_insert(json!(1));
    fields.insert("messageId".into(), json!(step.message_id));
    fields.insert("callType".into(), json!(step.call_type));
    fields.insert("state".into(), json!("STEP_SUCCESS"));
    fields.insert("createdAt".into(), json!(step.created_at.as_millis()));
    fields.insert("retries".into(), json!(step.retries));
    fields.insert("headers".into(), crate::queue::wire::header_arrays(&step.headers));
    Value::Object(fields)
}

pub(crate) fn run_json(run: &quiver_queue::workflow::WorkflowRun) -> Value {
    let steps: Vec<Value> = run
        .steps
        .iter()
        .enumerate()
        .map(|(position, step)| json!({"type": "sequential", "steps": [step_json(position, step)]}))
        .collect();
    let mut fields = json!({
        "workflowRunId": run.id,
        "workflowUrl": run.url,
        "workflowState": run.state.as_str(),
        "workflowRunCreatedAt": run.created_at.as_millis(),
        "steps": steps,
    });
    if let Some(at) = run.completed_at {
        fields["workflowRunCompletedAt"] = json!(at.as_millis());
    }
    if let Some(ip) = &run.caller_ip {
        fields["workflowRunCallerIp"] = json!(ip);
    }
    if let Some(response) = &run.response {
        fields["workflowRunResponse"] = json!(response);
    }
    if !run.labels.is_empty() {
        fields["label"] = json!(run.labels.join(","));
        fields["labels"] = json!(run.labels);
    }
    if let Some(key) = &run.flow_control_key {
        fields["flowControlKey"] = json!(key);
    }
    if let Some(invoker) = &run.invoker {
        fields["invoker"] = json!({
            "workflowRunId": invoker.workflow_run_id,
            "workflowUrl": invoker.workflow_url,
            "workflowRunCreatedAt": invoker.workflow_run_created_at,
        });
    }
    fields
}

/// `GET /v2/workflows/events` and `/v2/workflows/logs`: runs, newest first, `count` (default 10) a page
/// from `cursor`, filtered by `workflowRunId`, `workflowUrl` (whole), `workflowCreatedAt`, `state`,
/// `messageId`, `label`, `flowControlKey`, `callerIp`, `host`, `path`, `fromDate` and `toDate`.
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let mut params = Params::new(&uri, &Value::Null)?;
    let states = params
        .list("state")
        .into_iter()
        .map(|state| {
            serde_json::from_value::<RunState>(Value::String(state.clone())).map_err(|_| {
                ApiError::bad_request(format!(
                    "state: `{state}` is not a run state (RUN_STARTED, RUN_SUCCESS, RUN_FAILED, RUN_CANCELED)"
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    let selection = RunSelection {
        run_ids: params.list("workflowRunId"),
        urls: params.whole_list("workflowUrl"),
        url_exact: true,
        created_at: params.time("workflowCreatedAt")?,
        states,
        message_ids: params.list("messageId"),
        ..params.run_selection()?
    };
    let count = params.count()?.unwrap_or(10);
    let offset = match params.one("cursor")? {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request("cursor: not a cursor this route returned"))?,
    };
    params.ignore("groupBy");
    params.ignore("trimBody");
    params.finish()?;
    let matching: Vec<_> = state
        .queue
        .workflow_runs
        .list(caller.account.id)
        .await?
        .into_iter()
        .filter(|run| selection.matches(run))
        .collect();
    let runs: Vec<Value> = matching.iter().skip(offset).take(count).map(run_json).collect();
    let mut answer = json!({"runs": runs});
    if offset + count < matching.len() {
        answer["cursor"] = json!((offset + count).to_string());
    }
    Ok(Json(answer))
}
