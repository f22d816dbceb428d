//! The queue's nouns that stand alone: URL groups, waiters and schedules.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, StoreError, Timestamp};
use quiver_queue::names::{ScheduleId, UrlGroupName};
use quiver_queue::schedule::Schedule;
use quiver_queue::store::{ScheduleStore, UrlGroup, UrlGroupStore};
use quiver_queue::waiters::{StoredWaiter, WaitSpec, WaiterStore};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::database::backend_error;
use crate::hints::Hint;
use crate::queue::rows::json;
use crate::queue::store::PgQueueStore;

impl PgQueueStore {
    async fn waiters_where(
        &self,
        filter: &str,
        values: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<StoredWaiter>> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                &format!("SELECT seq, account_id, event_id, deadline, spec FROM waiters {filter}"),
                values,
            )
            .await
            .map_err(backend_error)?;
        rows.iter().map(waiter_from_row).collect()
    }
}

impl PgQueueStore {
    /// The schedules a statement returns (their `spec` column alone).
    async fn schedules_from(&self, sql: &str, values: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<Schedule>> {
        let client = self.database.client().await?;
        let rows = client.query(sql, values).await.map_err(backend_error)?;
        rows.iter()
            .map(|row| {
                serde_json::from_str(row.get(0)).map_err(|e| StoreError::Corrupt(format!("schedule: {e}")))
            })
            .collect()
    }
}

fn group_from_row(row: &Row) -> StoreResult<UrlGroup> {
    let name: String = row.get(0);
    let corrupt = |e: &dyn std::fmt::Display| StoreError::Corrupt(format!("url group `{name}`: {e}"));
    Ok(UrlGroup {
        name: UrlGroupName::parse(name.as_str()).map_err(|e| corrupt(&e))?,
        created_at: Timestamp::from_millis(row.get(1)),
        updated_at: Timestamp::from_millis(row.get(2)),
        endpoints: serde_json::from_str(row.get(3)).map_err(|e| corrupt(&e))?,
        default_headers: serde_json::from_str(row.get(4)).map_err(|e| corrupt(&e))?,
    })
}

fn waiter_from_row(row: &Row) -> StoreResult<StoredWaiter> {
    let seq: i64 = row.get(0);
    let account: &str = row.get(1);
    let spec: WaitSpec =
        serde_json::from_str(row.get(4)).map_err(|e| StoreError::Corrupt(format!("waiter {seq}: {e}")))?;
    Ok(StoredWaiter {
        seq,
        account_id: account
            .parse()
            .map_err(|_| StoreError::Corrupt(format!("waiter {seq} has account id `{account}`")))?,
        event_id: row.get(2),
        deadline: Timestamp::from_millis(row.get(3)),
        spec,
    })
}

const GROUP_COLUMNS: &str = "name, created_at, updated_at, endpoints, default_headers";

#[async_trait]
impl UrlGroupStore for PgQueueStore {
    async fn url_group(&self, account: AccountId, name: &UrlGroupName) -> StoreResult<Option<UrlGroup>> {
        let client = self.database.client().await?;
        client
            .query_opt(
                &format!("SELECT {GROUP_COLUMNS} FROM url_groups WHERE account_id = $1 AND name = $2"),
                &[&account.to_string(), &name.as_str()],
            )
            .await
            .map_err(backend_error)?
            .as_ref()
            .map(group_from_row)
            .transpose()
    }

    async fn url_groups(&self, account: AccountId) -> StoreResult<Vec<UrlGroup>> {
        let client = self.database.client().await?;
        client
            .query(
                &format!("SELECT {GROUP_COLUMNS} FROM url_groups WHERE account_id = $1 ORDER BY name"),
                &[&account.to_string()],
            )
            .await
            .map_err(backend_error)?
            .iter()
            .map(group_from_row)
            .collect()
    }

    async fn put_url_group(&self, account: AccountId, group: &UrlGroup) -> StoreResult<()> {
        let (endpoints, headers) = (json(&group.endpoints)?, json(&group.default_headers)?);
        let client = self.database.client().await?;
        client
            .execute(
                "INSERT INTO url_groups (account_id, name, created_at, updated_at, endpoints, default_headers)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (account_id, name) DO UPDATE SET updated_at = excluded.updated_at,
                     endpoints = excluded.endpoints, default_headers = excluded.default_headers",
                &[
                    &account.to_string(),
                    &group.name.as_str(),
                    &group.created_at.as_millis(),
                    &group.updated_at.as_millis(),
                    &endpoints,
                    &headers,
                ],
            )
            .await
            .map(drop)
            .map_err(backend_error)
    }

    async fn delete_url_group(&self, account: AccountId, name: &UrlGroupName) -> StoreResult<bool> {
        let client = self.database.client().await?;
        client
            .execute(
                "DELETE FROM url_groups WHERE account_id = $1 AND name = $2",
                &[&account.to_string(), &name.as_str()],
            )
            .await
            .map(|deleted| deleted == 1)
            .map_err(backend_error)
    }
}

#[async_trait]
impl WaiterStore for PgQueueStore {
    async fn add_waiter(
        &self,
        account: AccountId,
        event_id: &str,
        run_id: Option<&str>,
        deadline: Timestamp,
        spec: &WaitSpec,
    ) -> StoreResult<()> {
        let spec = json(spec)?;
        let client = self.database.client().await?;
        client
            .execute(
                "INSERT INTO waiters (account_id, event_id, run_id, deadline, spec) VALUES ($1, $2, $3, $4, $5)",
                &[&account.to_string(), &event_id, &run_id, &deadline.as_millis(), &spec],
            )
            .await
            .map(drop)
            .map_err(backend_error)
            .inspect(|_| self.database.hint(Hint::Schedules))
    }

