//! The management domain's store in `catalog.db`.

use std::path::Path;
use std::str::FromStr;

use async_trait::async_trait;
use quiver_admin::account::{Account, Email};
use quiver_admin::catalog::{IndexKind, IndexName, IndexRecord, IndexSettings};
use quiver_admin::store::AdminStore;
use quiver_admin::usage::{MinuteUsage, slot_of};
use quiver_core::plan::PlanType;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, IndexId, StoreError, Timestamp};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::config::StorageConfig;
use crate::database::{Database, backend_error};
use crate::migrations;

/// Accounts and the index catalogue in SQLite.
#[derive(Debug, Clone)]
pub struct SqliteAdminStore {
    database: Database,
}

const ACCOUNT_COLUMNS: &str = "id, email, api_key, queue_token, queue_read_only_token, current_signing_key, \
                               next_signing_key, created_at, is_bootstrap";
const INDEX_COLUMNS: &str =
    "id, account_id, name, endpoint, plan, token, read_only_token, created_at, settings";

impl SqliteAdminStore {
    /// Opens `catalog.db` in `data_dir`, creating and migrating it as needed.
    ///
    /// # Errors
    /// The file cannot be opened or migrated.
    pub fn open(data_dir: &Path, config: &StorageConfig) -> StoreResult<SqliteAdminStore> {
        let path = data_dir.join("catalog.db");
        let database = Database::open(&path, migrations::CATALOG, config)?;
        fill_usage_slots(&path)?;
        Ok(SqliteAdminStore { database })
    }

    /// The underlying database (for shutdown and benchmarks).
    pub fn database(&self) -> &Database {
        &self.database
    }
}

/// Rolls stored minutes up into slots when the slot table is empty and minutes exist: once, after the
/// slot table is created.
fn fill_usage_slots(path: &Path) -> StoreResult<()> {
    let mut c = rusqlite::Connection::open(path).map_err(backend_error)?;
    c.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(backend_error)?;
    let needed: bool = c
        .query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM usage_slots) AND EXISTS (SELECT 1 FROM usage_minutes)",
            [],
            |r| r.get(0),
        )
        .map_err(backend_error)?;
    if !needed {
        return Ok(());
    }
    let t = c.transaction().map_err(backend_error)?;
    let minutes: Vec<(String, i64, String)> = {
        let mut statement = t
            .prepare("SELECT index_id, minute, usage FROM usage_minutes ORDER BY index_id, minute")
            .map_err(backend_error)?;
        let rows = statement
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(backend_error)?;
        rows.collect::<rusqlite::Result<_>>().map_err(backend_error)?
    };
    for (key, minute, text) in minutes {
        let usage: MinuteUsage =
            serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        merge_usage(&t, "usage_slots", "slot", &key, slot_of(minute), &usage)?;
    }
    t.commit().map_err(backend_error)
}

/// Merges `added` into the row of `table` keyed by (`key`, `at`).
fn merge_usage(
    c: &rusqlite::Connection,
    table: &str,
    column: &str,
    key: &str,
    at: i64,
    added: &MinuteUsage,
) -> StoreResult<()> {
    let stored: Option<String> = c
        .prepare_cached(&format!(
            "SELECT usage FROM {table} WHERE index_id = ?1 AND {column} = ?2"
        ))
        .and_then(|mut s| s.query_row(params![key, at], |r| r.get(0)).optional())
        .map_err(backend_error)?;
    let mut merged: MinuteUsage = match stored {
        Some(text) => serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        None => MinuteUsage::default(),
    };
    merged.merge(added);
    let text = serde_json::to_string(&merged).map_err(|e| StoreError::Backend(e.to_string()))?;
    c.prepare_cached(&format!(
        "INSERT INTO {table} (index_id, {column}, usage) VALUES (?1, ?2, ?3)
         ON CONFLICT (index_id, {column}) DO UPDATE SET usage = excluded.usage"
    ))
    .and_then(|mut s| s.execute(params![key, at, text]))
    .map_err(backend_error)?;
    Ok(())
}

