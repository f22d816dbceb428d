//! FIFO queues, workflow runs and flow control: the claim step for keyed messages (their keys' rows
//! locked, so nodes decide one after another), when a waiting keyed message can next start, and the
//! nouns' stores.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::Transaction;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use quiver_queue::flow::{FlowControlChange, FlowControlState, FlowControlStore, KeyBudget};
use quiver_queue::message::{Message, MessageId};
use quiver_queue::names::{QueueName, RunId};
use quiver_queue::store::{FifoQueue, FifoQueueStore, WorkflowRunStore};
use quiver_queue::workflow::{RunState, RunStep, WorkflowRun};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::database::{TxError, backend_error};
use crate::hints::Hint;
use crate::queue::rows::{MESSAGE_COLUMNS, QUEUE_CONDITION, corrupt, count, json, message_from_row};
use crate::queue::store::PgQueueStore;

/// Leases up to `limit` due keyed messages that their keys' limits let start at `now`, and records the
/// starts against each key's rate. The keys' rows stay locked until the claim commits: a node deciding
/// for a key waits for another's decision, and then counts its leases.
pub(crate) async fn claim_keyed(
    transaction: &Transaction<'_>,
    now: Timestamp,
    limit: usize,
    lease_until: Timestamp,
    node: i32,
) -> Result<Vec<Message>, TxError> {
    let statement = transaction
        .prepare_cached(&format!(
            "SELECT m.account_id, m.id, m.flow_key FROM messages m
             LEFT JOIN fifo_queues q ON q.account_id = m.account_id AND q.name = m.queue_name
             WHERE m.flow_key IS NOT NULL AND m.due_at <= $1 AND {QUEUE_CONDITION}
             ORDER BY m.due_at, m.seq LIMIT $2"
        ))
        .await?;
    // Look further than `limit`: blocked keys' messages are skipped.
    let window = count(limit.saturating_mul(8).max(64));
    let candidates: Vec<(String, String, String)> = transaction
        .query(&statement, &[&now.as_millis(), &window])
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let mut keys: BTreeMap<(String, String), KeyBudget> = candidates
        .iter()
        .map(|(account, _, key)| ((account.clone(), key.clone()), KeyBudget::unlimited(0)))
        .collect();
    let (accounts, names): (Vec<&str>, Vec<&str>) =
        keys.keys().map(|(a, k)| (a.as_str(), k.as_str())).unzip();
    let locked = transaction
        .query(
            "SELECT account_id, key, parallelism, rate, period_secs, paused, rate_period_start, rate_count
             FROM flow_controls WHERE (account_id, key) IN (SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[]))
             ORDER BY account_id, key FOR UPDATE",
            &[&accounts, &names],
        )
        .await?;
    // Counted after the lock, in a statement of its own: it sees every claim committed before.
    let in_flight = transaction
        .query(
            "SELECT account_id, flow_key, COUNT(*) FROM messages
             WHERE (account_id, flow_key) IN (SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[]))
               AND leased AND due_at > $3
             GROUP BY account_id, flow_key",
            &[&accounts, &names, &now.as_millis()],
        )
        .await?;
    for row in &locked {
        if let Some(state) = keys.get_mut(&(row.get(0), row.get(1))) {
            state.parallelism = row.get(2);
            state.rate = row.get(3);
            state.period_ms = row.get::<_, i64>(4).max(1) * 1000;
            state.paused = row.get(5);
            state.rate_period_start = row.get(6);
            state.rate_count = row.get(7);
        }
    }
    for row in &in_flight {
        if let Some(state) = keys.get_mut(&(row.get(0), row.get(1))) {
            state.in_flight = row.get(2);
        }
    }
    let (mut chosen_accounts, mut chosen_ids) = (Vec::new(), Vec::new());
    for (account, id, key) in &candidates {
        if chosen_ids.len() >= limit {
            break;
        }
        let state = keys
            .get_mut(&(account.clone(), key.clone()))
            .expect("every candidate's key has a state");
        if state.admit(now.as_millis()) {
            chosen_accounts.push(account.as_str());
            chosen_ids.push(id.as_str());
        }
    }
    // A candidate read before the lock may have been claimed by another node since: it is no longer
    // due, stays out, and gives its place in the rate back.
    let statement = transaction
        .prepare_cached(&format!(
            "UPDATE messages SET due_at = $1, leased = TRUE, lease_node = $2
             WHERE (account_id, id) IN (SELECT * FROM UNNEST($3::TEXT[], $4::TEXT[])) AND due_at <= $5
             RETURNING {MESSAGE_COLUMNS}, flow_key"
        ))
        .await?;
    let rows = transaction
        .query(
            &statement,
            &[
                &lease_until.as_millis(),
                &node,
                &chosen_accounts,
                &chosen_ids,
                &now.as_millis(),
            ],
        )
        .await?;
    let mut claimed_per_key: HashMap<(String, String), i64> = HashMap::new();
    let mut claimed = Vec::with_capacity(rows.len());
    for row in &rows {
        let message = message_from_row(row)?;
        *claimed_per_key
            .entry((message.account_id.to_string(), row.get(7)))
            .or_default() += 1;
        claimed.push(message);
    }
    for ((account, key), state) in keys.iter_mut().filter(|(_, s)| s.counted()) {
        let taken = claimed_per_key
            .get(&(account.clone(), key.clone()))
            .copied()
            .unwrap_or(0);
        state.rate_count -= state.admitted - taken;
        transaction
            .execute(
                "UPDATE flow_controls SET rate_period_start = $3, rate_count = $4
                 WHERE account_id = $1 AND key = $2",
                &[account, key, &state.rate_period_start, &state.rate_count],
            )
            .await?;
    }
    Ok(claimed)
}

