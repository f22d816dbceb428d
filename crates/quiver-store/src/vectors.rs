//! The vector engine's store in `vectors.db`.

use std::path::Path;

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{IndexId, StoreError};
use quiver_vector::record::{Record, StoredRecord, bytes};
use quiver_vector::store::{Change, LoadPart, VectorStore};
use rusqlite::{Connection, params};
use tokio::sync::mpsc::Sender;

use crate::config::StorageConfig;
use crate::database::{Database, backend_error};
use crate::migrations;

/// Vectors of every index in SQLite.
#[derive(Debug, Clone)]
pub struct SqliteVectorStore {
    database: Database,
}

impl SqliteVectorStore {
    /// Opens `vectors.db` in `data_dir`, creating and migrating it as needed.
    ///
    /// # Errors
    /// The file cannot be opened or migrated.
    pub fn open(data_dir: &Path, config: &StorageConfig) -> StoreResult<SqliteVectorStore> {
        Ok(SqliteVectorStore {
            database: Database::open(&data_dir.join("vectors.db"), migrations::VECTORS, config)?,
        })
    }

    /// The underlying database (for shutdown).
    pub fn database(&self) -> &Database {
        &self.database
    }
}

/// A record encoded for storage, prepared before the write reaches the writer thread.
struct Row {
    id: String,
    sequence: i64,
    dense: Option<Vec<u8>>,
    sparse: Option<Vec<u8>>,
    metadata: Option<String>,
    data: Option<String>,
}

enum EncodedChange {
    Put { namespace: String, rows: Vec<Row> },
    Delete { namespace: String, ids: Vec<String> },
    Reset { namespace: String },
    DropNamespace { namespace: String },
    RenameNamespace { from: String, to: String },
}

fn encode(change: Change) -> StoreResult<EncodedChange> {
    Ok(match change {
        Change::Put { namespace, records } => EncodedChange::Put {
            namespace,
            rows: records
                .into_iter()
                .map(|stored| {
                    let record = stored.record;
                    Ok(Row {
                        id: record.id,
                        sequence: i64::try_from(stored.sequence)
                            .map_err(|e| StoreError::Backend(e.to_string()))?,
                        dense: record.vector.as_deref().map(bytes::of_dense),
                        sparse: record.sparse.as_ref().map(bytes::of_sparse),
                        metadata: record.metadata.as_ref().map(|m| m.to_string()),
                        data: record.data,
                    })
                })
                .collect::<StoreResult<_>>()?,
        },
        Change::Delete { namespace, ids } => EncodedChange::Delete { namespace, ids },
        Change::Reset { namespace } => EncodedChange::Reset { namespace },
        Change::DropNamespace { namespace } => EncodedChange::DropNamespace { namespace },
        Change::RenameNamespace { from, to } => EncodedChange::RenameNamespace { from, to },
    })
}

/// Records in a part of [`VectorStore::load_in_parts`]: at 384 dimensions about 1.6 MB of vectors.
const LOAD_PART_RECORDS: usize = 1_024;

/// The names of an index's namespaces.
fn namespace_names(c: &Connection, key: &str) -> StoreResult<Vec<String>> {
    let mut statement = c
        .prepare_cached("SELECT name FROM vector_namespaces WHERE index_id = ?1 ORDER BY name")
        .map_err(backend_error)?;
    let names = statement
        .query_map([key], |r| r.get::<_, String>(0))
        .map_err(backend_error)?;
    names.map(|name| name.map_err(backend_error)).collect()
}

