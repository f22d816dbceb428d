//! URL groups in `queue.db`: a group's endpoints and default headers, one row per group.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use quiver_queue::names::UrlGroupName;
use quiver_queue::store::{Endpoint, UrlGroup, UrlGroupStore};
use rusqlite::{OptionalExtension, Row, params};

use crate::database::backend_error;
use crate::queue::SqliteQueueStore;
use crate::queue::rows::{corrupt, read_error, to_json};

fn group_from_row(row: &Row<'_>) -> rusqlite::Result<UrlGroup> {
    let endpoints: String = row.get(3)?;
    let headers: String = row.get(4)?;
    Ok(UrlGroup {
        name: UrlGroupName::parse(row.get::<_, String>(0)?).map_err(|e| corrupt(0, e))?,
        created_at: Timestamp::from_millis(row.get(1)?),
        updated_at: Timestamp::from_millis(row.get(2)?),
        endpoints: serde_json::from_str::<Vec<Endpoint>>(&endpoints).map_err(|e| corrupt(3, e))?,
        default_headers: serde_json::from_str(&headers).map_err(|e| corrupt(4, e))?,
    })
}

#[async_trait]
impl UrlGroupStore for SqliteQueueStore {
    async fn url_group(&self, account: AccountId, name: &UrlGroupName) -> StoreResult<Option<UrlGroup>> {
        let name = name.to_owned();
        self.database
            .read(move |c| {
                c.prepare_cached(
                    "SELECT name, created_at, updated_at, endpoints, default_headers FROM url_groups
                     WHERE account_id = ?1 AND name = ?2",
                )
                .and_then(|mut s| {
                    s.query_row([account.to_string(), name.to_string()], group_from_row)
                        .optional()
                })
                .map_err(read_error)
            })
            .await
    }

    async fn url_groups(&self, account: AccountId) -> StoreResult<Vec<UrlGroup>> {
        self.database
            .read(move |c| {
                let mut statement = c
                    .prepare_cached(
                        "SELECT name, created_at, updated_at, endpoints, default_headers FROM url_groups
                         WHERE account_id = ?1 ORDER BY name",
                    )
                    .map_err(read_error)?;
                let rows = statement
                    .query_map([account.to_string()], group_from_row)
                    .map_err(read_error)?;
                rows.collect::<Result<_, _>>().map_err(read_error)
            })
            .await
    }

    async fn put_url_group(&self, account: AccountId, group: &UrlGroup) -> StoreResult<()> {
        let group = group.clone();
        let endpoints = to_json(&group.endpoints)?;
        let headers = to_json(&group.default_headers)?;
        self.database
            .write(move |c| {
                c.execute(
                    "INSERT INTO url_groups (account_id, name, created_at, updated_at, endpoints, default_headers)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (account_id, name) DO UPDATE SET updated_at = excluded.updated_at,
                         endpoints = excluded.endpoints, default_headers = excluded.default_headers",
                    params![account.to_string(), group.name.as_str(), group.created_at.as_millis(), group.updated_at.as_millis(), endpoints, headers],
                )
                .map(drop)
                .map_err(backend_error)
            })
            .await
    }

    async fn delete_url_group(&self, account: AccountId, name: &UrlGroupName) -> StoreResult<bool> {
        let name = name.to_owned();
        self.database
            .write(move |c| {
                c.execute(
                    "DELETE FROM url_groups WHERE account_id = ?1 AND name = ?2",
                    [account.to_string(), name.to_string()],
                )
                .map(|n| n == 1)
                .map_err(backend_error)
            })
            .await
    }
}
