//! Messages, their delivery and dead letters in the queue's store (the log's reads: `events`; URL groups:
//! `url_groups`).

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use quiver_queue::early::Early;
use quiver_queue::message::{
    DeadLetter, Enqueued, EventDetail, FailureCallbackInfo, FailureCallbackState, Message, MessageId,
    MessageSpec, MessageState, NewEvent, NewMessage,
};
use quiver_queue::store::{
    AttemptRecord, AttemptResolution, CancelFilter, DeadLetterStore, DeliveryStore, Filter, MessageStore,
    Page, QueueDepth, pending_page,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::database::backend_error;
use crate::queue::SqliteQueueStore;
use crate::queue::listing::{filter_sql, page};
use crate::queue::log::{Created, LogEnds, append_attempt, append_event, log_created, take_created};
use crate::queue::rows::{account_of, corrupt, read_error, spec_json, to_json};

/// A message of a FIFO queue (alias `m`, its queue `q`) may start only while fewer than the queue's
/// parallelism older messages of the queue remain, and never while the queue is paused.
const QUEUE_CONDITION: &str = "(m.queue_name IS NULL OR q.name IS NULL OR (
    q.paused = 0 AND (
        SELECT COUNT(*) FROM messages older
        WHERE older.account_id = m.account_id AND older.queue_name = m.queue_name AND older.rowid < m.rowid
    ) < q.parallelism))";

const MESSAGE_COLUMNS: &str = "id, account_id, retried, not_before, created_at, spec, body";

fn message_from_row(row: &Row<'_>) -> rusqlite::Result<Message> {
    let spec: String = row.get(5)?;
    Ok(Message {
        id: MessageId(row.get(0)?),
        account_id: account_of(&row.get::<_, String>(1)?, 1)?,
        retried: row.get(2)?,
        not_before: Timestamp::from_millis(row.get(3)?),
        created_at: Timestamp::from_millis(row.get(4)?),
        spec: MessageSpec::decode(&spec).map_err(|e| corrupt(5, e))?,
        body: row.get(6)?,
    })
}

/// Stores one message, whose row stands for its CREATED event until its first change, honouring its
/// deduplication key.
fn insert_message(
    connection: &Connection,
    ends: &LogEnds,
    new: &NewMessage,
    spec: &str,
    now: Timestamp,
) -> StoreResult<Enqueued> {
    let message = &new.message;
    let account = message.account_id.to_string();
    if let Some((key, expires_at)) = &new.dedup {
        let existing: Option<String> = connection
            .prepare_cached(
                "SELECT message_id FROM deduplication WHERE account_id = ?1 AND key = ?2 AND expires_at > ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![account, key, now.as_millis()], |r| r.get(0))
                    .optional()
            })
            .map_err(backend_error)?;
        if let Some(existing) = existing {
            return Ok(Enqueued {
                message_id: MessageId(existing),
                deduplicated: true,
            });
        }
        connection
            .prepare_cached(
                "INSERT INTO deduplication (account_id, key, message_id, expires_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (account_id, key) DO UPDATE SET message_id = excluded.message_id,
                     expires_at = excluded.expires_at",
            )
            .and_then(|mut s| s.execute(params![account, key, message.id.0, expires_at.as_millis()]))
            .map_err(backend_error)?;
    }
    if let Some(record) = new.early.as_deref().and_then(Early::settle) {
        // Its delivery finished first (see `quiver_queue::early`): the CREATED event, at the place its
        // row would have kept, and the attempt's events are logged, and no row is stored.
        let labels = to_json(&message.spec.labels)?;
        append_attempt(
            connection,
            ends,
            message,
            &labels,
            Some(Created::New(spec)),
            &record.events,
        )?;
        return Ok(Enqueued {
            message_id: message.id.clone(),
            deduplicated: false,
        });
    }
    // The row stands for the message's CREATED event until its first change (see `log_created`), at
    // the next place in the log.
    let log_seq = ends.next(connection, &account)?;
    let inserted = connection
        .prepare_cached(
            "INSERT INTO messages (account_id, id, due_at, leased, retried, not_before, created_at, spec, body,
                 queue_name, flow_key, log_seq)
             VALUES (?1, ?2, COALESCE(?11, ?3), ?11 IS NOT NULL, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?12)",
        )
        .and_then(|mut s| {
            s.execute(params![
                account,
                message.id.0,
                message.not_before.as_millis(),
                message.retried,
                message.not_before.as_millis(),
                message.created_at.as_millis(),
                spec,
                message.body,
                message.spec.queue_name,
                message.spec.flow_control.as_ref().map(|f| &f.key),
                new.leased_until.map(Timestamp::as_millis),
                log_seq,
            ])
        });
    ends.took(&account, log_seq, inserted)?;
    if let Some(flow) = &message.spec.flow_control {
        crate::queue::flow_control::upsert_key(connection, &account, flow)?;
    }
    Ok(Enqueued {
        message_id: message.id.clone(),
        deduplicated: false,
    })
}

