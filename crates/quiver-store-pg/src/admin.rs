//! Accounts, the index catalogue and usage in PostgreSQL.

use std::collections::BTreeMap;
use std::str::FromStr;

use async_trait::async_trait;
use quiver_admin::account::{Account, Email};
use quiver_admin::catalog::{IndexKind, IndexName, IndexRecord, IndexSettings};
use quiver_admin::store::AdminStore;
use quiver_admin::usage::{MinuteUsage, slot_of};
use quiver_core::plan::PlanType;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, IndexId, StoreError, Timestamp};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::database::{PgDatabase, PgOptions, backend_error};

/// The management domain's store over a [`PgDatabase`]. Every node of a deployment opens one over the
/// same database; usage added by several nodes at once merges without loss.
#[derive(Debug, Clone)]
pub struct PgAdminStore {
    database: PgDatabase,
}

const ACCOUNT_COLUMNS: &str = "id, email, api_key, queue_token, queue_read_only_token, current_signing_key, \
                               next_signing_key, created_at, is_bootstrap";
const INDEX_COLUMNS: &str =
    "id, account_id, name, endpoint, plan, token, read_only_token, created_at, settings";

impl PgAdminStore {
    /// Connects and migrates.
    ///
    /// # Errors
    /// As [`PgDatabase::open`].
    pub async fn open(options: &PgOptions) -> StoreResult<PgAdminStore> {
        Ok(PgAdminStore {
            database: PgDatabase::open(options).await?,
        })
    }

    /// The store over an open database.
    pub fn new(database: PgDatabase) -> PgAdminStore {
        PgAdminStore { database }
    }

    async fn accounts_where(
        &self,
        filter: &str,
        values: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<Account>> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                &format!("SELECT {ACCOUNT_COLUMNS} FROM accounts {filter} ORDER BY created_at, seq"),
                values,
            )
            .await
            .map_err(backend_error)?;
        rows.iter().map(account_from_row).collect()
    }

    async fn index_where(
        &self,
        filter: &str,
        values: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Option<IndexRecord>> {
        let client = self.database.client().await?;
        let row = client
            .query_opt(&format!("SELECT {INDEX_COLUMNS} FROM indexes {filter}"), values)
            .await
            .map_err(backend_error)?;
        row.as_ref().map(index_from_row).transpose()
    }

    async fn read_usage(
        &self,
        table: &str,
        column: &str,
        index: IndexId,
        from: i64,
        to: i64,
    ) -> StoreResult<Vec<(i64, MinuteUsage)>> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {column}, usage FROM {table} WHERE index_id = $1 AND {column} BETWEEN $2 AND $3
                     ORDER BY {column}"
                ),
                &[&index.to_string(), &from, &to],
            )
            .await
            .map_err(backend_error)?;
        rows.iter()
            .map(|row| Ok((row.get::<_, i64>(0), usage_of(row.get(1))?)))
            .collect()
    }
}

fn corrupt(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {error}"))
}

fn parsed<T: FromStr>(text: &str, what: &str) -> StoreResult<T> {
    text.parse().map_err(|_| corrupt(what, text))
}

fn usage_of(text: &str) -> StoreResult<MinuteUsage> {
    serde_json::from_str(text).map_err(|e| corrupt("usage", e))
}

fn usage_text(usage: &MinuteUsage) -> StoreResult<String> {
    serde_json::to_string(usage).map_err(|e| StoreError::Backend(e.to_string()))
}

fn account_from_row(row: &Row) -> StoreResult<Account> {
    let email: String = row.get(1);
    Ok(Account {
        id: parsed(row.get(0), "account id")?,
        email: Email::try_from(email).map_err(|e| corrupt("email", e))?,
        api_key: row.get(2),
        queue_token: row.get(3),
        queue_read_only_token: row.get(4),
        current_signing_key: row.get(5),
        next_signing_key: row.get(6),
        created_at: Timestamp::from_millis(row.get(7)),
        is_bootstrap: row.get(8),
    })
}

