//! Dead letters and the events log: their filters and cursor pages, retrying and deleting dead letters,
//! and pruning both by age in small steps (short transactions, so that vacuum is never held back long).

use std::sync::Arc;

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use quiver_queue::message::{
    DeadLetter, Event, FailureCallbackInfo, FailureCallbackState, Message, MessageId, MessageSpec,
    MessageState, NewMessage,
};
use quiver_queue::store::{DeadLetterStore, EventLogStore, Filter, LogPosition, Page};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::database::backend_error;
use crate::hints::Hint;
use crate::queue::messages::set_failure_callback;
use crate::queue::publish::insert_messages;
use crate::queue::rows::{account_of, corrupt, count, json};
use crate::queue::store::PgQueueStore;

/// An event's spec: CREATED events carry it, later events borrow their message's.
const EVENT_SPEC: &str = "COALESCE(e.spec, (SELECT c.spec FROM events c WHERE c.account_id = e.account_id \
     AND c.message_id = e.message_id AND (c.state = 'CREATED' OR c.created_at IS NOT NULL) LIMIT 1))";

type Value = Box<dyn ToSql + Sync + Send>;

/// `WHERE` conditions and their values, numbered as they are added.
struct Conditions {
    sql: Vec<String>,
    values: Vec<Value>,
}