/// Reads an index's records in key order (namespace, id), each handed to `take` with its namespace as
/// it is decoded.
fn each_record(
    c: &Connection,
    key: &str,
    mut take: impl FnMut(String, StoredRecord) -> StoreResult<()>,
) -> StoreResult<()> {
    // Ordering by sequence in SQL would sort every row, vectors included, in a temporary B-tree (three
    // times the read's time at a million 384-dimension vectors): callers that need that order sort.
    let mut statement = c
        .prepare_cached(
            "SELECT namespace, id, sequence, dense, sparse, metadata, data FROM vectors
             WHERE index_id = ?1 ORDER BY namespace",
        )
        .map_err(backend_error)?;
    let mut rows = statement.query([key]).map_err(backend_error)?;
    while let Some(row) = rows.next().map_err(backend_error)? {
        let namespace: String = row.get(0).map_err(backend_error)?;
        let metadata: Option<String> = row.get(5).map_err(backend_error)?;
        let record = Record {
            id: row.get(1).map_err(backend_error)?,
            vector: row
                .get::<_, Option<Vec<u8>>>(3)
                .map_err(backend_error)?
                .map(|b| bytes::to_dense(&b)),
            sparse: row
                .get::<_, Option<Vec<u8>>>(4)
                .map_err(backend_error)?
                .map(|b| bytes::to_sparse(&b)),
            metadata: metadata
                .map(|m| serde_json::from_str(&m))
                .transpose()
                .map_err(|e| StoreError::Corrupt(format!("metadata: {e}")))?,
            data: row.get(6).map_err(backend_error)?,
        };
        let sequence = u64::try_from(row.get::<_, i64>(2).map_err(backend_error)?).unwrap_or(0);
        take(namespace, StoredRecord { sequence, record })?;
    }
    Ok(())
}

#[async_trait]
impl VectorStore for SqliteVectorStore {
    async fn load(&self, index: IndexId) -> StoreResult<Vec<(String, Vec<StoredRecord>)>> {
        self.database
            .read(move |c| {
                let key = index.to_string();
                let mut namespaces: Vec<(String, Vec<StoredRecord>)> = namespace_names(c, &key)?
                    .into_iter()
                    .map(|name| (name, Vec::new()))
                    .collect();
                each_record(c, &key, |namespace, stored| {
                    match namespaces.iter_mut().find(|(name, _)| *name == namespace) {
                        Some((_, records)) => records.push(stored),
                        None => namespaces.push((namespace, vec![stored])),
                    }
                    Ok(())
                })?;
                for (_, records) in &mut namespaces {
                    records.sort_unstable_by_key(|stored| stored.sequence);
                }
                Ok(namespaces)
            })
            .await
    }

    async fn load_in_parts(&self, index: IndexId, parts: Sender<LoadPart>) -> StoreResult<()> {
        self.database
            .read(move |c| {
                let key = index.to_string();
                let send = |part: LoadPart| parts.blocking_send(part).map_err(|_| StoreError::Closed);
                for name in namespace_names(c, &key)? {
                    send((name, Vec::new()))?;
                }
                let mut part: LoadPart = (String::new(), Vec::new());
                each_record(c, &key, |namespace, stored| {
                    if part.0 != namespace || part.1.len() == LOAD_PART_RECORDS {
                        // Not reserved: an index of many small namespaces would reserve a full part for each.
                        let full = std::mem::replace(&mut part, (namespace, Vec::new()));
                        if !full.1.is_empty() {
                            send(full)?;
                        }
                    }
                    part.1.push(stored);
                    Ok(())
                })?;
                if !part.1.is_empty() {
                    send(part)?;
                }
                Ok(())
            })
            .await
    }

