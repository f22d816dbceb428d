//! Conversions between rows and values, and the SQL fragments, that the queue store's modules share.

use quiver_core::store::StoreResult;
use quiver_core::{AccountId, StoreError, Timestamp};
use quiver_queue::message::{Message, MessageId, MessageSpec};
use tokio_postgres::Row;

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

/// Planner settings for the rest of a transaction that looks up due messages, sent before its first
/// look-up. Each look-up orders by due time and stops at a limit, which a walk of `messages_due` (or
/// `messages_keyed_due`) in order answers after reading about as many rows as it returns. A queue table's
/// statistics are rarely right: it is empty, then holds a backlog, then is empty again. A plan made while
/// the table was small (prepared statements keep it) instead read every due row and sorted them, at each
/// claim: 78 ms for a claim of 128 with 50,000 due. So sequential scans, bitmap scans and sorts are the
/// last resort here (PostgreSQL still uses one where no other plan exists).
pub(crate) const WALK_DUE_IN_ORDER: &str =
    "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off";

/// A message of a FIFO queue (alias `m`, its queue `q`) may start only while fewer than the queue's
/// parallelism older messages of the queue remain, and never while the queue is paused. Every node reads
/// the same rows, and a message's row stays until its delivery ends, so no two nodes start more.
pub(crate) const QUEUE_CONDITION: &str = "(m.queue_name IS NULL OR q.name IS NULL OR (
    NOT q.paused AND (
        SELECT COUNT(*) FROM messages older
        WHERE older.account_id = m.account_id AND older.queue_name = m.queue_name AND older.seq < m.seq
    ) < q.parallelism))";
