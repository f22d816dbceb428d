//! The message queue: durable publish, HTTP delivery with retries, callbacks, a dead letter queue, URL
//! groups and signed deliveries.
//!
//! - [`service`]: the operations, one service per noun ([`service::Publisher`], [`service::Messages`],
//!   [`service::DeadLetters`], [`service::EventLog`], [`service::UrlGroups`], [`service::Schedules`],
//!   [`service::FifoQueues`], [`service::FlowControl`], [`service::WorkflowRuns`], [`service::Waiters`],
//!   [`service::Retention`]), and [`Queue`], which holds one of each over one backend.
//! - [`store`]: the storage traits, one per noun, and [`QueueStore`], all of them together; `testing`
//!   (feature `testing`): their conformance suite.
//! - [`delivery`]: [`DeliveryWorker`], which claims due messages and applies each attempt's outcome.
//! - [`scheduling`], [`retention`]: the loops that fire schedules and time out waits, and prune by age.
//! - [`retry`]: the pure decision after an attempt, and the default backoff.
//! - [`publish`]: `Svc-*` configuration headers parsed into [`publish::PublishOptions`].
//! - [`message`]: messages, states, dead letters, events.
//! - [`callback`]: the callback body and message.
//! - [`signing`]: HS256 delivery signatures.
//! - [`ssrf`]: the guard against internal destinations.
//! - [`schedule`]: cron schedules.
//! - [`workflow`], [`workflows`]: workflow runs, their history, which runs an operation addresses.
//! - [`flow`], [`waiters`]: flow-control keys and waiting runs, with their storage traits.
//! - [`duration`], [`retry_delay`], [`headers`], [`method`], [`names`]: small parsers.
//! - [`llm`]: the language-model routes, backed by the operator's OpenAI-compatible API.
//! - [`config`]: [`QueueConfig`], the `[queue]` section.
//! - `context` (private): the clock, configuration, policy and wake-ups every service shares.
//! - `handoff` (private): how a publish hands a message due at once straight to the running worker;
//!   [`early`]: how that delivery starts while the publish is stored.
//!
//! "Queue" names the message queue as a whole (this crate, [`Queue`], the `[queue]` configuration);
//! the named, ordered lanes of the `/v2/queues` API are always "FIFO queues".
#![warn(missing_docs)]

mod answered;
pub mod callback;
pub mod config;
mod context;
pub mod delivery;
pub mod duration;
pub mod early;
pub mod error;
pub mod flow;
mod handoff;
pub mod headers;
pub mod idle;
pub mod keys;
pub mod llm;
pub mod message;
pub mod method;
pub mod names;
pub mod observe;
pub mod publish;
pub mod retention;
pub mod retry;
pub mod retry_delay;
pub mod schedule;
pub mod scheduling;
pub mod service;
pub mod signing;
pub mod ssrf;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod transport;
pub mod waiters;
pub mod workflow;
pub mod workflows;

pub use config::QueueConfig;
pub use delivery::DeliveryWorker;
pub use error::QueueError;
pub use keys::{KeySource, SigningKeys};
pub use service::{PublishOutcome, PublishRequest, Published, Publisher, Queue};
pub use store::QueueStore;
