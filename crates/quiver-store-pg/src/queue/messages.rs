//! Messages: reading, cancelling, claiming across nodes, applying each attempt's outcome, and the batch
//! writers of publishes (stored by `publish`) and of outcomes.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use deadpool_postgres::Transaction;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use quiver_queue::message::{
    DeadLetter, Enqueued, EventDetail, FailureCallbackInfo, Message, MessageId, MessageState, NewEvent,
    NewMessage,
};
use quiver_queue::store::{
    AttemptRecord, AttemptResolution, CancelFilter, DeliveryStore, MessageStore, Page, QueueDepth,
    pending_page,
};
use tokio_postgres::types::ToSql;

use crate::batch::{Batcher, Hold};
use crate::database::PgOptions;
use crate::database::{PRESENCE_CLASS, PgDatabase, TxError, backend_error};
use crate::hints::Hint;
use crate::own::OwnConnection;
use crate::queue::control::{claim_keyed, next_keyed_due};
use crate::queue::log::{EVENT_COLUMNS, EventColumns, append_events};
use crate::queue::publish::{PublishWriter, insert_messages, publish_batch, publish_hold};
use crate::queue::rows::{
    MESSAGE_COLUMNS, QUEUE_CONDITION, WALK_DUE_IN_ORDER, count, json, message_from_row, spec_json,
};
use crate::queue::store::{Batches, PgQueueStore};

/// The nodes alive now: those whose presence lock is held (see `PgDatabase`'s presence), as the lock's
/// unsigned second key. `$2` is the presence locks' first key.
const LIVING_NODES: &str =
    "SELECT l.objid::BIGINT FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid::BIGINT = $2 AND l.objsubid = 2";

/// A lease's node is gone (`m` the message): its presence lock is free.
const NODE_GONE: &str = "(m.lease_node::BIGINT & 4294967295) NOT IN (SELECT node FROM living)";

async fn insert_dead_letter(transaction: &Transaction<'_>, dead: &DeadLetter) -> Result<(), TxError> {
    let message = &dead.message;
    let spec = &message.spec;
    let failure_callback = dead.failure_callback.as_ref().map(json).transpose()?;
    let statement = transaction
        .prepare_cached(
            "INSERT INTO dead_letters (dlq_id, account_id, message_id, url, topic_name, queue_name, schedule_id,
                 labels, response_status, failed_at, retried, not_before, created_at, spec, body,
                 response_headers, response_body, failure_callback)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
        )
        .await?;
    transaction
        .execute(
            &statement,
            &[
                &dead.dlq_id,
                &message.account_id.to_string(),
                &message.id.0,
                &spec.url,
                &spec.topic_name,
                &spec.queue_name,
                &spec.schedule_id,
                &json(&spec.labels)?,
                &dead.response_status.map(i32::from),
                &dead.failed_at.as_millis(),
                &i64::from(message.retried),
                &message.not_before.as_millis(),
                &message.created_at.as_millis(),
                &spec_json(spec)?,
                &message.body,
                &json(&dead.response_headers)?,
                &dead.response_body,
                &failure_callback,
            ],
        )
        .await?;
    Ok(())
}

/// Records how a dead letter's failure callback stands; `false` when the dead letter is gone.
pub(crate) async fn set_failure_callback(
    transaction: &Transaction<'_>,
    account: AccountId,
    dlq_id: &str,
    info: &FailureCallbackInfo,
) -> Result<bool, TxError> {
    Ok(transaction
        .execute(
            "UPDATE dead_letters SET failure_callback = $3 WHERE account_id = $1 AND dlq_id = $2",
            &[&account.to_string(), &dlq_id, &json(info)?],
        )
        .await?
        == 1)
}

impl PgQueueStore {
    /// Makes the messages leased by nodes that are gone due at `now` (at most `not_before`), so that a
    /// living node delivers them without waiting for their leases to expire. Each node runs this now and
    /// then (`quiver-server` does, every few seconds); it never touches a living node's leases.
    ///
    /// # Errors
    /// The server cannot be reached.
    pub async fn release_leases_of_gone_nodes(&self, now: Timestamp) -> StoreResult<u64> {
        self.release(now, false).await
    }

