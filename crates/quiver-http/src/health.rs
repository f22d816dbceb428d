//! `GET /healthz` and `GET /readyz`, for load balancers and orchestrators. Neither takes credentials,
//! and neither answer names an account, an index or a message.
//!
//! - `/healthz` answers 200 while the process serves HTTP at all.
//! - `/readyz` answers 200 once this node can do its work (its stores accept writes, the indexes and
//!   models they need are loaded), and 503 with the reasons otherwise. What is checked is the server's
//!   business ([`Readiness`]); this module only renders it.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::state::AppState;

/// What `GET /readyz` asks: why this node should not get traffic yet, if it should not.
#[async_trait::async_trait]
pub trait Readiness: Send + Sync + std::fmt::Debug {
    /// Every reason this node is not ready, each a sentence an operator can act on; empty when ready.
    /// Reasons never name accounts, indexes or messages (the answer is public).
    async fn unready_reasons(&self) -> Vec<String>;
}

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