    async fn waiters(
        &self,
        account: AccountId,
        event_id: &str,
        run_id: Option<&str>,
    ) -> StoreResult<Vec<StoredWaiter>> {
        self.waiters_where(
            "WHERE account_id = $1 AND event_id = $2 AND ($3::TEXT IS NULL OR run_id = $3) ORDER BY seq",
            &[&account.to_string(), &event_id, &run_id],
        )
        .await
    }

    async fn remove_waiter(&self, seq: i64) -> StoreResult<bool> {
        // Removed once: of nodes that race for one waiter, one deletes it and the others learn it is gone.
        let client = self.database.client().await?;
        client
            .execute("DELETE FROM waiters WHERE seq = $1", &[&seq])
            .await
            .map(|deleted| deleted == 1)
            .map_err(backend_error)
    }

    async fn due_waiters(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<StoredWaiter>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.waiters_where(
            "WHERE deadline <= $1 ORDER BY deadline, seq LIMIT $2",
            &[&now.as_millis(), &limit],
        )
        .await
    }

    async fn next_waiter_deadline(&self) -> StoreResult<Option<Timestamp>> {
        let client = self.database.client().await?;
        let deadline: Option<i64> = client
            .query_one("SELECT MIN(deadline) FROM waiters", &[])
            .await
            .map_err(backend_error)?
            .get(0);
        Ok(deadline.map(Timestamp::from_millis))
    }

    async fn keep_early_event(
        &self,
        account: AccountId,
        run_id: &str,
        event_id: &str,
        data: &[u8],
        now: Timestamp,
    ) -> StoreResult<()> {
        let client = self.database.client().await?;
        client
            .execute(
                "INSERT INTO early_events (account_id, run_id, event_id, data, created_at) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (account_id, run_id, event_id) DO UPDATE SET data = excluded.data,
                     created_at = excluded.created_at",
                &[&account.to_string(), &run_id, &event_id, &data, &now.as_millis()],
            )
            .await
            .map(drop)
            .map_err(backend_error)
    }

    async fn take_early_event(
        &self,
        account: AccountId,
        run_id: &str,
        event_id: &str,
    ) -> StoreResult<Option<Vec<u8>>> {
        let client = self.database.client().await?;
        Ok(client
            .query_opt(
                "DELETE FROM early_events WHERE account_id = $1 AND run_id = $2 AND event_id = $3 RETURNING data",
                &[&account.to_string(), &run_id, &event_id],
            )
            .await
            .map_err(backend_error)?
            .map(|row| row.get::<_, Vec<u8>>(0)))
    }
}

#[async_trait]
impl ScheduleStore for PgQueueStore {
    async fn put_schedule(&self, schedule: &Schedule) -> StoreResult<()> {
        let spec = json(schedule)?;
        let next = schedule
            .next_fire
            .filter(|_| !schedule.paused)
            .map(Timestamp::as_millis);
        let client = self.database.client().await?;
        client
            .execute(
                "INSERT INTO schedules (account_id, id, created_at, next_fire, spec) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (account_id, id) DO UPDATE SET created_at = excluded.created_at,
                     next_fire = excluded.next_fire, spec = excluded.spec",
                &[
                    &schedule.account_id.to_string(),
                    &schedule.id.as_str(),
                    &schedule.created_at.as_millis(),
                    &next,
                    &spec,
                ],
            )
            .await
            .map(drop)
            .map_err(backend_error)
            .inspect(|_| self.database.hint(Hint::Schedules))
    }

    async fn schedule(&self, account: AccountId, id: &ScheduleId) -> StoreResult<Option<Schedule>> {
        Ok(self
            .schedules_from(
                "SELECT spec FROM schedules WHERE account_id = $1 AND id = $2",
                &[&account.to_string(), &id.as_str()],
            )
            .await?
            .pop())
    }

    async fn schedules(&self, account: AccountId) -> StoreResult<Vec<Schedule>> {
        self.schedules_from(
            "SELECT spec FROM schedules WHERE account_id = $1 ORDER BY created_at, id",
            &[&account.to_string()],
        )
        .await
    }

    async fn delete_schedule(&self, account: AccountId, id: &ScheduleId) -> StoreResult<bool> {
        let client = self.database.client().await?;
        client
            .execute(
                "DELETE FROM schedules WHERE account_id = $1 AND id = $2",
                &[&account.to_string(), &id.as_str()],
            )
            .await
            .map(|deleted| deleted == 1)
            .map_err(backend_error)
            .inspect(|_| self.database.hint(Hint::Schedules))
    }

    /// Schedules another node is claiming right now are skipped, not waited for; one whose claim
    /// committed meanwhile is re-read and dropped for not being due. So each firing happens on one node.
    async fn claim_due_schedules(
        &self,
        now: Timestamp,
        limit: usize,
        hold_until: Timestamp,
    ) -> StoreResult<Vec<Schedule>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut due = self
            .schedules_from(
                "UPDATE schedules s SET next_fire = $3 FROM (
                     SELECT account_id, id FROM schedules WHERE next_fire <= $1 ORDER BY next_fire LIMIT $2
                     FOR UPDATE SKIP LOCKED) due
                 WHERE s.account_id = due.account_id AND s.id = due.id RETURNING s.spec",
                &[&now.as_millis(), &limit, &hold_until.as_millis()],
            )
            .await?;
        due.sort_by_key(|s| s.next_fire);
        Ok(due)
    }

    async fn next_schedule_due(&self) -> StoreResult<Option<Timestamp>> {
        let client = self.database.client().await?;
        let due: Option<i64> = client
            .query_one("SELECT MIN(next_fire) FROM schedules", &[])
            .await
            .map_err(backend_error)?
            .get(0);
        Ok(due.map(Timestamp::from_millis))
    }
}
