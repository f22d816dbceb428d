//! Tools for tests that drive Quiver over real HTTP.
//!
//! - [`server`]: [`TestServer`], the real server on port 0 with a temporary data directory and a
//!   [`quiver_core::ManualClock`]; it can be restarted on the same data.
//! - [`receiver`]: [`Receiver`], a local HTTP endpoint that records every request and answers with
//!   chosen statuses, bodies or delays.
//! - [`calls`]: request helpers: send and read JSON, publish, create and call vector indexes.
//! - [`poll`]: waiting for what the server does in the background.

pub mod calls;
pub mod poll;
pub mod receiver;
pub mod server;

pub use receiver::{Receiver, RecordedRequest, Reply};
pub use server::TestServer;