fn load_message(connection: &Connection, account: &str, id: &str) -> StoreResult<Option<Message>> {
    connection
        .prepare_cached(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE account_id = ?1 AND id = ?2"
        ))
        .and_then(|mut s| s.query_row([account, id], message_from_row).optional())
        .map_err(read_error)
}

/// Deletes a pending message (it was delivered, dead-lettered or cancelled), writing its CREATED event
/// first if the row still stood for it: the only way such a row could go without its event being written.
fn delete_message(connection: &Connection, ends: &LogEnds, message: &Message) -> StoreResult<()> {
    log_created(connection, ends, message)?;
    connection
        .prepare_cached("DELETE FROM messages WHERE account_id = ?1 AND id = ?2")
        .and_then(|mut s| s.execute([message.account_id.to_string(), message.id.0.clone()]))
        .map(drop)
        .map_err(backend_error)
}

fn insert_dead_letter(connection: &Connection, dead: &DeadLetter) -> StoreResult<()> {
    let message = &dead.message;
    let spec = &message.spec;
    let failure_callback = dead.failure_callback.as_ref().map(to_json).transpose()?;
    let (labels, spec_text, response_headers) = (
        to_json(&spec.labels)?,
        spec_json(spec)?,
        to_json(&dead.response_headers)?,
    );
    connection
        .prepare_cached(
            "INSERT INTO dead_letters (dlq_id, account_id, message_id, url, topic_name, queue_name, schedule_id,
                 labels, response_status, failed_at, retried, not_before, created_at, spec, body,
                 response_headers, response_body, failure_callback)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        )
        .and_then(|mut s| {
            s.execute(params![
                dead.dlq_id,
                message.account_id.to_string(),
                message.id.0,
                spec.url,
                spec.topic_name,
                spec.queue_name,
                spec.schedule_id,
                labels,
                dead.response_status,
                dead.failed_at.as_millis(),
                message.retried,
                message.not_before.as_millis(),
                message.created_at.as_millis(),
                spec_text,
                message.body,
                response_headers,
                dead.response_body,
                failure_callback,
            ])
        })
        .map(drop)
        .map_err(backend_error)
}

/// Records how a dead letter's failure callback stands; `false` when the dead letter is gone.
fn set_failure_callback(
    connection: &Connection,
    account: AccountId,
    dlq_id: &str,
    info: &FailureCallbackInfo,
) -> StoreResult<bool> {
    let info = to_json(info)?;
    connection
        .prepare_cached("UPDATE dead_letters SET failure_callback = ?3 WHERE account_id = ?1 AND dlq_id = ?2")
        .and_then(|mut s| s.execute(params![account.to_string(), dlq_id, info]))
        .map(|changed| changed == 1)
        .map_err(backend_error)
}

const DEAD_LETTER_COLUMNS: &str = "seq, dlq_id, account_id, message_id, retried, not_before, created_at, spec, body, \
                                   response_status, response_headers, response_body, failed_at, failure_callback";

