//! Quiver's wiring: what the binary and the test kit start.
//!
//! - [`config`]: the typed configuration tree ([`Config`]): embedded defaults, a file, then
//!   `QUIVER__SECTION__KEY` overrides.
//! - [`credentials`]: the fixed development credentials of `--dev`.
//! - `stores`: the stores where `[storage]` puts them (embedded SQLite, or one PostgreSQL database).
//! - `serve`: the HTTP/1.1 listener, with a header read timeout and graceful shutdown.
//! - `readiness`: what `GET /readyz` checks (stores take writes, vector indexes loaded at start).
//! - [`app`]: [`App`]: opens the stores, bootstraps the first account, serves HTTP, supervises
//!   background work and shuts down in order.
#![warn(missing_docs)]

pub mod app;
pub mod config;
pub mod credentials;
mod error;
mod readiness;
mod serve;
mod stores;

pub use app::{App, AppOptions, Catalog, StartError};
pub use config::{Config, ConfigError};
