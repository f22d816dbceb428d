//! The message queue API (`/v2/publish`, `/v2/batch`, `/v2/messages`, `/v2/dlq`, `/v2/events`,
//! `/v2/topics`, `/v2/keys`), authenticated by the account's queue token.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use quiver_queue::{PublishOutcome, PublishRequest};
use serde_json::{Value, json};

use crate::auth::QueueAccount;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Fields, JsonBody, RawBody};
use crate::queue_params::Params;
use crate::queue_wire::{dead_letter_json, event_json, message_json, publish_outcome_json};
use crate::router::AppState;

/// The queue routes. Publish bodies may be as large as the maximum message size; batches four times that.
pub fn routes(max_message_bytes: usize) -> Router<AppState> {
    let publish = Router::new()
        .route("/v2/publish/{*destination}", post(publish))
        .route("/v2/enqueue/{queue}/{*destination}", post(enqueue))
        .route("/v2/trigger/{*url}", post(crate::queue_control::trigger))
        .layer(DefaultBodyLimit::max(max_message_bytes));
    let batch = Router::new()
        .route("/v2/batch", post(batch))
        .layer(DefaultBodyLimit::max(max_message_bytes.saturating_mul(4)));
    Router::new()
        .merge(publish)
        .merge(batch)
        .route("/v2/messages", axum::routing::delete(cancel_messages))
        .route("/v2/messages/{id}", get(get_message).delete(cancel_message))
        .route("/v2/dlq", get(list_dead_letters).delete(delete_dead_letters))
        .route("/v2/dlq/{id}", get(get_dead_letter).delete(delete_dead_letter))
        .route("/v2/dlq/retry", post(retry_dead_letters))
        .route("/v2/dlq/retry/{id}", post(retry_dead_letter))
        .route("/v2/events", get(list_events))
        .route("/v2/logs", get(list_logs))
        .route("/v2/topics", get(crate::queue_url_groups::list_url_groups))
        .route(
            "/v2/topics/{name}",
            get(crate::queue_url_groups::get_url_group)
                .delete(crate::queue_url_groups::delete_url_group)
                .patch(crate::queue_url_groups::set_default_headers),
        )
        .route(
            "/v2/topics/{name}/endpoints",
            post(crate::queue_url_groups::add_endpoints).delete(crate::queue_url_groups::remove_endpoints),
        )
        .route(
            "/v2/queues",
            get(crate::queue_control::list_queues).post(crate::queue_control::upsert_queue),
        )
        .route(
            "/v2/queues/{name}",
            get(crate::queue_control::get_queue).delete(crate::queue_control::delete_queue),
        )
        .route("/v2/queues/{name}/pause", post(crate::queue_control::pause_queue))
        .route(
            "/v2/queues/{name}/resume",
            post(crate::queue_control::resume_queue),
        )
        .route("/v2/flowControl", get(crate::queue_flow::list_flow_controls))
        .route("/v2/flowControl/{key}", get(crate::queue_flow::get_flow_control))
        .route(
            "/v2/flowControl/{key}/{action}",
            post(crate::queue_flow::change_flow_control),
        )
        .route(
            "/v2/globalParallelism",
            get(crate::queue_flow::global_parallelism),
        )
        .route("/v2/wait/{event}", post(crate::queue_waiters::wait_for_event))
        .route("/v2/notify/{event}", post(crate::queue_waiters::notify))
        .route("/v2/notify/{run}/{event}", post(crate::queue_waiters::notify_run))
        .route("/v2/waiters/{event}", get(crate::queue_waiters::waiters))
        .route(
            "/v2/workflows/hooks/{user}/{run}/{event}",
            axum::routing::any(crate::queue_waiters::call_webhook),
        )
        .route(
            "/v2/workflows/runs",
            axum::routing::delete(crate::queue_control::cancel_runs),
        )
        .route(
            "/v2/workflows/runs/{id}",
            get(crate::queue_control::run_steps).delete(crate::queue_control::end_run),
        )
        .route("/v2/workflows/events", get(crate::queue_control::list_runs))
        .route(
            "/v2/workflows/dlq",
            get(crate::queue_workflow_dlq::list).delete(crate::queue_workflow_dlq::delete_many),
        )
        .route(
            "/v2/workflows/dlq/{segment}",
            axum::routing::delete(crate::queue_workflow_dlq::delete_one)
                .post(crate::queue_workflow_dlq::recover_many),
        )
        .route(
            "/v2/workflows/dlq/{action}/{id}",
            post(crate::queue_workflow_dlq::recover_one),
        )
        .route("/v2/workflows/logs", get(crate::queue_control::list_runs))
        .route("/v2/schedules", get(crate::queue_control::list_schedules))
        .route(
            "/v2/schedules/{*rest}",
            axum::routing::any(crate::queue_control::schedules),
        )
        .route(
            "/llm/v1/chat/completions",
            post(crate::queue_llm::chat_completions),
        )
        .route("/v2/keys", get(get_keys))
        .route("/v2/keys/rotate", post(rotate_keys))
}

