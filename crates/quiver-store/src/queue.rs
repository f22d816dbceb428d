//! The queue domain's store in `queue.db`.

use std::path::Path;

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, StoreError, Timestamp};
use quiver_queue::message::{
    DeadLetter, Enqueued, Event, EventDetail, Message, MessageId, MessageSpec, MessageState, NewEvent,
    NewMessage,
};
use quiver_queue::store::{
    AttemptRecord, AttemptResolution, CancelFilter, Endpoint, Filter, LogPosition, Page, QueueStore, UrlGroup,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::config::StorageConfig;
use crate::database::{Database, backend_error};
use crate::migrations;
use crate::queue_listing::{filter_sql, page};

/// Messages, dead letters, events and URL groups in SQLite.
#[derive(Debug, Clone)]
pub struct SqliteQueueStore {
    pub(crate) database: Database,
}

impl SqliteQueueStore {
    /// Opens `queue.db` in `data_dir`, creating and migrating it as needed.
    ///
    /// # Errors
    /// The file cannot be opened or migrated.
    pub fn open(data_dir: &Path, config: &StorageConfig) -> StoreResult<SqliteQueueStore> {
        let database = Database::open(&data_dir.join("queue.db"), migrations::QUEUE, config)?;
        Ok(SqliteQueueStore { database })
    }

    /// The underlying database (for shutdown).
    pub fn database(&self) -> &Database {
        &self.database
    }
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(e.to_string()))
}

fn corrupt(column: usize, error: impl std::error::Error + Send + Sync + 'static) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, Box::new(error))
}

pub(crate) fn read_error(error: rusqlite::Error) -> StoreError {
    if matches!(error, rusqlite::Error::FromSqlConversionFailure(..)) {
        StoreError::Corrupt(error.to_string())
    } else {
        backend_error(error)
    }
}

fn account_of(text: &str, column: usize) -> rusqlite::Result<AccountId> {
    text.parse().map_err(|e| corrupt(column, e))
}

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
        spec: serde_json::from_str(&spec).map_err(|e| corrupt(5, e))?,
        body: row.get(6)?,
    })
}

/// A message spec encoded for storage, prepared before the write reaches the writer thread.
struct Encoded {
    spec: String,
    labels: String,
}

fn encode(spec: &MessageSpec) -> StoreResult<Encoded> {
    Ok(Encoded {
        spec: to_json(spec)?,
        labels: to_json(&spec.labels)?,
    })
}

/// Records an event as the next in its account's log; only CREATED carries the spec (`encoded`), later ones
/// find it by message id.
fn insert_event(
    connection: &Connection,
    message: &Message,
    labels: &str,
    spec: Option<&str>,
    event: &NewEvent,
) -> StoreResult<()> {
    let spec_fields = &message.spec;
    connection
        .prepare_cached(
            "INSERT INTO events (account_id, seq, message_id, time, state, url, topic_name, queue_name,
                 schedule_id, labels, spec, detail)
             VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE account_id = ?1), ?2, ?3, ?4, ?5,
                 ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                message.account_id.to_string(),
                message.id.0,
                event.time.as_millis(),
                event.state.as_str(),
                spec_fields.url,
                spec_fields.topic_name,
                spec_fields.queue_name,
                spec_fields.schedule_id,
                labels,
                spec,
                to_json(&event.detail).unwrap_or_else(|_| "{}".into()),
            ])
        })
        .map(drop)
        .map_err(backend_error)
}

/// Records a later event of `message`, whose labels are encoded here (small).
fn insert_later_event(connection: &Connection, message: &Message, event: &NewEvent) -> StoreResult<()> {
    let labels = to_json(&message.spec.labels)?;
    insert_event(connection, message, &labels, None, event)
}

