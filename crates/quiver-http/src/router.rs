//! The application router: every area's routes, and envelopes for unknown routes and methods.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;

use crate::error::{ApiError, Envelope};
use crate::management;
use crate::state::AppState;

/// The envelope for a path: management and queue paths start with `/v2/`, vector paths never do.
pub(crate) fn envelope_for(path: &str) -> Envelope {
    if path == "/v2" || path.starts_with("/v2/") {
        Envelope::Plain
    } else {
        Envelope::WithStatus
    }
}

async fn unknown_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!("no route for {method} {}", uri.path())).in_envelope(envelope_for(uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("method {method} is not allowed on {}", uri.path()),
    )
    .in_envelope(envelope_for(uri.path()))
}

/// Request ids: a random prefix per process and a counter, so ids are unique across nodes and
/// restarts and cost no system call.
#[derive(Debug, Clone)]
struct RequestIds(Arc<(String, AtomicU64)>);

impl RequestIds {
    fn new() -> RequestIds {
        let prefix = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        RequestIds(Arc::new((prefix, AtomicU64::new(1))))
    }

    /// The caller's `X-Request-Id` when it is a sensible id (1-128 of `[A-Za-z0-9._:-]`), so a request
    /// can be followed from a proxy or client through Quiver's log; else a new id.
    fn for_request(&self, headers: &axum::http::HeaderMap) -> HeaderValue {
        let given = headers.get(REQUEST_ID).filter(|value| {
            let bytes = value.as_bytes();
            (1..=128).contains(&bytes.len())
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || b".:_-".contains(b))
        });
        if let Some(given) = given {
            return given.clone();
        }
        let (prefix, next) = &*self.0;
        let number = next.fetch_add(1, Ordering::Relaxed);
        HeaderValue::from_str(&format!("{prefix}-{number:x}"))
            .unwrap_or_else(|_| HeaderValue::from_static("unnamed"))
    }
}

/// The header that carries a request's id, both ways.
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The messages a request made, left on its answer for its log line.
#[derive(Debug, Clone)]
pub(crate) struct MessagesMade(pub(crate) Vec<quiver_queue::message::MessageId>);

/// Logs every request at info once it is answered, as one line with its id, route, status and
/// duration, the messages it made (deliveries log by message id) and the error it answered, if any (a
/// 5xx's error id leads to the line that logged its cause); and returns the id as `X-Request-Id`. One
/// event and no span: a span per request doubled the cost of logging.
async fn log_request(State(ids): State<RequestIds>, request: Request, next: Next) -> Response {
    let id = ids.for_request(request.headers());
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "(no route)".to_owned(), |m| m.as_str().to_owned());
    let started = Instant::now();
    let mut response = next.run(request).await;
    let duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let made = response.extensions().get::<MessagesMade>().map(|made| {
        made.0
            .iter()
            .map(|id| id.0.as_str())
            .collect::<Vec<_>>()
            .join(",")
    });
    tracing::info!(
        request.id = %String::from_utf8_lossy(id.as_bytes()),
        http.method = %method,
        http.route = %route,
        http.status = response.status().as_u16(),
        duration_us,
        message.id = made,
        error = crate::error::answered_message(&response),
        "request served"
    );
    response.headers_mut().insert(REQUEST_ID, id);
    response
}

/// The whole application. Requests are logged (at info level, with their ids) only when info logging
/// is on as the router is built, so a filter that turns it off also removes the layer's cost.
pub fn router(state: AppState) -> Router {
    let max_message_bytes = state.queue.config().max_message_bytes;
    let routes = management::routes(state.config.management_body_limit_bytes)
        .merge(crate::queue::routes(max_message_bytes))
        .merge(crate::vector::routes(
            &state,
            state.config.vector_body_limit_bytes,
        ))
        .route("/healthz", get(crate::health::healthz))
        .route("/readyz", get(crate::health::readyz))
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed);
    let origins = crate::cors::AllowedOrigins::from_config(&state.config.cors_allowed_origins);
    // Outermost, so that preflights are logged too.
    let routes = routes.layer(middleware::from_fn_with_state(origins, crate::cors::cors));
    let routes = if tracing::enabled!(tracing::Level::INFO) {
        routes.layer(middleware::from_fn_with_state(RequestIds::new(), log_request))
    } else {
        routes
    };
    routes.with_state(state)
}