fn dead_letter_from_row(row: &Row<'_>) -> rusqlite::Result<(i64, DeadLetter)> {
    let spec: String = row.get(7)?;
    let headers: String = row.get(10)?;
    Ok((
        row.get(0)?,
        DeadLetter {
            dlq_id: row.get(1)?,
            message: Message {
                id: MessageId(row.get(3)?),
                account_id: account_of(&row.get::<_, String>(2)?, 2)?,
                retried: row.get(4)?,
                not_before: Timestamp::from_millis(row.get(5)?),
                created_at: Timestamp::from_millis(row.get(6)?),
                spec: MessageSpec::decode(&spec).map_err(|e| corrupt(7, e))?,
                body: row.get(8)?,
            },
            response_status: row.get(9)?,
            response_headers: serde_json::from_str(&headers).map_err(|e| corrupt(10, e))?,
            response_body: row.get(11)?,
            failed_at: Timestamp::from_millis(row.get(12)?),
            failure_callback: row
                .get::<_, Option<String>>(13)?
                .map(|text| serde_json::from_str(&text).map_err(|e| corrupt(13, e)))
                .transpose()?,
        },
    ))
}

#[async_trait]
impl MessageStore for SqliteQueueStore {
    async fn enqueue(&self, messages: Vec<NewMessage>, now: Timestamp) -> StoreResult<Vec<Enqueued>> {
        let specs = messages
            .iter()
            .map(|m| spec_json(&m.message.spec))
            .collect::<StoreResult<Vec<_>>>()?;
        let ends = std::sync::Arc::clone(&self.log_ends);
        self.database
            .write_repeatable(move |c| {
                if messages.iter().any(|m| m.dedup.is_some()) {
                    c.execute(
                        "DELETE FROM deduplication WHERE rowid IN
                             (SELECT rowid FROM deduplication WHERE expires_at <= ?1 LIMIT 256)",
                        [now.as_millis()],
                    )
                    .map_err(backend_error)?;
                }
                messages
                    .iter()
                    .zip(&specs)
                    .map(|(m, spec)| insert_message(c, &ends, m, spec, now))
                    .collect()
            })
            .await
    }

    async fn message(&self, account: AccountId, id: &MessageId) -> StoreResult<Option<Message>> {
        let id = id.0.clone();
        self.database
            .read(move |c| load_message(c, &account.to_string(), &id))
            .await
    }

    async fn pending(
        &self,
        account: AccountId,
        filter: CancelFilter,
        after: Option<MessageId>,
        count: usize,
        scan: usize,
    ) -> StoreResult<Page<Message>> {
        self.database
            .read(move |c| {
                let mut statement = c
                    .prepare_cached(&format!(
                        "SELECT {MESSAGE_COLUMNS} FROM messages
                         WHERE account_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3"
                    ))
                    .map_err(read_error)?;
                // No cursor reads from the first message: every id sorts after the empty text.
                let after = after.map(|id| id.0).unwrap_or_default();
                let scan_rows = i64::try_from(scan).unwrap_or(i64::MAX);
                let rows = statement
                    .query_map(params![account.to_string(), after, scan_rows], message_from_row)
                    .map_err(read_error)?;
                pending_page(rows.map(|row| row.map_err(read_error)), &filter, count, scan)
            })
            .await
    }