/// Rows of `table` for one index with `column` in `from..=to`, oldest first.
fn read_usage(
    c: &rusqlite::Connection,
    table: &str,
    column: &str,
    index: IndexId,
    from: i64,
    to: i64,
) -> StoreResult<Vec<(i64, MinuteUsage)>> {
    let mut statement = c
        .prepare_cached(&format!(
            "SELECT {column}, usage FROM {table} WHERE index_id = ?1 AND {column} BETWEEN ?2 AND ?3
             ORDER BY {column}"
        ))
        .map_err(read_error)?;
    let rows = statement
        .query_map(params![index.to_string(), from, to], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(read_error)?;
    let mut found = Vec::new();
    for row in rows {
        let (at, text) = row.map_err(read_error)?;
        found.push((
            at,
            serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        ));
    }
    Ok(found)
}

fn parse<T: FromStr>(text: &str, what: &str) -> rusqlite::Result<T> {
    text.parse().map_err(|_| {
        rusqlite::Error::FromSqlConversionFailure(
            0,
            rusqlite::types::Type::Text,
            format!("bad {what}: {text}").into(),
        )
    })
}

fn account_from_row(row: &Row<'_>) -> rusqlite::Result<Account> {
    let id: String = row.get(0)?;
    let email: String = row.get(1)?;
    Ok(Account {
        id: parse::<AccountId>(&id, "account id")?,
        email: Email::try_from(email.clone()).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
        })?,
        api_key: row.get(2)?,
        queue_token: row.get(3)?,
        queue_read_only_token: row.get(4)?,
        current_signing_key: row.get(5)?,
        next_signing_key: row.get(6)?,
        created_at: Timestamp::from_millis(row.get(7)?),
        is_bootstrap: row.get(8)?,
    })
}

fn index_from_row(row: &Row<'_>) -> rusqlite::Result<IndexRecord> {
    let text = |i: usize| row.get::<_, String>(i);
    let name = IndexName::try_from(text(2)?).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(2, rusqlite::types::Type::Text, Box::new(e))
    })?;
    let settings: IndexSettings = serde_json::from_str(&text(8)?).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(8, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(IndexRecord {
        id: parse::<IndexId>(&text(0)?, "index id")?,
        account_id: parse::<AccountId>(&text(1)?, "account id")?,
        name,
        endpoint: text(3)?,
        plan: parse::<PlanType>(&text(4)?, "plan")?,
        token: text(5)?,
        read_only_token: text(6)?,
        created_at: Timestamp::from_millis(row.get(7)?),
        settings,
    })
}

fn read_error(error: rusqlite::Error) -> StoreError {
    if matches!(error, rusqlite::Error::FromSqlConversionFailure(..)) {
        StoreError::Corrupt(error.to_string())
    } else {
        backend_error(error)
    }
}

fn settings_json(index: &IndexRecord) -> StoreResult<String> {
    serde_json::to_string(&index.settings).map_err(|e| StoreError::Backend(e.to_string()))
}

fn query_accounts(connection: &Connection, filter: &str, value: Option<String>) -> StoreResult<Vec<Account>> {
    let sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts {filter} ORDER BY created_at, rowid");
    let mut statement = connection.prepare_cached(&sql).map_err(read_error)?;
    let rows = match value {
        Some(value) => statement.query_map([value], account_from_row),
        None => statement.query_map([], account_from_row),
    }
    .map_err(read_error)?;
    rows.collect::<Result<_, _>>().map_err(read_error)
}

fn query_index(
    connection: &Connection,
    filter: &str,
    values: &[&dyn rusqlite::ToSql],
) -> StoreResult<Option<IndexRecord>> {
    let sql = format!("SELECT {INDEX_COLUMNS} FROM indexes {filter}");
    let mut statement = connection.prepare_cached(&sql).map_err(read_error)?;
    statement
        .query_row(values, index_from_row)
        .optional()
        .map_err(read_error)
}

