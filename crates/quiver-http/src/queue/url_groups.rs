//! URL groups (`/v2/topics`): list, read, delete, add and remove endpoints, default headers (SPEC C2, C5).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use quiver_queue::store::Endpoint;
use serde_json::Value;

use crate::auth::QueueAccount;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Fields, JsonBody};
use crate::queue::wire::url_group_json;
use crate::state::AppState;

pub(crate) async fn list_url_groups(
    State(state): State<AppState>,
    caller: QueueAccount,
) -> ApiResult<Json<Vec<Value>>> {
    let groups = state.queue.url_groups(caller.account.id).await?;
    Ok(Json(groups.iter().map(url_group_json).collect()))
}

pub(crate) async fn get_url_group(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(url_group_json(
        &state.queue.url_group(caller.account.id, &name).await?,
    )))
}

pub(crate) async fn delete_url_group(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require_write()?;
    state.queue.delete_url_group(caller.account.id, &name).await?;
    Ok(StatusCode::OK)
}

/// The `endpoints` array of a body as (name, url) pairs.
fn endpoint_references(body: &Value) -> ApiResult<Vec<(Option<String>, Option<String>)>> {
    let Some(Value::Array(items)) = body.get("endpoints") else {
        return Err(ApiError::bad_request(
            "endpoints: is required and must be an array of {name, url} objects",
        ));
    };
    items
        .iter()
        .map(|item| {
            let fields = Fields::of(item)
                .map_err(|_| ApiError::bad_request("endpoints: each endpoint must be an object"))?;
            Ok((
                fields.optional_str("name")?.map(str::to_owned),
                fields.optional_str("url")?.map(str::to_owned),
            ))
        })
        .collect()
}

pub(crate) async fn add_endpoints(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<StatusCode> {
    caller.require_write()?;
    let endpoints = endpoint_references(&body)?
        .into_iter()
        .map(|(name, url)| {
            url.map(|url| Endpoint { name, url })
                .ok_or_else(|| ApiError::bad_request("endpoints: each endpoint needs a url"))
        })
        .collect::<ApiResult<Vec<_>>>()?;
    state
        .queue
        .add_endpoints(caller.account.id, &name, endpoints)
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn remove_endpoints(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<StatusCode> {
    caller.require_write()?;
    let references = endpoint_references(&body)?;
    state
        .queue
        .remove_endpoints(caller.account.id, &name, references)
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn set_default_headers(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<StatusCode> {
    caller.require_write()?;
    let Some(Value::Object(map)) = body.get("headers") else {
        return Err(ApiError::bad_request(
            "headers: is required and must be an object of header name to value",
        ));
    };
    let mut headers = Vec::with_capacity(map.len());
    for (header, value) in map {
        let text = match value {
            Value::String(text) => text.clone(),
            Value::Array(values) => values
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_owned).ok_or_else(|| {
                        ApiError::bad_request(format!("headers: `{header}` values must be strings"))
                    })
                })
                .collect::<ApiResult<Vec<_>>>()?
                .join(", "),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::Object(_) => {
                return Err(ApiError::bad_request(format!(
                    "headers: `{header}` must be a string or an array of strings"
                )));
            }
        };
        headers.push((header.clone(), text));
    }
    state
        .queue
        .set_default_headers(caller.account.id, &name, headers)
        .await?;
    Ok(StatusCode::OK)
}