    async fn depth(&self, now: Timestamp) -> StoreResult<QueueDepth> {
        self.database
            .read(move |c| {
                // Counted over the narrow `messages_due` index; a leased message is due only once its
                // lease has run out.
                let (pending, due): (i64, i64) = c
                    .query_row(
                        "SELECT COUNT(*), COUNT(*) FILTER (WHERE due_at <= ?1)
                         FROM messages INDEXED BY messages_due",
                        [now.as_millis()],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .map_err(read_error)?;
                let dead_letters: i64 = c
                    .query_row("SELECT COUNT(*) FROM dead_letters", [], |r| r.get(0))
                    .map_err(read_error)?;
                let count = |n: i64| u64::try_from(n).unwrap_or(0);
                Ok(QueueDepth {
                    pending: count(pending),
                    due: count(due),
                    dead_letters: count(dead_letters),
                })
            })
            .await
    }

    async fn cancel(
        &self,
        account: AccountId,
        ids: Option<Vec<MessageId>>,
        filter: CancelFilter,
        limit: Option<usize>,
        now: Timestamp,
    ) -> StoreResult<u64> {
        let ends = std::sync::Arc::clone(&self.log_ends);
        self.database
            .write(move |c| {
                let account_text = account.to_string();
                let targets: Vec<Message> = match ids {
                    Some(ids) => {
                        let mut found = Vec::with_capacity(ids.len());
                        for id in ids {
                            found.extend(load_message(c, &account_text, &id.0)?);
                        }
                        found
                    }
                    None => {
                        let mut statement = c
                            .prepare_cached(&format!(
                                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE account_id = ?1"
                            ))
                            .map_err(read_error)?;
                        let rows = statement
                            .query_map([&account_text], message_from_row)
                            .map_err(read_error)?;
                        let mut matching = Vec::new();
                        for row in rows {
                            let message = row.map_err(read_error)?;
                            if filter.matches(&message) {
                                matching.push(message);
                            }
                            if limit.is_some_and(|l| matching.len() >= l) {
                                break;
                            }
                        }
                        matching
                    }
                };
                for message in &targets {
                    delete_message(c, &ends, message)?;
                    let labels = to_json(&message.spec.labels)?;
                    for state in [MessageState::CancelRequested, MessageState::Canceled] {
                        let event = NewEvent {
                            time: now,
                            state,
                            detail: EventDetail::default(),
                        };
                        append_event(c, &ends, message, &labels, &event)?;
                    }
                }
                Ok(targets.len() as u64)
            })
            .await
    }
}

#[async_trait]
impl DeliveryStore for SqliteQueueStore {
    async fn claim_due(
        &self,
        now: Timestamp,
        limit: usize,
        lease_until: Timestamp,
    ) -> StoreResult<Vec<Message>> {
        self.database
            .write_repeatable(move |c| {
                // The log is not written: the attempt's record logs ACTIVE, and the message's CREATED
                // event while its row still stands for it (see `DeliveryStore::claim_due`).
                let mut statement = c
                    .prepare_cached(&format!(
                        "UPDATE messages SET due_at = ?1, leased = 1
                         WHERE rowid IN (
                             SELECT m.rowid FROM messages m
                             LEFT JOIN queues q ON q.account_id = m.account_id AND q.name = m.queue_name
                             WHERE m.due_at <= ?2 AND m.flow_key IS NULL AND {QUEUE_CONDITION}
                             ORDER BY m.due_at LIMIT ?3)
                         RETURNING {MESSAGE_COLUMNS}"
                    ))
                    .map_err(backend_error)?;
                let wanted = i64::try_from(limit).unwrap_or(i64::MAX);
                let rows = statement
                    .query_map(
                        params![lease_until.as_millis(), now.as_millis(), wanted],
                        message_from_row,
                    )
                    .map_err(read_error)?;
                let mut claimed: Vec<Message> = rows.collect::<Result<_, _>>().map_err(read_error)?;
                let room = limit.saturating_sub(claimed.len());
                if room > 0 {
                    for (account, id) in
                        crate::queue::flow_control::claim_keyed(c, now, room, QUEUE_CONDITION)?
                    {
                        let message = c
                            .prepare_cached(&format!(
                                "UPDATE messages SET due_at = ?1, leased = 1
                                 WHERE account_id = ?2 AND id = ?3 RETURNING {MESSAGE_COLUMNS}"
                            ))
                            .and_then(|mut s| {
                                s.query_row(params![lease_until.as_millis(), account, id], message_from_row)
                            })
                            .map_err(read_error)?;
                        claimed.push(message);
                    }
                }
                Ok(claimed)
            })
            .await
    }

    async fn next_due(&self) -> StoreResult<Option<Timestamp>> {
        self.database
            .read(|c| {
                // Cached like the claim's statement: the delivery worker asks after every claim that
                // leaves slots free.
                let unkeyed = c
                    .prepare_cached(&format!(
                        "SELECT MIN(m.due_at) FROM messages m
                         LEFT JOIN queues q ON q.account_id = m.account_id AND q.name = m.queue_name
                         WHERE m.flow_key IS NULL AND {QUEUE_CONDITION}"
                    ))
                    .and_then(|mut s| s.query_row([], |r| r.get::<_, Option<i64>>(0)))
                    .map(|due| due.map(Timestamp::from_millis))
                    .map_err(read_error)?;
                let keyed = crate::queue::flow_control::next_keyed_due(c, QUEUE_CONDITION)?;
                Ok(match (unkeyed, keyed) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                })
            })
            .await
    }

