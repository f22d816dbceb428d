//! URL groups (`/v2/topics`): list, read, delete, add and remove endpoints, default headers (SPEC C2, C5).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use quiver_queue::names::UrlGroupName;
use quiver_queue::store::Endpoint;
use serde::Deserialize;

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::{ApiError, ApiResult};
use crate::extract::Typed;
use crate::queue::request::HeadersIn;
use crate::queue::wire::UrlGroupOut;
use crate::state::AppState;

pub(crate) async fn list_url_groups(
    State(state): State<AppState>,
    caller: QueueAccount,
) -> ApiResult<Json<Vec<UrlGroupOut>>> {
    let groups = state.queue.url_groups.list(caller.account.id).await?;
    Ok(Json(groups.iter().map(UrlGroupOut::of).collect()))
}

pub(crate) async fn get_url_group(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(name): Path<String>,
) -> ApiResult<Json<UrlGroupOut>> {
    Ok(Json(UrlGroupOut::of(
        &state
            .queue
            .url_groups
            .get(caller.account.id, &UrlGroupName::parse(name)?)
            .await?,
    )))
}

pub(crate) async fn delete_url_group(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    state
        .queue
        .url_groups
        .delete(caller.account.id, &UrlGroupName::parse(name)?)
        .await?;
    Ok(StatusCode::OK)
}

/// The body of adding or removing endpoints: `{"endpoints": [{"name"?, "url"?}]}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EndpointsBody {
    endpoints: Vec<EndpointRef>,
}

/// An endpoint as a request names it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EndpointRef {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    url: Option<String>,
}

/// The body of setting a URL group's default headers: `{"headers": {name: value or [values]}}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DefaultHeadersBody {
    headers: HeadersIn,
}

pub(crate) async fn add_endpoints(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(name): Path<String>,
    Typed(body): Typed<EndpointsBody>,
) -> ApiResult<StatusCode> {
    let endpoints = body
        .endpoints
        .into_iter()
        .enumerate()
        .map(|(position, EndpointRef { name, url })| {
            url.filter(|url| !url.is_empty())
                .map(|url| Endpoint { name, url })
                .ok_or_else(|| ApiError::bad_request(format!("endpoints[{position}].url: is required")))
        })
        .collect::<ApiResult<Vec<_>>>()?;
    state
        .queue
        .url_groups
        .add_endpoints(caller.account.id, &UrlGroupName::parse(name)?, endpoints)
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn remove_endpoints(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(name): Path<String>,
    Typed(body): Typed<EndpointsBody>,
) -> ApiResult<StatusCode> {
    let references = body
        .endpoints
        .into_iter()
        .map(|EndpointRef { name, url }| (name, url))
        .collect();
    state
        .queue
        .url_groups
        .remove_endpoints(caller.account.id, &UrlGroupName::parse(name)?, references)
        .await?;
    Ok(StatusCode::OK)
}

pub(crate) async fn set_default_headers(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path(name): Path<String>,
    Typed(body): Typed<DefaultHeadersBody>,
) -> ApiResult<StatusCode> {
    let headers = body.headers.into_pairs();
    state
        .queue
        .url_groups
        .set_default_headers(caller.account.id, &UrlGroupName::parse(name)?, headers)
        .await?;
    Ok(StatusCode::OK)
}