/// When the earliest waiting keyed message may start: its due time, pushed to the end of its key's rate
/// period when the rate is used up. A key at its parallelism waits for a delivery to finish, or for the
/// earliest lease of the key to expire; a paused key waits for resume.
pub(crate) async fn next_keyed_due(t: &Transaction<'_>) -> Result<Option<Timestamp>, TxError> {
    // Most of the time no keyed message waits: `messages_keyed_due` says so at once, where the full
    // look-up below, planned from estimates, may read the whole table and every dead row in it.
    let probe = t
        .prepare_cached(
            "SELECT 1 FROM messages WHERE flow_key IS NOT NULL AND NOT leased ORDER BY due_at, seq LIMIT 1",
        )
        .await?;
    if t.query_opt(&probe, &[]).await?.is_none() {
        return Ok(None);
    }
    let statement = t
        .prepare_cached(&format!(
            "SELECT MIN(m.due_at),
                    (SELECT COUNT(*) FROM messages l WHERE l.account_id = m.account_id AND l.flow_key = m.flow_key
                         AND l.leased),
                    (SELECT MIN(l.due_at) FROM messages l WHERE l.account_id = m.account_id
                         AND l.flow_key = m.flow_key AND l.leased),
                    MIN(f.parallelism), MIN(f.rate), MIN(f.period_secs), BOOL_OR(f.paused),
                    MIN(f.rate_period_start), MIN(f.rate_count)
             FROM messages m
             LEFT JOIN fifo_queues q ON q.account_id = m.account_id AND q.name = m.queue_name
             LEFT JOIN flow_controls f ON f.account_id = m.account_id AND f.key = m.flow_key
             WHERE m.flow_key IS NOT NULL AND NOT m.leased AND {QUEUE_CONDITION}
             GROUP BY m.account_id, m.flow_key"
        ))
        .await?;
    let rows = t.query(&statement, &[]).await?;
    let mut earliest: Option<i64> = None;
    for row in &rows {
        if row.get::<_, Option<bool>>(6) == Some(true) {
            continue;
        }
        let mut at: i64 = row.get(0);
        let (leased, lease_ends): (i64, Option<i64>) = (row.get(1), row.get(2));
        if row.get::<_, Option<i64>>(3).is_some_and(|p| leased >= p) {
            match lease_ends {
                Some(end) => at = at.max(end),
                None => continue,
            }
        }
        let (rate, period, start, used): (Option<i64>, Option<i64>, Option<i64>, Option<i64>) =
            (row.get(4), row.get(5), row.get(7), row.get(8));
        if let (Some(rate), Some(start), Some(used)) = (rate, start, used)
            && used >= rate
        {
            at = at.max(start + period.unwrap_or(1).max(1) * 1000);
        }
        earliest = Some(earliest.map_or(at, |e| e.min(at)));
    }
    Ok(earliest.map(Timestamp::from_millis))
}

fn fifo_queue_from_row(row: &Row) -> StoreResult<FifoQueue> {
    let name: String = row.get(0);
    Ok(FifoQueue {
        name: QueueName::parse(name.as_str()).map_err(|e| corrupt(&format!("fifo queue `{name}`"), e))?,
        parallelism: u32::try_from(row.get::<_, i64>(1)).unwrap_or(u32::MAX),
        paused: row.get(2),
        created_at: Timestamp::from_millis(row.get(3)),
        updated_at: Timestamp::from_millis(row.get(4)),
        lag: u64::try_from(row.get::<_, i64>(5)).unwrap_or(0),
    })
}

