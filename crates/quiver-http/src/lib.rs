//! Quiver's HTTP surface. Handlers are thin: extract, call the domain, convert.
//!
//! - [`config`]: [`HttpConfig`], the `[http]` section (body limits).
//! - [`error`]: [`ApiError`], the one place domain errors become statuses and envelopes.
//! - [`extract`]: [`extract::JsonBody`] (JSON whatever the content type) and field parsing.
//! - [`auth`]: the HTTP Basic extractor of the management API.
//! - [`management`]: `/v2/vector/index...` and `/v2/search...`.
//! - [`queue_control`]: schedules, FIFO queues and workflow runs; `queue_workflow_dlq`: their dead letters.
//! - `queue_params`: filters of list and bulk routes, from the query or a JSON body; unknown keys are 400.
//! - [`queue`], [`queue_wire`]: the message queue API (`/v2/publish`, `/v2/topics`, ...) and its shapes.
//! - [`vector`], [`vector_wire`]: the vector REST API (token per index) and its shapes.
//! - [`stats`]: index statistics (SPEC A1) and the metering middleware that feeds them.
//! - [`mod@router`]: the whole application router, with fallbacks for unknown routes and methods.

pub mod auth;
pub mod config;
pub mod error;
pub mod extract;
pub mod management;
pub mod queue;
pub mod queue_control;
mod queue_flow;
mod queue_llm;
mod queue_params;
mod queue_url_groups;
mod queue_waiters;
pub mod queue_wire;
mod queue_workflow_dlq;
pub mod router;
pub mod stats;
pub mod vector;
mod vector_namespaces;
mod vector_resumable;
pub mod vector_wire;

pub use config::HttpConfig;
pub use error::ApiError;
pub use router::{AppState, Services, router};