    async fn release_leases(&self, now: Timestamp) -> StoreResult<u64> {
        self.database
            .write(move |c| {
                c.execute(
                    "UPDATE messages SET due_at = MIN(not_before, ?1), leased = 0 WHERE leased = 1",
                    [now.as_millis()],
                )
                .map(|n| n as u64)
                .map_err(backend_error)
            })
            .await
    }

    async fn record_attempt(&self, record: AttemptRecord) -> StoreResult<()> {
        let specs = record
            .follow_ups
            .iter()
            .map(|m| spec_json(&m.message.spec))
            .collect::<StoreResult<Vec<_>>>()?;
        // Nothing waits on a record that makes no work due but its delivery's own task: such records
        // share commits (fewer pages written per message), and the others commit at once, since
        // retries, callbacks and the next message of a FIFO queue or flow-control key wait on them.
        let deferred = !record.may_make_work_due();
        let ends = std::sync::Arc::clone(&self.log_ends);
        let write = move |c: &Connection| {
            let message = &record.message;
            let account = message.account_id.to_string();
            let labels = to_json(&message.spec.labels)?;
            let created = match &record.resolution {
                AttemptResolution::Finished { dead_letter } => {
                    // The row, when it still stands for the message's CREATED event (a message
                    // handed over at publish), gives that event's place and spec.
                    let deleted: Option<(Option<i64>, Option<String>)> = c
                        .prepare_cached(
                            "DELETE FROM messages WHERE account_id = ?1 AND id = ?2
                             RETURNING log_seq, CASE WHEN log_seq > 0 THEN spec END",
                        )
                        .and_then(|mut s| {
                            s.query_row(params![account, message.id.0], |r| Ok((r.get(0)?, r.get(1)?)))
                                .optional()
                        })
                        .map_err(backend_error)?;
                    let Some(kept) = deleted else {
                        return Ok(());
                    };
                    if let Some(dead) = dead_letter {
                        insert_dead_letter(c, dead)?;
                    }
                    // The spec comes back only while `log_seq` is positive.
                    match kept {
                        (Some(seq), Some(spec)) => Some((seq, spec)),
                        _ => None,
                    }
                }
                AttemptResolution::Retry { retried, at } => {
                    let created = take_created(c, message)?;
                    let changed = c
                        .prepare_cached(
                            "UPDATE messages SET retried = ?3, due_at = ?4, not_before = ?4, leased = 0
                             WHERE account_id = ?1 AND id = ?2",
                        )
                        .and_then(|mut s| s.execute(params![account, message.id.0, retried, at.as_millis()]))
                        .map_err(backend_error)?;
                    if changed == 0 {
                        return Ok(());
                    }
                    created
                }
            };
            append_attempt(
                c,
                &ends,
                message,
                &labels,
                created
                    .as_ref()
                    .map(|(seq, spec)| Created::Kept(*seq, spec.as_str())),
                &record.events,
            )?;
            for (follow_up, spec) in record.follow_ups.iter().zip(&specs) {
                insert_message(c, &ends, follow_up, spec, follow_up.message.created_at)?;
            }
            if let Some((dlq_id, info)) = &record.failure_callback_report {
                set_failure_callback(c, message.account_id, dlq_id, info)?;
            }
            Ok(())
        };
        if deferred {
            self.database.write_deferred(write).await
        } else {
            self.database.write_repeatable(write).await
        }
    }
}