impl PgQueueStore {
    async fn fifo_queues_where(
        &self,
        filter: &str,
        values: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<FifoQueue>> {
        let client = self.database.client().await?;
        client
            .query(
                &format!(
                    "SELECT q.name, q.parallelism, q.paused, q.created_at, q.updated_at,
                         (SELECT COUNT(*) FROM messages m WHERE m.account_id = q.account_id
                              AND m.queue_name = q.name)
                     FROM fifo_queues q {filter} ORDER BY q.name"
                ),
                values,
            )
            .await
            .map_err(backend_error)?
            .iter()
            .map(fifo_queue_from_row)
            .collect()
    }

    async fn write_statement(&self, sql: &str, values: &[&(dyn ToSql + Sync)]) -> StoreResult<u64> {
        let client = self.database.client().await?;
        client.execute(sql, values).await.map_err(backend_error)
    }
}

#[async_trait]
impl FifoQueueStore for PgQueueStore {
    async fn put_fifo_queue(
        &self,
        account: AccountId,
        name: &QueueName,
        parallelism: u32,
        paused: bool,
        now: Timestamp,
    ) -> StoreResult<()> {
        self.write_statement(
            "INSERT INTO fifo_queues (account_id, name, parallelism, paused, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $5)
             ON CONFLICT (account_id, name) DO UPDATE SET parallelism = excluded.parallelism,
                 paused = excluded.paused, updated_at = excluded.updated_at",
            &[
                &account.to_string(),
                &name.as_str(),
                &i64::from(parallelism),
                &paused,
                &now.as_millis(),
            ],
        )
        .await
        .map(|_| self.database.hint(Hint::Due))
    }

    async fn ensure_fifo_queue(
        &self,
        account: AccountId,
        name: &QueueName,
        parallelism: u32,
        now: Timestamp,
    ) -> StoreResult<()> {
        self.write_statement(
            "INSERT INTO fifo_queues (account_id, name, parallelism, paused, created_at, updated_at)
             VALUES ($1, $2, $3, FALSE, $4, $4) ON CONFLICT (account_id, name) DO NOTHING",
            &[
                &account.to_string(),
                &name.as_str(),
                &i64::from(parallelism),
                &now.as_millis(),
            ],
        )
        .await
        .map(drop)
    }

    async fn fifo_queue(&self, account: AccountId, name: &QueueName) -> StoreResult<Option<FifoQueue>> {
        Ok(self
            .fifo_queues_where(
                "WHERE q.account_id = $1 AND q.name = $2",
                &[&account.to_string(), &name.as_str()],
            )
            .await?
            .pop())
    }

    async fn fifo_queues(&self, account: AccountId) -> StoreResult<Vec<FifoQueue>> {
        self.fifo_queues_where("WHERE q.account_id = $1", &[&account.to_string()])
            .await
    }

    async fn delete_fifo_queue(&self, account: AccountId, name: &QueueName) -> StoreResult<bool> {
        self.write_statement(
            "DELETE FROM fifo_queues WHERE account_id = $1 AND name = $2",
            &[&account.to_string(), &name.as_str()],
        )
        .await
        .map(|deleted| deleted == 1)
    }
}

fn run_from_row(row: &Row) -> StoreResult<WorkflowRun> {
    serde_json::from_str(row.get(0)).map_err(|e| corrupt("workflow run", e))
}

/// A run, its row locked until the transaction ends.
async fn locked_run(
    t: &Transaction<'_>,
    account: &str,
    run_id: &str,
) -> Result<Option<WorkflowRun>, TxError> {
    let Some(row) = t
        .query_opt(
            "SELECT spec FROM workflow_runs WHERE account_id = $1 AND id = $2 FOR UPDATE",
            &[&account, &run_id],
        )
        .await?
    else {
        return Ok(None);
    };
    Ok(Some(run_from_row(&row)?))
}

/// Changes a started run with `change`, its row locked meanwhile; `false` when it is missing or ended.
async fn change_run(
    database: &crate::database::PgDatabase,
    account: AccountId,
    run_id: &RunId,
    change: impl Fn(&mut WorkflowRun) + Send + Sync + 'static,
) -> StoreResult<bool> {
    let change = Arc::new(change);
    let key = Arc::new((account.to_string(), run_id.as_str().to_owned()));
    database
        .write(move |t| {
            let (change, key) = (Arc::clone(&change), Arc::clone(&key));
            Box::pin(async move {
                let Some(mut run) = locked_run(t, &key.0, &key.1).await? else {
                    return Ok(false);
                };
                if run.state != RunState::Started {
                    return Ok(false);
                }
                change(&mut run);
                t.execute(
                    "UPDATE workflow_runs SET state = $3, spec = $4 WHERE account_id = $1 AND id = $2",
                    &[&key.0, &key.1, &run.state.as_str(), &json(&run)?],
                )
                .await?;
                Ok(true)
            })
        })
        .await
}

#[async_trait]
impl WorkflowRunStore for PgQueueStore {
    async fn start_run(&self, run: &WorkflowRun) -> StoreResult<bool> {
        self.write_statement(
            "INSERT INTO workflow_runs (account_id, id, url, state, created_at, spec) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (account_id, id) DO NOTHING",
            &[
                &run.account_id.to_string(),
                &run.id.as_str(),
                &run.url,
                &run.state.as_str(),
                &run.created_at.as_millis(),
                &json(run)?,
            ],
        )
        .await
        .map(|inserted| inserted == 1)
    }

