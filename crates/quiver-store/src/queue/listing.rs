//! Listing dead letters and events (filter conditions and cursor pages over `queue.db`), and pruning
//! both by age.

use quiver_core::AccountId;
use quiver_core::store::StoreResult;
use quiver_queue::store::{Filter, LogPosition, Page};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row, params_from_iter};

use crate::queue::log::EVENT_SPEC;
use crate::queue::rows::read_error;

/// Builds `WHERE` conditions for a filter over the DLQ (`time_column` failed_at) or events (time). Each
/// filter given is one condition, its values alternatives.
pub(crate) fn filter_sql(
    account: AccountId,
    filter: &Filter,
    time_column: &str,
    is_dead_letters: bool,
) -> (String, Vec<SqlValue>) {
    let mut conditions = vec!["account_id = ?".to_owned()];
    let mut values: Vec<SqlValue> = vec![SqlValue::Text(account.to_string())];
    let mut any_of = |expression: &str, items: Vec<SqlValue>| {
        if !items.is_empty() {
            conditions.push(format!("{expression} IN ({})", vec!["?"; items.len()].join(", ")));
            values.extend(items);
        }
    };
    let texts = |items: &[String]| items.iter().cloned().map(SqlValue::Text).collect::<Vec<_>>();
    let spec = if is_dead_letters { "spec" } else { EVENT_SPEC };
    any_of("message_id", texts(&filter.message_ids));
    if is_dead_letters {
        any_of("dlq_id", texts(&filter.dlq_ids));
        any_of(
            "response_status",
            filter
                .response_statuses
                .iter()
                .map(|s| SqlValue::Integer(i64::from(*s)))
                .collect(),
        );
        any_of(
            &format!("json_extract({spec}, '$.workflow_run_id')"),
            texts(&filter.workflow_run_ids),
        );
        any_of(
            &format!("json_extract({spec}, '$.workflow_url')"),
            texts(&filter.workflow_urls),
        );
    } else {
        any_of(
            "state",
            filter
                .states
                .iter()
                .map(|s| SqlValue::Text(s.as_str().to_owned()))
                .collect(),
        );
        any_of("url_host(url)", texts(&filter.hosts));
        any_of("url_path(url)", texts(&filter.paths));
    }
    any_of("url", texts(&filter.urls));
    any_of("topic_name", texts(&filter.topic_names));
    any_of("queue_name", texts(&filter.queue_names));
    any_of("schedule_id", texts(&filter.schedule_ids));
    any_of(
        &format!("json_extract({spec}, '$.flow_control.key')"),
        texts(&filter.flow_control_keys),
    );
    any_of(
        &format!("json_extract({spec}, '$.caller_ip')"),
        texts(&filter.caller_ips),
    );
    if !filter.labels.is_empty() {
        conditions.push(format!(
            "EXISTS (SELECT 1 FROM json_each(labels) WHERE value IN ({}))",
            vec!["?"; filter.labels.len()].join(", ")
        ));
        values.extend(texts(&filter.labels));
    }
    if is_dead_letters && filter.workflow_only {
        conditions.push("json_extract(spec, '$.workflow_run_id') IS NOT NULL".into());
    }
    if is_dead_letters {
        any_of_states(
            &mut conditions,
            &mut values,
            filter.failure_callback_states.iter().map(|s| s.as_str()),
        );
    }
    if is_dead_letters && let Some(created_at) = filter.workflow_created_at {
        conditions.push(
            "json_extract(spec, '$.workflow_run_id') IN \
             (SELECT r.id FROM workflow_runs r WHERE r.account_id = ? AND r.created_at = ?)"
                .into(),
        );
        values.push(SqlValue::Text(account.to_string()));
        values.push(SqlValue::Integer(created_at.as_millis()));
    }
    if let Some(from) = filter.from {
        conditions.push(format!("{time_column} >= ?"));
        values.push(SqlValue::Integer(from.as_millis()));
    }
    if let Some(to) = filter.to {
        conditions.push(format!("{time_column} <= ?"));
        values.push(SqlValue::Integer(to.as_millis()));
    }
    (conditions.join(" AND "), values)
}

/// `failure_callback`'s state is one of `states` (none given: no condition).
fn any_of_states<'a>(
    conditions: &mut Vec<String>,
    values: &mut Vec<SqlValue>,
    states: impl Iterator<Item = &'a str>,
) {
    let states: Vec<SqlValue> = states.map(|s| SqlValue::Text(s.to_owned())).collect();
    if !states.is_empty() {
        conditions.push(format!(
            "json_extract(failure_callback, '$.state') IN ({})",
            vec!["?"; states.len()].join(", ")
        ));
        values.extend(states);
    }
}

