//! The PostgreSQL storage backend, for several Quiver nodes on one database.
//!
//! - [`database`]: [`PgDatabase`], a connection pool over one database (and, optionally, one schema in
//!   it), with the embedded migrations applied at start under an advisory lock, so that nodes starting
//!   together migrate once.
//! - [`admin`]: [`PgAdminStore`], accounts, the index catalogue and usage.
//! - [`vectors`]: [`PgVectorStore`], the vectors every node loads its in-memory indexes from.
//! - [`queue`]: [`PgQueueStore`], the queue's nouns a trait at a time (URL groups, waiters and
//!   schedules so far).
//!
//! The backend grows a store at a time, each proven by its domain's conformance suite: the rest of the
//! queue, and the change feed that keeps other nodes' indexes current, come next.

pub mod admin;
pub mod database;
pub mod queue;
pub mod vectors;

pub use admin::PgAdminStore;
pub use database::{PgDatabase, PgOptions};
pub use queue::PgQueueStore;
pub use vectors::PgVectorStore;
