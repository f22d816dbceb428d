//! The dead letter queue (`/v2/dlq`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use quiver_queue::names::RunId;
use serde::Serialize;
use serde_json::Value;

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::queue::params::Params;
use crate::queue::request::header_pairs;
use crate::queue::wire::{DeadLetterOut, DeletedOut, MessageIdOut, RetriedOut};
use crate::state::AppState;

pub(crate) async fn list_dead_letters(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<DeadLettersPage>> {
    list_selected_dead_letters(&state, &caller, &uri, false).await
}

/// A page of dead letters.
#[derive(Debug, Serialize)]
pub(crate) struct DeadLettersPage {
    messages: Vec<DeadLetterOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<String>,
}

/// A page of dead letters: `{"messages", "cursor"?}`, of workflow runs only when `workflows_only`.
pub(crate) async fn list_selected_dead_letters(
    state: &AppState,
    caller: &QueueAccount,
    uri: &Uri,
    workflows_only: bool,
) -> ApiResult<Json<DeadLettersPage>> {
    let mut params = Params::new(uri, &Value::Null)?;
    let mut filter = params.message_filter(true)?;
    filter.workflow_only |= workflows_only;
    let count = params.count()?.unwrap_or(100);
    let cursor = params.position_cursor()?;
    params.ignore("trimBody");
    params.finish()?;
    let page = state
        .queue
        .dead_letters
        .list(caller.account.id, &filter, cursor.as_deref(), count)
        .await?;
    Ok(Json(DeadLettersPage {
        messages: dead_letters_out(state, caller, &page.items).await?,
        cursor: page.cursor,
    }))
}

pub(crate) async fn get_dead_letter(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
) -> ApiResult<Json<DeadLetterOut>> {
    let dead = state.queue.dead_letters.get(caller.account.id, &id).await?;
    let mut answers = dead_letters_out(&state, &caller, std::slice::from_ref(&dead)).await?;
    answers
        .pop()
        .map(Json)
        .ok_or_else(|| ApiError::internal(&"a dead letter read back as nothing"))
}

/// Dead letters as the wire shows them; those of workflow runs also carry `workflowRunId`, `workflowUrl`
/// and the run's `workflowCreatedAt` (a run no longer stored leaves that field out).
pub(crate) async fn dead_letters_out(
    state: &AppState,
    caller: &QueueAccount,
    dead_letters: &[quiver_queue::message::DeadLetter],
) -> ApiResult<Vec<DeadLetterOut>> {
    let mut created: std::collections::HashMap<String, Option<i64>> = std::collections::HashMap::new();
    let mut answers = Vec::with_capacity(dead_letters.len());
    for dead in dead_letters {
        let run_created_at = match &dead.message.spec.workflow_run_id {
            Some(run_id) => match created.get(run_id) {
                Some(at) => *at,
                None => {
                    let at = match state
                        .queue
                        .workflow_runs
                        .get(caller.account.id, &RunId::parse(run_id.as_str())?)
                        .await
                    {
                        Ok(run) => Some(run.created_at.as_millis()),
                        Err(quiver_queue::QueueError::WorkflowRunNotFound(_)) => None,
                        Err(error) => return Err(error.into()),
                    };
                    created.insert(run_id.clone(), at);
                    at
                }
            },
            None => None,
        };
        answers.push(DeadLetterOut::of(dead, run_created_at));
    }
    Ok(answers)
}

pub(crate) async fn delete_dead_letter(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(id): Path<String>,
) -> ApiResult<Json<DeletedOut>> {
    delete_one_dead_letter(&state, &caller, id).await
}

/// Deletes one dead letter: `{"deleted": 1}`, or 404 when it does not exist. The route has checked
/// that the caller may write.
pub(crate) async fn delete_one_dead_letter(
    state: &AppState,
    caller: &QueueAccount,
    id: String,
) -> ApiResult<Json<DeletedOut>> {
    if state
        .queue
        .dead_letters
        .delete(caller.account.id, std::slice::from_ref(&id))
        .await?
        == 0
    {
        return Err(quiver_queue::QueueError::DeadLetterNotFound(id).into());
    }
    Ok(Json(DeletedOut {
        deleted: 1,
        cursor: None,
    }))
}

/// The dead letters a bulk request names: `dlqIds` (query or body), or one page of those matching its
/// filters (`count` of them from `cursor`; every match when no `count` is given). Returns the ids and the
/// cursor of the next page.
pub(crate) async fn selected_dead_letters(
    state: &AppState,
    caller: &QueueAccount,
    uri: &Uri,
    body: &Value,
    workflows_only: bool,
) -> ApiResult<(Vec<String>, Option<String>)> {
    let mut params = Params::new(uri, body)?;
    let ids = params.list("dlqIds");
    let mut filter = params.message_filter(true)?;
    filter.workflow_only |= workflows_only;
    let count = params.count()?;
    let mut cursor = params.position_cursor()?;
    params.flag("all")?;
    params.finish()?;
    if !ids.is_empty() {
        return Ok((ids, None));
    }
    let mut selected = Vec::new();
    loop {
        let page_size = count.map_or(100, |count| (count - selected.len()).min(100));
        let page = state
            .queue
            .dead_letters
            .list(caller.account.id, &filter, cursor.as_deref(), page_size)
            .await?;
        selected.extend(page.items.into_iter().map(|dead| dead.dlq_id));
        cursor = page.cursor;
        let page_is_enough = count.is_some_and(|count| selected.len() >= count);
        if cursor.is_none() || page_is_enough {
            return Ok((selected, cursor));
        }
    }
}

pub(crate) async fn delete_dead_letters(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    uri: Uri,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<DeletedOut>> {
    delete_selected_dead_letters(&state, &caller, &uri, &body, false).await
}

/// Deletes the dead letters a bulk request selects (see `selected_dead_letters`):
/// `{"deleted", "cursor"?}`. The route has checked that the caller may write.
pub(crate) async fn delete_selected_dead_letters(
    state: &AppState,
    caller: &QueueAccount,
    uri: &Uri,
    body: &Value,
    workflows_only: bool,
) -> ApiResult<Json<DeletedOut>> {
    let (ids, cursor) = selected_dead_letters(state, caller, uri, body, workflows_only).await?;
    let deleted = state.queue.dead_letters.delete(caller.account.id, &ids).await?;
    Ok(Json(DeletedOut { deleted, cursor }))
}

pub(crate) async fn retry_dead_letter(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let message_id = state
        .queue
        .dead_letters
        .retry(caller.account.id, &id, &header_pairs(&headers))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(MessageIdOut {
            message_id: message_id.0,
        }),
    )
        .into_response())
}

pub(crate) async fn retry_dead_letters(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    uri: Uri,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<RetriedOut>> {
    let (ids, cursor) = selected_dead_letters(&state, &caller, &uri, &body, false).await?;
    let headers = header_pairs(&headers);
    let mut responses = Vec::with_capacity(ids.len());
    for id in ids {
        let message_id = state
            .queue
            .dead_letters
            .retry(caller.account.id, &id, &headers)
            .await?;
        responses.push(MessageIdOut {
            message_id: message_id.0,
        });
    }
    Ok(Json(RetriedOut {
        // No next page is an empty cursor, which the SDKs read as the end.
        cursor: cursor.unwrap_or_default(),
        responses,
    }))
}
