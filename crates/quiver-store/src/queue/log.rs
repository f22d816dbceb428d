//! Writing and reading accounts' event logs in `queue.db`. A message's CREATED event is kept in its row
//! (a positive `messages.log_seq`, see migration 9) until the message first changes; listings read those
//! rows as events in their place.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

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

/// Where each account's log ends: the next free seq, as this store's writer last wrote it. Finding it
/// in the database took two subqueries, about a quarter of the cost of a message's `INSERT`; every
/// event and every message row that takes a place in a log is written through this (`took`), so the
/// end is known after the first read. A place taken in a write that is rolled back stays taken: the log
/// skips a seq, which its order and cursors allow; a seq taken twice would fail the write.
#[derive(Debug, Default)]
pub(crate) struct LogEnds(Mutex<HashMap<String, i64>>);

impl LogEnds {
    /// The next free seq of `account`'s log.
    pub(crate) fn next(&self, connection: &Connection, account: &str) -> StoreResult<i64> {
        if let Some(end) = self.ends().get(account) {
            return Ok(*end);
        }
        let end: i64 = connection
            .prepare_cached(concat!("SELECT ", next_seq!()))
            .and_then(|mut s| s.query_row([account], |r| r.get(0)))
            .map_err(backend_error)?;
        self.ends().insert(account.to_owned(), end);
        Ok(end)
    }

    /// Notes the outcome of a write that took `seq` of `account`'s log. Written: the end moves past it,
    /// when the end is known (a place taken below the end, a CREATED event written where its message's
    /// row kept it, says nothing of an end not read yet). Failed: the end is forgotten, and the next
    /// write reads it again.
    pub(crate) fn took(&self, account: &str, seq: i64, written: rusqlite::Result<usize>) -> StoreResult<()> {
        let mut ends = self.ends();
        match written {
            Ok(_) => {
                if let Some(end) = ends.get_mut(account) {
                    *end = (*end).max(seq + 1);
                }
                Ok(())
            }
            Err(error) => {
                ends.remove(account);
                Err(backend_error(error))
            }
        }
    }

