//! Schedules, FIFO queue records and workflow runs in `queue.db`.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, StoreError, Timestamp};
use quiver_queue::message::MessageId;
use quiver_queue::names::{QueueName, RunId, ScheduleId};
use quiver_queue::schedule::Schedule;
use quiver_queue::store::{FifoQueue, FifoQueueStore, ScheduleStore, WorkflowRunStore};
use quiver_queue::workflow::{RunState, RunStep, WorkflowRun};
use rusqlite::{Connection, params};

use crate::database::backend_error;
use crate::queue::SqliteQueueStore;
use crate::queue::rows::{corrupt, read_error, to_json};

fn schedules_where(
    connection: &Connection,
    filter: &str,
    values: &[&dyn rusqlite::ToSql],
) -> StoreResult<Vec<Schedule>> {
    let mut statement = connection
        .prepare(&format!("SELECT spec FROM schedules {filter}"))
        .map_err(read_error)?;
    let rows = statement
        .query_map(values, |r| r.get::<_, String>(0))
        .map_err(read_error)?;
    let mut schedules = Vec::new();
    for row in rows {
        let text = row.map_err(read_error)?;
        schedules
            .push(serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("schedule: {e}")))?);
    }
    Ok(schedules)
}

#[async_trait]
impl ScheduleStore for SqliteQueueStore {
    async fn put_schedule(&self, schedule: &Schedule) -> StoreResult<()> {
        let spec = to_json(schedule)?;
        let (account, id, created, next) = (
            schedule.account_id.to_string(),
            schedule.id.to_string(),
            schedule.created_at.as_millis(),
            schedule
                .next_fire
                .filter(|_| !schedule.paused)
                .map(Timestamp::as_millis),
        );
        self.database
            .write(move |c| {
                c.execute(
                    "INSERT INTO schedules (account_id, id, created_at, next_fire, spec) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (account_id, id) DO UPDATE SET created_at = excluded.created_at,
                         next_fire = excluded.next_fire, spec = excluded.spec",
                    params![account, id, created, next, spec],
                )
                .map(drop)
                .map_err(backend_error)
            })
            .await
    }

    async fn schedule(&self, account: AccountId, id: &ScheduleId) -> StoreResult<Option<Schedule>> {
        let id = id.to_owned();
        self.database
            .read(move |c| {
                Ok(schedules_where(
                    c,
                    "WHERE account_id = ?1 AND id = ?2",
                    &[&account.to_string(), &id.as_str()],
                )?
                .pop())
            })
            .await
    }

    async fn schedules(&self, account: AccountId) -> StoreResult<Vec<Schedule>> {
        self.database
            .read(move |c| {
                schedules_where(
                    c,
                    "WHERE account_id = ?1 ORDER BY created_at, id",
                    &[&account.to_string()],
                )
            })
            .await
    }

    async fn delete_schedule(&self, account: AccountId, id: &ScheduleId) -> StoreResult<bool> {
        let id = id.to_owned();
        self.database
            .write(move |c| {
                c.execute(
                    "DELETE FROM schedules WHERE account_id = ?1 AND id = ?2",
                    [account.to_string(), id.to_string()],
                )
                .map(|n| n == 1)
                .map_err(backend_error)
            })
            .await
    }

    async fn claim_due_schedules(
        &self,
        now: Timestamp,
        limit: usize,
        hold_until: Timestamp,
    ) -> StoreResult<Vec<Schedule>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // Most rounds find nothing due: look on a reader before taking the writer.
        let any_due = self
            .database
            .read(move |c| {
                c.query_row(
                    "SELECT EXISTS (SELECT 1 FROM schedules WHERE next_fire <= ?1)",
                    [now.as_millis()],
                    |r| r.get::<_, bool>(0),
                )
                .map_err(read_error)
            })
            .await?;
        if !any_due {
            return Ok(Vec::new());
        }
        self.database
            .write(move |c| {
                let mut due = schedules_where(
                    c,
                    "WHERE next_fire <= ?1 ORDER BY next_fire LIMIT ?2",
                    &[&now.as_millis(), &limit],
                )?;
                for schedule in &due {
                    c.execute(
                        "UPDATE schedules SET next_fire = ?3 WHERE account_id = ?1 AND id = ?2",
                        params![
                            schedule.account_id.to_string(),
                            schedule.id.as_str(),
                            hold_until.as_millis()
                        ],
                    )
                    .map_err(backend_error)?;
                }
                due.sort_by_key(|s| s.next_fire);
                Ok(due)
            })
            .await
    }

    async fn next_schedule_due(&self) -> StoreResult<Option<Timestamp>> {
        self.database
            .read(|c| {
                c.query_row("SELECT MIN(next_fire) FROM schedules", [], |r| {
                    r.get::<_, Option<i64>>(0)
                })
                .map(|due| due.map(Timestamp::from_millis))
                .map_err(read_error)
            })
            .await
    }
}