#[async_trait]
impl DeadLetterStore for SqliteQueueStore {
    async fn dead_letters(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> StoreResult<Page<DeadLetter>> {
        let where_clause = filter_sql(account, filter, "failed_at", true);
        let cursor = cursor.map(str::to_owned);
        self.database
            .read(move |c| {
                page(
                    c,
                    "dead_letters",
                    DEAD_LETTER_COLUMNS,
                    where_clause,
                    cursor.as_deref(),
                    count,
                    dead_letter_from_row,
                )
            })
            .await
    }

    async fn delete_dead_letters(&self, account: AccountId, dlq_ids: &[String]) -> StoreResult<u64> {
        let dlq_ids = dlq_ids.to_vec();
        self.database
            .write(move |c| {
                let mut deleted = 0;
                for id in &dlq_ids {
                    deleted += c
                        .execute(
                            "DELETE FROM dead_letters WHERE account_id = ?1 AND dlq_id = ?2",
                            [account.to_string(), id.clone()],
                        )
                        .map_err(backend_error)? as u64;
                }
                Ok(deleted)
            })
            .await
    }

    async fn retry_failure_callback(
        &self,
        account: AccountId,
        dlq_id: &str,
        callback: NewMessage,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let dlq_id = dlq_id.to_owned();
        let spec = spec_json(&callback.message.spec)?;
        let ends = std::sync::Arc::clone(&self.log_ends);
        self.database
            .write(move |c| {
                let in_progress = FailureCallbackInfo {
                    state: FailureCallbackState::InProgress,
                    response_status: None,
                    response_body: None,
                    response_headers: Vec::new(),
                    message_id: Some(callback.message.id.clone()),
                };
                if !set_failure_callback(c, account, &dlq_id, &in_progress)? {
                    return Ok(false);
                }
                insert_message(c, &ends, &callback, &spec, now)?;
                Ok(true)
            })
            .await
    }

    async fn cancel_failure_callback(&self, account: AccountId, dlq_id: &str) -> StoreResult<bool> {
        let dlq_id = dlq_id.to_owned();
        let cancelled = to_json(&FailureCallbackInfo::cancelled())?;
        self.database
            .write(move |c| {
                c.prepare_cached(
                    "UPDATE dead_letters SET failure_callback = ?3
                     WHERE account_id = ?1 AND dlq_id = ?2
                       AND json_extract(failure_callback, '$.state') = ?4",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        account.to_string(),
                        dlq_id,
                        cancelled,
                        FailureCallbackState::InProgress.as_str()
                    ])
                })
                .map(|changed| changed == 1)
                .map_err(backend_error)
            })
            .await
    }

    async fn retry_dead_letter(
        &self,
        account: AccountId,
        dlq_id: &str,
        replacement: NewMessage,
        now: Timestamp,
    ) -> StoreResult<Option<MessageId>> {
        let dlq_id = dlq_id.to_owned();
        let spec = spec_json(&replacement.message.spec)?;
        let ends = std::sync::Arc::clone(&self.log_ends);
        self.database
            .write(move |c| {
                let removed = c
                    .execute(
                        "DELETE FROM dead_letters WHERE account_id = ?1 AND dlq_id = ?2",
                        [account.to_string(), dlq_id],
                    )
                    .map_err(backend_error)?;
                if removed == 0 {
                    return Ok(None);
                }
                Ok(Some(
                    insert_message(c, &ends, &replacement, &spec, now)?.message_id,
                ))
            })
            .await
    }

    async fn prune_dead_letters(&self, older_than: Timestamp, window: usize) -> StoreResult<u64> {
        self.database
            .write(move |c| crate::queue::listing::prune_dead_letters(c, older_than.as_millis(), window))
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn the_sqlite_queue_store_passes_the_conformance_suite() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteQueueStore::open(dir.path(), &crate::config::StorageConfig::default()).unwrap();
        quiver_queue::testing::conformance(Arc::new(store)).await;
    }

    #[tokio::test]
    async fn the_sqlite_queue_store_keeps_acknowledged_writes_across_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let open = || async {
            let store = SqliteQueueStore::open(dir.path(), &crate::config::StorageConfig::default()).unwrap();
            Arc::new(store) as Arc<dyn quiver_queue::QueueStore>
        };
        quiver_queue::testing::restart_keeps_every_acknowledged_write(open).await;
    }
}
