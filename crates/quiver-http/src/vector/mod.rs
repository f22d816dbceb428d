//! The vector REST API: the index is found from its Bearer token (also under `/vector/{endpoint}/...`).
//! Every endpoint takes any of GET, POST, PUT and DELETE, and reads a JSON body whatever the method;
//! where no input is needed, an empty body, `[]`, `{}` or `null` all mean "none".
//!
//! Every request passes, in order: the status envelope for errors, `caller::authenticate` (the token
//! and the index, once), metering and plan limits (`meter`), then its handler.

mod caller;
mod documents;
mod meter;
mod namespaces;
mod query;
mod records;
mod reply;
mod resumable;
pub mod wire;

use axum::extract::DefaultBodyLimit;
use axum::routing::{MethodRouter, any};
use axum::{Router, middleware};

use crate::error::with_status_envelope;
use crate::query_keys::{takes, takes_none};
use crate::state::AppState;

pub use caller::vector_index;

/// The vector routes, at the root and under `/vector/{endpoint}`, with their layers.
pub fn routes(state: &AppState, body_limit: usize) -> Router<AppState> {
    let endpoints = || {
        let with_namespace: [(&str, MethodRouter<AppState>); 13] = [
            ("upsert", any(records::upsert)),
            ("upsert-data", any(records::upsert_data)),
            ("query", any(query::query)),
            ("query-data", any(query::query)),
            ("fetch", any(records::fetch)),
            ("range", any(records::range)),
            ("delete", any(records::delete)),
            ("update", any(records::update)),
            ("reset", any(records::reset)),
            ("random", any(records::random)),
            ("resumable-query", any(resumable::resumable_query)),
            ("resumable-query-data", any(resumable::resumable_query)),
            ("search", any(documents::search)),
        ];
        let mut router = Router::new();
        for (path, handler) in with_namespace {
            let handler = handler.layer(takes(if path == "reset" { &["all"] } else { &[] }));
            router = router
                .route(&format!("/{path}"), handler.clone())
                .route(&format!("/{path}/{{namespace}}"), handler);
        }
        let fixed = Router::new()
            .route("/info", any(records::info))
            .route("/list-namespaces", any(namespaces::list_namespaces))
            .route("/delete-namespace/{namespace}", any(namespaces::delete_namespace))
            .route("/delete-namespace", any(namespaces::delete_unnamed_namespace))
            .route("/delete-namespace/", any(namespaces::delete_unnamed_namespace))
            .route("/rename-namespace", any(namespaces::rename_namespace))
            .route("/resumable-query-next", any(resumable::resumable_next))
            .route("/resumable-query-end", any(resumable::resumable_end))
            .route_layer(takes_none());
        router.merge(fixed)
    };
    // Layers run outermost last-added first: envelope, authentication, metering, body limit.
    Router::new()
        .merge(endpoints())
        .nest("/vector/{endpoint}", endpoints())
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            meter::meter_vector_usage,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            caller::authenticate,
        ))
        .layer(middleware::from_fn(with_status_envelope))
}
