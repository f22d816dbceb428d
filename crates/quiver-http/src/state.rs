//! What every handler can reach: the services behind one shared pointer.

use quiver_admin::Admin;

use crate::config::HttpConfig;

/// What every handler can reach. Cheap to clone: axum clones the state for every extractor of every
/// request, so the services sit behind one shared pointer.
#[derive(Debug, Clone)]
pub struct AppState(std::sync::Arc<Services>);

impl AppState {
    /// State serving `services`.
    pub fn new(services: Services) -> AppState {
        AppState(std::sync::Arc::new(services))
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

/// The services behind [`AppState`].
#[derive(Debug)]
pub struct Services {
    /// Accounts and the index catalogue.
    pub admin: Admin,
    /// The message queue.
    pub queue: quiver_queue::Queue,
    /// The vector engine.
    pub vectors: std::sync::Arc<quiver_vector::Vectors>,
    /// Dense text-embedding models.
    pub embedders: std::sync::Arc<quiver_embed::Embedders>,
    /// Time-based plan limits (rates, daily and monthly quotas).
    pub limiter: std::sync::Arc<quiver_admin::limits::Limiter>,
    /// Usage metering.
    pub meter: std::sync::Arc<quiver_admin::meter::Meter>,
    /// What `GET /metrics` shows.
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
    /// What `GET /readyz` checks.
    pub readiness: std::sync::Arc<dyn crate::health::Readiness>,
    /// The web console's sign-in sessions on this node.
    pub console: crate::sessions::Sessions,
    /// HTTP limits.
    pub config: HttpConfig,
    /// Writes request lines instead of `tracing`'s formatter (see [`crate::request_line`]); `None` logs
    /// them as `tracing` events.
    pub request_lines: Option<std::sync::Arc<dyn crate::request_line::RequestLines>>,
}
