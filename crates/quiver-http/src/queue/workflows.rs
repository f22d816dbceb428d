//! Workflow runs: trigger (one, or a batch), end, cancel in bulk, steps, and the run log.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use quiver_queue::names::RunId;
use quiver_queue::workflow::RunState;
use quiver_queue::workflows::RunSelection;
use serde_json::Value;

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, RawBody, Typed};
use crate::queue::params::Params;
use crate::queue::request::{PublishForm, batch_requests, query_one, query_pairs};
use crate::queue::run_wire::{
    CancelFailureOut, RunOut, RunStartedOut, RunsCancelledOut, RunsPageOut, TriggeredOut,
};
use crate::state::AppState;

pub(crate) async fn trigger(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    PublishForm(request): PublishForm,
) -> ApiResult<Json<RunStartedOut>> {
    let triggered = state
        .queue
        .workflow_runs
        .trigger(caller.account.id, request)
        .await?;
    Ok(Json(RunStartedOut {
        workflow_run_id: triggered.run_id.to_string(),
        workflow_created_at: triggered.created_at,
    }))
}

/// `POST /v2/batch/trigger`: `[{destination, headers?, body?, queue?}]`, each starting a run as
/// `/v2/trigger/{destination}` would; 201 with each item's run, or its error in its place.
pub(crate) async fn batch_trigger(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Typed(items): Typed<Vec<Value>>,
) -> ApiResult<(StatusCode, Json<Vec<TriggeredOut>>)> {
    let (valid, places) = batch_requests(items, &peer.ip().to_string());
    let mut outcomes = state
        .queue
        .workflow_runs
        .trigger_batch(caller.account.id, valid)
        .await?
        .into_iter();
    let refused = |error: String| TriggeredOut::Error { error };
    let answers = places
        .into_iter()
        .map(|place| match place {
            Err(error) => refused(error.into_reported_message()),
            Ok(()) => match outcomes.next() {
                Some(Ok(run)) => TriggeredOut::Run {
                    workflow_run_id: run.run_id.to_string(),
                    workflow_created_at: run.created_at,
                    deduplicated: run.deduplicated,
                },
                Some(Err(error)) => refused(ApiError::from(error).into_reported_message()),
                None => refused("not triggered".into()),
            },
        })
        .collect();
    Ok((StatusCode::CREATED, Json(answers)))
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
            .finish(caller.account.id, &RunId::parse(id)?, response)
            .await?;
    } else {
        state
            .queue
            .workflow_runs
            .cancel(caller.account.id, &RunId::parse(id)?)
            .await?;
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
) -> ApiResult<Json<RunsCancelledOut>> {
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
        return Ok(Json(RunsCancelledOut {
            cancelled: 0,
            errors: Vec::new(),
        }));
    }
    let (cancelled, failures) = state
        .queue
        .workflow_runs
        .cancel_many(caller.account.id, &selection)
        .await?;
    Ok(Json(RunsCancelledOut {
        cancelled,
        errors: failures.into_iter().map(CancelFailureOut::of).collect(),
    }))
}

/// `GET /v2/workflows/runs/{id}`: the steps of a running run (404 once it has ended).
pub(crate) async fn run_steps(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let run = state
        .queue
        .workflow_runs
        .get(caller.account.id, &RunId::parse(id.as_str())?)
        .await?;
    if run.state != RunState::Started {
        return Err(quiver_queue::QueueError::WorkflowRunNotFound(id).into());
    }
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        run.history(),
    )
        .into_response())
}

/// `GET /v2/workflows/events` and `/v2/workflows/logs`: runs, newest first, `count` (default 10) a page
/// from `cursor`, filtered by `workflowRunId`, `workflowUrl` (whole), `workflowCreatedAt`, `state`,
/// `messageId`, `label`, `flowControlKey`, `callerIp`, `host`, `path`, `fromDate` and `toDate`.
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<RunsPageOut>> {
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
    Ok(Json(RunsPageOut {
        runs: matching.iter().skip(offset).take(count).map(RunOut::of).collect(),
        cursor: (offset + count < matching.len()).then(|| (offset + count).to_string()),
    }))
}