fn index_from_row(row: &Row) -> StoreResult<IndexRecord> {
    let name: String = row.get(2);
    let settings: IndexSettings =
        serde_json::from_str(row.get(8)).map_err(|e| corrupt("index settings", e))?;
    Ok(IndexRecord {
        id: parsed(row.get(0), "index id")?,
        account_id: parsed(row.get(1), "account id")?,
        name: IndexName::try_from(name).map_err(|e| corrupt("index name", e))?,
        endpoint: row.get(3),
        plan: parsed::<PlanType>(row.get(4), "plan")?,
        token: row.get(5),
        read_only_token: row.get(6),
        created_at: Timestamp::from_millis(row.get(7)),
        settings,
    })
}

fn settings_text(index: &IndexRecord) -> StoreResult<String> {
    serde_json::to_string(&index.settings).map_err(|e| StoreError::Backend(e.to_string()))
}

/// Merges `added` into the rows of `table` keyed by (index, `column`), in key order, in `transaction`.
/// Each row is created if missing and then locked, so that nodes adding to the same minute at once
/// both count: one waits for the other's commit and merges into what it wrote.
async fn merge_usage(
    transaction: &tokio_postgres::Transaction<'_>,
    table: &str,
    column: &str,
    added: &BTreeMap<(String, i64), MinuteUsage>,
) -> StoreResult<()> {
    let empty = usage_text(&MinuteUsage::default())?;
    for ((index, at), usage) in added {
        transaction
            .execute(
                &format!(
                    "INSERT INTO {table} (index_id, {column}, usage) VALUES ($1, $2, $3)
                     ON CONFLICT (index_id, {column}) DO NOTHING"
                ),
                &[index, at, &empty],
            )
            .await
            .map_err(backend_error)?;
        let stored: String = transaction
            .query_one(
                &format!("SELECT usage FROM {table} WHERE index_id = $1 AND {column} = $2 FOR UPDATE"),
                &[index, at],
            )
            .await
            .map_err(backend_error)?
            .get(0);
        let mut merged = usage_of(&stored)?;
        merged.merge(usage);
        transaction
            .execute(
                &format!("UPDATE {table} SET usage = $3 WHERE index_id = $1 AND {column} = $2"),
                &[index, at, &usage_text(&merged)?],
            )
            .await
            .map_err(backend_error)?;
    }
    Ok(())
}

#[async_trait]
impl AdminStore for PgAdminStore {
    async fn insert_account(&self, account: &Account) -> StoreResult<()> {
        let client = self.database.client().await?;
        client
            .execute(
                &format!(
                    "INSERT INTO accounts ({ACCOUNT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
                ),
                &[
                    &account.id.to_string(),
                    &account.email.as_str(),
                    &account.api_key,
                    &account.queue_token,
                    &account.queue_read_only_token,
                    &account.current_signing_key,
                    &account.next_signing_key,
                    &account.created_at.as_millis(),
                    &account.is_bootstrap,
                ],
            )
            .await
            .map(drop)
            .map_err(backend_error)
    }

    async fn update_account(&self, account: &Account) -> StoreResult<bool> {
        let client = self.database.client().await?;
        client
            .execute(
                "UPDATE accounts SET email = $2, api_key = $3, queue_token = $4, queue_read_only_token = $5,
                     current_signing_key = $6, next_signing_key = $7, is_bootstrap = $8 WHERE id = $1",
                &[
                    &account.id.to_string(),
                    &account.email.as_str(),
                    &account.api_key,
                    &account.queue_token,
                    &account.queue_read_only_token,
                    &account.current_signing_key,
                    &account.next_signing_key,
                    &account.is_bootstrap,
                ],
            )
            .await
            .map(|changed| changed == 1)
            .map_err(backend_error)
    }

    async fn account_by_email(&self, email: &str) -> StoreResult<Option<Account>> {
        Ok(self.accounts_where("WHERE email = $1", &[&email]).await?.pop())
    }

    async fn account_by_id(&self, id: AccountId) -> StoreResult<Option<Account>> {
        Ok(self
            .accounts_where("WHERE id = $1", &[&id.to_string()])
            .await?
            .pop())
    }

    async fn account_by_queue_token(&self, token: &str) -> StoreResult<Option<Account>> {
        Ok(self
            .accounts_where("WHERE queue_token = $1 OR queue_read_only_token = $1", &[&token])
            .await?
            .pop())
    }

    async fn bootstrap_account(&self) -> StoreResult<Option<Account>> {
        Ok(self.accounts_where("WHERE is_bootstrap", &[]).await?.pop())
    }

    async fn accounts(&self) -> StoreResult<Vec<Account>> {
        self.accounts_where("", &[]).await
    }