/// Request headers as (name, value) pairs, repeated names joined with `", "`.
pub(crate) fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in headers {
        let Ok(value) = value.to_str() else { continue };
        match pairs.iter_mut().find(|(existing, _)| existing == name.as_str()) {
            Some((_, joined)) => {
                joined.push_str(", ");
                joined.push_str(value);
            }
            None => pairs.push((name.as_str().to_owned(), value.to_owned())),
        }
    }
    pairs
}

fn is_config_query_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    lower.starts_with("svc-")
        || lower.starts_with("upstash-")
        || lower == "svc_token"
        || lower == "qstash_token"
}

/// Splits a publish URI into the destination (with the query parameters that belong to it) and the
/// configuration query parameters.
pub(crate) fn split_publish_uri(uri: &Uri) -> (String, Vec<(String, String)>) {
    let path = uri.path();
    let destination = path.strip_prefix("/v2/publish/").unwrap_or(path).to_owned();
    let Some(query) = uri.query() else {
        return (destination, Vec::new());
    };
    let mut kept = Vec::new();
    let mut config = Vec::new();
    for segment in query.split('&').filter(|s| !s.is_empty()) {
        let (key, value) = url::form_urlencoded::parse(segment.as_bytes())
            .next()
            .unwrap_or_default();
        if is_config_query_key(&key) {
            config.push((key.into_owned(), value.into_owned()));
        } else {
            kept.push(segment);
        }
    }
    let destination = if kept.is_empty() {
        destination
    } else {
        format!("{destination}?{}", kept.join("&"))
    };
    (destination, config)
}

async fn publish(
    State(state): State<AppState>,
    caller: QueueAccount,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    caller.require_write()?;
    let (destination, query) = split_publish_uri(&uri);
    let request = PublishRequest {
        destination,
        headers: header_pairs(&headers),
        query,
        body: body.to_vec(),
        caller_ip: Some(peer.ip().to_string()),
        schedule_id: None,
    };
    let outcome = state.queue.publish(caller.account.id, request).await?;
    let status = match &outcome {
        PublishOutcome::Url(published) if published.deduplicated => StatusCode::ACCEPTED,
        PublishOutcome::Url(_) | PublishOutcome::Group(_) => StatusCode::OK,
    };
    Ok((status, Json(publish_outcome_json(&outcome))).into_response())
}

