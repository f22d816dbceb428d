//! Storing published messages: a batch of publishes in one statement when it can be, else in one
//! transaction with their deduplication ids and flow-control keys.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use deadpool_postgres::Transaction;
use quiver_core::store::StoreResult;
use quiver_core::{StoreError, Timestamp};
use quiver_queue::early::{DeliveriesHold, Early};
use quiver_queue::message::{
    Enqueued, EventDetail, FlowControl, Message, MessageId, MessageState, NewEvent, NewMessage,
};
use tokio_postgres::types::ToSql;

use crate::database::{PgDatabase, TxError};
use crate::own::OwnConnection;
use crate::queue::log::{EVENT_COLUMNS, EventColumns, append_events};
use crate::queue::rows::spec_json;

/// Stores messages with a CREATED event each, honouring their deduplication keys: a message whose key
/// is live is not stored, and the earlier message's id stands for it. Rows and events are written one
/// statement each for the whole batch.
pub(crate) async fn insert_messages(
    transaction: &Transaction<'_>,
    news: &[&NewMessage],
    now: Timestamp,
    node: i32,
) -> Result<Vec<Enqueued>, TxError> {
    let mut outcomes = Vec::with_capacity(news.len());
    let mut stored: Vec<&NewMessage> = Vec::with_capacity(news.len());
    if news.iter().any(|m| m.dedup.is_some()) {
        transaction
            .execute(
                "DELETE FROM deduplication WHERE ctid IN
                     (SELECT ctid FROM deduplication WHERE expires_at <= $1 LIMIT 256)",
                &[&now.as_millis()],
            )
            .await?;
    }
    for new in news {
        let message = &new.message;
        if let Some((key, expires_at)) = &new.dedup
            && let Some(earlier) = deduplicate(transaction, message, key, *expires_at, now).await?
        {
            outcomes.push(Enqueued {
                message_id: earlier,
                deduplicated: true,
            });
            continue;
        }
        outcomes.push(Enqueued {
            message_id: message.id.clone(),
            deduplicated: false,
        });
        stored.push(new);
    }
    if stored.is_empty() {
        return Ok(outcomes);
    }
    let (rows, events) = settle(&stored);
    let rows = MessageColumns::of(&rows)?;
    let stored: Vec<&Message> = stored.iter().map(|new| &new.message).collect();
    let statement = transaction.prepare_cached(INSERT_MESSAGES).await?;
    let events: Vec<(&Message, &NewEvent)> = events.iter().map(|(m, e)| (*m, e)).collect();
    let insert = async {
        transaction
            .execute(&statement, &rows.params(&node))
            .await
            .map_err(TxError::from)
    };
    // Both statements go out before either answer comes back (once prepared, as the connection keeps
    // them): the server runs them in order, in one round trip instead of two.
    futures_util::future::try_join(insert, append_events(transaction, &events)).await?;
    // The latest publish of a key sets its limits; keys are written in order, so that two batches
    // sharing keys never wait for each other in a circle.
    let mut keys: BTreeMap<(String, &str), &FlowControl> = BTreeMap::new();
    for message in &stored {
        if let Some(flow) = &message.spec.flow_control {
            keys.insert((message.account_id.to_string(), flow.key.as_str()), flow);
        }
    }
    for ((account, _), flow) in keys {
        upsert_key(transaction, &account, flow).await?;
    }
    Ok(outcomes)
}

/// Stores messages: [`MessageColumns::params`], then this node's number (for the leased ones).
const INSERT_MESSAGES: &str = "INSERT INTO messages (account_id, id, due_at, retried, not_before, created_at,
         queue_name, flow_key, workflow_run_id, spec, body, leased, lease_node)
     SELECT a, i, COALESCE(l, n), r, n, c, q, f, w, s, b, l IS NOT NULL,
         CASE WHEN l IS NOT NULL THEN $12::INT END
     FROM UNNEST($1::TEXT[], $2::TEXT[], $3::BIGINT[], $4::BIGINT[], $5::BIGINT[], $6::TEXT[],
         $7::TEXT[], $8::TEXT[], $9::TEXT[], $10::BYTEA[], $11::BIGINT[])
         AS t(a, i, n, r, c, q, f, w, s, b, l)";

/// What storing `news` writes: the messages stored as rows, and the events logged, in order. Each
/// message has its CREATED event; one whose delivery finished before it was written (see
/// `quiver_queue::early`) has its attempt's events after it, and no row.
fn settle<'a>(news: &[&'a NewMessage]) -> (Vec<&'a NewMessage>, Vec<(&'a Message, NewEvent)>) {
    let mut rows = Vec::with_capacity(news.len());
    let mut events = Vec::with_capacity(news.len());
    for new in news {
        let message = &new.message;
        events.push((
            message,
            NewEvent {
                time: message.created_at,
                state: MessageState::Created,
                detail: EventDetail::default(),
            },
        ));
        match new.early.as_deref().and_then(Early::settle) {
            Some(record) => events.extend(record.events.iter().map(|event| (message, event.clone()))),
            None => rows.push(*new),
        }
    }
    (rows, events)
}

