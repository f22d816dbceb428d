//! Flow control in `queue.db`: keys' limits and state, the claim step for keyed messages, and when a
//! waiting keyed message can next start.

use std::collections::HashMap;

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use quiver_queue::flow::{FlowControlChange, FlowControlState, FlowControlStore, KeyBudget};
use quiver_queue::message::FlowControl;
use rusqlite::{Connection, OptionalExtension, params};

use crate::database::backend_error;
use crate::queue::SqliteQueueStore;
use crate::queue::rows::read_error;

/// Records (or updates, where not pinned) the limits a publish carries for its key.
pub(crate) fn upsert_key(connection: &Connection, account: &str, flow: &FlowControl) -> StoreResult<()> {
    let period = flow.period.map(|p| i64::try_from(p).unwrap_or(i64::MAX));
    connection
        .prepare_cached(
            "INSERT INTO flow_controls (account_id, key, parallelism, rate, period_secs)
             VALUES (?1, ?2, ?3, ?4, COALESCE(?5, 1))
             ON CONFLICT (account_id, key) DO UPDATE SET
                 parallelism = CASE WHEN pinned_parallelism = 1 THEN parallelism ELSE excluded.parallelism END,
                 rate = CASE WHEN pinned_rate = 1 THEN rate ELSE excluded.rate END,
                 period_secs = CASE WHEN pinned_rate = 1 THEN period_secs ELSE excluded.period_secs END",
        )
        .and_then(|mut s| s.execute(params![account, flow.key, flow.parallelism, flow.rate, period]))
        .map(drop)
        .map_err(backend_error)
}

fn key_state(connection: &Connection, account: &str, key: &str, now: Timestamp) -> StoreResult<KeyBudget> {
    let in_flight: i64 = connection
        .prepare_cached(
            "SELECT COUNT(*) FROM messages WHERE account_id = ?1 AND flow_key = ?2 AND leased = 1 AND due_at > ?3",
        )
        .and_then(|mut s| s.query_row(params![account, key, now.as_millis()], |r| r.get(0)))
        .map_err(read_error)?;
    let row = connection
        .prepare_cached(
            "SELECT parallelism, rate, period_secs, paused, rate_period_start, rate_count FROM flow_controls
             WHERE account_id = ?1 AND key = ?2",
        )
        .and_then(|mut s| {
            s.query_row(params![account, key], |r| {
                Ok(KeyBudget {
                    parallelism: r.get(0)?,
                    rate: r.get(1)?,
                    period_ms: r.get::<_, i64>(2)?.max(1) * 1000,
                    paused: r.get(3)?,
                    in_flight,
                    rate_period_start: r.get(4)?,
                    rate_count: r.get(5)?,
                    admitted: 0,
                })
            })
            .optional()
        })
        .map_err(read_error)?;
    // A message whose key row is gone (it cannot be, short of manual edits) runs unlimited.
    Ok(row.unwrap_or_else(|| KeyBudget::unlimited(in_flight)))
}

/// Chooses up to `limit` due keyed messages (account and id, oldest due first) that their keys' limits let
/// start at `now`, and records the starts against each key's rate. `queue_condition` is the FIFO-queue
/// clause the unkeyed claim uses, over the alias `m`.
pub(crate) fn claim_keyed(
    connection: &Connection,
    now: Timestamp,
    limit: usize,
    queue_condition: &str,
) -> StoreResult<Vec<(String, String)>> {
    let mut statement = connection
        .prepare_cached(&format!(
            "SELECT m.id, m.account_id, m.flow_key FROM messages m
             LEFT JOIN queues q ON q.account_id = m.account_id AND q.name = m.queue_name
             WHERE m.flow_key IS NOT NULL AND m.due_at <= ?1 AND {queue_condition}
             ORDER BY m.due_at, m.rowid LIMIT ?2"
        ))
        .map_err(backend_error)?;
    // Look further than `limit`: blocked keys' messages are skipped.
    let window = i64::try_from(limit.saturating_mul(8).max(64)).unwrap_or(i64::MAX);
    let candidates: Vec<(String, String, String)> = statement
        .query_map(params![now.as_millis(), window], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .map_err(read_error)?
        .collect::<Result<_, _>>()
        .map_err(read_error)?;
    let mut keys: HashMap<(String, String), KeyBudget> = HashMap::new();
    let mut chosen = Vec::new();
    for (id, account, key) in candidates {
        if chosen.len() >= limit {
            break;
        }
        let state = match keys.entry((account.clone(), key.clone())) {
            std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(key_state(connection, &account, &key, now)?)
            }
        };
        if state.admit(now.as_millis()) {
            chosen.push((account, id));
        }
    }
    for ((account, key), state) in keys.into_iter().filter(|(_, s)| s.counted()) {
        connection
            .prepare_cached(
                "UPDATE flow_controls SET rate_period_start = ?3, rate_count = ?4 WHERE account_id = ?1 AND key = ?2",
            )
            .and_then(|mut s| s.execute(params![account, key, state.rate_period_start, state.rate_count]))
            .map_err(backend_error)?;
    }
    Ok(chosen)
}

