//! The routes of operators' tools, without the API's credentials: `GET /healthz`, `GET /readyz` (see
//! [`crate::health`]), `GET /metrics` (see [`crate::metrics`]; its own optional token) and
//! `GET /openapi.json` (see [`crate::openapi`]).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{ApiError, Envelope};
use crate::state::AppState;

#[derive(Debug, Serialize)]
pub(crate) struct HealthAnswer {
    status: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reasons: Vec<String>,
}

/// `GET /healthz`: the process answers.
pub(crate) async fn healthz() -> Json<HealthAnswer> {
    Json(HealthAnswer {
        status: "ok",
        reasons: Vec::new(),
    })
}

/// `GET /readyz`: 200 `{"status":"ready"}`, or 503 `{"status":"unavailable","reasons":[...]}`.
pub(crate) async fn readyz(State(state): State<AppState>) -> Response {
    let reasons = state.readiness.unready_reasons().await;
    if reasons.is_empty() {
        return Json(HealthAnswer {
            status: "ready",
            reasons,
        })
        .into_response();
    }
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(HealthAnswer {
            status: "unavailable",
            reasons,
        }),
    )
        .into_response()
}

/// `GET /openapi.json`: the description of every route.
pub(crate) async fn openapi() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        crate::openapi::document(),
    )
        .into_response()
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !state.metrics.is_authorised(crate::auth::bearer_header(&headers)) {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "metrics want `Authorization: Bearer <http.metrics_token>`",
        )
        .in_envelope(Envelope::WithStatus)
        .into_response();
    }
    state
        .metrics
        .render(&state.queue, &state.vectors, &state.embedders)
        .await
}
