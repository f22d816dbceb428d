//! The vectors of every index in PostgreSQL: the source of truth that each node loads its in-memory
//! indexes from, and the ordered feed of writes that keeps every node's memory current.
//!
//! A write locks its index's head row (taking the next position), applies its changes (records of a put
//! in one statement), and appends a feed entry naming what changed. Followers read the records an entry
//! names as they now stand, so the feed never holds a vector twice.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::Transaction;
use futures_util::TryStreamExt;
use quiver_core::store::StoreResult;
use quiver_core::{IndexId, StoreError};
use quiver_vector::record::{Record, StoredRecord, bytes};
use quiver_vector::store::{Change, FEED_BEHIND, FeedPosition, VectorFeed, VectorStore};
use serde::{Deserialize, Serialize};
use tokio_postgres::Row;

use crate::database::{PgDatabase, PgOptions, TxError, backend_error};

/// The feed position a write took, refused where it is not the one after `based_on` (another node
/// wrote first).
fn check_based_on(based_on: Option<FeedPosition>, position: i64) -> Result<FeedPosition, TxError> {
    // Positions start at 1 and only grow, so the conversion holds; were one ever negative, 0 follows no
    // position and a write based on one is refused.
    let next = u64::try_from(position).unwrap_or(0);
    if based_on.is_some_and(|based_on| based_on + 1 != next) {
        return Err(TxError::Store(StoreError::Conflict(FEED_BEHIND.to_owned())));
    }
    Ok(next)
}

/// The vector engine's store over a [`PgDatabase`].
#[derive(Debug, Clone)]
pub struct PgVectorStore {
    database: PgDatabase,
}

impl PgVectorStore {
    /// Connects and migrates.
    ///
    /// # Errors
    /// As [`PgDatabase::open`].
    pub async fn open(options: &PgOptions) -> StoreResult<PgVectorStore> {
        Ok(PgVectorStore {
            database: PgDatabase::open(options).await?,
        })
    }

    /// The store over an open database.
    pub fn new(database: PgDatabase) -> PgVectorStore {
        PgVectorStore { database }
    }
}

/// Feed entries kept per index: a node further behind than this loads the index afresh.
const FEED_KEPT: i64 = 8_192;

/// What one change of a write touched, as its feed entry names it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Entry {
    Put { namespace: String, ids: Vec<String> },
    Delete { namespace: String, ids: Vec<String> },
    Reset { namespace: String },
    Drop { namespace: String },
    Rename { from: String, to: String },
}

const ENSURE_NAMESPACE: &str =
    "INSERT INTO vector_namespaces (index_id, name) VALUES ($1, $2) ON CONFLICT DO NOTHING";
const DELETE_NAMESPACE_RECORDS: &str = "DELETE FROM vectors WHERE index_id = $1 AND namespace = $2";
const RECORD_COLUMNS: &str = "namespace, id, sequence, dense, sparse, metadata, data";

fn corrupt(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {error}"))
}

/// A row of `RECORD_COLUMNS`: its namespace and record.
fn record_from_row(row: &Row) -> StoreResult<(String, StoredRecord)> {
    let metadata: Option<&str> = row.get(5);
    let record = Record {
        id: row.get(1),
        vector: row.get::<_, Option<&[u8]>>(3).map(bytes::to_dense),
        sparse: row.get::<_, Option<&[u8]>>(4).map(bytes::to_sparse),
        metadata: metadata
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| corrupt("metadata", e))?,
        data: row.get(6),
    };
    let sequence = u64::try_from(row.get::<_, i64>(2)).map_err(|e| corrupt("sequence", e))?;
    Ok((row.get(0), StoredRecord { sequence, record }))
}

/// Stores a put's rows of one namespace (see [`PutRows`]) in one statement.
const INSERT_RECORDS: &str =
    "INSERT INTO vectors (index_id, namespace, id, sequence, dense, sparse, metadata, data)
     SELECT $1, $2, * FROM UNNEST($3::TEXT[], $4::BIGINT[], $5::BYTEA[], $6::BYTEA[], $7::TEXT[], $8::TEXT[])
     ON CONFLICT (index_id, namespace, id) DO UPDATE SET sequence = excluded.sequence,
         dense = excluded.dense, sparse = excluded.sparse,
         metadata = excluded.metadata, data = excluded.data";

