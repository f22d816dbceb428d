//! The queue API's control surface: cron schedules, FIFO queues and workflow runs.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use quiver_queue::PublishRequest;
use serde_json::{Value, json};

use crate::auth::QueueAccount;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Fields, JsonBody, RawBody};
use crate::queue::{header_pairs, query_one, query_pairs, split_publish_uri};
use crate::queue_params::Params;
use crate::queue_wire::schedule_json;
use crate::router::AppState;
use quiver_queue::workflow::RunState;
use quiver_queue::workflows::RunSelection;

pub(crate) async fn trigger(
    State(state): State<AppState>,
    caller: QueueAccount,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Json<Value>> {
    caller.require_write()?;
    let (rest, query) = split_publish_uri(&uri);
    let destination = rest.strip_prefix("/v2/trigger/").unwrap_or(&rest).to_owned();
    let request = PublishRequest {
        destination,
        headers: header_pairs(&headers),
        query,
        body: body.to_vec(),
        caller_ip: Some(peer.ip().to_string()),
        schedule_id: None,
    };
    let (run_id, created_at) = state.queue.trigger(caller.account.id, request).await?;
    Ok(Json(
        json!({"workflowRunId": run_id, "workflowCreatedAt": created_at}),
    ))
}

/// `DELETE /v2/workflows/runs/{id}`: `?cancel=true` (or no flag) cancels; `?cancel=false` ends the run
/// normally with the body as its result.
pub(crate) async fn end_run(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
    uri: Uri,
    RawBody(body): RawBody,
) -> ApiResult<StatusCode> {
    caller.require_write()?;
    let pairs = query_pairs(&uri);
    if query_one(&pairs, "cancel") == Some("false") {
        let response = (!body.is_empty()).then(|| String::from_utf8_lossy(&body).into_owned());
        state.queue.finish_run(caller.account.id, &id, response).await?;
    } else {
        state.queue.cancel_run(caller.account.id, &id).await?;
    }
    Ok(StatusCode::OK)
}

/// `DELETE /v2/workflows/runs` (SPEC C1): by `workflowRunIds`, or the running runs every filter given
/// matches (`workflowUrl` as a prefix, or whole with `workflowUrlExactMatch=true`; `host`, `path`, `label`,
/// `flowControlKey`, `callerIp`, `fromDate`, `toDate`; `count` caps it), or all of them when nothing is
/// given; from the query or a JSON body. A key it does not know is a 400, never "all".
pub(crate) async fn cancel_runs(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<Value>> {
    caller.require_write()?;
    let mut params = Params::new(&uri, &body)?;
    let names_runs = params.has("workflowRunIds");
    let run_ids = params.list("workflowRunIds");
    let mut urls = params.whole_list("workflowUrl");
    let url_exact = params.flag("workflowUrlExactMatch")?;
    let prefixes = params.whole_list("workflowUrlStartingWith");
    if !prefixes.is_empty() && (url_exact || !urls.is_empty()) {
        return Err(ApiError::bad_request(
            "workflowUrlStartingWith: cannot be combined with workflowUrl",
        ));
    }
    urls.extend(prefixes);
    let selection = RunSelection {
        run_ids,
        urls,
        url_exact,
        count: params.count()?,
        ..params.run_selection()?
    };
    params.ignore("cursor");
    params.flag("all")?;
    params.finish()?;
    if names_runs && selection.run_ids.is_empty() {
        return Ok(Json(json!({"cancelled": 0})));
    }
    let (cancelled, failures) = state.queue.cancel_runs(caller.account.id, &selection).await?;
    let mut answer = json!({"cancelled": cancelled});
    if !failures.is_empty() {
        answer["errors"] = Value::Array(
            failures
                .iter()
                .map(|f| json!({"workflowRunId": f.run_id, "error": f.error}))
                .collect(),
        );
    }
    Ok(Json(answer))
}

/// `GET /v2/workflows/runs/{id}`: the steps of a running run (404 once it has ended).
pub(crate) async fn run_steps(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let run = state.queue.workflow_run(caller.account.id, &id).await?;
    if run.state != RunState::Started {
        return Err(quiver_queue::QueueError::WorkflowRunNotFound(id).into());
    }
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        run.history(),
    )
        .into_response())
}