fn batch_item(item: &Value, caller_ip: &str) -> Result<PublishRequest, ApiError> {
    let fields = Fields::of(item)?;
    let destination = fields.required_str("destination")?.to_owned();
    let mut headers = Vec::new();
    match item.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                match value {
                    Value::String(text) => headers.push((name.clone(), text.clone())),
                    Value::Array(values) => {
                        let joined: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
                        headers.push((name.clone(), joined.join(", ")));
                    }
                    Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => {
                        headers.push((name.clone(), value.to_string()));
                    }
                }
            }
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "headers: must be an object of header name to value",
            ));
        }
    }
    if let Some(queue) = fields.optional_str("queue")? {
        headers.push(("Svc-Queue-Name".into(), queue.to_owned()));
    }
    // A string is the body itself. The workflow SDK's `context.call` sends any other JSON value (an
    // object, say) as is, and that value's JSON text is the body.
    let body = match item.get("body") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => text.as_bytes().to_vec(),
        Some(value @ (Value::Bool(_) | Value::Number(_) | Value::Array(_) | Value::Object(_))) => {
            value.to_string().into_bytes()
        }
    };
    Ok(PublishRequest {
        destination,
        headers,
        query: Vec::new(),
        body,
        caller_ip: Some(caller_ip.to_owned()),
        schedule_id: None,
    })
}

