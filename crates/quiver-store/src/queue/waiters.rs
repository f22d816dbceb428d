//! Workflow waiters and early events in `queue.db`.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, StoreError, Timestamp};
use quiver_queue::waiters::{StoredWaiter, WaitSpec, WaiterStore};
use rusqlite::{Connection, OptionalExtension, params};

use crate::database::backend_error;
use crate::queue::SqliteQueueStore;
use crate::queue::rows::{read_error, to_json};

fn waiters_where(
    connection: &Connection,
    filter: &str,
    values: &[&dyn rusqlite::ToSql],
) -> StoreResult<Vec<StoredWaiter>> {
    let mut statement = connection
        .prepare(&format!(
            "SELECT seq, account_id, event_id, deadline, spec FROM waiters {filter}"
        ))
        .map_err(read_error)?;
    let rows = statement
        .query_map(values, |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
            ))
        })
        .map_err(read_error)?;
    let mut waiters = Vec::new();
    for row in rows {
        let (seq, account, event_id, deadline, spec) = row.map_err(read_error)?;
        let account_id = account
            .parse()
            .map_err(|_| StoreError::Corrupt(format!("waiter {seq} has account id `{account}`")))?;
        let spec: WaitSpec =
            serde_json::from_str(&spec).map_err(|e| StoreError::Corrupt(format!("waiter {seq}: {e}")))?;
        waiters.push(StoredWaiter {
            seq,
            account_id,
            event_id,
            deadline: Timestamp::from_millis(deadline),
            spec,
        });
    }
    Ok(waiters)
}

#[async_trait]
impl WaiterStore for SqliteQueueStore {
    async fn add_waiter(
        &self,
        account: AccountId,
        event_id: &str,
        run_id: Option<&str>,
        deadline: Timestamp,
        spec: &WaitSpec,
    ) -> StoreResult<()> {
        let (event_id, run_id, spec) = (event_id.to_owned(), run_id.map(str::to_owned), to_json(spec)?);
        self.database
            .write(move |c| {
                c.execute(
                    "INSERT INTO waiters (account_id, event_id, run_id, deadline, spec) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![account.to_string(), event_id, run_id, deadline.as_millis(), spec],
                )
                .map(drop)
                .map_err(backend_error)
            })
            .await
    }

    async fn waiters(
        &self,
        account: AccountId,
        event_id: &str,
        run_id: Option<&str>,
    ) -> StoreResult<Vec<StoredWaiter>> {
        let (event_id, run_id) = (event_id.to_owned(), run_id.map(str::to_owned));
        self.database
            .read(move |c| {
                waiters_where(
                    c,
                    "WHERE account_id = ?1 AND event_id = ?2 AND (?3 IS NULL OR run_id = ?3) ORDER BY seq",
                    &[&account.to_string(), &event_id, &run_id],
                )
            })
            .await
    }

    async fn remove_waiter(&self, seq: i64) -> StoreResult<bool> {
        self.database
            .write(move |c| {
                c.execute("DELETE FROM waiters WHERE seq = ?1", [seq])
                    .map(|n| n == 1)
                    .map_err(backend_error)
            })
            .await
    }

    async fn due_waiters(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<StoredWaiter>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.database
            .read(move |c| {
                waiters_where(
                    c,
                    "WHERE deadline <= ?1 ORDER BY deadline, seq LIMIT ?2",
                    &[&now.as_millis(), &limit],
                )
            })
            .await
    }

    async fn next_waiter_deadline(&self) -> StoreResult<Option<Timestamp>> {
        self.database
            .read(|c| {
                c.query_row("SELECT MIN(deadline) FROM waiters", [], |r| {
                    r.get::<_, Option<i64>>(0)
                })
                .map(|d| d.map(Timestamp::from_millis))
                .map_err(read_error)
            })
            .await
    }

    async fn keep_early_event(
        &self,
        account: AccountId,
        run_id: &str,
        event_id: &str,
        data: &[u8],
        now: Timestamp,
    ) -> StoreResult<()> {
        let (run_id, event_id, data) = (run_id.to_owned(), event_id.to_owned(), data.to_vec());
        self.database
            .write(move |c| {
                c.execute(
                    "INSERT INTO early_events (account_id, run_id, event_id, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (account_id, run_id, event_id) DO UPDATE SET data = excluded.data,
                         created_at = excluded.created_at",
                    params![account.to_string(), run_id, event_id, data, now.as_millis()],
                )
                .map(drop)
                .map_err(backend_error)
            })
            .await
    }

    async fn take_early_event(
        &self,
        account: AccountId,
        run_id: &str,
        event_id: &str,
    ) -> StoreResult<Option<Vec<u8>>> {
        let (run_id, event_id) = (run_id.to_owned(), event_id.to_owned());
        self.database
            .write(move |c| {
                c.query_row(
                    "DELETE FROM early_events WHERE account_id = ?1 AND run_id = ?2 AND event_id = ?3 RETURNING data",
                    params![account.to_string(), run_id, event_id],
                    |r| r.get::<_, Vec<u8>>(0),
                )
                .optional()
                .map_err(backend_error)
            })
            .await
    }
}
