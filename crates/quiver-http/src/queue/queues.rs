//! FIFO queues (`/v2/queues`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::auth::QueueAccount;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Fields, JsonBody};
use crate::state::AppState;

pub(crate) fn queue_json(record: &quiver_queue::store::QueueRecord) -> Value {
    json!({
        "name": record.name,
        "createdAt": record.created_at.as_millis(),
        "updatedAt": record.updated_at.as_millis(),
        "parallelism": record.parallelism,
        "lag": record.lag,
        "paused": record.paused,
    })
}

pub(crate) async fn upsert_queue(
    State(state): State<AppState>,
    caller: QueueAccount,
    JsonBody(body): JsonBody,
) -> ApiResult<StatusCode> {
    caller.require_write()?;
    let fields = Fields::of(&body)?;
    let name = fields.required_str("queueName")?;
    let parallelism = fields.optional_u32("parallelism")?.unwrap_or(1);
    let paused = match body.get("paused") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(paused)) => *paused,
        Some(_) => return Err(ApiError::bad_request("paused: must be true or false")),
    };
    state
        .queue
        .upsert_queue(caller.account.id, name, parallelism, paused)
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn list_queues(
    State(state): State<AppState>,
    caller: QueueAccount,
) -> ApiResult<Json<Vec<Value>>> {
    Ok(Json(
        state
            .queue
            .queue_records(caller.account.id)
            .await?
            .iter()
            .map(queue_json)
            .collect(),
    ))
}

pub(crate) async fn get_queue(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(queue_json(
        &state.queue.queue_record(caller.account.id, &name).await?,
    )))
}

pub(crate) async fn delete_queue(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require_write()?;
    state.queue.delete_queue(caller.account.id, &name).await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn pause_queue(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require_write()?;
    state
        .queue
        .set_queue_paused(caller.account.id, &name, true)
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn resume_queue(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require_write()?;
    state
        .queue
        .set_queue_paused(caller.account.id, &name, false)
        .await?;
    Ok(StatusCode::OK)
}