#[async_trait]
impl AdminStore for SqliteAdminStore {
    async fn insert_account(&self, account: &Account) -> StoreResult<()> {
        let account = account.clone();
        self.database
            .write(move |c| {
                c.prepare_cached(&format!(
                    "INSERT INTO accounts ({ACCOUNT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                ))
                .and_then(|mut s| {
                    s.execute(params![
                        account.id.to_string(),
                        account.email.as_str(),
                        account.api_key,
                        account.queue_token,
                        account.queue_read_only_token,
                        account.current_signing_key,
                        account.next_signing_key,
                        account.created_at.as_millis(),
                        account.is_bootstrap,
                    ])
                })
                .map(drop)
                .map_err(backend_error)
            })
            .await
    }

    async fn update_account(&self, account: &Account) -> StoreResult<bool> {
        let account = account.clone();
        self.database
            .write(move |c| {
                c.execute(
                    "UPDATE accounts SET email = ?2, api_key = ?3, queue_token = ?4, queue_read_only_token = ?5,
                         current_signing_key = ?6, next_signing_key = ?7, is_bootstrap = ?8 WHERE id = ?1",
                    params![
                        account.id.to_string(),
                        account.email.as_str(),
                        account.api_key,
                        account.queue_token,
                        account.queue_read_only_token,
                        account.current_signing_key,
                        account.next_signing_key,
                        account.is_bootstrap,
                    ],
                )
                .map(|changed| changed == 1)
                .map_err(backend_error)
            })
            .await
    }

    async fn account_by_email(&self, email: &str) -> StoreResult<Option<Account>> {
        let email = email.to_owned();
        self.database
            .read(move |c| Ok(query_accounts(c, "WHERE email = ?1", Some(email))?.pop()))
            .await
    }

    async fn account_by_id(&self, id: AccountId) -> StoreResult<Option<Account>> {
        self.database
            .read(move |c| Ok(query_accounts(c, "WHERE id = ?1", Some(id.to_string()))?.pop()))
            .await
    }

    async fn account_by_queue_token(&self, token: &str) -> StoreResult<Option<Account>> {
        let token = token.to_owned();
        self.database
            .read(move |c| {
                Ok(query_accounts(
                    c,
                    "WHERE queue_token = ?1 OR queue_read_only_token = ?1",
                    Some(token),
                )?
                .pop())
            })
            .await
    }

    async fn bootstrap_account(&self) -> StoreResult<Option<Account>> {
        self.database
            .read(|c| Ok(query_accounts(c, "WHERE is_bootstrap = 1", None)?.pop()))
            .await
    }

    async fn accounts(&self) -> StoreResult<Vec<Account>> {
        self.database.read(|c| query_accounts(c, "", None)).await
    }

    async fn insert_index(&self, index: &IndexRecord) -> StoreResult<()> {
        let index = index.clone();
        let settings = settings_json(&index)?;
        self.database
            .write(move |c| {
                c.prepare_cached(
                    "INSERT INTO indexes (id, account_id, kind, name, endpoint, plan, token, read_only_token,
                         created_at, settings) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .and_then(|mut s| {
                    s.execute(params![
                        index.id.to_string(),
                        index.account_id.to_string(),
                        index.kind().as_str(),
                        index.name.as_str(),
                        index.endpoint,
                        index.plan.as_str(),
                        index.token,
                        index.read_only_token,
                        index.created_at.as_millis(),
                        settings,
                    ])
                })
                .map(drop)
                .map_err(backend_error)
            })
            .await
    }

    async fn index(&self, account: AccountId, id: IndexId) -> StoreResult<Option<IndexRecord>> {
        self.database
            .read(move |c| {
                query_index(
                    c,
                    "WHERE id = ?1 AND account_id = ?2",
                    &[&id.to_string(), &account.to_string()],
                )
            })
            .await
    }

    async fn indexes(&self, account: AccountId, kind: IndexKind) -> StoreResult<Vec<IndexRecord>> {
        self.database
            .read(move |c| {
                let mut statement = c
                    .prepare_cached(&format!(
                        "SELECT {INDEX_COLUMNS} FROM indexes WHERE account_id = ?1 AND kind = ?2
                         ORDER BY created_at, rowid"
                    ))
                    .map_err(read_error)?;
                let rows = statement
                    .query_map([account.to_string(), kind.as_str().to_owned()], index_from_row)
                    .map_err(read_error)?;
                rows.collect::<Result<_, _>>().map_err(read_error)
            })
            .await
    }

    async fn update_index(&self, index: &IndexRecord) -> StoreResult<bool> {
        let index = index.clone();
        let settings = settings_json(&index)?;
        self.database
            .write(move |c| {
                c.execute(
                    "UPDATE indexes SET account_id = ?2, name = ?3, endpoint = ?4, plan = ?5, token = ?6,
                         read_only_token = ?7, settings = ?8 WHERE id = ?1",
                    params![
                        index.id.to_string(),
                        index.account_id.to_string(),
                        index.name.as_str(),
                        index.endpoint,
                        index.plan.as_str(),
                        index.token,
                        index.read_only_token,
                        settings,
                    ],
                )
                .map(|changed| changed == 1)
                .map_err(backend_error)
            })
            .await
    }

    async fn delete_index(&self, account: AccountId, id: IndexId) -> StoreResult<bool> {
        self.database
            .write(move |c| {
                c.execute(
                    "DELETE FROM indexes WHERE id = ?1 AND account_id = ?2",
                    [id.to_string(), account.to_string()],
                )
                .map(|deleted| deleted == 1)
                .map_err(backend_error)
            })
            .await
    }

    async fn add_usage(&self, mut usage: Vec<(IndexId, i64, MinuteUsage)>) -> StoreResult<()> {
        usage.sort_by_key(|(index, minute, _)| (*index, *minute));
        self.database
            .write(move |c| {
                for (index, minute, added) in usage {
                    let key = index.to_string();
                    merge_usage(c, "usage_minutes", "minute", &key, minute, &added)?;
                    merge_usage(c, "usage_slots", "slot", &key, slot_of(minute), &added)?;
                }
                Ok(())
            })
            .await
    }

    async fn usage(&self, index: IndexId, from: i64, to: i64) -> StoreResult<Vec<(i64, MinuteUsage)>> {
        self.database
            .read(move |c| read_usage(c, "usage_minutes", "minute", index, from, to))
            .await
    }

    async fn usage_slots(&self, index: IndexId, from: i64, to: i64) -> StoreResult<Vec<(i64, MinuteUsage)>> {
        self.database
            .read(move |c| read_usage(c, "usage_slots", "slot", index, from, to))
            .await
    }

    async fn index_by_token(&self, token: &str) -> StoreResult<Option<IndexRecord>> {
        let token = token.to_owned();
        self.database
            .read(move |c| query_index(c, "WHERE token = ?1 OR read_only_token = ?1", &[&token]))
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_sqlite_admin_store_passes_the_conformance_suite() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteAdminStore::open(dir.path(), &StorageConfig::default()).unwrap();
        quiver_admin::testing::conformance(Arc::new(store)).await;
    }

    #[tokio::test]
    async fn the_sqlite_admin_store_keeps_acknowledged_writes_across_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let open = || async {
            let store = SqliteAdminStore::open(dir.path(), &StorageConfig::default()).unwrap();
            Arc::new(store) as Arc<dyn quiver_admin::AdminStore>
        };
        quiver_admin::testing::restart_keeps_every_acknowledged_write(open).await;
    }
}