/// When the earliest waiting keyed message may start: its due time, pushed to the end of its key's rate
/// period when the rate is used up. A key at its parallelism waits for a delivery to finish (the worker
/// is woken then), or for the earliest lease of the key to expire; a paused key waits for resume.
pub(crate) fn next_keyed_due(
    connection: &Connection,
    queue_condition: &str,
) -> StoreResult<Option<Timestamp>> {
    let mut statement = connection
        .prepare_cached(&format!(
            "SELECT MIN(m.due_at),
                    (SELECT COUNT(*) FROM messages l WHERE l.account_id = m.account_id AND l.flow_key = m.flow_key
                         AND l.leased = 1),
                    (SELECT MIN(l.due_at) FROM messages l WHERE l.account_id = m.account_id
                         AND l.flow_key = m.flow_key AND l.leased = 1),
                    f.parallelism, f.rate, f.period_secs, f.paused, f.rate_period_start, f.rate_count
             FROM messages m
             LEFT JOIN queues q ON q.account_id = m.account_id AND q.name = m.queue_name
             LEFT JOIN flow_controls f ON f.account_id = m.account_id AND f.key = m.flow_key
             WHERE m.flow_key IS NOT NULL AND m.leased = 0 AND {queue_condition}
             GROUP BY m.account_id, m.flow_key"
        ))
        .map_err(backend_error)?;
    type Row = (
        i64,
        i64,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<bool>,
        Option<i64>,
        Option<i64>,
    );
    let rows: Vec<Row> = statement
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
            ))
        })
        .map_err(read_error)?
        .collect::<Result<_, _>>()
        .map_err(read_error)?;
    let mut earliest: Option<i64> = None;
    for (due, leased, lease_ends, parallelism, rate, period, paused, period_start, count) in rows {
        if paused == Some(true) {
            continue;
        }
        let mut at = due;
        if parallelism.is_some_and(|p| leased >= p) {
            match lease_ends {
                Some(end) => at = at.max(end),
                None => continue,
            }
        }
        if let (Some(rate), Some(start), Some(count)) = (rate, period_start, count)
            && count >= rate
        {
            at = at.max(start + period.unwrap_or(1).max(1) * 1000);
        }
        earliest = Some(earliest.map_or(at, |e| e.min(at)));
    }
    Ok(earliest.map(Timestamp::from_millis))
}

fn states(
    connection: &Connection,
    account: &str,
    key: Option<&str>,
    now: Timestamp,
) -> StoreResult<Vec<FlowControlState>> {
    let mut statement = connection
        .prepare_cached(
            "SELECT f.key, f.parallelism, f.rate, f.period_secs, f.paused, f.pinned_parallelism, f.pinned_rate,
                    f.rate_period_start, f.rate_count,
                    (SELECT COUNT(*) FROM messages m WHERE m.account_id = f.account_id AND m.flow_key = f.key
                         AND NOT (m.leased = 1 AND m.due_at > ?3)),
                    (SELECT COUNT(*) FROM messages m WHERE m.account_id = f.account_id AND m.flow_key = f.key
                         AND m.leased = 1 AND m.due_at > ?3)
             FROM flow_controls f WHERE f.account_id = ?1 AND (?2 IS NULL OR f.key = ?2) ORDER BY f.key",
        )
        .map_err(backend_error)?;
    let rows = statement
        .query_map(params![account, key, now.as_millis()], |r| {
            let period_secs: i64 = r.get(3)?;
            let period_start: i64 = r.get(7)?;
            let in_period = now.as_millis() < period_start + period_secs.max(1) * 1000;
            Ok(FlowControlState {
                key: r.get(0)?,
                parallelism_max: r.get::<_, Option<u32>>(1)?.unwrap_or(0),
                rate_max: r.get::<_, Option<u32>>(2)?.unwrap_or(0),
                rate_period_secs: u64::try_from(period_secs).unwrap_or(1),
                paused: r.get(4)?,
                pinned_parallelism: r.get(5)?,
                pinned_rate: r.get(6)?,
                rate_period_start: Timestamp::from_millis(period_start),
                rate_count: if in_period {
                    r.get::<_, i64>(8)?.max(0) as u64
                } else {
                    0
                },
                wait_list_size: r.get::<_, i64>(9)?.max(0) as u64,
                parallelism_count: r.get::<_, i64>(10)?.max(0) as u64,
            })
        })
        .map_err(read_error)?;
    rows.collect::<Result<_, _>>().map_err(read_error)
}