/// Whether `new` is stored by [`insert_plain`]: nothing of it is read or written but its row and its
/// CREATED event.
fn is_plain(new: &NewMessage) -> bool {
    new.dedup.is_none() && new.message.spec.flow_control.is_none()
}

/// Stores messages that [`is_plain`] accepts, with their CREATED events, in one statement: its own
/// transaction, so a batch costs one round trip instead of four (`BEGIN`, the two inserts, `COMMIT`).
async fn insert_plain(
    own: &mut OwnConnection,
    news: &[&NewMessage],
    node: i32,
) -> StoreResult<Vec<Enqueued>> {
    static INSERT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "WITH stored AS ({INSERT_MESSAGES}) INSERT INTO events ({EVENT_COLUMNS}) SELECT * FROM UNNEST({})",
            EventColumns::unnest(13)
        )
    });
    let (rows, events) = settle(news);
    let rows = MessageColumns::of(&rows)?;
    let events: Vec<(&Message, &NewEvent)> = events.iter().map(|(m, e)| (*m, e)).collect();
    let events = EventColumns::of(&events)?;
    let mut params: Vec<&(dyn ToSql + Sync)> = rows.params(&node).to_vec();
    params.extend(events.params());
    own.execute_alone(&INSERT, &params).await?;
    Ok(news
        .iter()
        .map(|new| Enqueued {
            message_id: new.message.id.clone(),
            deduplicated: false,
        })
        .collect())
}

/// The columns of messages written together.
#[derive(Default)]
struct MessageColumns {
    account: Vec<String>,
    id: Vec<String>,
    not_before: Vec<i64>,
    retried: Vec<i64>,
    created_at: Vec<i64>,
    queue: Vec<Option<String>>,
    flow_key: Vec<Option<String>>,
    run: Vec<Option<String>>,
    spec: Vec<String>,
    body: Vec<Vec<u8>>,
    leased_until: Vec<Option<i64>>,
}

impl MessageColumns {
    /// The rows of `news`.
    fn of(news: &[&NewMessage]) -> StoreResult<MessageColumns> {
        let mut rows = MessageColumns::default();
        for new in news {
            rows.push(new)?;
        }
        Ok(rows)
    }

    /// The columns as [`INSERT_MESSAGES`]' parameters, with `node`.
    fn params<'a>(&'a self, node: &'a i32) -> [&'a (dyn ToSql + Sync); 12] {
        [
            &self.account,
            &self.id,
            &self.not_before,
            &self.retried,
            &self.created_at,
            &self.queue,
            &self.flow_key,
            &self.run,
            &self.spec,
            &self.body,
            &self.leased_until,
            node,
        ]
    }

    fn push(&mut self, new: &NewMessage) -> StoreResult<()> {
        let message = &new.message;
        let spec = &message.spec;
        self.leased_until.push(new.leased_until.map(Timestamp::as_millis));
        self.account.push(message.account_id.to_string());
        self.id.push(message.id.0.clone());
        self.not_before.push(message.not_before.as_millis());
        self.retried.push(i64::from(message.retried));
        self.created_at.push(message.created_at.as_millis());
        self.queue.push(spec.queue_name.clone());
        self.flow_key
            .push(spec.flow_control.as_ref().map(|f| f.key.clone()));
        self.run.push(spec.workflow_run_id.clone());
        self.spec.push(spec_json(spec)?);
        self.body.push(message.body.clone());
        Ok(())
    }
}

/// Takes `key` for `message` until `expires_at`, unless a live earlier message holds it: then that
/// message's id. Of nodes racing for a new key, the unique key makes one wait for the other's commit and
/// then find its message.
async fn deduplicate(
    transaction: &Transaction<'_>,
    message: &Message,
    key: &str,
    expires_at: Timestamp,
    now: Timestamp,
) -> Result<Option<MessageId>, TxError> {
    let account = message.account_id.to_string();
    let taken = transaction
        .query_opt(
            "INSERT INTO deduplication (account_id, key, message_id, expires_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (account_id, key) DO UPDATE SET message_id = excluded.message_id,
                 expires_at = excluded.expires_at
             WHERE deduplication.expires_at <= $5
             RETURNING message_id",
            &[
                &account,
                &key,
                &message.id.0,
                &expires_at.as_millis(),
                &now.as_millis(),
            ],
        )
        .await?;
    if taken.is_some() {
        return Ok(None);
    }
    let earlier = transaction
        .query_opt(
            "SELECT message_id FROM deduplication WHERE account_id = $1 AND key = $2",
            &[&account, &key],
        )
        .await?;
    Ok(earlier.map(|row| MessageId(row.get(0))))
}

