//! Metering of the vector API: plan limits admit a request, and its kind, latency and bytes are recorded.

use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::Body as _;
use quiver_admin::limits::{AdmitError, LimitExceeded};
use quiver_admin::meter::{UsageEvent, UsageKind};

use crate::error::ApiError;
use crate::state::AppState;
use crate::vector::caller::VectorCaller;

/// Operations that change an index; everything else on the vector API is a query.
const UPDATE_OPERATIONS: [&str; 7] = [
    "upsert",
    "upsert-data",
    "update",
    "delete",
    "reset",
    "delete-namespace",
    "rename-namespace",
];

/// Meters every successful vector API request: its kind, latency and bytes; after a write, what the
/// index holds. Recording never waits on storage. Runs after [`super::caller::authenticate`].
pub(crate) async fn meter_vector_usage(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let caller = request
        .extensions()
        .get::<VectorCaller>()
        .cloned()
        .ok_or_else(|| ApiError::internal(&"metering runs before authentication"))?;
    let request_bytes: u64 = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let kind = if UPDATE_OPERATIONS.contains(&caller.operation.as_str()) {
        UsageKind::Update
    } else {
        UsageKind::Query
    };
    let index = &caller.index;
    let admission = match state.limiter.admit(index.id, kind, &index.limits).await {
        Ok(admission) => admission,
        Err(AdmitError::Exceeded(exceeded)) => return Ok(limit_response(&exceeded)),
        Err(AdmitError::Store(error)) => return Err(error.into()),
    };
    let response = next.run(request).await;
    if !response.status().is_success() {
        state.limiter.release(admission);
        return Ok(response);
    }
    let snapshot = match kind {
        UsageKind::Update => state
            .vectors
            .info(index)
            .await
            .ok()
            .map(|info| (info.vector_count as u64, info.index_size as u64)),
        UsageKind::Query => None,
    };
    let response_bytes = response.body().size_hint().exact().unwrap_or(0);
    state
        .limiter
        .add_bandwidth(admission, request_bytes + response_bytes);
    state.meter.record(UsageEvent {
        index: index.id,
        kind,
        latency: started.elapsed(),
        bytes: request_bytes + response_bytes,
        snapshot,
    });
    Ok(response)
}

/// 429 with `Retry-After`.
fn limit_response(exceeded: &LimitExceeded) -> Response {
    let mut response = ApiError::new(StatusCode::TOO_MANY_REQUESTS, exceeded.to_string()).into_response();
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(exceeded.retry_after_secs()),
    );
    response
}
