//! The vectors of every index in PostgreSQL: the source of truth that each node loads its in-memory
//! indexes from.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{IndexId, StoreError};
use quiver_vector::record::{Record, StoredRecord, bytes};
use quiver_vector::store::{Change, VectorStore};

use crate::database::{PgDatabase, PgOptions, backend_error};

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

const ENSURE_NAMESPACE: &str =
    "INSERT INTO vector_namespaces (index_id, name) VALUES ($1, $2) ON CONFLICT DO NOTHING";
const DELETE_NAMESPACE_RECORDS: &str = "DELETE FROM vectors WHERE index_id = $1 AND namespace = $2";

fn corrupt(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{what}: {error}"))
}

#[async_trait]
impl VectorStore for PgVectorStore {
    async fn load(&self, index: IndexId) -> StoreResult<Vec<(String, Vec<StoredRecord>)>> {
        let key = index.to_string();
        let client = self.database.client().await?;
        let mut namespaces: Vec<(String, Vec<StoredRecord>)> = client
            .query(
                "SELECT name FROM vector_namespaces WHERE index_id = $1 ORDER BY name",
                &[&key],
            )
            .await
            .map_err(backend_error)?
            .iter()
            .map(|row| (row.get::<_, String>(0), Vec::new()))
            .collect();
        let rows = client
            .query(
                "SELECT namespace, id, sequence, dense, sparse, metadata, data FROM vectors
                 WHERE index_id = $1 ORDER BY namespace, sequence",
                &[&key],
            )
            .await
            .map_err(backend_error)?;
        for row in rows {
            let namespace: String = row.get(0);
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
            let stored = StoredRecord { sequence, record };
            match namespaces.iter_mut().find(|(name, _)| *name == namespace) {
                Some((_, records)) => records.push(stored),
                None => namespaces.push((namespace, vec![stored])),
            }
        }
        Ok(namespaces)
    }

    async fn apply(&self, index: IndexId, changes: Vec<Change>) -> StoreResult<()> {
        let key = index.to_string();
        let mut client = self.database.client().await?;
        let transaction = client.transaction().await.map_err(backend_error)?;
        for change in changes {
            match change {
                Change::Put { namespace, records } => {
                    transaction
                        .execute(ENSURE_NAMESPACE, &[&key, &namespace])
                        .await
                        .map_err(backend_error)?;
                    let statement = transaction
                        .prepare(
                            "INSERT INTO vectors (index_id, namespace, id, sequence, dense, sparse, metadata, data)
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                             ON CONFLICT (index_id, namespace, id) DO UPDATE SET sequence = excluded.sequence,
                                 dense = excluded.dense, sparse = excluded.sparse,
                                 metadata = excluded.metadata, data = excluded.data",
                        )
                        .await
                        .map_err(backend_error)?;
                    for stored in records {
                        let record = stored.record;
                        let sequence =
                            i64::try_from(stored.sequence).map_err(|e| StoreError::Backend(e.to_string()))?;
                        let dense = record.vector.as_deref().map(bytes::of_dense);
                        let sparse = record.sparse.as_ref().map(bytes::of_sparse);
                        let metadata = record.metadata.as_ref().map(ToString::to_string);
                        transaction
                            .execute(
                                &statement,
                                &[
                                    &key,
                                    &namespace,
                                    &record.id,
                                    &sequence,
                                    &dense,
                                    &sparse,
                                    &metadata,
                                    &record.data,
                                ],
                            )
                            .await
                            .map_err(backend_error)?;
                    }
                }
                Change::Delete { namespace, ids } => {
                    transaction
                        .execute(
                            "DELETE FROM vectors WHERE index_id = $1 AND namespace = $2 AND id = ANY($3)",
                            &[&key, &namespace, &ids],
                        )
                        .await
                        .map_err(backend_error)?;
                }
                Change::Reset { namespace } => {
                    transaction
                        .execute(DELETE_NAMESPACE_RECORDS, &[&key, &namespace])
                        .await
                        .map_err(backend_error)?;
                    transaction
                        .execute(ENSURE_NAMESPACE, &[&key, &namespace])
                        .await
                        .map_err(backend_error)?;
                }
                Change::DropNamespace { namespace } => {
                    transaction
                        .execute(DELETE_NAMESPACE_RECORDS, &[&key, &namespace])
                        .await
                        .map_err(backend_error)?;
                    transaction
                        .execute(
                            "DELETE FROM vector_namespaces WHERE index_id = $1 AND name = $2",
                            &[&key, &namespace],
                        )
                        .await
                        .map_err(backend_error)?;
                }
                Change::RenameNamespace { from, to } => {
                    transaction
                        .execute(
                            "UPDATE vectors SET namespace = $3 WHERE index_id = $1 AND namespace = $2",
                            &[&key, &from, &to],
                        )
                        .await
                        .map_err(backend_error)?;
                    transaction
                        .execute(
                            "UPDATE vector_namespaces SET name = $3 WHERE index_id = $1 AND name = $2",
                            &[&key, &from, &to],
                        )
                        .await
                        .map_err(backend_error)?;
                }
            }
        }
        transaction.commit().await.map_err(backend_error)
    }

    async fn drop_index(&self, index: IndexId) -> StoreResult<()> {
        let key = index.to_string();
        let mut client = self.database.client().await?;
        let transaction = client.transaction().await.map_err(backend_error)?;
        transaction
            .execute("DELETE FROM vectors WHERE index_id = $1", &[&key])
            .await
            .map_err(backend_error)?;
        transaction
            .execute("DELETE FROM vector_namespaces WHERE index_id = $1", &[&key])
            .await
            .map_err(backend_error)?;
        transaction.commit().await.map_err(backend_error)
    }
}