fn queue_records(
    connection: &Connection,
    filter: &str,
    values: &[&dyn rusqlite::ToSql],
) -> StoreResult<Vec<FifoQueue>> {
    let sql = format!(
        "SELECT q.name, q.parallelism, q.paused, q.created_at, q.updated_at,
                (SELECT COUNT(*) FROM messages m WHERE m.account_id = q.account_id AND m.queue_name = q.name)
         FROM queues q {filter} ORDER BY q.name"
    );
    let mut statement = connection.prepare(&sql).map_err(read_error)?;
    let rows = statement
        .query_map(values, |r| {
            Ok(FifoQueue {
                name: QueueName::parse(r.get::<_, String>(0)?).map_err(|e| corrupt(0, e))?,
                parallelism: r.get(1)?,
                paused: r.get(2)?,
                created_at: Timestamp::from_millis(r.get(3)?),
                updated_at: Timestamp::from_millis(r.get(4)?),
                lag: u64::try_from(r.get::<_, i64>(5)?).unwrap_or(0),
            })
        })
        .map_err(read_error)?;
    rows.collect::<Result<_, _>>().map_err(read_error)
}

#[async_trait]
impl FifoQueueStore for SqliteQueueStore {
    async fn put_fifo_queue(
        &self,
        account: AccountId,
        name: &QueueName,
        parallelism: u32,
        paused: bool,
        now: Timestamp,
    ) -> StoreResult<()> {
        let name = name.to_owned();
        self.database
            .write(move |c| {
                c.execute(
                    "INSERT INTO queues (account_id, name, parallelism, paused, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                     ON CONFLICT (account_id, name) DO UPDATE SET parallelism = excluded.parallelism,
                         paused = excluded.paused, updated_at = excluded.updated_at",
                    params![
                        account.to_string(),
                        name.as_str(),
                        parallelism,
                        paused,
                        now.as_millis()
                    ],
                )
                .map(drop)
                .map_err(backend_error)
            })
            .await
    }

    async fn ensure_fifo_queue(
        &self,
        account: AccountId,
        name: &QueueName,
        parallelism: u32,
        now: Timestamp,
    ) -> StoreResult<()> {
        let name = name.to_owned();
        self.database
            .write(move |c| {
                c.execute(
                    "INSERT INTO queues (account_id, name, parallelism, paused, created_at, updated_at)
                     VALUES (?1, ?2, ?3, 0, ?4, ?4) ON CONFLICT (account_id, name) DO NOTHING",
                    params![account.to_string(), name.as_str(), parallelism, now.as_millis()],
                )
                .map(drop)
                .map_err(backend_error)
            })
            .await
    }

    async fn fifo_queue(&self, account: AccountId, name: &QueueName) -> StoreResult<Option<FifoQueue>> {
        let name = name.to_owned();
        self.database
            .read(move |c| {
                Ok(queue_records(
                    c,
                    "WHERE q.account_id = ?1 AND q.name = ?2",
                    &[&account.to_string(), &name.as_str()],
                )?
                .pop())
            })
            .await
    }

    async fn fifo_queues(&self, account: AccountId) -> StoreResult<Vec<FifoQueue>> {
        self.database
            .read(move |c| queue_records(c, "WHERE q.account_id = ?1", &[&account.to_string()]))
            .await
    }

    async fn delete_fifo_queue(&self, account: AccountId, name: &QueueName) -> StoreResult<bool> {
        let name = name.to_owned();
        self.database
            .write(move |c| {
                c.execute(
                    "DELETE FROM queues WHERE account_id = ?1 AND name = ?2",
                    [account.to_string(), name.to_string()],
                )
                .map(|n| n == 1)
                .map_err(backend_error)
            })
            .await
    }
}

fn runs_where(
    connection: &Connection,
    filter: &str,
    values: &[&dyn rusqlite::ToSql],
) -> StoreResult<Vec<WorkflowRun>> {
    let mut statement = connection
        .prepare(&format!("SELECT spec FROM workflow_runs {filter}"))
        .map_err(read_error)?;
    let rows = statement
        .query_map(values, |r| r.get::<_, String>(0))
        .map_err(read_error)?;
    let mut runs = Vec::new();
    for row in rows {
        let text = row.map_err(read_error)?;
        runs.push(
            serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("workflow run: {e}")))?,
        );
    }
    Ok(runs)
}

