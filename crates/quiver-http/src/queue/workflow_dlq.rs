//! The dead letters of workflow runs (`/v2/workflows/dlq`): list and delete them, and start a run again
//! from one, where it failed (`resume`) or from the beginning (`restart`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use quiver_queue::workflows::RunRecovery;

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::queue::dead_letters::selected_dead_letters;
use crate::queue::request::header_pairs;
use crate::queue::run_wire::{RecoveredRunsOut, RunStartedOut};
use crate::queue::wire::DeletedOut;
use crate::state::AppState;

/// `GET /v2/workflows/dlq`: the DLQ's listing, of workflow runs' dead letters only.
pub(crate) async fn list(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<crate::queue::dead_letters::DeadLettersPage>> {
    crate::queue::dead_letters::list_selected_dead_letters(&state, &caller, &uri, true).await
}

/// `DELETE /v2/workflows/dlq`: by `dlqIds`, or a page of those the filters match.
pub(crate) async fn delete_many(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    uri: Uri,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<DeletedOut>> {
    crate::queue::dead_letters::delete_selected_dead_letters(&state, &caller, &uri, &body, true).await
}

/// `DELETE /v2/workflows/dlq/{dlqId}`.
pub(crate) async fn delete_one(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(id): Path<String>,
) -> ApiResult<Json<DeletedOut>> {
    crate::queue::dead_letters::delete_one_dead_letter(&state, &caller, id).await
}

fn recovery(action: &str) -> ApiResult<RunRecovery> {
    match action {
        "resume" => Ok(RunRecovery::Resume),
        "restart" => Ok(RunRecovery::Restart),
        other => Err(ApiError::not_found(format!(
            "no route for POST /v2/workflows/dlq/{other}"
        ))),
    }
}

/// `POST /v2/workflows/dlq/resume|restart`: by `dlqIds`, or a page of those the filters match; answers
/// `{workflowRuns: [{workflowRunId, workflowCreatedAt}], cursor}`.
pub(crate) async fn recover_many(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(action): Path<String>,
    uri: Uri,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<RecoveredRunsOut>> {
    let how = recovery(&action)?;
    let (ids, cursor) = selected_dead_letters(&state, &caller, &uri, &body, true).await?;
    let headers = header_pairs(&headers);
    let mut runs = Vec::with_capacity(ids.len());
    for id in ids {
        let (workflow_run_id, workflow_created_at) = state
            .queue
            .workflow_runs
            .recover(caller.account.id, &id, &headers, how)
            .await?;
        runs.push(RunStartedOut {
            workflow_run_id: workflow_run_id.to_string(),
            workflow_created_at,
        });
    }
    Ok(Json(RecoveredRunsOut {
        workflow_runs: runs,
        // No next page is an empty cursor, which the SDKs read as the end.
        cursor: cursor.unwrap_or_default(),
    }))
}

/// `DELETE /v2/workflows/dlq/callback/{dlqId}`: cancels the dead letter's failure callback while it is in
/// progress; answers `{workflowRunId, workflowCreatedAt}`.
pub(crate) async fn cancel_one(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path((action, id)): Path<(String, String)>,
) -> ApiResult<Json<RunStartedOut>> {
    if action != "callback" {
        return Err(ApiError::not_found(format!(
            "no route for DELETE /v2/workflows/dlq/{action}/{id}"
        )));
    }
    let (workflow_run_id, workflow_created_at) = state
        .queue
        .workflow_runs
        .cancel_failure_callback(caller.account.id, &id)
        .await?;
    Ok(Json(RunStartedOut {
        workflow_run_id: workflow_run_id.to_string(),
        workflow_created_at,
    }))
}

/// `POST /v2/workflows/dlq/resume|restart|callback/{dlqId}`: answers `{workflowRunId, workflowCreatedAt}`.
/// `callback` sends the dead letter's failure callback again.
pub(crate) async fn recover_one(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path((action, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Json<RunStartedOut>> {
    let (workflow_run_id, workflow_created_at) = if action == "callback" {
        state
            .queue
            .workflow_runs
            .retry_failure_callback(caller.account.id, &id)
            .await?
    } else {
        let how = recovery(&action)?;
        state
            .queue
            .workflow_runs
            .recover(caller.account.id, &id, &header_pairs(&headers), how)
            .await?
    };
    Ok(Json(RunStartedOut {
        workflow_run_id: workflow_run_id.to_string(),
        workflow_created_at,
    }))
}
