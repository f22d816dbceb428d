//! The message log (`/v2/events`, `/v2/logs`).

use axum::Json;
use axum::extract::State;
use axum::http::Uri;
use serde_json::{Value, json};

use crate::auth::QueueAccount;
use crate::error::ApiResult;
use crate::queue::params::Params;
use crate::queue::wire::event_json;
use crate::state::AppState;

pub(crate) async fn events_page(
    state: &AppState,
    caller: &QueueAccount,
    uri: &Uri,
) -> ApiResult<(Vec<Value>, Option<String>)> {
    let mut params = Params::new(uri, &Value::Null)?;
    let filter = params.message_filter(false)?;
    let count = params.count()?.unwrap_or(100);
    let cursor = params.one("cursor")?;
    params.ignore("trimBody");
    params.finish()?;
    let page = state
        .queue
        .events(caller.account.id, &filter, cursor.as_deref(), count)
        .await?;
    Ok((page.items.iter().map(event_json).collect(), page.cursor))
}

pub(crate) async fn list_events(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let (events, cursor) = events_page(&state, &caller, &uri).await?;
    let mut answer = json!({"events": events});
    if let Some(cursor) = cursor {
        answer["cursor"] = Value::String(cursor);
    }
    Ok(Json(answer))
}

pub(crate) async fn list_logs(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let (events, cursor) = events_page(&state, &caller, &uri).await?;
    let mut answer = json!({"logs": events, "events": events});
    if let Some(cursor) = cursor {
        answer["cursor"] = Value::String(cursor);
    }
    Ok(Json(answer))
}