    /// Makes leased messages due at `now` (at most `not_before`): those of nodes that are gone, and this
    /// node's own when `own`.
    async fn release(&self, now: Timestamp, own: bool) -> StoreResult<u64> {
        let client = self.database.client().await?;
        let released = client
            .execute(
                &format!(
                    "WITH living (node) AS ({LIVING_NODES})
                     UPDATE messages m SET due_at = LEAST(not_before, $1), leased = FALSE, lease_node = NULL
                     WHERE leased AND ((lease_node = $3 AND $4) OR lease_node IS NULL
                         OR (lease_node <> $3 AND {NODE_GONE}))"
                ),
                &[
                    &now.as_millis(),
                    &i64::from(PRESENCE_CLASS),
                    &self.database.node(),
                    &own,
                ],
            )
            .await
            .map_err(backend_error)?;
        if released > 0 {
            self.database.hint(Hint::Due);
        }
        Ok(released)
    }
}

/// The accounts and ids of the records' messages, as two parallel arrays.
fn message_keys(records: &[AttemptRecord]) -> (Vec<String>, Vec<&str>) {
    records
        .iter()
        .map(|r| (r.message.account_id.to_string(), r.message.id.0.as_str()))
        .unzip()
}

/// Every event of the records, in order, with its message.
fn events_of<'a>(records: impl Iterator<Item = &'a AttemptRecord>) -> Vec<(&'a Message, &'a NewEvent)> {
    records
        .flat_map(|record| record.events.iter().map(|e| (&record.message, e)))
        .collect()
}

/// Applies attempts' outcomes inside `t`, a few statements for the whole batch: their messages read and
/// locked in one, the finished ones deleted in one, every event appended in one. Retries, dead letters,
/// follow-ups and failure-callback reports (the rarer outcomes) take a statement each. A record whose
/// message is gone (cancelled meanwhile) changes nothing.
async fn apply_attempts(t: &Transaction<'_>, records: &[AttemptRecord], node: i32) -> Result<(), TxError> {
    let (accounts, ids) = message_keys(records);
    // Only the keys and where each row lies: the records carry their messages, so the rows are locked
    // and their presence read, never their spec and body again. Each key is looked up through the
    // primary key, in key order (so concurrent batches lock in one order): a lock inside the lateral
    // subquery keeps the planner from joining the keys to a scan of the table, which it prefers while
    // the table looks small and which reads every dead row its deletions left until vacuum runs.
    let statement = t
        .prepare_cached(
            "SELECT x.account_id, x.id, x.ctid::TEXT
             FROM (SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[]) AS u(account_id, id) ORDER BY 1, 2) AS k
             CROSS JOIN LATERAL (
                 SELECT m.account_id, m.id, m.ctid FROM messages m
                 WHERE m.account_id = k.account_id AND m.id = k.id FOR UPDATE
             ) AS x",
        )
        .await?;
    let mut found: std::collections::HashMap<(String, String), String> = std::collections::HashMap::new();
    for row in t.query(&statement, &[&accounts, &ids]).await? {
        found.insert((row.try_get(0)?, row.try_get(1)?), row.try_get(2)?);
    }
    let key = |r: &AttemptRecord| (r.message.account_id.to_string(), r.message.id.0.clone());
    let present: Vec<&AttemptRecord> = records.iter().filter(|r| found.contains_key(&key(r))).collect();
    // The finished messages' rows, by where they lie: the locks taken above keep them there.
    let mut finished_rows: Vec<&str> = present
        .iter()
        .filter(|r| matches!(r.resolution, AttemptResolution::Finished { .. }))
        .filter_map(|r| found.get(&key(r)).map(String::as_str))
        .collect();
    finished_rows.sort_unstable();
    finished_rows.dedup();
    let events = events_of(present.iter().copied());
    let delete = async {
        if !finished_rows.is_empty() {
            let statement = t
                .prepare_cached("DELETE FROM messages WHERE ctid = ANY($1::TEXT[]::TID[])")
                .await?;
            t.execute(&statement, &[&finished_rows]).await?;
        }
        Ok::<(), TxError>(())
    };
    // The deletion and the events go out before either answer comes back, in one round trip (as above).
    futures_util::future::try_join(delete, append_events(t, &events)).await?;
    for record in &present {
        let message = &record.message;
        match &record.resolution {
            AttemptResolution::Finished {
                dead_letter: Some(dead),
            } => insert_dead_letter(t, dead).await?,
            AttemptResolution::Finished { dead_letter: None } => {}
            AttemptResolution::Retry { retried, at } => {
                let statement = t
                    .prepare_cached(
                        "UPDATE messages SET retried = $3, due_at = $4, not_before = $4,
                             leased = FALSE, lease_node = NULL
                         WHERE account_id = $1 AND id = $2",
                    )
                    .await?;
                t.execute(
                    &statement,
                    &[
                        &message.account_id.to_string(),
                        &message.id.0,
                        &i64::from(*retried),
                        &at.as_millis(),
                    ],
                )
                .await?;
            }
        }
    }
    for record in &present {
        for follow_up in &record.follow_ups {
            insert_messages(t, &[follow_up], follow_up.message.created_at, node).await?;
        }
        if let Some((dlq_id, info)) = &record.failure_callback_report {
            set_failure_callback(t, record.message.account_id, dlq_id, info).await?;
        }
    }
    Ok(())
}

