//! The PostgreSQL storage backend, for several Quiver nodes on one database.
//!
//! - [`database`]: [`PgDatabase`], a connection pool over one database (and, optionally, one schema in
//!   it), with the embedded migrations applied at start under an advisory lock, so that nodes starting
//!   together migrate once.
//! - [`admin`]: [`PgAdminStore`], accounts, the index catalogue and usage.
//!
//! This is the first slice of the backend: the queue and vector stores come next, each proven by its
//! domain's conformance suite as the admin store is here.

pub mod admin;
pub mod database;

pub use admin::PgAdminStore;
pub use database::{PgDatabase, PgOptions};