    async fn insert_index(&self, index: &IndexRecord) -> StoreResult<()> {
        let settings = settings_text(index)?;
        let client = self.database.client().await?;
        client
            .execute(
                "INSERT INTO indexes (id, account_id, kind, name, endpoint, plan, token, read_only_token,
                     created_at, settings) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    &index.id.to_string(),
                    &index.account_id.to_string(),
                    &index.kind().as_str(),
                    &index.name.as_str(),
                    &index.endpoint,
                    &index.plan.as_str(),
                    &index.token,
                    &index.read_only_token,
                    &index.created_at.as_millis(),
                    &settings,
                ],
            )
            .await
            .map(drop)
            .map_err(backend_error)
    }

    async fn index(&self, account: AccountId, id: IndexId) -> StoreResult<Option<IndexRecord>> {
        self.index_where(
            "WHERE id = $1 AND account_id = $2",
            &[&id.to_string(), &account.to_string()],
        )
        .await
    }

    async fn indexes(&self, account: AccountId, kind: IndexKind) -> StoreResult<Vec<IndexRecord>> {
        let client = self.database.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {INDEX_COLUMNS} FROM indexes WHERE account_id = $1 AND kind = $2
                     ORDER BY created_at, seq"
                ),
                &[&account.to_string(), &kind.as_str()],
            )
            .await
            .map_err(backend_error)?;
        rows.iter().map(index_from_row).collect()
    }

    async fn update_index(&self, index: &IndexRecord) -> StoreResult<bool> {
        let settings = settings_text(index)?;
        let client = self.database.client().await?;
        client
            .execute(
                "UPDATE indexes SET account_id = $2, name = $3, endpoint = $4, plan = $5, token = $6,
                     read_only_token = $7, settings = $8 WHERE id = $1",
                &[
                    &index.id.to_string(),
                    &index.account_id.to_string(),
                    &index.name.as_str(),
                    &index.endpoint,
                    &index.plan.as_str(),
                    &index.token,
                    &index.read_only_token,
                    &settings,
                ],
            )
            .await
            .map(|changed| changed == 1)
            .map_err(backend_error)
    }

    async fn delete_index(&self, account: AccountId, id: IndexId) -> StoreResult<bool> {
        let client = self.database.client().await?;
        client
            .execute(
                "DELETE FROM indexes WHERE id = $1 AND account_id = $2",
                &[&id.to_string(), &account.to_string()],
            )
            .await
            .map(|deleted| deleted == 1)
            .map_err(backend_error)
    }

    async fn add_usage(&self, usage: Vec<(IndexId, i64, MinuteUsage)>) -> StoreResult<()> {
        // Merged per row first, in minute order (the latest snapshot wins), then applied minutes first
        // and slots second, each in key order: two nodes lock rows in the same order, never in a cycle.
        let mut minutes: BTreeMap<(String, i64), MinuteUsage> = BTreeMap::new();
        let mut sorted = usage;
        sorted.sort_by_key(|(index, minute, _)| (*index, *minute));
        let mut slots: BTreeMap<(String, i64), MinuteUsage> = BTreeMap::new();
        for (index, minute, added) in &sorted {
            let key = index.to_string();
            minutes.entry((key.clone(), *minute)).or_default().merge(added);
            slots.entry((key, slot_of(*minute))).or_default().merge(added);
        }
        let mut client = self.database.client().await?;
        let transaction = client.transaction().await.map_err(backend_error)?;
        merge_usage(&transaction, "usage_minutes", "minute", &minutes).await?;
        merge_usage(&transaction, "usage_slots", "slot", &slots).await?;
        transaction.commit().await.map_err(backend_error)
    }

    async fn usage(&self, index: IndexId, from: i64, to: i64) -> StoreResult<Vec<(i64, MinuteUsage)>> {
        self.read_usage("usage_minutes", "minute", index, from, to).await
    }

    async fn usage_slots(&self, index: IndexId, from: i64, to: i64) -> StoreResult<Vec<(i64, MinuteUsage)>> {
        self.read_usage("usage_slots", "slot", index, from, to).await
    }

    async fn index_by_token(&self, token: &str) -> StoreResult<Option<IndexRecord>> {
        self.index_where("WHERE token = $1 OR read_only_token = $1", &[&token])
            .await
    }
}