/// One step of a run's log. The workflow SDK publishes each finished step as a JSON object (`stepId`,
/// `stepName`, `stepType`, `out`, `concurrent`, and the fields of waits, sleeps and calls), which the
/// log shows as it came; the first step is the run's initial payload.
fn step_json(position: usize, step: &quiver_queue::workflow::RunStep) -> Value {
    let mut fields = match serde_json::from_slice::<Value>(&step.body) {
        Ok(Value::Object(fields)) if position > 0 && fields.contains_key("stepId") => fields,
        // Anything else (any payload the user chose, JSON or not) is the run's initial payload.
        Ok(_) | Err(_) => {
            let mut fields = serde_json::Map::new();
            fields.insert("stepId".into(), json!(0));
            fields.insert("stepName".into(), json!("init"));
            fields.insert("stepType".into(), json!("Initial"));
            fields.insert("out".into(), json!(String::from_utf8_lossy(&step.body)));
            fields
        }
    };
    fields.entry("concurrent").or_insert(json!(1));
    fields.insert("messageId".into(), json!(step.message_id));
    fields.insert("callType".into(), json!(step.call_type));
    fields.insert("state".into(), json!("STEP_SUCCESS"));
    fields.insert("createdAt".into(), json!(step.created_at.as_millis()));
    fields.insert("retries".into(), json!(step.retries));
    fields.insert("headers".into(), crate::queue_wire::header_arrays(&step.headers));
    Value::Object(fields)
}

fn run_json(run: &quiver_queue::workflow::WorkflowRun) -> Value {
    let steps: Vec<Value> = run
        .steps
        .iter()
        .enumerate()
        .map(|(position, step)| json!({"type": "sequential", "steps": [step_json(position, step)]}))
        .collect();
    let mut fields = json!({
        "workflowRunId": run.id,
        "workflowUrl": run.url,
        "workflowState": run.state.as_str(),
        "workflowRunCreatedAt": run.created_at.as_millis(),
        "steps": steps,
    });
    if let Some(at) = run.completed_at {
        fields["workflowRunCompletedAt"] = json!(at.as_millis());
    }
    if let Some(ip) = &run.caller_ip {
        fields["workflowRunCallerIp"] = json!(ip);
    }
    if let Some(response) = &run.response {
        fields["workflowRunResponse"] = json!(response);
    }
    if !run.labels.is_empty() {
        fields["label"] = json!(run.labels.join(","));
        fields["labels"] = json!(run.labels);
    }
    if let Some(key) = &run.flow_control_key {
        fields["flowControlKey"] = json!(key);
    }
    if let Some(invoker) = &run.invoker {
        fields["invoker"] = json!({
            "workflowRunId": invoker.workflow_run_id,
            "workflowUrl": invoker.workflow_url,
            "workflowRunCreatedAt": invoker.workflow_run_created_at,
        });
    }
    fields
}

