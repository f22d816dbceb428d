//! Cron schedules (`/v2/schedules`).

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::auth::QueueAccount;
use crate::error::{ApiError, ApiResult};
use crate::queue::request::PublishForm;
use crate::queue::wire::{ScheduleIdOut, ScheduleOut};
use crate::state::AppState;
use quiver_queue::names::ScheduleId;

pub(crate) async fn list_schedules(
    State(state): State<AppState>,
    caller: QueueAccount,
) -> ApiResult<Json<Vec<ScheduleOut>>> {
    let schedules = state.queue.schedules.list(caller.account.id).await?;
    let config = state.queue.config();
    Ok(Json(
        schedules.iter().map(|s| ScheduleOut::of(s, config)).collect(),
    ))
}

/// Everything under `/v2/schedules/`: create (`POST /v2/schedules/<destination>`), read and delete
/// (`GET`/`DELETE /v2/schedules/<id>`), pause and resume (`PATCH` or `POST .../<id>/pause|resume`).
pub(crate) async fn schedules(
    State(state): State<AppState>,
    caller: QueueAccount,
    method: axum::http::Method,
    uri: Uri,
    PublishForm(request): PublishForm,
) -> ApiResult<Response> {
    // The route is `/v2/schedules/{*rest}`: the prefix is always there.
    let path = uri.path().strip_prefix("/v2/schedules/").unwrap_or_default();
    let is_id = |text: &str| !text.is_empty() && !text.contains('/') && !text.contains(':');
    let toggle = path
        .strip_suffix("/pause")
        .map(|id| (id, true))
        .or_else(|| path.strip_suffix("/resume").map(|id| (id, false)))
        .filter(|(id, _)| is_id(id));
    use axum::http::Method;
    // Only a creation's query holds settings and the destination's own keys.
    if !(method == Method::POST && toggle.is_none()) {
        crate::query_keys::only(&uri, crate::query_keys::queue(&[]))?;
    }
    match (method, toggle) {
        (Method::PATCH | Method::POST, Some((id, paused))) => {
            caller.require_write()?;
            state
                .queue
                .schedules
                .set_paused(caller.account.id, &ScheduleId::parse(id)?, paused)
                .await?;
            Ok(StatusCode::OK.into_response())
        }
        (Method::POST, None) => {
            caller.require_write()?;
            let schedule_id = state.queue.schedules.create(caller.account.id, request).await?;
            Ok(Json(ScheduleIdOut {
                schedule_id: schedule_id.to_string(),
            })
            .into_response())
        }
        (Method::GET, None) if is_id(path) => Ok(Json(ScheduleOut::of(
            &state
                .queue
                .schedules
                .get(caller.account.id, &ScheduleId::parse(path)?)
                .await?,
            state.queue.config(),
        ))
        .into_response()),
        (Method::DELETE, None) if is_id(path) => {
            caller.require_write()?;
            state
                .queue
                .schedules
                .delete(caller.account.id, &ScheduleId::parse(path)?)
                .await?;
            Ok(StatusCode::OK.into_response())
        }
        (method, _) => Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method {method} is not allowed on {}", uri.path()),
        )),
    }
}