/// Applies outcomes that [`AttemptRecord::is_plain`] accepts in one statement, its own transaction: the messages still
/// stored are deleted and their events appended, in one round trip instead of four (`BEGIN`, the lock,
/// the deletion with the events, `COMMIT`). Each key is looked up through the primary key (`OFFSET 0`
/// keeps the planner from joining the keys to a scan of the table, as in [`apply_attempts`]), and the
/// rows are deleted by where they lie. A row that another transaction changed or deleted meanwhile is
/// left as that transaction left it, and its events are not appended: the message was cancelled, or
/// (its lease taken over) is being delivered again elsewhere, which then records it.
async fn finish_plain(database: &PgDatabase, records: &[AttemptRecord]) -> StoreResult<()> {
    static FINISH: LazyLock<String> = LazyLock::new(|| {
        let columns: Vec<String> = EVENT_COLUMNS.split(", ").map(|c| format!("e.{c}")).collect();
        format!(
            "WITH gone AS (
                 DELETE FROM messages WHERE ctid = ANY(ARRAY(
                     SELECT x.ctid FROM UNNEST($1::TEXT[], $2::TEXT[]) AS k(account_id, id)
                     CROSS JOIN LATERAL (SELECT m.ctid FROM messages m
                         WHERE m.account_id = k.account_id AND m.id = k.id OFFSET 0) AS x))
                 RETURNING account_id, id)
             INSERT INTO events ({EVENT_COLUMNS})
             SELECT {} FROM UNNEST({}) WITH ORDINALITY AS e({EVENT_COLUMNS}, place)
             WHERE EXISTS (SELECT 1 FROM gone g WHERE g.account_id = e.account_id AND g.id = e.message_id)
             ORDER BY e.place",
            columns.join(", "),
            EventColumns::unnest(3)
        )
    });
    let (accounts, ids) = message_keys(records);
    let events = events_of(records.iter());
    let events = EventColumns::of(&events)?;
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&accounts, &ids];
    params.extend(events.params());
    database.execute_alone(&FINISH, &params).await?;
    Ok(())
}

/// A batch of attempt outcomes: in one statement when every one [`AttemptRecord::is_plain`], else in one transaction.
async fn attempt_batch(
    database: PgDatabase,
    records: Arc<Vec<AttemptRecord>>,
    node: i32,
) -> StoreResult<Vec<()>> {
    if records.iter().all(AttemptRecord::is_plain) {
        finish_plain(&database, &records).await?;
        return Ok(vec![(); records.len()]);
    }
    database
        .write(|t| {
            let records = Arc::clone(&records);
            Box::pin(async move { apply_attempts(t, &records, node).await })
        })
        .await?;
    Ok(vec![(); records.len()])
}

/// Writers per kind of batch, and most calls per transaction. One writer of each kind makes the largest
/// batches: with two or four, sustained publish-and-deliver was slower and PostgreSQL spent more CPU per
/// message on the extra commits (see BENCHMARKS.md, "Several nodes on PostgreSQL"). The publish writer,
/// whose commits a publish's answer waits for, runs on a thread of its own with a connection of its own
/// (see `Batcher::start_on_thread`); the outcomes' writer, whose batches are held anyway, shares the
/// runtime (on a thread of its own too it was slower: BENCHMARKS.md, "session 42").
const BATCH_WRITERS: usize = 1;
const BATCH_MAX: usize = 256;
/// How long a batch of records that make no work due waits for more: their delivery tasks wait (their
/// slots are free), nothing a user waits for does. Fewer, larger transactions cost PostgreSQL less per
/// message (see BENCHMARKS.md, "Several nodes on PostgreSQL").
const HOLD: std::time::Duration = std::time::Duration::from_millis(5);