/// `GET /v2/workflows/events` and `/v2/workflows/logs`: runs, newest first, `count` (default 10) a page
/// from `cursor`, filtered by `workflowRunId`, `workflowUrl` (whole), `workflowCreatedAt`, `state`,
/// `messageId`, `label`, `flowControlKey`, `callerIp`, `host`, `path`, `fromDate` and `toDate`.
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    caller: QueueAccount,
    uri: Uri,
) -> ApiResult<Json<Value>> {
    let mut params = Params::new(&uri, &Value::Null)?;
    let states = params
        .list("state")
        .into_iter()
        .map(|state| {
            serde_json::from_value::<RunState>(Value::String(state.clone())).map_err(|_| {
                ApiError::bad_request(format!(
                    "state: `{state}` is not a run state (RUN_STARTED, RUN_SUCCESS, RUN_FAILED, RUN_CANCELED)"
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    let selection = RunSelection {
        run_ids: params.list("workflowRunId"),
        urls: params.whole_list("workflowUrl"),
        url_exact: true,
        created_at: params.time("workflowCreatedAt")?,
        states,
        message_ids: params.list("messageId"),
        ..params.run_selection()?
    };
    let count = params.count()?.unwrap_or(10);
    let offset = match params.one("cursor")? {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request("cursor: not a cursor this route returned"))?,
    };
    params.ignore("groupBy");
    params.ignore("trimBody");
    params.finish()?;
    let matching: Vec<_> = state
        .queue
        .workflow_runs(caller.account.id)
        .await?
        .into_iter()
        .filter(|run| selection.matches(run))
        .collect();
    let runs: Vec<Value> = matching.iter().skip(offset).take(count).map(run_json).collect();
    let mut answer = json!({"runs": runs});
    if offset + count < matching.len() {
        answer["cursor"] = json!((offset + count).to_string());
    }
    Ok(Json(answer))
}

fn queue_json(record: &quiver_queue::store::QueueRecord) -> Value {
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

pub(crate) async fn list_schedules(
    State(state): State<AppState>,
    caller: QueueAccount,
) -> ApiResult<Json<Vec<Value>>> {
    let schedules = state.queue.schedules(caller.account.id).await?;
    let config = state.queue.config();
    Ok(Json(schedules.iter().map(|s| schedule_json(s, config)).collect()))
}

/// Everything under `/v2/schedules/`: create (`POST /v2/schedules/<destination>`), read and delete
/// (`GET`/`DELETE /v2/schedules/<id>`), pause and resume (`PATCH` or `POST .../<id>/pause|resume`).
pub(crate) async fn schedules(
    State(state): State<AppState>,
    caller: QueueAccount,
    method: axum::http::Method,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    let path = uri.path().strip_prefix("/v2/schedules/").unwrap_or_default();
    let is_id = |text: &str| !text.is_empty() && !text.contains('/') && !text.contains(':');
    let toggle = path
        .strip_suffix("/pause")
        .map(|id| (id, true))
        .or_else(|| path.strip_suffix("/resume").map(|id| (id, false)))
        .filter(|(id, _)| is_id(id));
    use axum::http::Method;
    match (method, toggle) {
        (Method::PATCH | Method::POST, Some((id, paused))) => {
            caller.require_write()?;
            state
                .queue
                .set_schedule_paused(caller.account.id, id, paused)
                .await?;
            Ok(StatusCode::OK.into_response())
        }
        (Method::POST, None) => {
            caller.require_write()?;
            let (destination, query) = split_publish_uri(&uri);
            let destination = destination
                .strip_prefix("/v2/schedules/")
                .unwrap_or(&destination)
                .to_owned();
            let request = PublishRequest {
                destination,
                headers: header_pairs(&headers),
                query,
                body: body.to_vec(),
                caller_ip: Some(peer.ip().to_string()),
                schedule_id: None,
            };
            let id = state.queue.create_schedule(caller.account.id, request).await?;
            Ok(Json(json!({"scheduleId": id})).into_response())
        }
        (Method::GET, None) if is_id(path) => Ok(Json(schedule_json(
            &state.queue.schedule(caller.account.id, path).await?,
            state.queue.config(),
        ))
        .into_response()),
        (Method::DELETE, None) if is_id(path) => {
            caller.require_write()?;
            state.queue.delete_schedule(caller.account.id, path).await?;
            Ok(StatusCode::OK.into_response())
        }
        (method, _) => Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method {method} is not allowed on {}", uri.path()),
        )),
    }
}