/// Takes the index's next feed position (its head row stays locked until commit: the index's writes
/// queue here, in order).
const TAKE_POSITION: &str = "INSERT INTO vector_heads (index_id, position) VALUES ($1, 1)
     ON CONFLICT (index_id) DO UPDATE SET position = vector_heads.position + 1
     RETURNING position";

/// The rows a put of one namespace writes, one column each: the last of repeated ids wins, in the
/// order of their sequences.
#[derive(Default)]
struct PutRows {
    ids: Vec<String>,
    sequences: Vec<i64>,
    dense: Vec<Option<Vec<u8>>>,
    sparse: Vec<Option<Vec<u8>>>,
    metadata: Vec<Option<String>>,
    data: Vec<Option<String>>,
}

impl PutRows {
    fn of(records: &[StoredRecord]) -> StoreResult<PutRows> {
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(records.len());
        for (at, stored) in records.iter().enumerate() {
            last.insert(stored.record.id.as_str(), at);
        }
        let mut kept: Vec<&StoredRecord> = records
            .iter()
            .enumerate()
            .filter(|(at, stored)| last.get(stored.record.id.as_str()) == Some(at))
            .map(|(_, stored)| stored)
            .collect();
        kept.sort_by_key(|stored| stored.sequence);
        let mut rows = PutRows::default();
        for stored in kept {
            let record = &stored.record;
            rows.ids.push(record.id.clone());
            rows.sequences
                .push(i64::try_from(stored.sequence).map_err(|e| StoreError::Backend(e.to_string()))?);
            rows.dense.push(record.vector.as_deref().map(bytes::of_dense));
            rows.sparse.push(record.sparse.as_ref().map(bytes::of_sparse));
            rows.metadata
                .push(record.metadata.as_ref().map(ToString::to_string));
            rows.data.push(record.data.clone());
        }
        Ok(rows)
    }

    /// [`INSERT_RECORDS`]' parameters: the index, the namespace, then the columns.
    fn params<'a>(&'a self, key: Param<'a>, namespace: Param<'a>) -> [Param<'a>; 8] {
        [
            key,
            namespace,
            &self.ids,
            &self.sequences,
            &self.dense,
            &self.sparse,
            &self.metadata,
            &self.data,
        ]
    }
}

/// A statement's parameter.
type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);

/// Appends a write's feed entry at the position its index's head row holds in this transaction.
const APPEND_AT_HEAD: &str = "INSERT INTO vector_feed (index_id, position, changes)
     SELECT index_id, position, $2 FROM vector_heads WHERE index_id = $1";

