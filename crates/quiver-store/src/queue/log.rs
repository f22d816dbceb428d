//! Writing and reading accounts' event logs in `queue.db`. A message's CREATED event is kept in its row
//! (a positive `messages.log_seq`, see migration 9) until the message first changes; listings read those
//! rows as events in their place.

use quiver_core::Timestamp;
use quiver_core::store::StoreResult;
use quiver_queue::message::{Event, EventDetail, Message, MessageId, MessageSpec, MessageState, NewEvent};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::database::backend_error;
use crate::queue::rows::{corrupt, to_json};

/// The next seq of account `?1`'s log: one past both its newest event and the newest CREATED event still
/// kept in a message row (a positive `messages.log_seq`, see migration 9).
macro_rules! next_seq {
    () => {
        "(SELECT MAX(COALESCE((SELECT MAX(seq) FROM events WHERE account_id = ?1), 0),
             COALESCE((SELECT MAX(log_seq) FROM messages WHERE account_id = ?1 AND log_seq > 0), 0)) + 1)"
    };
}
pub(crate) use next_seq;

/// Writes one event of `message`: at `seq`, or else as the next in its account's log. Only CREATED carries
/// the spec (`spec`, its stored JSON); later events find it by message id.
fn write_event(
    connection: &Connection,
    message: &Message,
    labels: &str,
    (seq, spec): (Option<i64>, Option<&str>),
    event: &NewEvent,
) -> StoreResult<()> {
    let fields = &message.spec;
    connection
        .prepare_cached(concat!(
            "INSERT INTO events (account_id, seq, message_id, time, state, url, topic_name, queue_name,
                 schedule_id, labels, spec, detail)
             VALUES (?1, COALESCE(?2, ",
            next_seq!(),
            "), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
        ))
        .and_then(|mut statement| {
            statement.execute(params![
                message.account_id.to_string(),
                seq,
                message.id.0,
                event.time.as_millis(),
                event.state.as_str(),
                fields.url,
                fields.topic_name,
                fields.queue_name,
                fields.schedule_id,
                labels,
                spec,
                to_json(&event.detail).unwrap_or_else(|_| "{}".into()),
            ])
        })
        .map(drop)
        .map_err(backend_error)
}

/// Writes `message`'s CREATED event at `seq`, the place its row kept for it; `spec` is its stored JSON.
pub(crate) fn insert_created(
    connection: &Connection,
    message: &Message,
    labels: &str,
    spec: &str,
    seq: i64,
) -> StoreResult<()> {
    let created = NewEvent {
        time: message.created_at,
        state: MessageState::Created,
        detail: EventDetail::default(),
    };
    write_event(connection, message, labels, (Some(seq), Some(spec)), &created)
}

/// Writes `message`'s CREATED event if its row still stands for it, and marks the row as written (the
/// kept seq turns negative). A message's first change writes the event before anything else touches its
/// log (a claim through its own `UPDATE`, a deletion through this), so the event is written once and
/// later events find the spec there.
pub(crate) fn log_created(connection: &Connection, message: &Message) -> StoreResult<()> {
    let kept: Option<(i64, String)> = connection
        .prepare_cached(
            "UPDATE messages SET log_seq = -log_seq WHERE account_id = ?1 AND id = ?2 AND log_seq > 0
             RETURNING -log_seq, spec",
        )
        .and_then(|mut statement| {
            statement
                .query_row(params![message.account_id.to_string(), message.id.0], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .optional()
        })
        .map_err(backend_error)?;
    match kept {
        Some((seq, spec)) => insert_created(connection, message, &to_json(&message.spec.labels)?, &spec, seq),
        None => Ok(()),
    }
}

/// Records a later event of `message` as the next in its account's log, its CREATED event being written
/// already (see `log_created`).
pub(crate) fn append_event(
    connection: &Connection,
    message: &Message,
    labels: &str,
    event: &NewEvent,
) -> StoreResult<()> {
    write_event(connection, message, labels, (None, None), event)
}

/// Records later events (CREATED being written already, see `log_created`), each as the next in its
/// account's log: the account's next seq is looked up once, and the events take the seqs after it in
/// order, instead of each event looking up the end of the log again.
pub(crate) fn append_events<'a>(
    connection: &Connection,
    events: impl IntoIterator<Item = (&'a Message, &'a str, &'a NewEvent)>,
) -> StoreResult<()> {
    let mut next: Vec<(quiver_core::AccountId, i64)> = Vec::new();
    for (message, labels, event) in events {
        let seq = match next
            .iter_mut()
            .find(|(account, _)| *account == message.account_id)
        {
            Some((_, seq)) => seq,
            None => {
                let first: i64 = connection
                    .prepare_cached(concat!("SELECT ", next_seq!()))
                    .and_then(|mut s| s.query_row([message.account_id.to_string()], |r| r.get(0)))
                    .map_err(backend_error)?;
                next.push((message.account_id, first));
                &mut next.last_mut().expect("just pushed").1
            }
        };
        write_event(connection, message, labels, (Some(*seq), None), event)?;
        *seq += 1;
    }
    Ok(())
}

/// Later events borrow the spec of their message's CREATED event. The lookup names its index: without
/// statistics, SQLite would rather scan the account's events in the primary key, which holds every
/// column, than use `events_by_message` and then the key.
pub(crate) const EVENT_COLUMNS: &str = "seq, time, message_id, state, COALESCE(spec, (SELECT c.spec FROM events c \
     INDEXED BY events_by_message \
     WHERE c.account_id = e.account_id AND c.message_id = e.message_id AND c.state = 'CREATED' LIMIT 1)), detail";

/// The CREATED events still kept in message rows (see `log_created`), as rows shaped like `events` for the
/// same filters. The detail is `EventDetail::default()`'s JSON. When the filter names messages, their
/// primary key finds them: the unary `+` keeps SQLite from walking all of the account's pending messages
/// in `messages_unlogged` for the order instead.
pub(crate) fn unlogged_created(by_message_id: bool) -> String {
    let pending = if by_message_id {
        "+log_seq > 0"
    } else {
        "log_seq > 0"
    };
    format!(
        "(SELECT account_id, log_seq AS seq, id AS message_id, created_at AS time, 'CREATED' AS state,
             json_extract(spec, '$.url') AS url, json_extract(spec, '$.topic_name') AS topic_name, queue_name,
             json_extract(spec, '$.schedule_id') AS schedule_id,
             COALESCE(json_extract(spec, '$.labels'), '[]') AS labels, spec, '{{}}' AS detail
         FROM messages WHERE {pending}) e"
    )
}

pub(crate) fn event_from_row(row: &Row<'_>) -> rusqlite::Result<(i64, Event)> {
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
            spec: MessageSpec::decode(&spec).map_err(|e| corrupt(4, e))?,
            detail: serde_json::from_str(&detail).map_err(|e| corrupt(5, e))?,
        },
    ))
}
