//! The message queue: durable publish, HTTP delivery with retries, callbacks, a dead letter queue, URL
//! groups and signed deliveries.
//!
//! - [`service`]: [`Queue`], the operations the queue API exposes.
//! - [`delivery`]: [`DeliveryWorker`], which claims due messages and applies each attempt's outcome.
//! - [`retry`]: the pure decision after an attempt, and the default backoff.
//! - [`publish`]: `Svc-*` configuration headers parsed into [`publish::PublishOptions`].
//! - [`message`]: messages, states, dead letters, events.
//! - [`callback`]: the callback body and message.
//! - [`signing`]: HS256 delivery signatures.
//! - [`ssrf`]: the guard against internal destinations.
//! - [`schedule`], [`scheduling`]: cron schedules and the loop that fires them.
//! - [`queues`]: FIFO queues and enqueue.
//! - [`workflow`], [`workflows`]: workflow runs, their history, cancelling them.
//! - [`store`]: [`QueueStore`], the storage trait every backend implements; `testing` (feature
//!   `testing`): its conformance suite.
//! - [`duration`], [`retry_delay`], [`headers`]: small parsers.
//! - [`llm`]: the language-model routes, backed by the operator's OpenAI-compatible API.
//! - [`config`]: [`QueueConfig`], the `[queue]` section.
#![warn(missing_docs)]

pub mod callback;
pub mod config;
pub mod delivery;
pub mod duration;
pub mod error;
pub mod flow;
pub mod headers;
pub mod idle;
pub mod keys;
pub mod llm;
pub mod message;
pub mod method;
pub mod names;
pub mod publish;
pub mod queues;
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
pub mod waiters;
pub mod workflow;
pub mod workflows;

pub use config::QueueConfig;
pub use delivery::DeliveryWorker;
pub use error::QueueError;
pub use keys::{KeySource, SigningKeys};
pub use service::{PublishOutcome, PublishRequest, Published, Queue};
pub use store::QueueStore;
