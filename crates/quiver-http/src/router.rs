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

use crate::error::{ApiError, envelope_for};
use crate::management;
use crate::request_line::{RequestLines, Served};
use crate::state::AppState;

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

/// What the outermost layer needs: ids for requests, the metrics, whether request lines are logged
/// (decided once, as the router is built, so that a filter that drops them saves their cost), and the
/// server's own writer of those lines, if it has one.
#[derive(Debug, Clone)]
struct Observer {
    ids: RequestIds,
    origins: crate::cors::AllowedOrigins,
    metrics: Arc<crate::metrics::Metrics>,
    logs_requests: bool,
    lines: Option<Arc<dyn RequestLines>>,
}

/// Answers CORS preflights and marks answers for browsers (see `cors`); counts and times every request
/// by route template once it is answered, logs it at info as one line (see [`Served`]: written by the
/// server's [`RequestLines`] when it has one, else a `tracing` event), and returns its id as
/// `X-Request-Id`.
async fn observe_request(State(observer): State<Observer>, request: Request, next: Next) -> Response {
    let id = observer.ids.for_request(request.headers());
    let origin = request.headers().get(axum::http::header::ORIGIN).cloned();
    let method = request.method().clone();
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let route = matched.as_ref().map_or("(no route)", MatchedPath::as_str);
    let started = Instant::now();
    // The console authenticates by cookie: no other origin may call it, so it gets no CORS at all.
    let cross_origin = !crate::console::is_console_path(request.uri().path());
    let preflight = if cross_origin {
        observer.origins.preflight(&request)
    } else {
        None
    };
    let mut response = match preflight {
        Some(answer) => answer,
        None => next.run(request).await,
    };
    if cross_origin {
        observer.origins.mark(origin.as_ref(), &mut response);
    }
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    observer.metrics.observe_request(route, &method, status, elapsed);
    if observer.logs_requests {
        let made = response.extensions().get::<crate::queue::wire::MessagesMade>();
        let line = Served {
            id: id.as_bytes(),
            method: &method,
            route,
            status,
            duration_us: u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            messages: made.map(|made| made.0.as_slice()),
            error: crate::error::answered_message(&response),
        };
        match &observer.lines {
            Some(lines) => lines.served(&line),
            None => log_with_tracing(&line),
        }
    }
    response.headers_mut().insert(REQUEST_ID, id);
    response
}

/// Logs `line` as a `tracing` event at info, from this module (its target, `quiver_http::router`, is the
/// one the level filter is asked about): one event and no span (a span per request doubled the cost of
/// logging).
pub fn log_with_tracing(line: &Served<'_>) {
    tracing::info!(
        request.id = %line.id_text(),
        http.method = %line.method,
        http.route = %line.route,
        http.status = line.status,
        duration_us = line.duration_us,
        message.id = line.message_ids(),
        error = line.error,
        "request served"
    );
}

/// The whole application.
pub fn router(state: AppState) -> Router {
    let max_message_bytes = state.queue.config().max_message_bytes;
    let routes = management::routes(state.config.management_body_limit_bytes)
        .merge(crate::queue::routes(max_message_bytes))
        .merge(crate::vector::routes(
            &state,
            state.config.vector_body_limit_bytes,
        ))
        .route("/healthz", get(crate::operations::healthz))
        .route("/readyz", get(crate::operations::readyz))
        .route("/metrics", get(crate::operations::metrics))
        .route("/openapi.json", get(crate::operations::openapi))
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed);
    let observer = Observer {
        ids: RequestIds::new(),
        origins: crate::cors::AllowedOrigins::from_config(&state.config.cors_allowed_origins),
        metrics: Arc::clone(&state.metrics),
        logs_requests: tracing::enabled!(tracing::Level::INFO),
        lines: state.request_lines.clone(),
    };
    let api = routes.with_state(state.clone());
    let app = if state.config.console_enabled {
        crate::console::routes(state, api.clone()).merge(api)
    } else {
        api
    };
    // One layer for all of it: each `from_fn` layer costs a request a clone of the service it wraps.
    app.layer(middleware::from_fn_with_state(observer, observe_request))
}
