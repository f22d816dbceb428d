//! The management API: `/v2/vector/index...` and `/v2/search...` (HTTP Basic).

mod indexes;
pub(crate) mod stats;
pub mod wire;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

use crate::query_keys::{takes, takes_none};
use crate::state::AppState;

/// The management routes, relative to the server root.
pub fn routes(body_limit: usize) -> Router<AppState> {
    Router::new()
        .route(
            "/v2/vector/index",
            get(indexes::list_vector_indexes).post(indexes::create_vector_index),
        )
        .route(
            "/v2/vector/index/{id}",
            get(indexes::get_vector_index).delete(indexes::delete_vector_index),
        )
        .route("/v2/vector/index/{id}/rename", post(indexes::rename_vector_index))
        .route(
            "/v2/vector/index/{id}/reset-password",
            post(indexes::reset_vector_index_password),
        )
        .route(
            "/v2/vector/index/{id}/setplan",
            post(indexes::set_vector_index_plan),
        )
        .route(
            "/v2/vector/index/{id}/transfer",
            post(indexes::transfer_vector_index),
        )
        .route(
            "/v2/search",
            get(indexes::list_search_indexes).post(indexes::create_search_index),
        )
        .route(
            "/v2/search/{id}",
            get(indexes::get_search_index).delete(indexes::delete_search_index),
        )
        .route("/v2/search/{id}/rename", post(indexes::rename_search_index))
        .route(
            "/v2/search/{id}/reset-password",
            post(indexes::reset_search_index_password),
        )
        .route("/v2/search/{id}/transfer", post(indexes::transfer_search_index))
        .route("/v2/vector/index/stats", get(stats::vector_global_stats))
        .route("/v2/search/stats", get(stats::search_global_stats))
        .route_layer(takes_none())
        .merge(
            Router::new()
                .route("/v2/vector/index/{id}/stats", get(stats::vector_index_stats))
                .route("/v2/search/{id}/stats", get(stats::search_index_stats))
                .route_layer(takes(&["period"])),
        )
        .layer(DefaultBodyLimit::max(body_limit))
}