/// Stores one message (and its CREATED event), honouring its deduplication key.
fn insert_message(
    connection: &Connection,
    new: &NewMessage,
    encoded: &Encoded,
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
    connection
        .prepare_cached(
            "INSERT INTO messages (id, account_id, due_at, leased, retried, not_before, created_at, spec, body, queue_name,
                 flow_key)
             VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )
        .and_then(|mut s| {
            s.execute(params![
                message.id.0,
                account,
                message.not_before.as_millis(),
                message.retried,
                message.not_before.as_millis(),
                message.created_at.as_millis(),
                encoded.spec,
                message.body,
                message.spec.queue_name,
                message.spec.flow_control.as_ref().map(|f| &f.key),
            ])
        })
        .map_err(backend_error)?;
    if let Some(flow) = &message.spec.flow_control {
        crate::flow_control::upsert_key(connection, &account, flow)?;
    }
    let created = NewEvent {
        time: now,
        state: MessageState::Created,
        detail: EventDetail::default(),
    };
    insert_event(
        connection,
        message,
        &encoded.labels,
        Some(&encoded.spec),
        &created,
    )?;
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

/// Deletes a pending message (it was delivered, dead-lettered or cancelled).
fn delete_message(connection: &Connection, message: &Message) -> StoreResult<()> {
    connection
        .prepare_cached("DELETE FROM messages WHERE account_id = ?1 AND id = ?2")
        .and_then(|mut s| s.execute([message.account_id.to_string(), message.id.0.clone()]))
        .map(drop)
        .map_err(backend_error)
}

fn insert_dead_letter(connection: &Connection, dead: &DeadLetter) -> StoreResult<()> {
    let message = &dead.message;
    let spec = &message.spec;
    connection
        .prepare_cached(
            "INSERT INTO dead_letters (dlq_id, account_id, message_id, url, topic_name, queue_name, schedule_id,
                 labels, response_status, failed_at, retried, not_before, created_at, spec, body,
                 response_headers, response_body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
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
                to_json(&spec.labels).unwrap_or_else(|_| "[]".into()),
                dead.response_status,
                dead.failed_at.as_millis(),
                message.retried,
                message.not_before.as_millis(),
                message.created_at.as_millis(),
                to_json(spec).unwrap_or_default(),
                message.body,
                to_json(&dead.response_headers).unwrap_or_else(|_| "[]".into()),
                dead.response_body,
            ])
        })
        .map(drop)
        .map_err(backend_error)
}

const DEAD_LETTER_COLUMNS: &str = "seq, dlq_id, account_id, message_id, retried, not_before, created_at, spec, body, \
                                   response_status, response_headers, response_body, failed_at";

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
                spec: serde_json::from_str::<MessageSpec>(&spec).map_err(|e| corrupt(7, e))?,
                body: row.get(8)?,
            },
            response_status: row.get(9)?,
            response_headers: serde_json::from_str(&headers).map_err(|e| corrupt(10, e))?,
            response_body: row.get(11)?,
            failed_at: Timestamp::from_millis(row.get(12)?),
        },
    ))
}

/// Later events borrow the spec of their message's CREATED event. The lookup names its index: without
/// statistics, SQLite would rather scan the account's events in the primary key, which holds every
/// column, than use `events_by_message` and then the key.
const EVENT_COLUMNS: &str = "seq, time, message_id, state, COALESCE(spec, (SELECT c.spec FROM events c \
     INDEXED BY events_by_message \
     WHERE c.account_id = e.account_id AND c.message_id = e.message_id AND c.state = 'CREATED' LIMIT 1)), detail";

fn event_from_row(row: &Row<'_>) -> rusqlite::Result<(i64, Event)> {
    let state: String = row.get(3)?;
    let spec: String = row.get(4)?;
    let detail: String = row.get(5)?;
    let sequence = row.get(0)?;
    Ok((
        sequence,
        Event {
            sequence,
            time: Timestamp::from_millis(row.get(1)?),
            message_id: MessageId(row.get(2)?),
            state: MessageState::parse(&state).ok_or_else(|| corrupt(3, std::fmt::Error))?,
            spec: serde_json::from_str(&spec).map_err(|e| corrupt(4, e))?,
            detail: serde_json::from_str(&detail).map_err(|e| corrupt(5, e))?,
        },
    ))
}

fn group_from_row(row: &Row<'_>) -> rusqlite::Result<UrlGroup> {
    let endpoints: String = row.get(3)?;
    let headers: String = row.get(4)?;
    Ok(UrlGroup {
        name: row.get(0)?,
        created_at: Timestamp::from_millis(row.get(1)?),
        updated_at: Timestamp::from_millis(row.get(2)?),
        endpoints: serde_json::from_str::<Vec<Endpoint>>(&endpoints).map_err(|e| corrupt(3, e))?,
        default_headers: serde_json::from_str(&headers).map_err(|e| corrupt(4, e))?,
    })
}

