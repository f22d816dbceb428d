//! FIFO queues (`/v2/queues`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use quiver_queue::names::QueueName;
use serde::Deserialize;

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::{ApiError, ApiResult};
use crate::extract::Typed;
use crate::queue::wire::FifoQueueOut;
use crate::state::AppState;

/// The body of creating or changing a FIFO queue.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct UpsertQueueBody {
    queue_name: String,
    /// Most messages of the queue delivered at once (default 1).
    #[serde(default)]
    parallelism: Option<u32>,
    #[serde(default)]
    paused: Option<bool>,
}

pub(crate) async fn upsert_queue(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Typed(body): Typed<UpsertQueueBody>,
) -> ApiResult<StatusCode> {
    if body.queue_name.is_empty() {
        return Err(ApiError::bad_request("queueName: is required"));
    }
    let (name, parallelism, paused) = (
        QueueName::parse(body.queue_name)?,
        body.parallelism.unwrap_or(1),
        body.paused.unwrap_or(false),
    );
    state
        .queue
        .fifo_queues
        .upsert(caller.account.id, &name, parallelism, paused)
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn list_queues(
    State(state): State<AppState>,
    caller: QueueAccount,
) -> ApiResult<Json<Vec<FifoQueueOut>>> {
    Ok(Json(
        state
            .queue
            .fifo_queues
            .list(caller.account.id)
            .await?
            .iter()
            .map(FifoQueueOut::of)
            .collect(),
    ))
}

pub(crate) async fn get_queue(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
) -> ApiResult<Json<FifoQueueOut>> {
    Ok(Json(FifoQueueOut::of(
        &state
            .queue
            .fifo_queues
            .get(caller.account.id, &QueueName::parse(name)?)
            .await?,
    )))
}

pub(crate) async fn delete_fifo_queue(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state
        .queue
        .fifo_queues
        .delete(caller.account.id, &QueueName::parse(name)?)
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn pause_queue(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state
        .queue
        .fifo_queues
        .set_paused(caller.account.id, &QueueName::parse(name)?, true)
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn resume_queue(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state
        .queue
        .fifo_queues
        .set_paused(caller.account.id, &QueueName::parse(name)?, false)
        .await?;
    Ok(StatusCode::OK)
}