/// Records (or updates, where not pinned) the limits a publish carries for its key.
async fn upsert_key(transaction: &Transaction<'_>, account: &str, flow: &FlowControl) -> Result<(), TxError> {
    let period = flow.period.map(|p| i64::try_from(p).unwrap_or(i64::MAX));
    let statement = transaction
        .prepare_cached(
            "INSERT INTO flow_controls (account_id, key, parallelism, rate, period_secs)
             VALUES ($1, $2, $3, $4, COALESCE($5::BIGINT, 1))
             ON CONFLICT (account_id, key) DO UPDATE SET
                 parallelism = CASE WHEN flow_controls.pinned_parallelism THEN flow_controls.parallelism
                     ELSE excluded.parallelism END,
                 rate = CASE WHEN flow_controls.pinned_rate THEN flow_controls.rate ELSE excluded.rate END,
                 period_secs = CASE WHEN flow_controls.pinned_rate THEN flow_controls.period_secs
                     ELSE excluded.period_secs END",
        )
        .await?;
    transaction
        .execute(
            &statement,
            &[
                &account,
                &flow.key,
                &flow.parallelism.map(i64::from),
                &flow.rate.map(i64::from),
                &period,
            ],
        )
        .await?;
    Ok(())
}

/// What the publish writer writes with. It runs on a thread of its own (see
/// [`crate::batch::Batcher::start_on_thread`]): plain batches go out on its own connection, made and
/// driven on that thread; a batch that needs a transaction runs on the shared runtime, where the pool's
/// connections are driven. A plain batch of several publishes first waits briefly for its messages'
/// deliveries (`hold`, see [`publish_hold`]).
#[derive(Clone)]
pub(crate) struct PublishWriter {
    pub(crate) database: PgDatabase,
    pub(crate) own: Arc<tokio::sync::Mutex<OwnConnection>>,
    pub(crate) shared: tokio::runtime::Handle,
    pub(crate) node: i32,
    pub(crate) hold: Arc<DeliveriesHold>,
}

/// How long a plain batch of publishes waits for the deliveries of its messages that started while it
/// was being taken: at most a millisecond (the timer may add up to one more), paused a second at a time
/// while waits keep running out (see [`DeliveriesHold`]). A message whose delivery finished is written
/// as one events row, instead of a row, its deletion and the record's own commit: under load to a
/// nearby destination almost every delivery ends within the hold, and PostgreSQL spends about a third
/// less CPU a message (BENCHMARKS.md, "session 43").
pub(crate) fn publish_hold() -> DeliveriesHold {
    DeliveriesHold::new(
        std::time::Duration::from_millis(1),
        std::time::Duration::from_secs(1),
    )
}

/// A batch of publishes (each a call's messages and time): one statement for all their messages and
/// their events when they are all plain (see [`insert_plain`]), else a transaction.
pub(crate) async fn publish_batch(
    writer: PublishWriter,
    calls: Arc<Vec<(Vec<NewMessage>, Timestamp)>>,
) -> StoreResult<Vec<Vec<Enqueued>>> {
    let node = writer.node;
    let all: Vec<&NewMessage> = calls.iter().flat_map(|(messages, _)| messages).collect();
    let outcomes = if all.iter().all(|new| is_plain(new)) {
        // A lone publish, whose answer a hold would only delay, does not wait.
        if calls.len() > 1 {
            let earlies: Vec<&Early> = all.iter().filter_map(|new| new.early.as_deref()).collect();
            writer.hold.wait(earlies).await;
        }
        insert_plain(&mut *writer.own.lock().await, &all, node).await?
    } else {
        let now = calls
            .iter()
            .map(|(_, now)| *now)
            .max()
            .unwrap_or(Timestamp::from_millis(0));
        let (database, written) = (writer.database.clone(), Arc::clone(&calls));
        let transaction = writer.shared.spawn(async move {
            database
                .write(|t| {
                    let calls = Arc::clone(&written);
                    Box::pin(async move {
                        let all: Vec<&NewMessage> = calls.iter().flat_map(|(messages, _)| messages).collect();
                        insert_messages(t, &all, now, node).await
                    })
                })
                .await
        });
        transaction
            .await
            .map_err(|e| StoreError::Backend(format!("a publish transaction did not finish: {e}")))??
    };
    let mut outcomes = outcomes.into_iter();
    Ok(calls
        .iter()
        .map(|(messages, _)| outcomes.by_ref().take(messages.len()).collect())
        .collect())
}