    async fn append_step(&self, account: AccountId, run_id: &RunId, step: &RunStep) -> StoreResult<bool> {
        let step = step.clone();
        change_run(&self.database, account, run_id, move |run| {
            run.steps.push(step.clone())
        })
        .await
    }

    async fn take_back_step(
        &self,
        account: AccountId,
        run_id: &RunId,
        message_id: &str,
    ) -> StoreResult<bool> {
        let key = Arc::new((
            account.to_string(),
            run_id.as_str().to_owned(),
            message_id.to_owned(),
        ));
        self.database
            .write(move |t| {
                let key = Arc::clone(&key);
                Box::pin(async move {
                    let Some(mut run) = locked_run(t, &key.0, &key.1).await? else {
                        return Ok(false);
                    };
                    if !run.remove_step_of(&key.2) {
                        return Ok(false);
                    }
                    if run.steps.is_empty() {
                        t.execute(
                            "DELETE FROM workflow_runs WHERE account_id = $1 AND id = $2",
                            &[&key.0, &key.1],
                        )
                        .await?;
                    } else {
                        t.execute(
                            "UPDATE workflow_runs SET spec = $3 WHERE account_id = $1 AND id = $2",
                            &[&key.0, &key.1, &json(&run)?],
                        )
                        .await?;
                    }
                    Ok(true)
                })
            })
            .await
    }

    async fn run(&self, account: AccountId, run_id: &RunId) -> StoreResult<Option<WorkflowRun>> {
        let client = self.database.client().await?;
        client
            .query_opt(
                "SELECT spec FROM workflow_runs WHERE account_id = $1 AND id = $2",
                &[&account.to_string(), &run_id.as_str()],
            )
            .await
            .map_err(backend_error)?
            .as_ref()
            .map(run_from_row)
            .transpose()
    }

    async fn runs(&self, account: AccountId) -> StoreResult<Vec<WorkflowRun>> {
        let client = self.database.client().await?;
        client
            .query(
                "SELECT spec FROM workflow_runs WHERE account_id = $1 ORDER BY created_at DESC, id",
                &[&account.to_string()],
            )
            .await
            .map_err(backend_error)?
            .iter()
            .map(run_from_row)
            .collect()
    }

    async fn finish_run(
        &self,
        account: AccountId,
        run_id: &RunId,
        state: RunState,
        at: Timestamp,
        response: Option<String>,
    ) -> StoreResult<bool> {
        change_run(&self.database, account, run_id, move |run| {
            run.state = state;
            run.completed_at = Some(at);
            run.response.clone_from(&response);
        })
        .await
    }

    async fn run_messages(
        &self,
        account: AccountId,
        run_id: &RunId,
        now: Timestamp,
    ) -> StoreResult<Vec<(MessageId, bool)>> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                "SELECT id, leased AND due_at > $3 FROM messages WHERE account_id = $1 AND workflow_run_id = $2
                 ORDER BY seq",
                &[&account.to_string(), &run_id.as_str(), &now.as_millis()],
            )
            .await
            .map_err(backend_error)?;
        Ok(rows.iter().map(|r| (MessageId(r.get(0)), r.get(1))).collect())
    }
}