/// The run `run_id` of `account`, if any.
fn run_by_id(
    connection: &Connection,
    account: AccountId,
    run_id: &RunId,
) -> StoreResult<Option<WorkflowRun>> {
    Ok(runs_where(
        connection,
        "WHERE account_id = ?1 AND id = ?2",
        &[&account.to_string(), &run_id.as_str()],
    )?
    .pop())
}

fn save_run(connection: &Connection, run: &WorkflowRun) -> StoreResult<()> {
    let spec = to_json(run)?;
    connection
        .execute(
            "INSERT INTO workflow_runs (account_id, id, url, state, created_at, spec) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (account_id, id) DO UPDATE SET state = excluded.state, spec = excluded.spec",
            params![run.account_id.to_string(), run.id.as_str(), run.url, run.state.as_str(), run.created_at.as_millis(), spec],
        )
        .map(drop)
        .map_err(backend_error)
}

#[async_trait]
impl WorkflowRunStore for SqliteQueueStore {
    async fn start_run(&self, run: &WorkflowRun) -> StoreResult<bool> {
        let run = run.clone();
        self.database
            .write(move |c| {
                if run_by_id(c, run.account_id, &run.id)?.is_some() {
                    return Ok(false);
                }
                save_run(c, &run)?;
                Ok(true)
            })
            .await
    }

    async fn append_step(&self, account: AccountId, run_id: &RunId, step: &RunStep) -> StoreResult<bool> {
        let (run_id, step) = (run_id.to_owned(), step.clone());
        self.database
            .write(move |c| {
                let Some(mut run) = run_by_id(c, account, &run_id)? else {
                    return Ok(false);
                };
                if run.state != RunState::Started {
                    return Ok(false);
                }
                run.steps.push(step);
                save_run(c, &run)?;
                Ok(true)
            })
            .await
    }

    async fn take_back_step(
        &self,
        account: AccountId,
        run_id: &RunId,
        message_id: &str,
    ) -> StoreResult<bool> {
        let (run_id, message_id) = (run_id.to_owned(), message_id.to_owned());
        self.database
            .write(move |c| {
                let Some(mut run) = run_by_id(c, account, &run_id)? else {
                    return Ok(false);
                };
                if !run.remove_step_of(&message_id) {
                    return Ok(false);
                }
                if run.steps.is_empty() {
                    c.execute(
                        "DELETE FROM workflow_runs WHERE account_id = ?1 AND id = ?2",
                        params![account.to_string(), run_id.as_str()],
                    )
                    .map_err(backend_error)?;
                } else {
                    save_run(c, &run)?;
                }
                Ok(true)
            })
            .await
    }

    async fn run(&self, account: AccountId, run_id: &RunId) -> StoreResult<Option<WorkflowRun>> {
        let run_id = run_id.to_owned();
        self.database.read(move |c| run_by_id(c, account, &run_id)).await
    }

    async fn runs(&self, account: AccountId) -> StoreResult<Vec<WorkflowRun>> {
        self.database
            .read(move |c| {
                runs_where(
                    c,
                    "WHERE account_id = ?1 ORDER BY created_at DESC, id",
                    &[&account.to_string()],
                )
            })
            .await
    }

    async fn finish_run(
        &self,
        account: AccountId,
        run_id: &RunId,
        state: RunState,
        at: Timestamp,
        response: Option<String>,
    ) -> StoreResult<bool> {
        let run_id = run_id.to_owned();
        self.database
            .write(move |c| {
                let Some(mut run) = run_by_id(c, account, &run_id)? else {
                    return Ok(false);
                };
                if run.state != RunState::Started {
                    return Ok(false);
                }
                run.state = state;
                run.completed_at = Some(at);
                run.response = response;
                save_run(c, &run)?;
                Ok(true)
            })
            .await
    }

    async fn run_messages(
        &self,
        account: AccountId,
        run_id: &RunId,
        now: Timestamp,
    ) -> StoreResult<Vec<(MessageId, bool)>> {
        let run_id = run_id.to_owned();
        self.database
            .read(move |c| {
                let mut statement = c
                    .prepare(
                        "SELECT id, leased, due_at FROM messages
                         WHERE account_id = ?1 AND json_extract(spec, '$.workflow_run_id') = ?2",
                    )
                    .map_err(read_error)?;
                let rows = statement
                    .query_map(params![account.to_string(), run_id.as_str()], |r| {
                        Ok((
                            MessageId(r.get(0)?),
                            r.get::<_, bool>(1)? && r.get::<_, i64>(2)? > now.as_millis(),
                        ))
                    })
                    .map_err(read_error)?;
                rows.collect::<Result<_, _>>().map_err(read_error)
            })
            .await
    }
}