impl Conditions {
    fn new() -> Conditions {
        Conditions {
            sql: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Adds `template` with `$` standing for the value's placeholder.
    fn add(&mut self, template: &str, value: Value) {
        self.values.push(value);
        self.sql
            .push(template.replace('$', &format!("${}", self.values.len())));
    }

    /// `expression` is one of `items` (no items: no condition).
    fn any_of<T: ToSql + Sync + Send + Clone + 'static>(&mut self, expression: &str, items: &[T]) {
        if !items.is_empty() {
            self.add(&format!("{expression} = ANY($)"), Box::new(items.to_vec()));
        }
    }

    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.values
            .iter()
            .map(|v| v.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
}

/// What a listing reads: the DLQ (`d`), or the events log (`e`, each row with the events it stands for
/// besides its own, `x`).
#[derive(Clone, Copy, PartialEq)]
enum Part {
    DeadLetters,
    Events,
}

/// The events a row of `events` stands for, as `x`: its own, at its seq, and those it carries, the
/// attempt's ACTIVE event at seq - 1 (`active_at`, migration 8) and the message's CREATED event at
/// seq - 2 (`created_at`, migration 9); a carried event's time is null where the row has none. A row's
/// events lie at or below its seq and above the row before it (the sequence steps by two from
/// migration 8 and by three from migration 9, so the places a row can carry are free), so reading rows
/// newest first and each row's events newest first reads the log in order, in one pass of the primary
/// key: a page of a log that carries few events is no longer a part of its own, read far back to find
/// the few.
const EVENTS_EXPANDED: &str = "events e CROSS JOIN LATERAL (VALUES (e.seq, e.time, e.state, e.detail), \
     (e.seq - 1, e.active_at, 'ACTIVE', '{}'), (e.seq - 2, e.created_at, 'CREATED', '{}')) \
     x(place, time, state, detail)";

/// How far below its row's seq an event of [`EVENTS_EXPANDED`] may lie.
const CARRIED_REACH: i64 = 2;

/// The states whose rows `events_rare` (migration 10) holds: those a healthy log seldom has. No row
/// carries an event of them.
const RARE_STATES: [MessageState; 5] = [
    MessageState::Retry,
    MessageState::Error,
    MessageState::Failed,
    MessageState::CancelRequested,
    MessageState::Canceled,
];

/// The states a listing of the log asks for, each once, when all are [`RARE_STATES`]: it then reads
/// each state's rows through their index, rather than looking for them among every delivery.
fn rare_states(part: Part, filter: &Filter) -> Option<Vec<MessageState>> {
    let mut states = filter.states.clone();
    if part != Part::Events || states.is_empty() || !states.iter().all(|s| RARE_STATES.contains(s)) {
        return None;
    }
    states.sort_unstable_by_key(|state| state.as_str());
    states.dedup();
    Some(states)
}

/// Conditions for a filter over the DLQ or the log, added to `c`.
fn filter_conditions(c: &mut Conditions, account: AccountId, filter: &Filter, part: Part) {
    let is_dead_letters = part == Part::DeadLetters;
    let (alias, spec, time) = match part {
        Part::DeadLetters => ("d", "d.spec", "d.failed_at"),
        Part::Events => ("e", EVENT_SPEC, "x.time"),
    };
    c.add(&format!("{alias}.account_id = $"), Box::new(account.to_string()));
    c.any_of(&format!("{alias}.message_id"), &filter.message_ids);
    if is_dead_letters {
        c.any_of("d.dlq_id", &filter.dlq_ids);
        let statuses: Vec<i32> = filter.response_statuses.iter().map(|s| i32::from(*s)).collect();
        c.any_of("d.response_status", &statuses);
        c.any_of(
            &format!("(({spec})::JSONB ->> 'workflow_run_id')"),
            &filter.workflow_run_ids,
        );
        c.any_of(
            &format!("(({spec})::JSONB ->> 'workflow_url')"),
            &filter.workflow_urls,
        );
        if filter.workflow_only {
            c.sql
                .push(format!("(({spec})::JSONB ->> 'workflow_run_id') IS NOT NULL"));
        }
        let states: Vec<String> = filter
            .failure_callback_states
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect();
        c.any_of("(d.failure_callback::JSONB ->> 'state')", &states);
        if let Some(created_at) = filter.workflow_created_at {
            c.add(
                &format!(
                    "(({spec})::JSONB ->> 'workflow_run_id') IN
                         (SELECT r.id FROM workflow_runs r WHERE r.account_id = d.account_id AND r.created_at = $)"
                ),
                Box::new(created_at.as_millis()),
            );
        }
    } else {
        c.sql.push("x.time IS NOT NULL".to_owned());
        if !filter.states.is_empty() {
            let states: Vec<String> = filter.states.iter().map(|s| s.as_str().to_owned()).collect();
            c.any_of("x.state", &states);
            // The same test on the row, before its events are spread: it passes rows whose own state,
            // or an event they carry, is asked for, and so spares reading the others' events.
            let mut row = vec![format!("e.state = ANY(${})", c.values.len())];
            for (state, column) in [
                (MessageState::Active, "active_at"),
                (MessageState::Created, "created_at"),
            ] {
                if filter.states.contains(&state) {
                    row.push(format!("e.{column} IS NOT NULL"));
                }
            }
            c.sql.push(format!("({})", row.join(" OR ")));
        }
        c.any_of("e.host", &filter.hosts);
        c.any_of("e.path", &filter.paths);
    }
    c.any_of(&format!("{alias}.url"), &filter.urls);
    c.any_of(&format!("{alias}.topic_name"), &filter.topic_names);
    c.any_of(&format!("{alias}.queue_name"), &filter.queue_names);
    c.any_of(&format!("{alias}.schedule_id"), &filter.schedule_ids);
    c.any_of(
        &format!("(({spec})::JSONB -> 'flow_control' ->> 'key')"),
        &filter.flow_control_keys,
    );
    c.any_of(&format!("(({spec})::JSONB ->> 'caller_ip')"), &filter.caller_ips);
    if !filter.labels.is_empty() {
        c.add(
            &format!(
                "EXISTS (SELECT 1 FROM JSONB_ARRAY_ELEMENTS_TEXT({alias}.labels::JSONB) l WHERE l = ANY($))"
            ),
            Box::new(filter.labels.clone()),
        );
    }
    if let Some(from) = filter.from {
        c.add(&format!("{time} >= $"), Box::new(from.as_millis()));
    }
    if let Some(to) = filter.to {
        c.add(&format!("{time} <= $"), Box::new(to.as_millis()));
    }
}

/// A listing's query: `columns` (the first is the item's place in the listing) from `from`, newest
/// first, where the filter's conditions (added to `values`) hold.
struct Select {
    from: &'static str,
    columns: String,
    /// The item's place, and its row's seq, which lies at most `reach` above it.
    place: &'static str,
    seq: &'static str,
    reach: i64,
}

impl Select {
    fn of(part: Part) -> Select {
        match part {
            Part::DeadLetters => Select {
                from: "dead_letters d",
                columns: DEAD_LETTER_COLUMNS.to_owned(),
                place: "d.seq",
                seq: "d.seq",
                reach: 0,
            },
            Part::Events => Select {
                from: EVENTS_EXPANDED,
                columns: format!("x.place, x.time, e.message_id, x.state, {EVENT_SPEC}, x.detail"),
                place: "x.place",
                seq: "e.seq",
                reach: CARRIED_REACH,
            },
        }
    }
}

impl PgQueueStore {
    /// One page of `part` that passes `filter`, newest first, below the place in `cursor`.
    async fn newest<T>(
        &self,
        part: Part,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        page_size: usize,
        from_row: impl Fn(&Row) -> StoreResult<(i64, T)>,
    ) -> StoreResult<Page<T>> {
        let mut values = Conditions::new();
        filter_conditions(&mut values, account, filter, part);
        let Select {
            from,
            columns,
            place,
            seq,
            reach,
        } = Select::of(part);
        // The HTTP layer refuses a cursor that is not a whole number; one that still is not a seq reads
        // from the newest, as on SQLite (`cursor_seq` there).
        if let Some(cursor) = cursor.and_then(|c| c.parse::<i64>().ok()) {
            // The row's bound lets the primary key start at the cursor; the item's picks within the row.
            values.add(&format!("{seq} < $::BIGINT + {reach}"), Box::new(cursor));
            if place != seq {
                values.add(&format!("{place} < $::BIGINT"), Box::new(cursor));
            }
        }
        values.values.push(Box::new(count(page_size + 1)));
        let limit = values.values.len();
        let conditions = values.sql.join(" AND ");
        let select = |only: &str, order: &str| {
            format!("SELECT {columns} FROM {from} WHERE {conditions}{only} ORDER BY {order} LIMIT ${limit}")
        };
        let sql = match rare_states(part, filter) {
            // Each state's rows through `events_rare`, newest first, and the parts merged. Only a row's
            // own event can pass, so its seq orders them.
            Some(states) => format!(
                "SELECT * FROM (({})) u ORDER BY 1 DESC LIMIT ${limit}",
                states
                    .iter()
                    .map(|state| select(
                        &format!(" AND e.state = '{}'", state.as_str()),
                        &format!("{seq} DESC")
                    ))
                    .collect::<Vec<_>>()
                    .join(") UNION ALL (")
            ),
            None if place == seq => select("", &format!("{seq} DESC")),
            None => select("", &format!("{seq} DESC, {place} DESC")),
        };
        let client = self.database.client().await?;
        let rows = client
            .query(&sql, &values.params())
            .await
            .map_err(backend_error)?;
        let items = rows.iter().map(from_row).collect::<StoreResult<Vec<_>>>()?;
        Ok(Page::from_newest(items, page_size))
    }
}

const DEAD_LETTER_COLUMNS: &str = "d.seq, d.dlq_id, d.account_id, d.message_id, d.retried, d.not_before, \
     d.created_at, d.spec, d.body, d.response_status, d.response_headers, d.response_body, d.failed_at, \
     d.failure_callback";

fn dead_letter_from_row(row: &Row) -> StoreResult<(i64, DeadLetter)> {
    let dlq_id: String = row.get(1);
    let what = format!("dead letter {dlq_id}");
    let failure_callback: Option<&str> = row.get(13);
    Ok((
        row.get(0),
        DeadLetter {
            message: Message {
                id: MessageId(row.get(3)),
                account_id: account_of(row.get(2))?,
                retried: u32::try_from(row.get::<_, i64>(4)).unwrap_or(u32::MAX),
                not_before: Timestamp::from_millis(row.get(5)),
                created_at: Timestamp::from_millis(row.get(6)),
                spec: MessageSpec::decode(row.get(7)).map_err(|e| corrupt(&what, e))?,
                body: row.get(8),
            },
            response_status: row.get::<_, Option<i32>>(9).and_then(|s| u16::try_from(s).ok()),
            response_headers: serde_json::from_str(row.get(10)).map_err(|e| corrupt(&what, e))?,
            response_body: row.get(11),
            failed_at: Timestamp::from_millis(row.get(12)),
            failure_callback: failure_callback
                .map(serde_json::from_str)
                .transpose()
                .map_err(|e| corrupt(&what, e))?,
            dlq_id,
        },
    ))
}

fn event_from_row(row: &Row) -> StoreResult<(i64, Event)> {
    let sequence: i64 = row.get(0);
    let what = format!("event {sequence}");
    let state: &str = row.get(3);
    let spec: Option<&str> = row.get(4);
    Ok((
        sequence,
        Event {
            sequence,
            time: Timestamp::from_millis(row.get(1)),
            message_id: MessageId(row.get(2)),
            state: MessageState::parse(state).ok_or_else(|| corrupt(&what, format!("state `{state}`")))?,
            spec: MessageSpec::decode(
                spec.ok_or_else(|| corrupt(&what, "its message has no CREATED event"))?,
            )
            .map_err(|e| corrupt(&what, e))?,
            detail: serde_json::from_str(row.get(5)).map_err(|e| corrupt(&what, e))?,
        },
    ))
}

#[async_trait]
impl DeadLetterStore for PgQueueStore {
    async fn dead_letters(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> StoreResult<Page<DeadLetter>> {
        self.newest(
            Part::DeadLetters,
            account,
            filter,
            cursor,
            count,
            dead_letter_from_row,
        )
        .await
    }

    async fn delete_dead_letters(&self, account: AccountId, dlq_ids: &[String]) -> StoreResult<u64> {
        let client = self.database.client().await?;
        client
            .execute(
                "DELETE FROM dead_letters WHERE account_id = $1 AND dlq_id = ANY($2)",
                &[&account.to_string(), &dlq_ids],
            )
            .await
            .map_err(backend_error)
    }

    async fn retry_failure_callback(
        &self,
        account: AccountId,
        dlq_id: &str,
        callback: NewMessage,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let work = Arc::new((dlq_id.to_owned(), callback));
        let node = self.database.node();
        self.database
            .write(move |t| {
                let work = Arc::clone(&work);
                Box::pin(async move {
                    let (dlq_id, callback) = &*work;
                    let in_progress = FailureCallbackInfo {
                        state: FailureCallbackState::InProgress,
                        response_status: None,
                        response_body: None,
                        response_headers: Vec::new(),
                        message_id: Some(callback.message.id.clone()),
                    };
                    if !set_failure_callback(t, account, dlq_id, &in_progress).await? {
                        return Ok(false);
                    }
                    insert_messages(t, &[callback], now, node).await?;
                    Ok(true)
                })
            })
            .await
            .inspect(|_| self.database.hint(Hint::Due))
    }

    async fn cancel_failure_callback(&self, account: AccountId, dlq_id: &str) -> StoreResult<bool> {
        let cancelled = json(&FailureCallbackInfo::cancelled())?;
        let changed = self
            .database
            .client()
            .await?
            .execute(
                "UPDATE dead_letters SET failure_callback = $3
                 WHERE account_id = $1 AND dlq_id = $2 AND failure_callback::JSONB ->> 'state' = $4",
                &[
                    &account.to_string(),
                    &dlq_id,
                    &cancelled,
                    &FailureCallbackState::InProgress.as_str(),
                ],
            )
            .await
            .map_err(backend_error)?;
        Ok(changed == 1)
    }

    async fn retry_dead_letter(
        &self,
        account: AccountId,
        dlq_id: &str,
        replacement: NewMessage,
        now: Timestamp,
    ) -> StoreResult<Option<MessageId>> {
        let work = Arc::new((dlq_id.to_owned(), replacement));
        let node = self.database.node();
        self.database
            .write(move |t| {
                let work = Arc::clone(&work);
                Box::pin(async move {
                    let (dlq_id, replacement) = &*work;
                    let removed = t
                        .execute(
                            "DELETE FROM dead_letters WHERE account_id = $1 AND dlq_id = $2",
                            &[&account.to_string(), dlq_id],
                        )
                        .await?;
                    if removed == 0 {
                        return Ok(None);
                    }
                    let stored = insert_messages(t, &[replacement], now, node).await?;
                    Ok(stored.into_iter().next().map(|e| e.message_id))
                })
            })
            .await
            .inspect(|_| self.database.hint(Hint::Due))
    }

    async fn prune_dead_letters(&self, older_than: Timestamp, window: usize) -> StoreResult<u64> {
        let client = self.database.client().await?;
        client
            .execute(
                "DELETE FROM dead_letters WHERE failed_at < $1
                     AND seq IN (SELECT seq FROM dead_letters ORDER BY seq LIMIT $2)",
                &[&older_than.as_millis(), &count(window)],
            )
            .await
            .map_err(backend_error)
    }
}

#[async_trait]
impl EventLogStore for PgQueueStore {
    /// One row per round kind: the node whose update moves `next_at` runs the round.
    async fn claim_retention_round(&self, now: Timestamp, next_round: Timestamp) -> StoreResult<bool> {
        let client = self.database.client().await?;
        let claimed = client
            .execute(
                "INSERT INTO rounds (name, next_at) VALUES ('retention', $2)
                 ON CONFLICT (name) DO UPDATE SET next_at = excluded.next_at WHERE rounds.next_at <= $1",
                &[&now.as_millis(), &next_round.as_millis()],
            )
            .await
            .map_err(backend_error)?;
        Ok(claimed == 1)
    }

    async fn events(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> StoreResult<Page<Event>> {
        self.newest(Part::Events, account, filter, cursor, count, event_from_row)
            .await
    }

    async fn prune_log(
        &self,
        older_than: Timestamp,
        window: usize,
        from: Option<LogPosition>,
    ) -> StoreResult<(u64, Option<LogPosition>)> {
        let client = self.database.client().await?;
        let next_account = |after: String| {
            let client = &client;
            async move {
                client
                    .query_opt(
                        "SELECT account_id FROM events WHERE account_id > $1 ORDER BY account_id LIMIT 1",
                        &[&after],
                    )
                    .await
                    .map_err(backend_error)
                    .map(|row| {
                        row.map(|r| LogPosition {
                            account: r.get(0),
                            seq: i64::MIN,
                        })
                    })
            }
        };
        let position = match from {
            Some(position) => position,
            None => match next_account(String::new()).await? {
                Some(position) => position,
                None => return Ok((0, None)),
            },
        };
        let (window, older_than) = (count(window), older_than.as_millis());
        let row = client
            .query_one(
                "SELECT MAX(seq), MIN(time) FROM (
                     SELECT seq, time FROM events WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3) w",
                &[&position.account, &position.seq, &window],
            )
            .await
            .map_err(backend_error)?;
        let (last_seq, oldest): (Option<i64>, Option<i64>) = (row.get(0), row.get(1));
        // Events follow each other in time, so a window that starts after the cutoff ends this account.
        let Some(last_seq) = last_seq.filter(|_| oldest.is_some_and(|time| time < older_than)) else {
            return Ok((0, next_account(position.account).await?));
        };
        let deleted = client
            .execute(
                "DELETE FROM events WHERE account_id = $1 AND message_id IN (
                     SELECT old.message_id FROM (
                         SELECT DISTINCT message_id FROM (
                             SELECT message_id, time FROM events WHERE account_id = $1 AND seq > $4
                             ORDER BY seq LIMIT $3) w
                         WHERE time < $2) old
                     WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.account_id = $1 AND m.id = old.message_id)
                       AND NOT EXISTS (SELECT 1 FROM events newer
                           WHERE newer.account_id = $1 AND newer.message_id = old.message_id AND newer.time >= $2))",
                &[&position.account, &older_than, &window, &position.seq],
            )
            .await
            .map_err(backend_error)?;
        Ok((
            deleted,
            Some(LogPosition {
                account: position.account,
                seq: last_seq,
            }),
        ))
    }
}
