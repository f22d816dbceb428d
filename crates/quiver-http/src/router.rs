//! The application router: every area's routes, and envelopes for unknown routes and methods.

use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, Uri};
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

async fn log_request(State(_): State<AppState>, request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let started = Instant::now();
    let response = next.run(request).await;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    tracing::debug!(http.method = %method, http.path = %path, http.status = response.status().as_u16(), duration_ms, "request served");
    response
}

/// The whole application. Requests are logged (at debug level) only when debug logging is on as the
/// router is built: the logging layer costs about a microsecond per request.
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
    let routes = if tracing::enabled!(tracing::Level::DEBUG) {
        routes.layer(middleware::from_fn_with_state(state.clone(), log_request))
    } else {
        routes
    };
    let origins = crate::cors::AllowedOrigins::from_config(&state.config.cors_allowed_origins);
    routes
        .layer(middleware::from_fn_with_state(origins, crate::cors::cors))
        .with_state(state)
}
