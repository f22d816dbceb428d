//! The message queue API (`/v2/publish`, `/v2/batch`, `/v2/messages`, `/v2/dlq`, `/v2/events`,
//! `/v2/topics`, `/v2/keys`), authenticated by the account's queue token.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use quiver_core::Timestamp;
use quiver_queue::message::MessageState;
use quiver_queue::store::{CancelFilter, Filter};
use quiver_queue::{PublishOutcome, PublishRequest};
use serde_json::{Value, json};

use crate::auth::QueueAccount;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Fields, JsonBody, RawBody};
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
            "/v2/workflows/runs",
            axum::routing::delete(crate::queue_control::cancel_runs),
        )
        .route(
            "/v2/workflows/runs/{id}",
            get(crate::queue_control::run_steps).delete(crate::queue_control::end_run),
        )
        .route("/v2/workflows/events", get(crate::queue_control::list_runs))
        .route("/v2/workflows/logs", get(crate::queue_control::list_runs))
        .route("/v2/schedules", get(crate::queue_control::list_schedules))
        .route(
            "/v2/schedules/{*rest}",
            axum::routing::any(crate::queue_control::schedules),
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
    let mut outcomes = state.queue.batch(caller.account.id, valid).await.into_iter();
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

/// Every value of `key`: repeated keys and comma-joined values both count.
pub(crate) fn query_list(pairs: &[(String, String)], key: &str) -> Vec<String> {
    pairs
        .iter()
        .filter(|(k, _)| k == key)
        .flat_map(|(_, v)| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

pub(crate) fn query_one<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// A list of ids from a JSON body field, if the body has it.
pub(crate) fn body_list(body: &Value, key: &str) -> Result<Option<Vec<String>>, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ApiError::bad_request(format!("{key}: must be an array of strings")))
            })
            .collect::<Result<_, _>>()
            .map(Some),
        Some(_) => Err(ApiError::bad_request(format!(
            "{key}: must be an array of strings"
        ))),
    }
}

/// The filters of a bulk cancel, from the query (repeated or comma-joined) and from a JSON body (a text
/// or an array of texts; dates as numbers or texts).
fn cancel_filter(pairs: &[(String, String)], body: &Value) -> Result<CancelFilter, ApiError> {
    let list = |key: &str| -> Result<Vec<String>, ApiError> {
        let mut values = query_list(pairs, key);
        match body.get(key) {
            Some(Value::String(text)) => values.push(text.clone()),
            _ => values.extend(body_list(body, key)?.unwrap_or_default()),
        }
        Ok(values)
    };
    // A date from the body wins over the query; both are unix milliseconds.
    let time = |key: &str| -> Result<Option<Timestamp>, ApiError> {
        let in_body = match body.get(key) {
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::String(text)) => Some(text.clone()),
            _ => None,
        };
        match in_body {
            Some(text) => parse_time(&[(key.to_owned(), text)], key),
            None => parse_time(pairs, key),
        }
    };
    Ok(CancelFilter {
        urls: list("url")?,
        hosts: list("host")?,
        paths: list("path")?,
        topic_names: list("topicName")?,
        queue_names: list("queueName")?,
        labels: list("label")?,
        flow_control_keys: list("flowControlKey")?,
        schedule_ids: list("scheduleId")?,
        caller_ips: list("callerIp")?,
        from: time("fromDate")?,
        to: time("toDate")?,
    })
}

async fn cancel_messages(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    caller.require_write()?;
    let pairs = query_pairs(&uri);
    let mut ids = query_list(&pairs, "messageIds");
    if let Some(from_body) = body_list(&body, "messageIds")? {
        ids.extend(from_body);
    }
    // Ids win over filters; no ids and no filters cancels everything pending.
    let filter = cancel_filter(&pairs, &body)?;
    let limit = match query_one(&pairs, "count") {
        Some(_) => Some(count_from_query(&pairs, 100)?.clamp(1, 500)),
        None => body
            .get("count")
            .and_then(Value::as_u64)
            .map(|n| (n as usize).clamp(1, 500)),
    };
    let selection = if ids.is_empty() { None } else { Some(ids) };
    let cancelled = state
        .queue
        .cancel_many(caller.account.id, selection, filter, limit)
        .await?;
    Ok(Json(json!({"cancelled": cancelled})))
}

fn parse_time(pairs: &[(String, String)], key: &str) -> Result<Option<Timestamp>, ApiError> {
    query_one(pairs, key)
        .map(|v| {
            v.parse::<i64>()
                .map(Timestamp::from_millis)
                .map_err(|_| ApiError::bad_request(format!("{key}: must be unix milliseconds")))
        })
        .transpose()
}

