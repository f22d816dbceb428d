//! The PostgreSQL storage backend, for several Quiver nodes on one database.
//!
//! - [`database`]: [`PgDatabase`], a connection pool over one database (and, optionally, one schema in
//!   it), with the embedded migrations applied at start under an advisory lock, so that nodes starting
//!   together migrate once.
//! - [`hints`]: wake-ups between nodes (`NOTIFY` / `LISTEN`), hints that polling backs up.
//! - [`admin`]: [`PgAdminStore`], accounts, the index catalogue and usage.
//! - [`vectors`]: [`PgVectorStore`], the vectors every node loads its in-memory indexes from.
//! - [`queue`]: [`PgQueueStore`], every trait of the queue, with claims that hold across nodes.
//!
//! Each store is proven by its domain's conformance suite (`tests/it`).

pub mod admin;
mod batch;
pub mod database;
pub mod hints;
mod own;
pub mod queue;
mod tls;
pub mod vectors;

pub use admin::PgAdminStore;
pub use database::{PgDatabase, PgOptions};
pub use hints::Hint;
pub use queue::PgQueueStore;
pub use vectors::PgVectorStore;