    async fn apply(&self, index: IndexId, changes: Vec<Change>) -> StoreResult<()> {
        let changes = changes.into_iter().map(encode).collect::<StoreResult<Vec<_>>>()?;
        self.database
            .write(move |c| {
                let key = index.to_string();
                let ensure_namespace = |namespace: &str| {
                    c.prepare_cached("INSERT INTO vector_namespaces (index_id, name) VALUES (?1, ?2) ON CONFLICT DO NOTHING")
                        .and_then(|mut s| s.execute(params![key, namespace]))
                        .map_err(backend_error)
                };
                for change in changes {
                    match change {
                        EncodedChange::Put { namespace, rows } => {
                            ensure_namespace(&namespace)?;
                            let mut statement = c
                                .prepare_cached(
                                    "INSERT INTO vectors (index_id, namespace, id, sequence, dense, sparse, metadata, data)
                                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                                     ON CONFLICT (index_id, namespace, id) DO UPDATE SET sequence = excluded.sequence,
                                         dense = excluded.dense, sparse = excluded.sparse, metadata = excluded.metadata,
                                         data = excluded.data",
                                )
                                .map_err(backend_error)?;
                            for row in rows {
                                statement
                                    .execute(params![key, namespace, row.id, row.sequence, row.dense, row.sparse, row.metadata, row.data])
                                    .map_err(backend_error)?;
                            }
                        }
                        EncodedChange::Delete { namespace, ids } => {
                            let mut statement = c
                                .prepare_cached("DELETE FROM vectors WHERE index_id = ?1 AND namespace = ?2 AND id = ?3")
                                .map_err(backend_error)?;
                            for id in ids {
                                statement.execute(params![key, namespace, id]).map_err(backend_error)?;
                            }
                        }
                        EncodedChange::Reset { namespace } => {
                            c.execute("DELETE FROM vectors WHERE index_id = ?1 AND namespace = ?2", params![key, namespace])
                                .map_err(backend_error)?;
                            ensure_namespace(&namespace)?;
                        }
                        EncodedChange::DropNamespace { namespace } => {
                            c.execute("DELETE FROM vectors WHERE index_id = ?1 AND namespace = ?2", params![key, namespace])
                                .map_err(backend_error)?;
                            c.execute("DELETE FROM vector_namespaces WHERE index_id = ?1 AND name = ?2", params![key, namespace])
                                .map_err(backend_error)?;
                        }
                        EncodedChange::RenameNamespace { from, to } => {
                            c.execute("UPDATE vectors SET namespace = ?3 WHERE index_id = ?1 AND namespace = ?2", params![key, from, to])
                                .map_err(backend_error)?;
                            c.execute("UPDATE vector_namespaces SET name = ?3 WHERE index_id = ?1 AND name = ?2", params![key, from, to])
                                .map_err(backend_error)?;
                        }
                    }
                }
                Ok(())
            })
            .await
    }

    async fn drop_index(&self, index: IndexId) -> StoreResult<()> {
        self.database
            .write(move |c| {
                let key = index.to_string();
                c.execute("DELETE FROM vectors WHERE index_id = ?1", [&key])
                    .map_err(backend_error)?;
                c.execute("DELETE FROM vector_namespaces WHERE index_id = ?1", [&key])
                    .map_err(backend_error)?;
                Ok(())
            })
            .await
    }
}

