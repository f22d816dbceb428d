//! Quiver's HTTP surface: a translation layer. Handlers extract, call the domain, convert.
//!
//! Leaves that every area shares:
//! - [`config`]: [`HttpConfig`], the `[http]` section (body limits).
//! - [`state`]: [`AppState`], what every handler can reach.
//! - [`error`]: [`ApiError`], the one place domain errors become statuses; each area router picks the
//!   envelope.
//! - [`extract`]: [`extract::Typed`] (a body read into a wire type whatever the content type, errors
//!   naming the field), [`extract::RawBody`], lenient text fields.
//! - [`auth`]: the credentials of the management and queue APIs.
//! - `cors`: answers preflights and marks answers for the origins `http.cors_allowed_origins` allows.
//! - [`metrics`]: `GET /metrics` (Prometheus text), with request counts and durations recorded as
//!   requests are answered and everything else read at the scrape.
//! - `operations`: the routes `/healthz`, `/readyz`, `/metrics` and `/openapi.json`.
//! - [`openapi`]: the OpenAPI 3.1 description of every route, built from each area's list of
//!   operations and checked against the routers.
//! - [`sessions`]: the web console's sign-in sessions, in this node's memory.
//! - [`health`]: `GET /healthz` and `GET /readyz`, and the [`health::Readiness`] the server implements.
//! - [`request_line`]: a served request's log line, and the [`request_line::RequestLines`] a server may
//!   write it with.
//!
//! One folder per area, each with its routes (`mod.rs`), handlers by noun, and wire types:
//! - [`management`]: `/v2/vector/index...` and `/v2/search...`, and index statistics (SPEC A1).
//! - [`queue`]: the message queue API (`/v2/publish`, `/v2/topics`, `/v2/schedules`, workflow runs, ...).
//! - [`vector`]: the vector REST API (token per index), with its metering.
//! - [`console`]: the web console at `/console` (embedded page, cookie sessions, a proxy to the APIs).
//!
//! [`mod@router`] joins the areas, with fallbacks for unknown routes and methods.

pub mod auth;
pub mod config;
pub mod console;
mod cors;
pub mod error;
pub mod extract;
pub mod health;
pub mod management;
pub mod metrics;
pub mod openapi;
mod operations;
mod query_keys;
pub mod queue;
pub mod request_line;
pub mod router;
pub mod sessions;
pub mod state;
pub mod vector;

pub use config::HttpConfig;
pub use error::ApiError;
pub use router::router;
pub use state::{AppState, Services};