impl PgQueueStore {
    async fn flow_states(
        &self,
        account: AccountId,
        key: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<Vec<FlowControlState>> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                "SELECT f.key, f.parallelism, f.rate, f.period_secs, f.paused, f.pinned_parallelism,
                        f.pinned_rate, f.rate_period_start, f.rate_count,
                        (SELECT COUNT(*) FROM messages m WHERE m.account_id = f.account_id AND m.flow_key = f.key
                             AND NOT (m.leased AND m.due_at > $3)),
                        (SELECT COUNT(*) FROM messages m WHERE m.account_id = f.account_id AND m.flow_key = f.key
                             AND m.leased AND m.due_at > $3)
                 FROM flow_controls f WHERE f.account_id = $1 AND ($2::TEXT IS NULL OR f.key = $2)
                 ORDER BY f.key",
                &[&account.to_string(), &key, &now.as_millis()],
            )
            .await
            .map_err(backend_error)?;
        Ok(rows
            .iter()
            .map(|r| {
                let period_secs: i64 = r.get(3);
                let period_start: i64 = r.get(7);
                let in_period = now.as_millis() < period_start + period_secs.max(1) * 1000;
                let limit = |value: Option<i64>| value.map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX));
                FlowControlState {
                    key: r.get(0),
                    parallelism_max: limit(r.get(1)),
                    rate_max: limit(r.get(2)),
                    rate_period_secs: u64::try_from(period_secs).unwrap_or(1),
                    paused: r.get(4),
                    pinned_parallelism: r.get(5),
                    pinned_rate: r.get(6),
                    rate_period_start: Timestamp::from_millis(period_start),
                    rate_count: if in_period {
                        u64::try_from(r.get::<_, i64>(8)).unwrap_or(0)
                    } else {
                        0
                    },
                    wait_list_size: u64::try_from(r.get::<_, i64>(9)).unwrap_or(0),
                    parallelism_count: u64::try_from(r.get::<_, i64>(10)).unwrap_or(0),
                }
            })
            .collect())
    }
}

#[async_trait]
impl FlowControlStore for PgQueueStore {
    async fn flow_control(
        &self,
        account: AccountId,
        key: &str,
        now: Timestamp,
    ) -> StoreResult<Option<FlowControlState>> {
        Ok(self.flow_states(account, Some(key), now).await?.pop())
    }

    async fn flow_controls(&self, account: AccountId, now: Timestamp) -> StoreResult<Vec<FlowControlState>> {
        self.flow_states(account, None, now).await
    }

    async fn in_flight(&self, account: AccountId, now: Timestamp) -> StoreResult<u64> {
        let client = self.database.client().await?;
        let n: i64 = client
            .query_one(
                "SELECT COUNT(*) FROM messages WHERE account_id = $1 AND leased AND due_at > $2",
                &[&account.to_string(), &now.as_millis()],
            )
            .await
            .map_err(backend_error)?
            .get(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn change_flow_control(
        &self,
        account: AccountId,
        key: &str,
        change: FlowControlChange,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let account = account.to_string();
        let now = now.as_millis();
        let changed = match change {
            FlowControlChange::Pause | FlowControlChange::Resume => {
                self.write_statement(
                    "UPDATE flow_controls SET paused = $3 WHERE account_id = $1 AND key = $2",
                    &[&account, &key, &(change == FlowControlChange::Pause)],
                )
                .await?
            }
            FlowControlChange::Pin {
                parallelism,
                rate,
                period_secs,
            } => {
                let period = period_secs.map(|p| i64::try_from(p).unwrap_or(i64::MAX));
                self.write_statement(
                    "UPDATE flow_controls SET
                         parallelism = COALESCE($3, parallelism),
                         pinned_parallelism = pinned_parallelism OR $3::BIGINT IS NOT NULL,
                         rate = COALESCE($4, rate),
                         period_secs = COALESCE($5, period_secs),
                         pinned_rate = pinned_rate OR $4::BIGINT IS NOT NULL OR $5::BIGINT IS NOT NULL,
                         rate_period_start = $6, rate_count = 0
                     WHERE account_id = $1 AND key = $2",
                    &[
                        &account,
                        &key,
                        &parallelism.map(i64::from),
                        &rate.map(i64::from),
                        &period,
                        &now,
                    ],
                )
                .await?
            }
            FlowControlChange::Unpin { parallelism, rate } => {
                self.write_statement(
                    "UPDATE flow_controls SET
                         pinned_parallelism = pinned_parallelism AND NOT $3,
                         pinned_rate = pinned_rate AND NOT $4
                     WHERE account_id = $1 AND key = $2",
                    &[&account, &key, &parallelism, &rate],
                )
                .await?
            }
            FlowControlChange::ResetRate => {
                self.write_statement(
                    "UPDATE flow_controls SET rate_period_start = $3, rate_count = 0
                     WHERE account_id = $1 AND key = $2",
                    &[&account, &key, &now],
                )
                .await?
            }
        };
        // A resumed key, or one with more room, may let waiting messages start on any node.
        self.database.hint(Hint::Due);
        Ok(changed == 1)
    }
}
