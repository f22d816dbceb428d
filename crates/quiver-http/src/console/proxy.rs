//! The console's way to the APIs: a request of a signed-in session, its path moved under the API it
//! names and the session's credentials put in, answered by the application's own router. Nothing is
//! decided here that the API would decide: its answer, errors included, goes back as it is.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use quiver_admin::IndexKind;

use crate::error::ApiError;
use crate::state::AppState;

/// What the proxy routes hold: the state (for sessions and the catalogue) and the API router.
#[derive(Clone)]
pub(crate) struct Proxy {
    pub(crate) state: AppState,
    pub(crate) api: Router,
}

/// Where the proxied paths start.
const API_PREFIX: &str = "/console/api";

/// Whether a `/v2` path is the management API's (HTTP Basic) rather than the queue's (bearer token).
fn is_management_path(path: &str) -> bool {
    ["/v2/vector/index", "/v2/search"]
        .iter()
        .any(|prefix| path == *prefix || path.starts_with(&format!("{prefix}/")))
}

/// `/console/api/v2/...`: the management API (with the account's email and API key) or the queue API
/// (with its queue token).
pub(crate) async fn to_api(State(proxy): State<Proxy>, request: Request) -> Response {
    let who = match super::guard::signed_in(&proxy.state, request.headers()) {
        Ok(who) => who,
        Err(refused) => return refused.into_response(),
    };
    let path = request
        .uri()
        .path()
        .strip_prefix(API_PREFIX)
        .unwrap_or("/")
        .to_owned();
    let credentials = if is_management_path(&path) {
        let pair = STANDARD.encode(format!("{}:{}", who.email, who.api_key));
        format!("Basic {pair}")
    } else {
        format!("Bearer {}", who.queue_token)
    };
    forward(proxy.api, request, &path, &credentials).await
}

/// `/console/api/vector/{index id}/...`: that vector index's data plane, with its token.
pub(crate) async fn to_index(State(proxy): State<Proxy>, request: Request) -> Response {
    to_data_plane(&proxy, IndexKind::Vector, request).await
}

/// `/console/api/search/{index id}/...`: that search index's data plane, with its token.
pub(crate) async fn to_search_index(State(proxy): State<Proxy>, request: Request) -> Response {
    to_data_plane(&proxy, IndexKind::Search, request).await
}

/// Forwards `request` to the data plane of the session's index of `kind` that its path names.
async fn to_data_plane(proxy: &Proxy, kind: IndexKind, request: Request) -> Response {
    // The request's body is not `Sync`: only its head is looked at while the catalogue is asked.
    let (parts, body) = request.into_parts();
    let found = index_request(proxy, kind, &parts).await;
    let request = Request::from_parts(parts, body);
    match found {
        Ok((path, credentials)) => forward(proxy.api.clone(), request, &path, &credentials).await,
        Err(refused) => refused.into_response(),
    }
}

/// The data-plane path and the credentials of a request to an index of `kind` of the session's
/// account (`/console/api/vector/{id}/...` or `/console/api/search/{id}/...`).
async fn index_request(
    proxy: &Proxy,
    kind: IndexKind,
    request: &axum::http::request::Parts,
) -> Result<(String, String), ApiError> {
    let who = super::guard::signed_in(&proxy.state, &request.headers)?;
    let prefix = match kind {
        IndexKind::Vector => "/console/api/vector/",
        IndexKind::Search => "/console/api/search/",
    };
    // The route that called this matched the prefix; an empty rest names no index and is refused below.
    let rest = request.uri.path().strip_prefix(prefix).unwrap_or_default();
    let (index, path) = rest.split_once('/').unwrap_or((rest, ""));
    let account = proxy.state.admin.authenticate(&who.email, &who.api_key).await?;
    let record = proxy.state.admin.index(&account, kind, index).await?;
    Ok((format!("/{path}"), format!("Bearer {}", record.token)))
}

/// Sends `request` to the API router at `path` (its query kept) with `credentials` as its
/// `Authorization`, without the console's cookie and CSRF token.
async fn forward(api: Router, request: Request, path: &str, credentials: &str) -> Response {
    let (mut parts, body) = request.into_parts();
    let path_and_query = match parts.uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    parts.uri = match Uri::try_from(path_and_query) {
        Ok(uri) => uri,
        Err(_) => return ApiError::bad_request("the path is not a valid URI").into_response(),
    };
    parts.headers.remove(header::COOKIE);
    parts.headers.remove(super::guard::CSRF_HEADER);
    parts.headers.remove(header::ORIGIN);
    match HeaderValue::from_str(credentials) {
        Ok(value) => {
            parts.headers.insert(header::AUTHORIZATION, value);
        }
        Err(_) => {
            return ApiError::internal(&"a stored credential is not a valid header value").into_response();
        }
    }
    // The inner router matches the path afresh; of the outer request's extensions it needs only the
    // peer's address (a publish records it).
    let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().cloned();
    parts.extensions = axum::http::Extensions::new();
    if let Some(peer) = peer {
        parts.extensions.insert(peer);
    }
    let mut api = api;
    let request = Request::from_parts(parts, body);
    // A router is always ready and never fails: its errors are answers.
    match tower_service::Service::call(&mut api, request).await {
        Ok(answer) => answer,
        Err(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::is_management_path;

    #[test]
    fn management_paths_are_told_from_queue_paths() {
        assert!(is_management_path("/v2/vector/index"));
        assert!(is_management_path("/v2/vector/index/abc/stats"));
        assert!(is_management_path("/v2/search/abc"));
        assert!(!is_management_path("/v2/searchable"));
        assert!(!is_management_path("/v2/dlq"));
        assert!(!is_management_path("/v2/publish/https://example.com"));
    }
}