#[async_trait]
impl FlowControlStore for SqliteQueueStore {
    async fn flow_control(
        &self,
        account: AccountId,
        key: &str,
        now: Timestamp,
    ) -> StoreResult<Option<FlowControlState>> {
        let key = key.to_owned();
        self.database
            .read(move |c| Ok(states(c, &account.to_string(), Some(&key), now)?.pop()))
            .await
    }

    async fn flow_controls(&self, account: AccountId, now: Timestamp) -> StoreResult<Vec<FlowControlState>> {
        self.database
            .read(move |c| states(c, &account.to_string(), None, now))
            .await
    }

    async fn in_flight(&self, account: AccountId, now: Timestamp) -> StoreResult<u64> {
        self.database
            .read(move |c| {
                c.query_row(
                    "SELECT COUNT(*) FROM messages WHERE account_id = ?1 AND leased = 1 AND due_at > ?2",
                    params![account.to_string(), now.as_millis()],
                    |r| r.get::<_, i64>(0),
                )
                .map(|n| n.max(0) as u64)
                .map_err(read_error)
            })
            .await
    }

    async fn change_flow_control(
        &self,
        account: AccountId,
        key: &str,
        change: FlowControlChange,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let key = key.to_owned();
        self.database
            .write(move |c| {
                let account = account.to_string();
                let now = now.as_millis();
                let changed = match change {
                    FlowControlChange::Pause | FlowControlChange::Resume => c.execute(
                        "UPDATE flow_controls SET paused = ?3 WHERE account_id = ?1 AND key = ?2",
                        params![account, key, change == FlowControlChange::Pause],
                    ),
                    FlowControlChange::Pin {
                        parallelism,
                        rate,
                        period_secs,
                    } => c.execute(
                        "UPDATE flow_controls SET
                             parallelism = CASE WHEN ?3 IS NULL THEN parallelism ELSE ?3 END,
                             pinned_parallelism = CASE WHEN ?3 IS NULL THEN pinned_parallelism ELSE 1 END,
                             rate = CASE WHEN ?4 IS NULL THEN rate ELSE ?4 END,
                             period_secs = CASE WHEN ?5 IS NULL THEN period_secs ELSE ?5 END,
                             pinned_rate = CASE WHEN ?4 IS NULL AND ?5 IS NULL THEN pinned_rate ELSE 1 END,
                             rate_period_start = ?6, rate_count = 0
                         WHERE account_id = ?1 AND key = ?2",
                        params![
                            account,
                            key,
                            parallelism,
                            rate,
                            period_secs.map(|p| i64::try_from(p).unwrap_or(i64::MAX)),
                            now
                        ],
                    ),
                    FlowControlChange::Unpin { parallelism, rate } => c.execute(
                        "UPDATE flow_controls SET
                             pinned_parallelism = CASE WHEN ?3 THEN 0 ELSE pinned_parallelism END,
                             pinned_rate = CASE WHEN ?4 THEN 0 ELSE pinned_rate END
                         WHERE account_id = ?1 AND key = ?2",
                        params![account, key, parallelism, rate],
                    ),
                    FlowControlChange::ResetRate => c.execute(
                        "UPDATE flow_controls SET rate_period_start = ?3, rate_count = 0
                         WHERE account_id = ?1 AND key = ?2",
                        params![account, key, now],
                    ),
                };
                changed.map(|n| n == 1).map_err(backend_error)
            })
            .await
    }
}