fn filter_from_query(pairs: &[(String, String)]) -> Result<Filter, ApiError> {
    let text = |key: &str| query_one(pairs, key).map(str::to_owned);
    let mut states = Vec::new();
    for state in query_list(pairs, "state") {
        if state.eq_ignore_ascii_case("IN_PROGRESS") {
            states.extend([MessageState::Active, MessageState::Retry, MessageState::Error]);
        } else {
            states.push(
                MessageState::parse(&state).ok_or_else(|| {
                    ApiError::bad_request(format!("state: `{state}` is not a message state"))
                })?,
            );
        }
    }
    let mut message_ids = query_list(pairs, "messageId");
    message_ids.extend(query_list(pairs, "messageIds"));
    Ok(Filter {
        message_ids,
        dlq_ids: query_list(pairs, "dlqIds"),
        states,
        url: text("url"),
        topic_name: text("topicName"),
        queue_name: text("queueName"),
        schedule_id: text("scheduleId"),
        response_status: query_one(pairs, "responseStatus")
            .map(|v| {
                v.parse()
                    .map_err(|_| ApiError::bad_request("responseStatus: must be an HTTP status"))
            })
            .transpose()?,
        label: text("label"),
        from: parse_time(pairs, "fromDate")?,
        to: parse_time(pairs, "toDate")?,
        flow_control_key: text("flowControlKey"),
        caller_ip: text("callerIp"),
        workflow_only: query_one(pairs, "source").is_some_and(|s| s.eq_ignore_ascii_case("workflow")),
    })
}

pub(crate) fn count_from_query(pairs: &[(String, String)], default: usize) -> Result<usize, ApiError> {
    query_one(pairs, "count")
        .map(|v| {
            v.parse::<usize>()
                .map_err(|_| ApiError::bad_request("count: must be a positive whole number"))
        })
        .transpose()
        .map(|count| count.unwrap_or(default))
}

async fn list_dead_letters(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let pairs = query_pairs(&uri);
    let filter = filter_from_query(&pairs)?;
    let count = count_from_query(&pairs, 100)?;
    let page = state
        .queue
        .dead_letters(caller.account.id, &filter, query_one(&pairs, "cursor"), count)
        .await?;
    let messages: Vec<Value> = page.items.iter().map(dead_letter_json).collect();
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
    Ok(Json(dead_letter_json(
        &state.queue.dead_letter(caller.account.id, &id).await?,
    )))
}

async fn delete_dead_letter(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
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

/// The DLQ ids a bulk request names (query `dlqIds`, or body `{"dlqIds": [...]}`), or every id matching
/// its filters.
async fn selected_dead_letters(
    state: &AppState,
    caller: &QueueAccount,
    uri: &Uri,
    body: &Value,
) -> ApiResult<Vec<String>> {
    let pairs = query_pairs(uri);
    let mut ids = query_list(&pairs, "dlqIds");
    if let Some(from_body) = body_list(body, "dlqIds")? {
        ids.extend(from_body);
    }
    if !ids.is_empty() {
        return Ok(ids);
    }
    let filter = filter_from_query(&pairs)?;
    let mut cursor: Option<String> = None;
    loop {
        let page = state
            .queue
            .dead_letters(caller.account.id, &filter, cursor.as_deref(), 100)
            .await?;
        ids.extend(page.items.into_iter().map(|dead| dead.dlq_id));
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(ids),
        }
    }
}

async fn delete_dead_letters(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    caller.require_write()?;
    let ids = selected_dead_letters(&state, &caller, &uri, &body).await?;
    let deleted = state.queue.delete_dead_letters(caller.account.id, &ids).await?;
    Ok(Json(json!({"deleted": deleted})))
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
    let ids = selected_dead_letters(&state, &caller, &uri, &body).await?;
    let headers = header_pairs(&headers);
    let mut responses = Vec::with_capacity(ids.len());
    for id in ids {
        let message_id = state
            .queue
            .retry_dead_letter(caller.account.id, &id, &headers)
            .await?;
        responses.push(json!({"messageId": message_id.0}));
    }
    Ok(Json(json!({"cursor": "", "responses": responses})))
}

async fn events_page(
    state: &AppState,
    caller: &QueueAccount,
    uri: &Uri,
) -> ApiResult<(Vec<Value>, Option<String>)> {
    let pairs = query_pairs(uri);
    let filter = filter_from_query(&pairs)?;
    let count = count_from_query(&pairs, 100)?;
    let page = state
        .queue
        .events(caller.account.id, &filter, query_one(&pairs, "cursor"), count)
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
