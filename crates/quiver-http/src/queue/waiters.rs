//! The workflow SDK's wait and notify endpoints: `POST /v2/wait/{eventId}`, `POST /v2/notify/{eventId}`,
//! `POST /v2/notify/{workflowRunId}/{eventId}` and `GET /v2/waiters/{eventId}`.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use quiver_queue::names::RunId;
use quiver_queue::waiters::{Notified, StoredWaiter, WaitSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::ApiResult;
use crate::extract::{RawBody, Typed};
use crate::state::AppState;

/// `Waiter` of the workflow SDK.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WaiterOut {
    url: String,
    /// Unix seconds.
    deadline: i64,
    headers: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_body: Option<Value>,
    timeout_headers: BTreeMap<String, Vec<String>>,
}

impl From<StoredWaiter> for WaiterOut {
    fn from(waiter: StoredWaiter) -> Self {
        WaiterOut {
            url: waiter.spec.url,
            deadline: waiter.deadline.as_secs(),
            headers: waiter.spec.timeout_headers.clone(),
            timeout_url: waiter.spec.timeout_url,
            timeout_body: waiter.spec.timeout_body,
            timeout_headers: waiter.spec.timeout_headers,
        }
    }
}

/// `NotifyResponse` of the workflow SDK.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NotifyOut {
    waiter: WaiterOut,
    message_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl From<Notified> for NotifyOut {
    fn from(notified: Notified) -> Self {
        NotifyOut {
            waiter: notified.waiter.into(),
            message_id: notified.message_id,
            error: notified.error,
        }
    }
}

/// The body of `POST /v2/wait/{eventId}`: the workflow SDK's `WaitRequest`. Its fields other than
/// `timeout` are the SDK's protocol and kept as they come (`WaitSpec`), so a newer SDK's extra field
/// does not stop its runs.
#[derive(Debug, Deserialize)]
pub(crate) struct WaitRequest {
    #[serde(flatten)]
    spec: WaitSpec,
    /// How long to wait (`"7d"`, `"30s"`, ...; 7 days when absent).
    #[serde(default)]
    timeout: Option<WaitTimeout>,
}

/// A wait's timeout: a duration's text, or a number of seconds.
#[derive(Debug, Deserialize)]
#[serde(untagged, expecting = "a duration such as \"30s\", or a number of seconds")]
enum WaitTimeout {
    Text(String),
    Seconds(u64),
}

impl WaitTimeout {
    fn into_text(self) -> String {
        match self {
            WaitTimeout::Text(text) => text,
            WaitTimeout::Seconds(seconds) => format!("{seconds}s"),
        }
    }
}

pub(crate) async fn wait_for_event(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(event_id): Path<String>,
    Typed(request): Typed<WaitRequest>,
) -> ApiResult<StatusCode> {
    state
        .queue
        .waiters
        .wait_for_event(
            caller.account.id,
            &event_id,
            request.spec,
            request.timeout.map(WaitTimeout::into_text).as_deref(),
        )
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn notify(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(event_id): Path<String>,
    RawBody(body): RawBody,
) -> ApiResult<(StatusCode, Json<Vec<NotifyOut>>)> {
    let notified = state
        .queue
        .waiters
        .notify(caller.account.id, &event_id, &body, None)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(notified.into_iter().map(NotifyOut::from).collect()),
    ))
}

/// Notify one run: answers like the plain notify, an array of the waiters notified. With nobody of that
/// run waiting yet, the event is kept for its wait and the array is empty.
pub(crate) async fn notify_run(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path((run_id, event_id)): Path<(String, String)>,
    RawBody(body): RawBody,
) -> ApiResult<(StatusCode, Json<Vec<NotifyOut>>)> {
    let notified = state
        .queue
        .waiters
        .notify(caller.account.id, &event_id, &body, Some(&run_id))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(notified.into_iter().map(NotifyOut::from).collect()),
    ))
}

pub(crate) async fn waiters(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(event_id): Path<String>,
) -> ApiResult<Json<Vec<WaiterOut>>> {
    let waiters = state.queue.waiters.list(caller.account.id, &event_id).await?;
    Ok(Json(waiters.into_iter().map(WaiterOut::from).collect()))
}

/// `{queue_url}/v2/workflows/hooks/{userId}/{workflowRunId}/{eventId}`, any method: the URL a workflow's
/// `createWebhook` hands to a third party. It carries no token: the user, run and (random) event ids
/// in the path address the waiting run. The call is handed to the run's `waitForWebhook`.
pub(crate) async fn call_webhook(
    State(state): State<AppState>,
    Path((user_id, run_id, event_id)): Path<(String, String, String)>,
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Json<Vec<NotifyOut>>> {
    let account = state
        .admin
        .account_by_queue_user(&user_id)
        .await?
        .ok_or_else(|| crate::error::ApiError::not_found(format!("no webhook user `{user_id}`")))?;
    // A header that is not text is as good as absent here: the call is still handed over, with the
    // defaults the SDK rebuilds a request from.
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let call = quiver_queue::waiters::WebhookCall {
        method: method.as_str().to_owned(),
        proto: header("x-forwarded-proto").unwrap_or("http").to_owned(),
        host: header("host").unwrap_or_default().to_owned(),
        url: uri
            .path_and_query()
            .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned()),
        headers: crate::queue::request::header_pairs(&headers),
        body: body.to_vec(),
    };
    let notified = state
        .queue
        .waiters
        .call_webhook(account.id, &RunId::parse(run_id)?, &event_id, &call)
        .await?;
    Ok(Json(notified.into_iter().map(NotifyOut::from).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(json: &str) -> WaitRequest {
        crate::extract::typed_value(serde_json::from_str(json).unwrap()).unwrap()
    }

    #[test]
    fn a_wait_timeout_is_a_duration_text_or_a_number_of_seconds() {
        let text = wait(r#"{"url": "https://example.com/wf", "timeout": "7d", "step": {}}"#);
        assert_eq!(text.timeout.map(WaitTimeout::into_text).as_deref(), Some("7d"));
        let seconds = wait(r#"{"url": "https://example.com/wf", "timeout": 30}"#);
        assert_eq!(
            seconds.timeout.map(WaitTimeout::into_text).as_deref(),
            Some("30s")
        );
        let none = wait(r#"{"url": "https://example.com/wf", "timeoutUrl": "https://example.com/t"}"#);
        assert!(none.timeout.is_none());
        assert_eq!(none.spec.timeout_url.as_deref(), Some("https://example.com/t"));
    }
}
