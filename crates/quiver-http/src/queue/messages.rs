//! Publishing (`/v2/publish`, `/v2/enqueue`, `/v2/batch`) and messages (`/v2/messages`).

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use quiver_queue::PublishOutcome;
use quiver_queue::names::QueueName;
use serde::Serialize;
use serde_json::Value;

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, Typed};
use crate::queue::params::Params;
use crate::queue::request::{PublishForm, batch_requests};
use crate::queue::wire::{CancelledOut, MessageOut, PublishOutcomeOut};
use crate::state::AppState;

/// The answer to a publish: 200, or 202 when the message was deduplicated. It carries the ids of the
/// messages made, for the request's log line (`message.id`), which deliveries log by too.
fn publish_answer(outcome: &PublishOutcome) -> Response {
    let status = match outcome {
        PublishOutcome::Url(published) if published.deduplicated => StatusCode::ACCEPTED,
        PublishOutcome::Url(_) | PublishOutcome::Group(_) => StatusCode::OK,
    };
    let mut response = (status, Json(PublishOutcomeOut::of(outcome))).into_response();
    let made = match outcome {
        PublishOutcome::Url(published) => vec![published.message_id.clone()],
        PublishOutcome::Group(published) => published.iter().map(|p| p.message_id.clone()).collect(),
    };
    response
        .extensions_mut()
        .insert(crate::queue::wire::MessagesMade(made));
    response
}

pub(crate) async fn publish(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    PublishForm(request): PublishForm,
) -> ApiResult<Response> {
    let outcome = state.queue.publisher.publish(caller.account.id, request).await?;
    Ok(publish_answer(&outcome))
}

/// `POST /v2/enqueue/{queue}/{destination}`: a publish into a FIFO queue.
pub(crate) async fn enqueue(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    PublishForm(mut request): PublishForm,
) -> ApiResult<Response> {
    let Some((queue, destination)) = request.destination.split_once('/') else {
        return Err(ApiError::bad_request(
            "use /v2/enqueue/<queue name>/<destination>",
        ));
    };
    // The path segment percent-decoded; `next()` always yields the one `q` pair.
    let queue = url::form_urlencoded::parse(format!("q={queue}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    request.destination = destination.to_owned();
    let outcome = state
        .queue
        .publisher
        .enqueue(caller.account.id, &QueueName::parse(queue)?, request)
        .await?;
    Ok(publish_answer(&outcome))
}

/// One answer of a batch: what was published, or why an item was not.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum BatchAnswer {
    /// The item was published.
    Published(PublishOutcomeOut),
    /// The item was refused.
    Error {
        /// Why.
        error: String,
    },
}

pub(crate) async fn batch(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Typed(items): Typed<Vec<Value>>,
) -> ApiResult<Json<Vec<BatchAnswer>>> {
    // An item that does not parse is answered with its own error below; the others are published.
    let (valid, places) = batch_requests(items, &peer.ip().to_string());
    let outcomes = state.queue.publisher.batch(caller.account.id, valid).await?;
    // A step for a run that has ended fails the whole request with a 400: the workflow SDK publishes
    // steps in batches and stops the run on that status, not on an error inside a 200.
    if let Some(Err(ended @ quiver_queue::QueueError::WorkflowRunNotRunning(_))) = outcomes
        .iter()
        .find(|o| matches!(o, Err(quiver_queue::QueueError::WorkflowRunNotRunning(_))))
    {
        return Err(ApiError::bad_request(ended.to_string()));
    }
    let mut outcomes = outcomes.into_iter();
    let answers = places
        .into_iter()
        .map(|place| match place {
            Err(error) => BatchAnswer::Error {
                error: error.into_reported_message(),
            },
            Ok(()) => match outcomes.next() {
                Some(Ok(outcome)) => BatchAnswer::Published(PublishOutcomeOut::of(&outcome)),
                Some(Err(error)) => BatchAnswer::Error {
                    error: ApiError::from(error).into_reported_message(),
                },
                None => BatchAnswer::Error {
                    error: "not published".into(),
                },
            },
        })
        .collect();
    Ok(Json(answers))
}

pub(crate) async fn get_message(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
) -> ApiResult<Json<MessageOut>> {
    let message = state.queue.messages.get(caller.account.id, &id).await?;
    Ok(Json(MessageOut::of(&message)))
}

/// A page of pending messages (`GET /v2/messages`, a Quiver addition): `{"messages", "cursor"?}`.
#[derive(Debug, Serialize)]
pub(crate) struct PendingPage {
    messages: Vec<MessageOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<String>,
}

/// `GET /v2/messages`: the pending messages (delayed, due, or being delivered), oldest first, that the
/// bulk cancel's filters match; `count` (default 100, at most 1,000) a page from `cursor`. A page may hold
/// fewer than `count` and still have a cursor when a narrow filter matched few of the messages it read.
pub(crate) async fn list_messages(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<PendingPage>> {
    let mut params = Params::new(&uri, &Value::Null)?;
    let filter = params.cancel_filter()?;
    let count = params.count()?.unwrap_or(100);
    if count > MAX_PENDING_PAGE {
        return Err(ApiError::bad_request(format!(
            "count: {count} is more than the {MAX_PENDING_PAGE} messages a page may hold"
        )));
    }
    let cursor = params.one("cursor")?;
    params.finish()?;
    let page = state
        .queue
        .messages
        .pending(caller.account.id, filter, cursor, count)
        .await?;
    Ok(Json(PendingPage {
        messages: page.items.iter().map(MessageOut::of).collect(),
        cursor: page.cursor,
    }))
}

/// The most pending messages one page of `GET /v2/messages` holds.
const MAX_PENDING_PAGE: usize = 1_000;

pub(crate) async fn cancel_message(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(id): Path<String>,
) -> ApiResult<Json<CancelledOut>> {
    state.queue.messages.cancel(caller.account.id, &id).await?;
    Ok(Json(CancelledOut { cancelled: 1 }))
}

/// `DELETE /v2/messages`: by `messageIds`, or every pending message the filters match (all of them when
/// none is given). `count` is accepted and ignored, as the SDKs document: a bulk cancel takes every match.
pub(crate) async fn cancel_messages(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    uri: Uri,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<CancelledOut>> {
    let mut params = Params::new(&uri, &body)?;
    let ids = params.list("messageIds");
    let filter = params.cancel_filter()?;
    params.count()?;
    params.ignore("cursor");
    params.flag("all")?;
    params.finish()?;
    let selection = if ids.is_empty() { None } else { Some(ids) };
    let cancelled = state
        .queue
        .messages
        .cancel_many(caller.account.id, selection, filter, None)
        .await?;
    Ok(Json(CancelledOut { cancelled }))
}