/// Reads one page, newest first, starting below the sequence number in `cursor`.
pub(crate) fn page<T>(
    connection: &Connection,
    table: &str,
    columns: &str,
    conditions: (String, Vec<SqlValue>),
    cursor: Option<&str>,
    count: usize,
    from_row: impl Fn(&Row<'_>) -> rusqlite::Result<(i64, T)>,
) -> StoreResult<Page<T>> {
    let items = newest(connection, table, columns, conditions, cursor, count, from_row)?;
    Ok(Page::from_newest(items, count))
}

/// Reads up to `count + 1` rows, newest first, below the sequence number in `cursor`: one more than a page,
/// to tell whether another page follows.
pub(crate) fn newest<T>(
    connection: &Connection,
    table: &str,
    columns: &str,
    conditions: (String, Vec<SqlValue>),
    cursor: Option<&str>,
    count: usize,
    from_row: impl Fn(&Row<'_>) -> rusqlite::Result<(i64, T)>,
) -> StoreResult<Vec<(i64, T)>> {
    newest_by(
        connection,
        (table, columns, "seq"),
        conditions,
        (None, cursor_seq(cursor)),
        count,
        from_row,
    )
}

/// The seq a page's cursor names, which the page's items lie below. The HTTP layer refuses a cursor that
/// is not a whole number; one that still is not a seq reads from the newest, on both backends.
pub(crate) fn cursor_seq(cursor: Option<&str>) -> Option<i64> {
    cursor.and_then(|c| c.parse::<i64>().ok())
}

/// As `newest`, ordered by the column `order` of `table`, whose values between `above` and `below` (each
/// bound left out, and `None`: none) are read.
pub(crate) fn newest_by<T>(
    connection: &Connection,
    (table, columns, order): (&str, &str, &str),
    (conditions, mut values): (String, Vec<SqlValue>),
    (above, below): (Option<i64>, Option<i64>),
    count: usize,
    from_row: impl Fn(&Row<'_>) -> rusqlite::Result<(i64, T)>,
) -> StoreResult<Vec<(i64, T)>> {
    let mut sql = format!("SELECT {columns} FROM {table} WHERE {conditions}");
    if let Some(above) = above {
        sql.push_str(&format!(" AND {order} > ?"));
        values.push(SqlValue::Integer(above));
    }
    if let Some(below) = below {
        sql.push_str(&format!(" AND {order} < ?"));
        values.push(SqlValue::Integer(below));
    }
    sql.push_str(&format!(" ORDER BY {order} DESC LIMIT ?"));
    values.push(SqlValue::Integer(
        i64::try_from(count.saturating_add(1)).unwrap_or(i64::MAX),
    ));
    let mut statement = connection.prepare(&sql).map_err(read_error)?;
    let rows = statement
        .query_map(params_from_iter(values), from_row)
        .map_err(read_error)?;
    rows.collect::<Result<_, _>>().map_err(read_error)
}

/// Deletes the events of finished messages whose newest event is older than `older_than`, among the
/// messages of up to `window` events from `from` on (see `QueueStore::prune_log`).
pub(crate) fn prune_log(
    connection: &Connection,
    older_than: i64,
    window: usize,
    from: Option<LogPosition>,
) -> StoreResult<(u64, Option<LogPosition>)> {
    let window = i64::try_from(window).unwrap_or(i64::MAX);
    let position = match from {
        Some(position) => position,
        None => match next_account(connection, "")? {
            Some(position) => position,
            None => return Ok((0, None)),
        },
    };
    let (last_seq, oldest): (Option<i64>, Option<i64>) = connection
        .prepare_cached(
            "SELECT MAX(seq), MIN(time) FROM (
                 SELECT seq, time FROM events WHERE account_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3)",
        )
        .and_then(|mut s| {
            s.query_row(rusqlite::params![position.account, position.seq, window], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
        })
        .map_err(read_error)?;
    // Events follow each other in time, so a window that starts after the cutoff ends this account.
    let Some(last_seq) = last_seq.filter(|_| oldest.is_some_and(|time| time < older_than)) else {
        return Ok((0, next_account(connection, &position.account)?));
    };
    let deleted = connection
        .prepare_cached(
            "DELETE FROM events WHERE account_id = ?1 AND message_id IN (
                 SELECT old.message_id FROM (
                     SELECT DISTINCT message_id FROM (
                         SELECT message_id, time FROM events WHERE account_id = ?1 AND seq > ?4
                         ORDER BY seq LIMIT ?3)
                     WHERE time < ?2) old
                 WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.account_id = ?1 AND m.id = old.message_id)
                   AND NOT EXISTS (SELECT 1 FROM events newer INDEXED BY events_by_message
                       WHERE newer.account_id = ?1 AND newer.message_id = old.message_id AND newer.time >= ?2))",
        )
        .and_then(|mut s| s.execute(rusqlite::params![position.account, older_than, window, position.seq]))
        .map_err(crate::database::backend_error)? as u64;
    Ok((
        deleted,
        Some(LogPosition {
            account: position.account,
            seq: last_seq,
        }),
    ))
}

/// The start of the first account's log after `after` (one seek, not a scan for the distinct accounts).
fn next_account(connection: &Connection, after: &str) -> StoreResult<Option<LogPosition>> {
    connection
        .prepare_cached("SELECT account_id FROM events WHERE account_id > ?1 ORDER BY account_id LIMIT 1")
        .and_then(|mut s| s.query_row([after], |r| r.get::<_, String>(0)).optional())
        .map(|account| {
            account.map(|account| LogPosition {
                account,
                seq: i64::MIN,
            })
        })
        .map_err(read_error)
}

/// Deletes the dead letters among the `window` oldest that failed before `older_than` (see
/// `QueueStore::prune_dead_letters`).
pub(crate) fn prune_dead_letters(
    connection: &Connection,
    older_than: i64,
    window: usize,
) -> StoreResult<u64> {
    let window = i64::try_from(window).unwrap_or(i64::MAX);
    connection
        .prepare_cached(
            "DELETE FROM dead_letters WHERE failed_at < ?1
                 AND seq IN (SELECT seq FROM dead_letters ORDER BY seq LIMIT ?2)",
        )
        .and_then(|mut s| s.execute(rusqlite::params![older_than, window]))
        .map_err(crate::database::backend_error)
        .map(|deleted| deleted as u64)
}