#[async_trait]
impl QueueStore for SqliteQueueStore {
    async fn enqueue(&self, messages: Vec<NewMessage>, now: Timestamp) -> StoreResult<Vec<Enqueued>> {
        let encoded = messages
            .iter()
            .map(|m| encode(&m.message.spec))
            .collect::<StoreResult<Vec<_>>>()?;
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
                    .zip(&encoded)
                    .map(|(m, e)| insert_message(c, m, e, now))
                    .collect()
            })
            .await
    }

    async fn claim_due(
        &self,
        now: Timestamp,
        limit: usize,
        lease_until: Timestamp,
    ) -> StoreResult<Vec<Message>> {
        self.database
            .write_repeatable(move |c| {
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
                    for (account, id) in crate::flow_control::claim_keyed(c, now, room, QUEUE_CONDITION)? {
                        let message = c
                            .prepare_cached(&format!(
                                "UPDATE messages SET due_at = ?1, leased = 1 WHERE account_id = ?2 AND id = ?3
                                 RETURNING {MESSAGE_COLUMNS}"
                            ))
                            .and_then(|mut s| {
                                s.query_row(params![lease_until.as_millis(), account, id], message_from_row)
                            })
                            .map_err(read_error)?;
                        claimed.push(message);
                    }
                }
                for message in &claimed {
                    let active = NewEvent {
                        time: now,
                        state: MessageState::Active,
                        detail: EventDetail::default(),
                    };
                    insert_later_event(c, message, &active)?;
                }
                Ok(claimed)
            })
            .await
    }

    async fn next_due(&self) -> StoreResult<Option<Timestamp>> {
        self.database
            .read(|c| {
                let unkeyed = c
                    .query_row(
                        &format!(
                            "SELECT MIN(m.due_at) FROM messages m
                             LEFT JOIN queues q ON q.account_id = m.account_id AND q.name = m.queue_name
                             WHERE m.flow_key IS NULL AND {QUEUE_CONDITION}"
                        ),
                        [],
                        |r| r.get::<_, Option<i64>>(0),
                    )
                    .map(|due| due.map(Timestamp::from_millis))
                    .map_err(read_error)?;
                let keyed = crate::flow_control::next_keyed_due(c, QUEUE_CONDITION)?;
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
        let encoded = record
            .follow_ups
            .iter()
            .map(|m| encode(&m.message.spec))
            .collect::<StoreResult<Vec<_>>>()?;
        self.database
            .write_repeatable(move |c| {
                let Some(message) = load_message(c, &record.account_id.to_string(), &record.message_id.0)?
                else {
                    return Ok(());
                };
                match &record.resolution {
                    AttemptResolution::Finished { dead_letter } => {
                        delete_message(c, &message)?;
                        if let Some(dead) = dead_letter {
                            insert_dead_letter(c, dead)?;
                        }
                    }
                    AttemptResolution::Retry { retried, at } => {
                        c.prepare_cached(
                            "UPDATE messages SET retried = ?3, due_at = ?4, not_before = ?4, leased = 0
                             WHERE account_id = ?1 AND id = ?2",
                        )
                        .and_then(|mut s| {
                            s.execute(params![
                                message.account_id.to_string(),
                                message.id.0,
                                retried,
                                at.as_millis()
                            ])
                        })
                        .map_err(backend_error)?;
                    }
                }
                for event in &record.events {
                    insert_later_event(c, &message, event)?;
                }
                for (follow_up, encoded) in record.follow_ups.iter().zip(&encoded) {
                    insert_message(c, follow_up, encoded, follow_up.message.created_at)?;
                }
                Ok(())
            })
            .await
    }

    async fn message(&self, account: AccountId, id: &MessageId) -> StoreResult<Option<Message>> {
        let id = id.0.clone();
        self.database
            .read(move |c| load_message(c, &account.to_string(), &id))
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
                    delete_message(c, message)?;
                    for state in [MessageState::CancelRequested, MessageState::Canceled] {
                        let event = NewEvent {
                            time: now,
                            state,
                            detail: EventDetail::default(),
                        };
                        insert_later_event(c, message, &event)?;
                    }
                }
                Ok(targets.len() as u64)
            })
            .await
    }

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

    async fn retry_dead_letter(
        &self,
        account: AccountId,
        dlq_id: &str,
        replacement: NewMessage,
        now: Timestamp,
    ) -> StoreResult<Option<MessageId>> {
        let dlq_id = dlq_id.to_owned();
        let encoded = encode(&replacement.message.spec)?;
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
                Ok(Some(insert_message(c, &replacement, &encoded, now)?.message_id))
            })
            .await
    }

    async fn prune_log(
        &self,
        older_than: Timestamp,
        window: usize,
        from: Option<LogPosition>,
    ) -> StoreResult<(u64, Option<LogPosition>)> {
        self.database
            .write(move |c| crate::queue_listing::prune_log(c, older_than.as_millis(), window, from))
            .await
    }

    async fn prune_dead_letters(&self, older_than: Timestamp, window: usize) -> StoreResult<u64> {
        self.database
            .write(move |c| crate::queue_listing::prune_dead_letters(c, older_than.as_millis(), window))
            .await
    }

    async fn events(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> StoreResult<Page<Event>> {
        let where_clause = filter_sql(account, filter, "time", false);
        let cursor = cursor.map(str::to_owned);
        // The events of given messages come from their index, not from a scan of the account's log
        // (see EVENT_COLUMNS for why SQLite needs telling).
        let table = if filter.message_ids.is_empty() {
            "events e"
        } else {
            "events e INDEXED BY events_by_message"
        };
        self.database
            .read(move |c| {
                page(
                    c,
                    table,
                    EVENT_COLUMNS,
                    where_clause,
                    cursor.as_deref(),
                    count,
                    event_from_row,
                )
            })
            .await
    }

    async fn url_group(&self, account: AccountId, name: &str) -> StoreResult<Option<UrlGroup>> {
        let name = name.to_owned();
        self.database
            .read(move |c| {
                c.prepare_cached(
                    "SELECT name, created_at, updated_at, endpoints, default_headers FROM url_groups
                     WHERE account_id = ?1 AND name = ?2",
                )
                .and_then(|mut s| {
                    s.query_row([account.to_string(), name], group_from_row)
                        .optional()
                })
                .map_err(read_error)
            })
            .await
    }

    async fn url_groups(&self, account: AccountId) -> StoreResult<Vec<UrlGroup>> {
        self.database
            .read(move |c| {
                let mut statement = c
                    .prepare_cached(
                        "SELECT name, created_at, updated_at, endpoints, default_headers FROM url_groups
                         WHERE account_id = ?1 ORDER BY name",
                    )
                    .map_err(read_error)?;
                let rows = statement
                    .query_map([account.to_string()], group_from_row)
                    .map_err(read_error)?;
                rows.collect::<Result<_, _>>().map_err(read_error)
            })
            .await
    }

    async fn put_url_group(&self, account: AccountId, group: &UrlGroup) -> StoreResult<()> {
        let group = group.clone();
        let endpoints = to_json(&group.endpoints)?;
        let headers = to_json(&group.default_headers)?;
        self.database
            .write(move |c| {
                c.execute(
                    "INSERT INTO url_groups (account_id, name, created_at, updated_at, endpoints, default_headers)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (account_id, name) DO UPDATE SET updated_at = excluded.updated_at,
                         endpoints = excluded.endpoints, default_headers = excluded.default_headers",
                    params![account.to_string(), group.name, group.created_at.as_millis(), group.updated_at.as_millis(), endpoints, headers],
                )
                .map(drop)
                .map_err(backend_error)
            })
            .await
    }

    async fn delete_url_group(&self, account: AccountId, name: &str) -> StoreResult<bool> {
        let name = name.to_owned();
        self.database
            .write(move |c| {
                c.execute(
                    "DELETE FROM url_groups WHERE account_id = ?1 AND name = ?2",
                    [account.to_string(), name],
                )
                .map(|n| n == 1)
                .map_err(backend_error)
            })
            .await
    }
}