#[cfg(test)]
mod loading_tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use quiver_core::clock::ManualClock;
    use quiver_core::index::{IndexType, SimilarityFunction};
    use quiver_core::plan::PlanType;
    use quiver_core::{IndexId, Timestamp};
    use quiver_vector::record::{IndexSpec, Record};
    use quiver_vector::service::{IndexRef, Vectors};
    use quiver_vector::store::{Change, VectorStore};
    use tokio::sync::Notify;

    use super::*;

    /// The SQLite store, whose load of index `load_of`, and next write once `apply_armed` is set, wait
    /// until the test lets them go.
    struct Gated {
        inner: SqliteVectorStore,
        load_of: Option<IndexId>,
        apply_armed: AtomicBool,
        open: Notify,
        waiting: Notify,
    }

    impl Gated {
        fn new(dir: &std::path::Path, load_of: Option<IndexId>) -> Gated {
            Gated {
                inner: SqliteVectorStore::open(dir, &StorageConfig::default()).unwrap(),
                load_of,
                apply_armed: AtomicBool::new(false),
                open: Notify::new(),
                waiting: Notify::new(),
            }
        }

        async fn wait_for_the_test(&self) {
            self.waiting.notify_one();
            self.open.notified().await;
        }
    }

    #[async_trait]
    impl VectorStore for Gated {
        async fn load(&self, index: IndexId) -> StoreResult<Vec<(String, Vec<StoredRecord>)>> {
            if self.load_of == Some(index) {
                self.wait_for_the_test().await;
            }
            self.inner.load(index).await
        }
        async fn apply(&self, index: IndexId, changes: Vec<Change>) -> StoreResult<()> {
            if self.apply_armed.swap(false, Ordering::SeqCst) {
                self.wait_for_the_test().await;
            }
            self.inner.apply(index, changes).await
        }
        async fn drop_index(&self, index: IndexId) -> StoreResult<()> {
            self.inner.drop_index(index).await
        }
    }

    fn vectors_over(store: Arc<dyn VectorStore>) -> Arc<Vectors> {
        Arc::new(Vectors::new(
            store,
            Arc::new(ManualClock::new(Timestamp::from_millis(1_000))),
            Arc::new(quiver_embed::Embedders::new(
                quiver_embed::ModelDir::new(std::env::temp_dir()),
                1,
            )),
        ))
    }

    fn record(id: &str) -> Record {
        Record {
            id: id.into(),
            vector: Some(vec![1.0, 0.0]),
            sparse: None,
            metadata: None,
            data: None,
        }
    }

    fn index() -> IndexRef {
        IndexRef {
            id: IndexId::random(),
            name: "i".into(),
            spec: IndexSpec {
                dimension: 2,
                similarity: SimilarityFunction::Cosine,
                index_type: IndexType::Dense,
            },
            limits: PlanType::Payg.vector_limits(),
            models: quiver_vector::text::TextModels::default(),
        }
    }

    #[tokio::test]
    async fn the_sqlite_vector_store_passes_the_conformance_suite() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteVectorStore::open(dir.path(), &StorageConfig::default()).unwrap();
        quiver_vector::testing::conformance(Arc::new(store)).await;
    }

    #[tokio::test]
    async fn the_sqlite_vector_store_keeps_acknowledged_writes_across_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let open = || async {
            let store = SqliteVectorStore::open(dir.path(), &StorageConfig::default()).unwrap();
            Arc::new(store) as Arc<dyn quiver_vector::VectorStore>
        };
        quiver_vector::testing::restart_keeps_every_acknowledged_write(open).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn graphs_come_back_from_their_snapshots_over_the_sqlite_store() {
        let dir = tempfile::tempdir().unwrap();
        let open = || async {
            let store = SqliteVectorStore::open(dir.path(), &StorageConfig::default()).unwrap();
            Arc::new(store) as Arc<dyn quiver_vector::VectorStore>
        };
        quiver_vector::testing::snapshots_bring_graphs_back(open, dir.path()).await;
    }

    /// The SQLite store, whose first `load_in_parts` sends the parts up to the first that holds records
    /// and then fails, as a store whose disk fails part way through a read would.
    struct FailsOncePartWay {
        inner: SqliteVectorStore,
        has_failed: AtomicBool,
    }

    #[async_trait]
    impl VectorStore for FailsOncePartWay {
        async fn load(&self, index: IndexId) -> StoreResult<Vec<(String, Vec<StoredRecord>)>> {
            self.inner.load(index).await
        }
        async fn load_in_parts(&self, index: IndexId, parts: Sender<LoadPart>) -> StoreResult<()> {
            if self.has_failed.swap(true, Ordering::SeqCst) {
                return self.inner.load_in_parts(index, parts).await;
            }
            let (sender, mut read) = tokio::sync::mpsc::channel::<LoadPart>(1);
            let forwarding = async move {
                while let Some(part) = read.recv().await {
                    let has_records = !part.1.is_empty();
                    parts.send(part).await.unwrap();
                    if has_records {
                        break;
                    }
                }
            };
            let (reading, ()) = tokio::join!(self.inner.load_in_parts(index, sender), forwarding);
            assert!(
                matches!(reading, Err(StoreError::Closed)),
                "a load whose parts are no longer taken ends with an error"
            );
            Err(StoreError::Backend(
                "the disk failed part way through the read".into(),
            ))
        }
        async fn apply(&self, index: IndexId, changes: Vec<Change>) -> StoreResult<()> {
            self.inner.apply(index, changes).await
        }
        async fn drop_index(&self, index: IndexId) -> StoreResult<()> {
            self.inner.drop_index(index).await
        }
    }

    /// `count` records of dimension 2 in the default namespace, sequences from 1.
    fn stored(count: u64) -> Change {
        Change::Put {
            namespace: String::new(),
            records: (1..=count)
                .map(|sequence| StoredRecord {
                    sequence,
                    record: record(&format!("r{sequence}")),
                })
                .collect(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_large_index_is_read_in_parts_of_bounded_size() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteVectorStore::open(dir.path(), &StorageConfig::default()).unwrap();
        let index = IndexId::random();
        let empty = Change::Reset {
            namespace: "empty".into(),
        };
        store.apply(index, vec![stored(2_500), empty]).await.unwrap();
        let (sender, mut parts) = tokio::sync::mpsc::channel::<LoadPart>(1);
        let receiving = async {
            let mut received = Vec::new();
            while let Some((name, records)) = parts.recv().await {
                received.push((name, records.len()));
            }
            received
        };
        let (sent, received) = tokio::join!(store.load_in_parts(index, sender), receiving);
        sent.unwrap();
        assert!(received.contains(&("empty".to_owned(), 0)), "{received:?}");
        let sizes: Vec<usize> = received
            .iter()
            .filter(|(name, _)| name.is_empty())
            .map(|p| p.1)
            .collect();
        assert_eq!(sizes.iter().sum::<usize>(), 2_500);
        assert!(
            sizes.iter().all(|&size| size <= LOAD_PART_RECORDS),
            "no part holds more than {LOAD_PART_RECORDS} records: {sizes:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_load_that_fails_part_way_is_not_served_and_is_tried_again() {
        let dir = tempfile::tempdir().unwrap();
        let inner = SqliteVectorStore::open(dir.path(), &StorageConfig::default()).unwrap();
        let index = index();
        inner.apply(index.id, vec![stored(3_000)]).await.unwrap();
        let store = FailsOncePartWay {
            inner,
            has_failed: AtomicBool::new(false),
        };
        let vectors = vectors_over(Arc::new(store));
        let failed = vectors.info(&index).await;
        assert!(
            matches!(failed, Err(quiver_vector::VectorError::Store(_))),
            "a load that failed part way is an error, not an index missing records: {failed:?}"
        );
        assert_eq!(vectors.info(&index).await.unwrap().vector_count, 3_000);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cold_load_of_one_index_does_not_hold_up_another() {
        let dir = tempfile::tempdir().unwrap();
        let (slow, fast) = (index(), index());
        let store = Arc::new(Gated::new(dir.path(), Some(slow.id)));
        let vectors = vectors_over(Arc::clone(&store) as Arc<dyn VectorStore>);
        let blocked = tokio::spawn({
            let (vectors, slow) = (Arc::clone(&vectors), slow.clone());
            async move { vectors.upsert(&slow, "", vec![record("a")]).await }
        });
        store.waiting.notified().await;
        // The slow index is being loaded now; the other answers without waiting for it.
        let answered = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            vectors.upsert(&fast, "", vec![record("b")]).await.unwrap();
            vectors.fetch(&fast, "", &["b".to_owned()]).await.unwrap()
        });
        let fetched = answered
            .await
            .expect("the other index answered while the first was loading");
        assert_eq!(fetched[0].as_ref().map(|r| r.id.as_str()), Some("b"));
        assert!(!blocked.is_finished());
        store.open.notify_one();
        blocked.await.unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn upserts_written_together_are_each_held_to_the_plans_vector_count() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Gated::new(dir.path(), None));
        let vectors = vectors_over(Arc::clone(&store) as Arc<dyn VectorStore>);
        let mut small = index();
        small.limits.max_vector_count = quiver_core::plan::Limit::AtMost(10);
        vectors.upsert(&small, "", vec![record("first")]).await.unwrap();
        // The next write holds the index until the test lets it go; the upserts sent meanwhile wait for
        // it and are then written together.
        store.apply_armed.store(true, Ordering::SeqCst);
        let holding = tokio::spawn({
            let (vectors, small) = (Arc::clone(&vectors), small.clone());
            async move { vectors.upsert(&small, "", vec![record("second")]).await }
        });
        store.waiting.notified().await;
        let mut waiting = Vec::new();
        for n in 0..20 {
            let (vectors, small) = (Arc::clone(&vectors), small.clone());
            waiting.push(tokio::spawn(async move {
                vectors
                    .upsert(&small, "", vec![record(&format!("new-{n}"))])
                    .await
            }));
        }
        // Writing records the index holds already adds no vector, so it is never refused for the count.
        let update = tokio::spawn({
            let (vectors, small) = (Arc::clone(&vectors), small.clone());
            async move { vectors.upsert(&small, "", vec![record("first")]).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        store.open.notify_one();
        holding.await.unwrap().unwrap();
        update.await.unwrap().unwrap();
        let (mut accepted, mut refused) = (0, 0);
        for upsert in waiting {
            match upsert.await.unwrap() {
                Ok(()) => accepted += 1,
                Err(quiver_vector::VectorError::LimitExceeded(_)) => refused += 1,
                Err(other) => panic!("an upsert failed for another reason: {other}"),
            }
        }
        assert_eq!(
            (accepted, refused),
            (8, 12),
            "two vectors were held, the plan allows ten"
        );
        assert_eq!(vectors.info(&small).await.unwrap().vector_count, 10);
    }
}