fn start_batches(database: &PgDatabase) -> Batches {
    let node = database.node();
    Batches {
        publishes: Batcher::start_on_thread(
            "quiver-pg-publish",
            PublishWriter {
                database: database.clone(),
                own: Arc::new(tokio::sync::Mutex::new(OwnConnection::to(database))),
                shared: tokio::runtime::Handle::current(),
                node,
                hold: Arc::new(publish_hold()),
            },
            BATCH_MAX,
            Arc::new(|writer, calls| Box::pin(publish_batch(writer, calls))),
        ),
        attempts: Batcher::start_holding(
            database.clone(),
            BATCH_WRITERS,
            BATCH_MAX,
            Some(Hold {
                time: HOLD,
                may_wait: |record: &AttemptRecord| record.is_plain() && !record.may_make_work_due(),
            }),
            Arc::new(move |database, records| Box::pin(attempt_batch(database, records, node))),
        ),
    }
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
        let batches = Arc::new(start_batches(&database));
        PgQueueStore { database, batches }
    }
}

#[async_trait]
impl MessageStore for PgQueueStore {
    async fn enqueue(&self, messages: Vec<NewMessage>, now: Timestamp) -> StoreResult<Vec<Enqueued>> {
        // Messages handed over to this node's delivery worker (stored leased) are due nowhere else.
        let hint = messages.iter().any(|m| m.leased_until.is_none());
        let enqueued = self.batches.publishes.submit((messages, now)).await?;
        if hint {
            self.database.hint(Hint::Due);
        }
        Ok(enqueued)
    }

    async fn message(&self, account: AccountId, id: &MessageId) -> StoreResult<Option<Message>> {
        let client = self.database.client().await?;
        let statement = client
            .prepare_cached(&format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE account_id = $1 AND id = $2"
            ))
            .await
            .map_err(backend_error)?;
        client
            .query_opt(&statement, &[&account.to_string(), &id.0])
            .await
            .map_err(backend_error)?
            .as_ref()
            .map(message_from_row)
            .transpose()
    }

    async fn pending(
        &self,
        account: AccountId,
        filter: CancelFilter,
        after: Option<MessageId>,
        count: usize,
        scan: usize,
    ) -> StoreResult<Page<Message>> {
        let client = self.database.client().await?;
        // No cursor reads from the first message: every id sorts after the empty text.
        let after = after.map(|id| id.0).unwrap_or_default();
        let scan_rows = i64::try_from(scan).unwrap_or(i64::MAX);
        // The comparison and the order use the same collation, so pages never skip or repeat a message;
        // under a byte-order collation (C, C.UTF-8) that order is creation order, as on SQLite.
        let rows = client
            .query(
                &format!(
                    "SELECT {MESSAGE_COLUMNS} FROM messages
                     WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3"
                ),
                &[&account.to_string(), &after, &scan_rows],
            )
            .await
            .map_err(backend_error)?;
        pending_page(rows.iter().map(message_from_row), &filter, count, scan)
    }

    async fn depth(&self, now: Timestamp) -> StoreResult<QueueDepth> {
        let client = self.database.client().await?;
        let row = client
            .query_one(
                "SELECT (SELECT COUNT(*) FROM messages),
                        (SELECT COUNT(*) FROM messages WHERE due_at <= $1),
                        (SELECT COUNT(*) FROM dead_letters)",
                &[&now.as_millis()],
            )
            .await
            .map_err(backend_error)?;
        let count = |index: usize| u64::try_from(row.get::<_, i64>(index)).unwrap_or(0);
        Ok(QueueDepth {
            pending: count(0),
            due: count(1),
            dead_letters: count(2),
        })
    }

    async fn cancel(
        &self,
        account: AccountId,
        ids: Option<Vec<MessageId>>,
        filter: CancelFilter,
        limit: Option<usize>,
        now: Timestamp,
    ) -> StoreResult<u64> {
        let wanted = Arc::new((ids, filter));
        self.database
            .write(move |t| {
                let wanted = Arc::clone(&wanted);
                Box::pin(async move {
                    let (ids, filter) = &*wanted;
                    let account_text = account.to_string();
                    let rows = match ids {
                        Some(ids) => {
                            let ids: Vec<&str> = ids.iter().map(|id| id.0.as_str()).collect();
                            t.query(
                                &format!(
                                    "SELECT {MESSAGE_COLUMNS} FROM messages
                                     WHERE account_id = $1 AND id = ANY($2) FOR UPDATE"
                                ),
                                &[&account_text, &ids],
                            )
                            .await?
                        }
                        None => {
                            t.query(
                                &format!(
                                    "SELECT {MESSAGE_COLUMNS} FROM messages WHERE account_id = $1
                                     ORDER BY seq FOR UPDATE"
                                ),
                                &[&account_text],
                            )
                            .await?
                        }
                    };
                    let mut targets = Vec::new();
                    for row in &rows {
                        if limit.is_some_and(|l| targets.len() >= l) {
                            break;
                        }
                        let message = message_from_row(row)?;
                        if ids.is_some() || filter.matches(&message) {
                            targets.push(message);
                        }
                    }
                    let doomed: Vec<&str> = targets.iter().map(|m| m.id.0.as_str()).collect();
                    t.execute(
                        "DELETE FROM messages WHERE account_id = $1 AND id = ANY($2)",
                        &[&account_text, &doomed],
                    )
                    .await?;
                    let [requested, canceled] =
                        [MessageState::CancelRequested, MessageState::Canceled].map(|state| NewEvent {
                            time: now,
                            state,
                            detail: EventDetail::default(),
                        });
                    let events: Vec<(&Message, &NewEvent)> = targets
                        .iter()
                        .flat_map(|m| [(m, &requested), (m, &canceled)])
                        .collect();
                    append_events(t, &events).await?;
                    Ok(targets.len() as u64)
                })
            })
            .await
    }
}

