//! The queue's store in PostgreSQL: every trait of `quiver_queue::store`, each proven by its suite in
//! `quiver_queue::testing`, and written so that several nodes can share one database.
//!
//! - `messages`: messages, their claims across nodes and each attempt's outcome (`MessageStore`,
//!   `DeliveryStore`).
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
mod messages;
mod nouns;

use std::sync::Arc;

use quiver_core::store::StoreResult;
use quiver_core::{AccountId, StoreError, Timestamp};
use quiver_queue::message::{Message, MessageId, MessageSpec};
use tokio_postgres::Row;

use crate::database::{PgDatabase, PgOptions};

/// The queue's store over a [`PgDatabase`].
#[derive(Debug, Clone)]
pub struct PgQueueStore {
    database: PgDatabase,
    batches: Arc<messages::Batches>,
}

impl PgQueueStore {
    /// Connects and migrates.
    ///
    /// # Errors
    /// As [`PgDatabase::open`].
    pub async fn open(options: &PgOptions) -> StoreResult<PgQueueStore> {
        Ok(PgQueueStore::new(PgDatabase::open(options).await?))
    }

    /// The store over an open database.
    pub fn new(database: PgDatabase) -> PgQueueStore {
        let batches = Arc::new(messages::Batches::start(&database));
        PgQueueStore { database, batches }
    }
}

pub(crate) fn json<T: serde::Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(e.to_string()))
}

/// A message spec's stored form (tagged with its version).
pub(crate) fn spec_json(spec: &MessageSpec) -> StoreResult<String> {
    spec.encode().map_err(|e| StoreError::Backend(e.to_string()))
}

/// A stored value that does not decode.
pub(crate) fn corrupt(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {error}"))
}

pub(crate) fn account_of(text: &str) -> StoreResult<AccountId> {
    text.parse()
        .map_err(|_| StoreError::Corrupt(format!("`{text}` is not an account id")))
}

/// The columns [`message_from_row`] reads, in its order.
pub(crate) const MESSAGE_COLUMNS: &str = "id, account_id, retried, not_before, created_at, spec, body";

pub(crate) fn message_from_row(row: &Row) -> StoreResult<Message> {
    let id: String = row.get(0);
    Ok(Message {
        account_id: account_of(row.get(1))?,
        retried: u32::try_from(row.get::<_, i64>(2)).unwrap_or(u32::MAX),
        not_before: Timestamp::from_millis(row.get(3)),
        created_at: Timestamp::from_millis(row.get(4)),
        spec: MessageSpec::decode(row.get(5)).map_err(|e| corrupt(&format!("message {id}"), e))?,
        body: row.get(6),
        id: MessageId(id),
    })
}

/// A limit or window as a query parameter.
pub(crate) fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
