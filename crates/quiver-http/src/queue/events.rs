//! The message log (`/v2/events`, `/v2/logs`).

use axum::Json;
use axum::extract::State;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

use crate::auth::QueueAccount;
use crate::error::ApiResult;
use crate::queue::params::Params;
use crate::queue::wire::EventOut;
use crate::state::AppState;

pub(crate) async fn events_page(
    state: &AppState,
    caller: &QueueAccount,
    uri: &Uri,
) -> ApiResult<(Vec<EventOut>, Option<String>)> {
    let mut params = Params::new(uri, &Value::Null)?;
    let filter = params.message_filter(false)?;
    let count = params.count()?.unwrap_or(100);
    let cursor = params.position_cursor()?;
    params.ignore("trimBody");
    params.finish()?;
    let page = state
        .queue
        .log
        .list(caller.account.id, &filter, cursor.as_deref(), count)
        .await?;
    Ok((page.items.iter().map(EventOut::of).collect(), page.cursor))
}

/// A page of the log: `{"events", "cursor"?}`.
#[derive(Debug, Serialize)]
pub(crate) struct EventsPage {
    events: Vec<EventOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<String>,
}

pub(crate) async fn list_events(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<EventsPage>> {
    let (events, cursor) = events_page(&state, &caller, &uri).await?;
    Ok(Json(EventsPage { events, cursor }))
}

pub(crate) async fn list_logs(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Response> {
    let (events, cursor) = events_page(&state, &caller, &uri).await?;
    /// `/v2/logs` names the page `logs` as well as `events`.
    #[derive(Serialize)]
    struct LogsPage<'a> {
        logs: &'a [EventOut],
        events: &'a [EventOut],
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<String>,
    }
    Ok(Json(LogsPage {
        logs: &events,
        events: &events,
        cursor,
    })
    .into_response())
}
