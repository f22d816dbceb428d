//! The queue's store in PostgreSQL: every trait of `quiver_queue::store`, each proven by its suite in
//! `quiver_queue::testing`, and written so that several nodes can share one database.
//!
//! - `messages`: messages, their claims across nodes and each attempt's outcome (`MessageStore`,
//!   `DeliveryStore`).
//! - `publish`: storing published messages, a batch in one statement when it can be.
//! - `log`: the events log's writes, many messages' events in one statement.
//! - `listing`: dead letters and the events log, their filters, pages and pruning.
//! - `control`: FIFO queues, workflow runs and flow control.
//! - `nouns`: URL groups, waiters and schedules.
//!
//! How the queue holds across nodes: due messages are claimed in batches with `FOR UPDATE SKIP LOCKED`
//! and a lease naming the claiming node, so each attempt runs on one node; a lease ends with the attempt,
//! when it expires, or when a starting node finds its node gone (`release_leases`). A claim of keyed
//! messages locks their flow-control keys' rows, so parallelism and rates are decided one node after
//! another. A FIFO queue's messages are claimed only while fewer than its parallelism older ones remain,
//! which every node reads from the same rows.

mod control;
mod listing;
mod log;
mod messages;
mod nouns;
mod publish;
mod rows;
mod store;

pub use store::PgQueueStore;