#[async_trait]
impl DeliveryStore for PgQueueStore {
    async fn claim_due(
        &self,
        now: Timestamp,
        limit: usize,
        lease_until: Timestamp,
    ) -> StoreResult<Vec<Message>> {
        let node = self.database.node();
        self.database
            .write(move |t| {
                Box::pin(async move {
                    t.batch_execute(WALK_DUE_IN_ORDER).await?;
                    // Unkeyed messages: rows another node is claiming right now are skipped, not waited
                    // for; a row whose claim committed meanwhile is re-read and dropped for not being due.
                    let statement = t
                        .prepare_cached(&format!(
                            "WITH chosen AS (
                                 SELECT m.account_id, m.id FROM messages m
                                 LEFT JOIN fifo_queues q ON q.account_id = m.account_id AND q.name = m.queue_name
                                 WHERE m.due_at <= $2 AND m.flow_key IS NULL AND {QUEUE_CONDITION}
                                 ORDER BY m.due_at LIMIT $3
                                 FOR UPDATE OF m SKIP LOCKED)
                             UPDATE messages m SET due_at = $1, leased = TRUE, lease_node = $4
                             FROM chosen WHERE m.account_id = chosen.account_id AND m.id = chosen.id
                             RETURNING m.id, m.account_id, m.retried, m.not_before, m.created_at, m.spec, m.body"
                        ))
                        .await?;
                    let rows = t
                        .query(
                            &statement,
                            &[&lease_until.as_millis(), &now.as_millis(), &count(limit), &node],
                        )
                        .await?;
                    let mut claimed = rows.iter().map(message_from_row).collect::<StoreResult<Vec<_>>>()?;
                    let room = limit.saturating_sub(claimed.len());
                    if room > 0 {
                        claimed.extend(
                            claim_keyed(t, now, room, lease_until, node).await?,
                        );
                    }
                    // ACTIVE goes to the log with the attempt's outcome (see `DeliveryStore::claim_due`).
                    Ok(claimed)
                })
            })
            .await
    }

    async fn next_due(&self) -> StoreResult<Option<Timestamp>> {
        self.database
            .write(|t| {
                Box::pin(async move {
                    t.batch_execute(WALK_DUE_IN_ORDER).await?;
                    let statement = t
                        .prepare_cached(&format!(
                            "SELECT m.due_at FROM messages m
                             LEFT JOIN fifo_queues q ON q.account_id = m.account_id AND q.name = m.queue_name
                             WHERE m.flow_key IS NULL AND {QUEUE_CONDITION}
                             ORDER BY m.due_at LIMIT 1"
                        ))
                        .await?;
                    // The earliest due first, through `messages_due` (a `MIN` over the join would read
                    // every row).
                    let unkeyed: Option<i64> = t.query_opt(&statement, &[]).await?.map(|row| row.get(0));
                    let keyed = next_keyed_due(t).await?;
                    Ok(match (unkeyed.map(Timestamp::from_millis), keyed) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    })
                })
            })
            .await
    }

    /// Releases this node's leases (the caller vouches that none of its deliveries is in flight) and
    /// those of nodes that are gone; another living node's leases stay.
    async fn release_leases(&self, now: Timestamp) -> StoreResult<u64> {
        self.release(now, true).await
    }

    async fn record_attempt(&self, record: AttemptRecord) -> StoreResult<()> {
        // A retry, a callback, or the next message of a FIFO queue or a flow-control key may now be due,
        // perhaps for another node. A plain delivery makes nothing due: waking every node for it would
        // have each look for due work (two queries) for nothing.
        let hint = record.may_make_work_due();
        self.batches.attempts.submit(record).await?;
        if hint {
            self.database.hint(Hint::Due);
        }
        Ok(())
    }
}