    fn ends(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The events a row stands for besides its own (see migration 11), with the default detail.
#[derive(Clone, Copy, Default)]
struct Carried {
    /// ACTIVE at the row's seq - 1, at this time (millis).
    active_at: Option<i64>,
    /// The message's CREATED event: its seq, at the message's creation time.
    created_seq: Option<i64>,
}

/// Writes one event of `message` at `seq`, with the events the row also stands for, and notes the place
/// taken in `ends`. A row that stands for CREATED carries the spec (`spec`, its stored JSON); other
/// events find it by message id.
fn write_event(
    connection: &Connection,
    ends: &LogEnds,
    message: &Message,
    labels: &str,
    (seq, spec): (i64, Option<&str>),
    carried: Carried,
    event: &NewEvent,
) -> StoreResult<()> {
    let fields = &message.spec;
    let account = message.account_id.to_string();
    let written = connection
        .prepare_cached(
            "INSERT INTO events (account_id, seq, message_id, time, state, url, topic_name, queue_name,
                 schedule_id, labels, spec, detail, active_at, created_seq, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )
        .and_then(|mut statement| {
            statement.execute(params![
                account,
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
                carried.active_at,
                carried.created_seq,
                carried.created_seq.map(|_| message.created_at.as_millis()),
            ])
        });
    ends.took(&account, seq, written)
}

/// Writes `message`'s CREATED event at `seq`, the place its row kept for it; `spec` is its stored JSON.
pub(crate) fn insert_created(
    connection: &Connection,
    ends: &LogEnds,
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
    write_event(
        connection,
        ends,
        message,
        labels,
        (seq, Some(spec)),
        Carried::default(),
        &created,
    )
}

/// Marks `message`'s row as no longer standing for its CREATED event (the kept seq turns negative) and
/// returns that event's seq and stored spec, if the row still stood for it: the caller writes the event.
pub(crate) fn take_created(connection: &Connection, message: &Message) -> StoreResult<Option<(i64, String)>> {
    connection
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
        .map_err(backend_error)
}

/// Writes `message`'s CREATED event if its row still stands for it, and marks the row as written (see
/// `take_created`). A message's first change writes the event before anything else touches its log, so
/// the event is written once and later events find the spec there.
pub(crate) fn log_created(connection: &Connection, ends: &LogEnds, message: &Message) -> StoreResult<()> {
    match take_created(connection, message)? {
        Some((seq, spec)) => insert_created(
            connection,
            ends,
            message,
            &to_json(&message.spec.labels)?,
            &spec,
            seq,
        ),
        None => Ok(()),
    }
}

/// A message's CREATED event that an attempt's record writes (see [`append_attempt`]).
#[derive(Clone, Copy)]
pub(crate) enum Created<'a> {
    /// Kept in the message's row until now: its seq and stored spec (see `take_created`).
    Kept(i64, &'a str),
    /// Never stored, since the message's delivery finished before its publish was written: it takes
    /// the next place in the log, with this spec.
    New(&'a str),
}

/// Records an attempt's events (ACTIVE, then the outcome's) as the next in its account's log, in as few
/// rows as the log allows: a leading ACTIVE with the default detail goes in the next event's row (at
/// that row's seq - 1), and `created`, the message's CREATED event still to be written, in the first
/// row. A first-try delivery is one row.
pub(crate) fn append_attempt(
    connection: &Connection,
    ends: &LogEnds,
    message: &Message,
    labels: &str,
    created: Option<Created<'_>>,
    events: &[NewEvent],
) -> StoreResult<()> {
    let (active_at, rest) = match events {
        [first, rest @ ..]
            if !rest.is_empty()
                && first.state == MessageState::Active
                && first.detail == EventDetail::default() =>
        {
            (Some(first.time.as_millis()), rest)
        }
        _ => (None, events),
    };
    // The CREATED event's seq is no longer kept in a message row, so the end of the log is looked up
    // past it too.
    let end = ends.next(connection, &message.account_id.to_string())?;
    let created = created.map(|created| match created {
        Created::Kept(seq, spec) => (seq, spec),
        Created::New(spec) => (end, spec),
    });
    let Some((first, later)) = rest.split_first() else {
        if let Some((seq, spec)) = created {
            insert_created(connection, ends, message, labels, spec, seq)?;
        }
        return Ok(());
    };
    let mut seq = end;
    if let Some((created_seq, _)) = created {
        seq = seq.max(created_seq + 1);
    }
    if active_at.is_some() {
        seq += 1;
    }
    let carried = Carried {
        active_at,
        created_seq: created.map(|(seq, _)| seq),
    };
    write_event(
        connection,
        ends,
        message,
        labels,
        (seq, created.map(|(_, spec)| spec)),
        carried,
        first,
    )?;
    for event in later {
        seq += 1;
        write_event(
            connection,
            ends,
            message,
            labels,
            (seq, None),
            Carried::default(),
            event,
        )?;
    }
    Ok(())
}

/// Records a later event of `message` as the next in its account's log, its CREATED event being written
/// already (see `log_created`).
pub(crate) fn append_event(
    connection: &Connection,
    ends: &LogEnds,
    message: &Message,
    labels: &str,
    event: &NewEvent,
) -> StoreResult<()> {
    let seq = ends.next(connection, &message.account_id.to_string())?;
    write_event(
        connection,
        ends,
        message,
        labels,
        (seq, None),
        Carried::default(),
        event,
    )
}

/// An event's spec: rows that stand for a CREATED event carry it, other rows borrow their message's. The
/// lookup names its index: without statistics, SQLite would rather scan the account's events in the
/// primary key, which holds every column, than use `events_by_message` and then the key.
pub(crate) const EVENT_SPEC: &str = "COALESCE(spec, (SELECT c.spec FROM events c INDEXED BY events_by_message \
     WHERE c.account_id = e.account_id AND c.message_id = e.message_id AND c.spec IS NOT NULL LIMIT 1))";

/// One of the ways `queue.db` keeps an account's events, read as rows of `seq, time, message_id, state,
/// spec, detail` (see `stored_event_from_row`). A listing reads each part newest first and merges them.
pub(crate) struct LogPart {
    /// The `FROM` clause, its rows named `e`, with the columns a filter's conditions name.
    pub table: String,
    pub columns: String,
    /// The column the part is ordered by, which the cursor is compared with: an event's seq plus `shift`.
    pub order: &'static str,
    pub shift: i64,
    /// The column a filter's time range applies to.
    pub time: &'static str,
    /// A condition every row of the part meets, if any.
    pub condition: Option<String>,
    /// The state of all the part's events, which a filter's states need not be checked against;
    /// `None`: each row's `state`.
    pub state: Option<MessageState>,
}

/// The parts of the log (see migrations 9 and 11) that a filter on `states` (none: any state) reads:
/// - the rows' own events: every row for a filter that takes DELIVERED (or any state), and otherwise
///   the rows of each state the filter names, through `events_unusual` (each state's rows there are in
///   log order), rather than looking for them among all the DELIVERED rows;
/// - the ACTIVE events rows stand for at their seq - 1; the CREATED events rows stand for at
///   `created_seq`; and the CREATED events still kept in message rows.
///
/// When the filter names messages, `events_by_message` finds their rows.
pub(crate) fn log_parts(by_message_id: bool, states: &[MessageState]) -> Vec<LogPart> {
    let [events, unusual, created] = if by_message_id {
        ["events e INDEXED BY events_by_message"; 3]
    } else {
        [
            "events e",
            "events e INDEXED BY events_unusual",
            "events e INDEXED BY events_created",
        ]
    };
    let default_detail = "'{}'";
    let wanted = |state| states.is_empty() || states.contains(&state);
    let own = |table: &str, condition, state| LogPart {
        table: table.into(),
        columns: format!("seq, time, message_id, state, {EVENT_SPEC}, detail"),
        order: "seq",
        shift: 0,
        time: "time",
        condition,
        state,
    };
    let mut parts = Vec::new();
    if wanted(MessageState::Delivered) {
        parts.push(own(events, None, None));
    } else {
        let mut named: Vec<MessageState> = states.to_vec();
        named.sort_unstable_by_key(|state| state.as_str());
        named.dedup();
        for state in named {
            // The state is spelled out: `events_unusual` serves a query that repeats its condition.
            let condition = format!("state <> 'DELIVERED' AND state = '{}'", state.as_str());
            parts.push(own(unusual, Some(condition), Some(state)));
        }
    }
    if wanted(MessageState::Active) {
        parts.push(LogPart {
            table: events.into(),
            columns: format!("seq - 1, active_at, message_id, 'ACTIVE', {EVENT_SPEC}, {default_detail}"),
            order: "seq",
            shift: 1,
            time: "active_at",
            condition: Some("active_at IS NOT NULL".into()),
            state: Some(MessageState::Active),
        });
    }
    if wanted(MessageState::Created) {
        parts.push(LogPart {
            table: created.into(),
            columns: format!("created_seq, created_at, message_id, 'CREATED', spec, {default_detail}"),
            order: "created_seq",
            shift: 0,
            time: "created_at",
            condition: Some("created_seq IS NOT NULL".into()),
            state: Some(MessageState::Created),
        });
        parts.push(LogPart {
            table: unlogged_created(by_message_id),
            columns: "seq, time, message_id, state, spec, detail".into(),
            order: "seq",
            shift: 0,
            time: "time",
            condition: None,
            state: Some(MessageState::Created),
        });
    }
    parts
}

/// The CREATED events still kept in message rows (see `log_created`), as rows shaped like `events` for the
/// same filters. The detail is `EventDetail::default()`'s JSON. When the filter names messages, their
/// primary key finds them: the unary `+` keeps SQLite from walking all of the account's pending messages
/// in `messages_unlogged` for the order instead.
fn unlogged_created(by_message_id: bool) -> String {
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

/// An event as its part of the log reads it, its text columns not yet decoded: a listing reads more rows
/// than it keeps (a page from each part) and decodes only the page's.
pub(crate) struct StoredEvent {
    time: i64,
    message_id: String,
    state: String,
    spec: String,
    detail: String,
}

pub(crate) fn stored_event_from_row(row: &Row<'_>) -> rusqlite::Result<(i64, StoredEvent)> {
    Ok((
        row.get(0)?,
        StoredEvent {
            time: row.get(1)?,
            message_id: row.get(2)?,
            state: row.get(3)?,
            spec: row.get(4)?,
            detail: row.get(5)?,
        },
    ))
}

impl StoredEvent {
    pub(crate) fn decode(self, sequence: i64) -> rusqlite::Result<Event> {
        Ok(Event {
            sequence,
            time: Timestamp::from_millis(self.time),
            message_id: MessageId(self.message_id),
            state: MessageState::parse(&self.state).ok_or_else(|| corrupt(3, std::fmt::Error))?,
            spec: MessageSpec::decode(&self.spec).map_err(|e| corrupt(4, e))?,
            detail: serde_json::from_str(&self.detail).map_err(|e| corrupt(5, e))?,
        })
    }
}