/// A write of puts only, in one round trip once its statements are prepared: the next position taken,
/// each namespace made sure of and its rows stored, and the feed entry appended at that position. Each
/// statement goes out before the previous one's answer comes back, and they run in the order sent.
/// Returns the position taken.
async fn write_puts(transaction: &Transaction<'_>, key: &str, changes: &[Change]) -> Result<i64, TxError> {
    let mut puts = Vec::with_capacity(changes.len());
    let mut entries = Vec::with_capacity(changes.len());
    for change in changes {
        if let Change::Put { namespace, records } = change {
            let rows = PutRows::of(records)?;
            entries.push(Entry::Put {
                namespace: namespace.clone(),
                ids: rows.ids.clone(),
            });
            puts.push((namespace, rows));
        }
    }
    let text = serde_json::to_string(&entries).map_err(|e| StoreError::Backend(e.to_string()))?;
    let (take, ensure, insert, append) = futures_util::try_join!(
        transaction.prepare_cached(TAKE_POSITION),
        transaction.prepare_cached(ENSURE_NAMESPACE),
        transaction.prepare_cached(INSERT_RECORDS),
        transaction.prepare_cached(APPEND_AT_HEAD)
    )?;
    let take_params: [Param<'_>; 1] = [&key];
    let put_params: Vec<([Param<'_>; 2], [Param<'_>; 8])> = puts
        .iter()
        .map(|(namespace, rows)| ([&key as Param<'_>, namespace], rows.params(&key, namespace)))
        .collect();
    let append_params: [Param<'_>; 2] = [&key, &text];
    let position = transaction.query_one(&take, &take_params);
    let stored =
        futures_util::future::try_join_all(put_params.iter().flat_map(|(ensure_params, insert_params)| {
            [
                transaction.execute(&ensure, ensure_params),
                transaction.execute(&insert, insert_params),
            ]
        }));
    let appended = transaction.execute(&append, &append_params);
    let (position, _, _) = futures_util::try_join!(position, stored, appended)?;
    Ok(position.get(0))
}

/// Stores records of one namespace in one statement (the last of repeated ids wins).
async fn put_records(
    transaction: &Transaction<'_>,
    key: &str,
    namespace: &str,
    records: &[StoredRecord],
) -> Result<Vec<String>, TxError> {
    let rows = PutRows::of(records)?;
    let (ensure, insert) = futures_util::try_join!(
        transaction.prepare_cached(ENSURE_NAMESPACE),
        transaction.prepare_cached(INSERT_RECORDS)
    )?;
    let ensure_params: [Param<'_>; 2] = [&key, &namespace];
    let insert_params = rows.params(&key, &namespace);
    // Both go out before either answer comes back (once prepared, as the connection keeps them), and run
    // in the order sent.
    futures_util::try_join!(
        transaction.execute(&ensure, &ensure_params),
        transaction.execute(&insert, &insert_params)
    )?;
    Ok(rows.ids)
}

/// Applies changes in order; returns what each touched, for the feed.
async fn apply_changes(
    transaction: &Transaction<'_>,
    key: &str,
    changes: &[Change],
) -> Result<Vec<Entry>, TxError> {
    let mut entries = Vec::with_capacity(changes.len());
    for change in changes {
        let entry = match change {
            Change::Put { namespace, records } => Entry::Put {
                namespace: namespace.clone(),
                ids: put_records(transaction, key, namespace, records).await?,
            },
            Change::Delete { namespace, ids } => {
                transaction
                    .execute(
                        "DELETE FROM vectors WHERE index_id = $1 AND namespace = $2 AND id = ANY($3)",
                        &[&key, namespace, ids],
                    )
                    .await?;
                Entry::Delete {
                    namespace: namespace.clone(),
                    ids: ids.clone(),
                }
            }
            Change::Reset { namespace } => {
                transaction
                    .execute(DELETE_NAMESPACE_RECORDS, &[&key, namespace])
                    .await?;
                transaction.execute(ENSURE_NAMESPACE, &[&key, namespace]).await?;
                Entry::Reset {
                    namespace: namespace.clone(),
                }
            }
            Change::DropNamespace { namespace } => {
                transaction
                    .execute(DELETE_NAMESPACE_RECORDS, &[&key, namespace])
                    .await?;
                transaction
                    .execute(
                        "DELETE FROM vector_namespaces WHERE index_id = $1 AND name = $2",
                        &[&key, namespace],
                    )
                    .await?;
                Entry::Drop {
                    namespace: namespace.clone(),
                }
            }
            Change::RenameNamespace { from, to } => {
                transaction
                    .execute(
                        "UPDATE vectors SET namespace = $3 WHERE index_id = $1 AND namespace = $2",
                        &[&key, from, to],
                    )
                    .await?;
                transaction
                    .execute(
                        "UPDATE vector_namespaces SET name = $3 WHERE index_id = $1 AND name = $2",
                        &[&key, from, to],
                    )
                    .await?;
                Entry::Rename {
                    from: from.clone(),
                    to: to.clone(),
                }
            }
        };
        entries.push(entry);
    }
    Ok(entries)
}

/// Starts a transaction that reads one snapshot.
async fn snapshot<'a>(client: &'a mut deadpool_postgres::Object) -> StoreResult<Transaction<'a>> {
    let transaction = client.transaction().await.map_err(backend_error)?;
    transaction
        .batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .await
        .map_err(backend_error)?;
    Ok(transaction)
}

/// Every namespace of an index and its records, in load order.
async fn read_namespaces(
    transaction: &Transaction<'_>,
    key: &str,
) -> StoreResult<Vec<(String, Vec<StoredRecord>)>> {
    let mut namespaces: Vec<(String, Vec<StoredRecord>)> = transaction
        .query(
            "SELECT name FROM vector_namespaces WHERE index_id = $1 ORDER BY name",
            &[&key],
        )
        .await
        .map_err(backend_error)?
        .iter()
        .map(|row| (row.get::<_, String>(0), Vec::new()))
        .collect();
    // Rows stream in and are turned into records one by one, so an index is not held twice (as rows
    // and as records) while it loads.
    let rows = transaction
        .query_raw(
            // Sorted by sequence here: in SQL, the sort would carry every row's vectors.
            &format!("SELECT {RECORD_COLUMNS} FROM vectors WHERE index_id = $1 ORDER BY namespace"),
            [key],
        )
        .await
        .map_err(backend_error)?;
    let mut rows = std::pin::pin!(rows);
    while let Some(row) = rows.try_next().await.map_err(backend_error)? {
        let (namespace, stored) = record_from_row(&row)?;
        match namespaces.iter_mut().find(|(name, _)| *name == namespace) {
            Some((_, records)) => records.push(stored),
            None => namespaces.push((namespace, vec![stored])),
        }
    }
    for (_, records) in &mut namespaces {
        records.sort_unstable_by_key(|stored| stored.sequence);
    }
    Ok(namespaces)
}

/// The records of a namespace as they stand (only `ids`, when given), in load order.
async fn records_now(
    transaction: &Transaction<'_>,
    key: &str,
    namespace: &str,
    ids: Option<&[String]>,
) -> StoreResult<Vec<StoredRecord>> {
    let rows = transaction
        .query(
            &format!(
                "SELECT {RECORD_COLUMNS} FROM vectors WHERE index_id = $1 AND namespace = $2
                     AND ($3::TEXT[] IS NULL OR id = ANY($3))
                 ORDER BY sequence"
            ),
            &[&key, &namespace, &ids],
        )
        .await
        .map_err(backend_error)?;
    rows.iter()
        .map(|row| record_from_row(row).map(|(_, stored)| stored))
        .collect()
}

/// A feed entry as changes to apply now: puts read as the records stand (a record gone since is
/// deleted), a rename as the target namespace's records.
async fn resolve(transaction: &Transaction<'_>, key: &str, entry: Entry) -> StoreResult<Vec<Change>> {
    Ok(match entry {
        Entry::Put { namespace, ids } => {
            let records = records_now(transaction, key, &namespace, Some(&ids)).await?;
            let present: std::collections::HashSet<&str> =
                records.iter().map(|r| r.record.id.as_str()).collect();
            let gone: Vec<String> = ids
                .iter()
                .filter(|id| !present.contains(id.as_str()))
                .cloned()
                .collect();
            let mut changes = vec![Change::Put {
                namespace: namespace.clone(),
                records,
            }];
            if !gone.is_empty() {
                changes.push(Change::Delete { namespace, ids: gone });
            }
            changes
        }
        Entry::Delete { namespace, ids } => vec![Change::Delete { namespace, ids }],
        Entry::Reset { namespace } => vec![Change::Reset { namespace }],
        Entry::Drop { namespace } => vec![Change::DropNamespace { namespace }],
        Entry::Rename { from, to } => {
            // The records under `to` now, whatever later writes did to them.
            let records = records_now(transaction, key, &to, None).await?;
            vec![
                Change::DropNamespace { namespace: from },
                Change::Reset {
                    namespace: to.clone(),
                },
                Change::Put {
                    namespace: to,
                    records,
                },
            ]
        }
    })
}

impl PgVectorStore {
    /// Applies `changes` as the index's next write (after `based_on`, when given) and returns its
    /// position.
    async fn write(
        &self,
        index: IndexId,
        changes: Vec<Change>,
        based_on: Option<FeedPosition>,
    ) -> StoreResult<FeedPosition> {
        let work = Arc::new((index.to_string(), changes));
        self.database
            .write(move |t| {
                let work = Arc::clone(&work);
                Box::pin(async move {
                    let (key, changes) = &*work;
                    let is_puts = changes.iter().all(|c| matches!(c, Change::Put { .. }));
                    let (position, next) = if is_puts {
                        // The common write (upserts): one round trip; a conflict found after it rolls
                        // it all back.
                        let position = write_puts(t, key, changes).await?;
                        (position, check_based_on(based_on, position)?)
                    } else {
                        let position: i64 = t.query_one(TAKE_POSITION, &[key]).await?.get(0);
                        let next = check_based_on(based_on, position)?;
                        let entries = apply_changes(t, key, changes).await?;
                        let text = serde_json::to_string(&entries)
                            .map_err(|e| StoreError::Backend(e.to_string()))?;
                        t.execute(
                            "INSERT INTO vector_feed (index_id, position, changes) VALUES ($1, $2, $3)",
                            &[key, &position, &text],
                        )
                        .await?;
                        (position, next)
                    };
                    if position % 256 == 0 {
                        t.execute(
                            "DELETE FROM vector_feed WHERE index_id = $1 AND position <= $2",
                            &[key, &(position - FEED_KEPT)],
                        )
                        .await?;
                    }
                    Ok(next)
                })
            })
            .await
            .inspect(|_| self.database.hint(crate::hints::Hint::Vectors))
    }
}

#[async_trait]
impl VectorStore for PgVectorStore {
    async fn load(&self, index: IndexId) -> StoreResult<Vec<(String, Vec<StoredRecord>)>> {
        Ok(self.load_at(index).await?.0)
    }

    async fn apply(&self, index: IndexId, changes: Vec<Change>) -> StoreResult<()> {
        self.write(index, changes, None).await.map(drop)
    }

    async fn drop_index(&self, index: IndexId) -> StoreResult<()> {
        let key = index.to_string();
        let mut client = self.database.client().await?;
        let transaction = client.transaction().await.map_err(backend_error)?;
        for table in ["vectors", "vector_namespaces", "vector_feed", "vector_heads"] {
            transaction
                .execute(&format!("DELETE FROM {table} WHERE index_id = $1"), &[&key])
                .await
                .map_err(backend_error)?;
        }
        transaction.commit().await.map_err(backend_error)
    }

    fn feed(&self) -> Option<&dyn VectorFeed> {
        Some(self)
    }
}

#[async_trait]
impl VectorFeed for PgVectorStore {
    async fn load_at(&self, index: IndexId) -> StoreResult<(Vec<(String, Vec<StoredRecord>)>, FeedPosition)> {
        let key = index.to_string();
        let mut client = self.database.client().await?;
        let transaction = snapshot(&mut client).await?;
        let position: Option<i64> = transaction
            .query_opt("SELECT position FROM vector_heads WHERE index_id = $1", &[&key])
            .await
            .map_err(backend_error)?
            .map(|row| row.get(0));
        let namespaces = read_namespaces(&transaction, &key).await?;
        transaction.commit().await.map_err(backend_error)?;
        Ok((namespaces, position.map_or(0, |p| u64::try_from(p).unwrap_or(0))))
    }

    async fn apply_after(
        &self,
        index: IndexId,
        changes: Vec<Change>,
        based_on: FeedPosition,
    ) -> StoreResult<FeedPosition> {
        self.write(index, changes, Some(based_on)).await
    }

    async fn changes_after(
        &self,
        index: IndexId,
        position: FeedPosition,
        limit: usize,
    ) -> StoreResult<Option<Vec<(FeedPosition, Vec<Change>)>>> {
        let key = index.to_string();
        let after = i64::try_from(position).unwrap_or(i64::MAX);
        let mut client = self.database.client().await?;
        let transaction = snapshot(&mut client).await?;
        let rows = transaction
            .query(
                "SELECT position, changes FROM vector_feed WHERE index_id = $1 AND position > $2
                 ORDER BY position LIMIT $3",
                &[&key, &after, &i64::try_from(limit).unwrap_or(i64::MAX)],
            )
            .await
            .map_err(backend_error)?;
        let first: Option<i64> = rows.first().map(|row| row.get(0));
        let behind_pruned = match first {
            Some(first) => first != after + 1,
            None => transaction
                .query_opt("SELECT position FROM vector_heads WHERE index_id = $1", &[&key])
                .await
                .map_err(backend_error)?
                .is_some_and(|row| row.get::<_, i64>(0) > after),
        };
        if behind_pruned {
            return Ok(None);
        }
        let mut writes = Vec::with_capacity(rows.len());
        for row in &rows {
            let at: i64 = row.get(0);
            let entries: Vec<Entry> = serde_json::from_str(row.get(1))
                .map_err(|e| corrupt(&format!("vector feed entry {at}"), e))?;
            let mut changes = Vec::new();
            for entry in entries {
                changes.extend(resolve(&transaction, &key, entry).await?);
            }
            writes.push((u64::try_from(at).unwrap_or(0), changes));
        }
        transaction.commit().await.map_err(backend_error)?;
        Ok(Some(writes))
    }

    async fn heads(&self, indexes: &[IndexId]) -> StoreResult<Vec<(IndexId, FeedPosition)>> {
        let keys: Vec<String> = indexes.iter().map(ToString::to_string).collect();
        let client = self.database.client().await?;
        let rows = client
            .query(
                "SELECT index_id, position FROM vector_heads WHERE index_id = ANY($1)",
                &[&keys],
            )
            .await
            .map_err(backend_error)?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let key: &str = row.get(0);
                let at = keys.iter().position(|k| k == key)?;
                Some((indexes[at], u64::try_from(row.get::<_, i64>(1)).unwrap_or(0)))
            })
            .collect())
    }
}