async fn batch(
    State(state): State<AppState>,
    caller: QueueAccount,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Vec<Value>>> {
    caller.require_write()?;
    let Value::Array(items) = body else {
        return Err(ApiError::bad_request(
            "request body must be a JSON array of messages",
        ));
    };
    let caller_ip = peer.ip().to_string();
    let parsed: Vec<Result<PublishRequest, ApiError>> =
        items.iter().map(|item| batch_item(item, &caller_ip)).collect();
    let valid: Vec<PublishRequest> = parsed.iter().filter_map(|p| p.as_ref().ok().cloned()).collect();
    let outcomes = state.queue.batch(caller.account.id, valid).await?;
    // A step for a run that has ended fails the whole request with a 400: the workflow SDK publishes
    // steps in batches and stops the run on that status, not on an error inside a 200.
    if let Some(Err(ended @ quiver_queue::QueueError::WorkflowRunNotRunning(_))) = outcomes
        .iter()
        .find(|o| matches!(o, Err(quiver_queue::QueueError::WorkflowRunNotRunning(_))))
    {
        return Err(ApiError::bad_request(ended.to_string()));
    }
    let mut outcomes = outcomes.into_iter();
    let answers = parsed
        .into_iter()
        .map(|item| match item {
            Err(error) => json!({"error": error.message()}),
            Ok(_) => match outcomes.next() {
                Some(Ok(outcome)) => publish_outcome_json(&outcome),
                Some(Err(error)) => json!({"error": ApiError::from(error).message()}),
                None => json!({"error": "not published"}),
            },
        })
        .collect();
    Ok(Json(answers))
}

async fn get_message(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let message = state.queue.message(caller.account.id, &id).await?;
    Ok(Json(message_json(&message)))
}

async fn cancel_message(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require_write()?;
    state.queue.cancel(caller.account.id, &id).await?;
    Ok(Json(json!({"cancelled": 1})))
}

/// Query pairs of a request.
pub(crate) fn query_pairs(uri: &Uri) -> Vec<(String, String)> {
    uri.query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn query_one<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// `DELETE /v2/messages`: by `messageIds`, or every pending message the filters match (all of them when
/// none is given). `count` is accepted and ignored, as the SDKs document: a bulk cancel takes every match.
async fn cancel_messages(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    caller.require_write()?;
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
        .cancel_many(caller.account.id, selection, filter, None)
        .await?;
    Ok(Json(json!({"cancelled": cancelled})))
}

async fn list_dead_letters(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    list_selected_dead_letters(&state, &caller, &uri, false).await
}

/// A page of dead letters: `{"messages", "cursor"?}`, of workflow runs only when `workflows_only`.
pub(crate) async fn list_selected_dead_letters(
    state: &AppState,
    caller: &QueueAccount,
    uri: &Uri,
    workflows_only: bool,
) -> ApiResult<Json<Value>> {
    let mut params = Params::new(uri, &Value::Null)?;
    let mut filter = params.message_filter(true)?;
    filter.workflow_only |= workflows_only;
    let count = params.count()?.unwrap_or(100);
    let cursor = params.one("cursor")?;
    params.ignore("trimBody");
    params.finish()?;
    let page = state
        .queue
        .dead_letters(caller.account.id, &filter, cursor.as_deref(), count)
        .await?;
    let messages = dead_letters_json(state, caller, &page.items).await?;
    let mut answer = json!({"messages": messages});
    if let Some(cursor) = page.cursor {
        answer["cursor"] = Value::String(cursor);
    }
    Ok(Json(answer))
}

async fn get_dead_letter(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let dead = state.queue.dead_letter(caller.account.id, &id).await?;
    let mut answers = dead_letters_json(&state, &caller, std::slice::from_ref(&dead)).await?;
    Ok(Json(answers.pop().unwrap_or(Value::Null)))
}

/// Dead letters as the wire shows them; those of workflow runs also carry `workflowRunId`, `workflowUrl`
/// and the run's `workflowCreatedAt` (a run no longer stored leaves that field out).
async fn dead_letters_json(
    state: &AppState,
    caller: &QueueAccount,
    dead_letters: &[quiver_queue::message::DeadLetter],
) -> ApiResult<Vec<Value>> {
    let mut created: std::collections::HashMap<String, Option<i64>> = std::collections::HashMap::new();
    let mut answers = Vec::with_capacity(dead_letters.len());
    for dead in dead_letters {
        let mut answer = dead_letter_json(dead);
        let spec = &dead.message.spec;
        if let (Some(run_id), Value::Object(fields)) = (&spec.workflow_run_id, &mut answer) {
            if !created.contains_key(run_id) {
                let at = match state.queue.workflow_run(caller.account.id, run_id).await {
                    Ok(run) => Some(run.created_at.as_millis()),
                    Err(quiver_queue::QueueError::WorkflowRunNotFound(_)) => None,
                    Err(error) => return Err(error.into()),
                };
                created.insert(run_id.clone(), at);
            }
            fields.insert("workflowRunId".into(), json!(run_id));
            fields.insert(
                "workflowUrl".into(),
                json!(spec.workflow_url.as_deref().unwrap_or(&spec.url)),
            );
            if let Some(Some(at)) = created.get(run_id) {
                fields.insert("workflowCreatedAt".into(), json!(at));
            }
        }
        answers.push(answer);
    }
    Ok(answers)
}

async fn delete_dead_letter(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    delete_one_dead_letter(&state, &caller, id).await
}

/// Deletes one dead letter: `{"deleted": 1}`, or 404 when it does not exist.
pub(crate) async fn delete_one_dead_letter(
    state: &AppState,
    caller: &QueueAccount,
    id: String,
) -> ApiResult<Json<Value>> {
    caller.require_write()?;
    if state
        .queue
        .delete_dead_letters(caller.account.id, std::slice::from_ref(&id))
        .await?
        == 0
    {
        return Err(quiver_queue::QueueError::DeadLetterNotFound(id).into());
    }
    Ok(Json(json!({"deleted": 1})))
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
    let mut cursor = params.one("cursor")?;
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
            .dead_letters(caller.account.id, &filter, cursor.as_deref(), page_size)
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
    caller: QueueAccount,
    uri: Uri,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    delete_selected_dead_letters(&state, &caller, &uri, &body, false).await
}

/// Deletes the dead letters a bulk request selects (see `selected_dead_letters`):
/// `{"deleted", "cursor"?}`.
pub(crate) async fn delete_selected_dead_letters(
    state: &AppState,
    caller: &QueueAccount,
    uri: &Uri,
    body: &Value,
    workflows_only: bool,
) -> ApiResult<Json<Value>> {
    caller.require_write()?;
    let (ids, cursor) = selected_dead_letters(state, caller, uri, body, workflows_only).await?;
    let deleted = state.queue.delete_dead_letters(caller.account.id, &ids).await?;
    let mut answer = json!({"deleted": deleted});
    if let Some(cursor) = cursor {
        answer["cursor"] = Value::String(cursor);
    }
    Ok(Json(answer))
}

async fn retry_dead_letter(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    caller.require_write()?;
    let message_id = state
        .queue
        .retry_dead_letter(caller.account.id, &id, &header_pairs(&headers))
        .await?;
    Ok((StatusCode::CREATED, Json(json!({"messageId": message_id.0}))).into_response())
}

async fn retry_dead_letters(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
    headers: HeaderMap,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    caller.require_write()?;
    let (ids, cursor) = selected_dead_letters(&state, &caller, &uri, &body, false).await?;
    let headers = header_pairs(&headers);
    let mut responses = Vec::with_capacity(ids.len());
    for id in ids {
        let message_id = state
            .queue
            .retry_dead_letter(caller.account.id, &id, &headers)
            .await?;
        responses.push(json!({"messageId": message_id.0}));
    }
    // No next page is an empty cursor, which the SDKs read as the end.
    Ok(Json(
        json!({"cursor": cursor.unwrap_or_default(), "responses": responses}),
    ))
}

async fn events_page(
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

async fn list_events(
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

async fn list_logs(State(state): State<AppState>, caller: QueueAccount, uri: Uri) -> ApiResult<Json<Value>> {
    let (events, cursor) = events_page(&state, &caller, &uri).await?;
    let mut answer = json!({"logs": events, "events": events});
    if let Some(cursor) = cursor {
        answer["cursor"] = Value::String(cursor);
    }
    Ok(Json(answer))
}

async fn enqueue(
    State(state): State<AppState>,
    caller: QueueAccount,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    caller.require_write()?;
    let (rest, query) = split_publish_uri(&uri);
    let rest = rest.strip_prefix("/v2/enqueue/").unwrap_or(&rest);
    let Some((queue, destination)) = rest.split_once('/') else {
        return Err(ApiError::bad_request(
            "use /v2/enqueue/<queue name>/<destination>",
        ));
    };
    let queue = url::form_urlencoded::parse(format!("q={queue}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let request = PublishRequest {
        destination: destination.to_owned(),
        headers: header_pairs(&headers),
        query,
        body: body.to_vec(),
        caller_ip: Some(peer.ip().to_string()),
        schedule_id: None,
    };
    let outcome = state.queue.enqueue(caller.account.id, &queue, request).await?;
    let status = match &outcome {
        PublishOutcome::Url(published) if published.deduplicated => StatusCode::ACCEPTED,
        PublishOutcome::Url(_) | PublishOutcome::Group(_) => StatusCode::OK,
    };
    Ok((status, Json(publish_outcome_json(&outcome))).into_response())
}

async fn get_keys(caller: QueueAccount) -> Json<Value> {
    Json(json!({"current": caller.account.current_signing_key, "next": caller.account.next_signing_key}))
}

async fn rotate_keys(State(state): State<AppState>, caller: QueueAccount) -> ApiResult<Json<Value>> {
    caller.require_write()?;
    let rotated = state.admin.rotate_signing_keys(&caller.account).await?;
    Ok(Json(
        json!({"current": rotated.current_signing_key, "next": rotated.next_signing_key}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_destination_keeps_its_own_query_and_loses_the_configuration() {
        let uri: Uri =
            "/v2/publish/https://example.com/api?x=1&svc-retries=2&svc_token=t&y=a%20b&Upstash-Delay=5s"
                .parse()
                .unwrap();
        let (destination, config) = split_publish_uri(&uri);
        assert_eq!(destination, "https://example.com/api?x=1&y=a%20b");
        assert_eq!(
            config,
            vec![
                ("svc-retries".into(), "2".into()),
                ("svc_token".into(), "t".into()),
                ("Upstash-Delay".into(), "5s".into())
            ]
        );
    }

    #[test]
    fn repeated_headers_are_joined() {
        let mut headers = HeaderMap::new();
        headers.append("x-a", "one".parse().unwrap());
        headers.append("x-a", "two".parse().unwrap());
        assert_eq!(
            header_pairs(&headers),
            vec![("x-a".to_owned(), "one, two".to_owned())]
        );
    }
}
