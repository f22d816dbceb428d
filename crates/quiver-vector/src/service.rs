//! The vector operations of one process: every index's namespaces in memory, mirrored from the store.
//! Writes to an index are serialised: committed to the store first, then applied in memory, so memory
//! never holds what the store does not.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use quiver_core::plan::PlanLimits;
use quiver_core::{Clock, IndexId};
use quiver_embed::Embedders;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::error::VectorError;
use crate::filter::Filter;
use crate::namespace::Namespace;
use crate::record::{IndexSpec, Record, SparseVector, StoredRecord};
use crate::store::{Change, VectorStore};
use crate::text::{TextModels, embed};

pub use crate::query::{Fusion, Hit, Query, QueryInput, SemanticWeight, Weighting};

mod checks;
mod feed;
mod indexing;
mod namespaces;
mod reads;
mod regions;
mod resumable;
mod snapshots;
mod upserts;

use checks::{check_dense, check_record, normalise_sparse};
use resumable::Resumable;

/// The index an operation addresses, as the catalogue describes it.
#[derive(Debug, Clone)]
pub struct IndexRef {
    /// Identifier.
    pub id: IndexId,
    /// Display name (for messages).
    pub name: String,
    /// Engine settings.
    pub spec: IndexSpec,
    /// Plan limits.
    pub limits: PlanLimits,
    /// The hosted models that embed its text.
    pub models: TextModels,
}

/// Which records a delete addresses.
#[derive(Debug, Clone)]
pub enum Selection {
    /// These ids.
    Ids(Vec<String>),
    /// Ids starting with this prefix.
    Prefix(String),
    /// Records whose metadata passes this filter.
    Filter(Filter),
}

/// How `update` changes metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetadataUpdate {
    /// Replace it.
    #[default]
    Overwrite,
    /// RFC 7396 JSON merge patch.
    Patch,
}

/// A partial update of one record.
#[derive(Debug, Clone, Default)]
pub struct Update {
    /// The record.
    pub id: String,
    /// New dense part.
    pub vector: Option<Vec<f32>>,
    /// New sparse part.
    pub sparse: Option<SparseVector>,
    /// New data.
    pub data: Option<String>,
    /// New or patched metadata.
    pub metadata: Option<Value>,
    /// How metadata changes.
    pub mode: MetadataUpdate,
}

/// Counts of one namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespaceInfo {
    /// Records.
    pub vector_count: usize,
    /// Records whose dense vector is not in the graph yet (they are found by exhaustive scan meanwhile).
    pub pending_vector_count: usize,
}

/// Counts of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexInfo {
    /// Records across namespaces.
    pub vector_count: usize,
    /// Not yet searchable.
    pub pending_vector_count: usize,
    /// Approximate bytes held.
    pub index_size: usize,
    /// Per namespace.
    pub namespaces: BTreeMap<String, NamespaceInfo>,
}

#[derive(Debug)]
struct LoadedIndex {
    /// Held by each write, and while catching up with other nodes' writes: the position in the store's
    /// feed that memory stands at (always 0 where this node is the only writer).
    writes: Mutex<crate::store::FeedPosition>,
    namespaces: RwLock<BTreeMap<String, Namespace>>,
    spec: IndexSpec,
    /// Upserts waiting for `writes`, written together by whichever takes it (`upserts`).
    upserts: upserts::WaitingUpserts,
}

/// Every index's vectors.
pub struct Vectors {
    store: Arc<dyn VectorStore>,
    clock: Arc<dyn Clock>,
    /// One cell per index, filled by its first use. The map's lock is held only to find the cell, so a
    /// cold load of one index never makes requests to another wait.
    loaded: std::sync::Mutex<HashMap<IndexId, Arc<tokio::sync::OnceCell<Arc<LoadedIndex>>>>>,
    resumable: std::sync::Mutex<HashMap<String, Resumable>>,
    indexing: tokio::sync::Notify,
    /// Wakes the feed follower (`feed::follow_feed`) before its next poll.
    feed_moved: tokio::sync::Notify,
    embedders: Arc<Embedders>,
    /// Where graph snapshots live (none: graphs are built from the store at each load).
    snapshots: Option<crate::snapshot::Snapshots>,
}

impl std::fmt::Debug for Vectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vectors").finish_non_exhaustive()
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

/// RFC 7396 merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(changes) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(fields) = target {
        for (key, value) in changes {
            if value.is_null() {
                fields.remove(key);
            } else {
                merge_patch(fields.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

use crate::search::run_query;

impl Vectors {
    /// The engine over `store`, embedding text with `embedders`.
    pub fn new(store: Arc<dyn VectorStore>, clock: Arc<dyn Clock>, embedders: Arc<Embedders>) -> Vectors {
        Vectors {
            store,
            clock,
            embedders,
            loaded: std::sync::Mutex::new(HashMap::new()),
            resumable: std::sync::Mutex::new(HashMap::new()),
            indexing: tokio::sync::Notify::new(),
            feed_moved: tokio::sync::Notify::new(),
            snapshots: None,
        }
    }

    /// Moves acknowledged vectors into their namespaces' graphs, a chunk per write-lock hold, until
    /// `shutdown`, writing graph snapshots as they fall due and, at shutdown, those that are behind.
    /// Queries see pending vectors meanwhile (scanned exhaustively).
    ///
    /// # Cancel safety
    /// Stopping between chunks loses nothing: pending vectors stay pending (and searchable).
    pub async fn run_indexer(self: Arc<Self>, shutdown: tokio_util::sync::CancellationToken) {
        self.index_until(&shutdown).await;
        for (index, state) in self.loaded_states() {
            self.write_snapshots(index, &state, true).await;
        }
    }

    async fn index_until(&self, shutdown: &tokio_util::sync::CancellationToken) {
        loop {
            let woken = self.indexing.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            for (index, state) in self.loaded_states() {
                loop {
                    if shutdown.is_cancelled() {
                        return;
                    }
                    let chunk_state = Arc::clone(&state);
                    let indexed =
                        tokio::task::spawn_blocking(move || indexing::index_chunk(&chunk_state.namespaces))
                            .await;
                    let indexed = match indexed {
                        Ok(indexed) => indexed,
                        Err(error) => {
                            tracing::error!(%error, "indexing pending vectors failed; they stay searchable by scan");
                            0
                        }
                    };
                    self.write_snapshots(index, &state, false).await;
                    if indexed == 0 {
                        break;
                    }
                }
                Self::train_regions(&state, shutdown).await;
                // Regions just trained make a snapshot due, so a restart does not train them again.
                self.write_snapshots(index, &state, false).await;
            }
            tokio::select! {
                biased;
                () = shutdown.cancelled() => return,
                () = &mut woken => {}
            }
        }
    }

    /// Whether `index` is loaded (or loading).
    fn is_loaded(&self, index: IndexId) -> bool {
        self.loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains_key(&index)
    }

    /// The index in memory, loaded from the store on first use. Concurrent first uses of one index wait
    /// for one load; a failed load is tried again by the next use.
    async fn loaded(&self, index: &IndexRef) -> Result<Arc<LoadedIndex>, VectorError> {
        let cell = {
            let mut loaded = self
                .loaded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(loaded.entry(index.id).or_default())
        };
        let mut loaded_here = false;
        let state = cell
            .get_or_try_init(|| {
                loaded_here = true;
                self.load(index)
            })
            .await
            .cloned()?;
        // Records come back pending: the indexer looks at an index once its cell holds it.
        if loaded_here {
            self.indexing.notify_one();
        }
        Ok(state)
    }

    /// Loads `index` into memory now (as its first use would), with the dense model that embeds its
    /// text, so the first request after a start does not wait for them. Vectors come back pending and
    /// are searchable by scan until the indexer has put them in their graphs.
    ///
    /// # Errors
    /// Store failures; the index's model is not installed or does not load.
    pub async fn preload(&self, index: &IndexRef) -> Result<(), VectorError> {
        if let Some(model) = index.models.dense {
            self.embedders.load(model).await?;
        }
        self.loaded(index).await.map(drop)
    }

    async fn load(&self, index: &IndexRef) -> Result<Arc<LoadedIndex>, VectorError> {
        let spec = index.spec;
        // Where other nodes write too, the snapshot says where in the feed it stands.
        let (namespaces, position) = self
            .build(index.id, spec, |parts| async move {
                match self.store.feed() {
                    Some(feed) => snapshots::feed_in_parts(feed, index.id, parts).await,
                    None => {
                        self.store.load_in_parts(index.id, parts).await?;
                        Ok(0)
                    }
                }
            })
            .await?;
        Ok(Arc::new(LoadedIndex {
            writes: Mutex::new(position),
            namespaces: RwLock::new(namespaces),
            spec,
            upserts: upserts::WaitingUpserts::default(),
        }))
    }

    /// Forgets an index (its catalogue entry was deleted) and its stored vectors.
    ///
    /// # Errors
    /// Store failures.
    pub async fn drop_index(&self, index: IndexId) -> Result<(), VectorError> {
        self.loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&index);
        self.store.drop_index(index).await?;
        self.remove_snapshots(index);
        Ok(())
    }

    /// Inserts or replaces records (validated against the index type and dimension).
    ///
    /// # Errors
    /// Wrong dimension (422), wrong parts, malformed sparse vectors or metadata (400), plan limits, store.
    pub async fn upsert(
        self: &Arc<Self>,
        index: &IndexRef,
        namespace: &str,
        records: Vec<Record>,
    ) -> Result<(), VectorError> {
        // Only a shared store can refuse a write as behind: elsewhere the records are not copied for it.
        if self.store.feed().is_none() {
            return self.upsert_once(index, namespace, records).await;
        }
        feed::retry_behind(|| self.upsert_once(index, namespace, records.clone())).await
    }

    async fn upsert_once(
        self: &Arc<Self>,
        index: &IndexRef,
        namespace: &str,
        records: Vec<Record>,
    ) -> Result<(), VectorError> {
        Self::check_write_count(index, records.len())?;
        let records = records
            .into_iter()
            .map(|r| check_record(&index.spec, r))
            .collect::<Result<Vec<_>, _>>()?;
        if records.is_empty() {
            return Ok(());
        }
        let state = self.loaded(index).await?;
        self.upsert_checked(index, state, namespace, records).await
    }

    /// Refuses a request that writes more records than the plan allows.
    fn check_write_count(index: &IndexRef, count: usize) -> Result<(), VectorError> {
        let limit = index.limits.max_writes_per_request;
        if limit.allows(count as u64) {
            Ok(())
        } else {
            Err(VectorError::LimitExceeded(format!(
                "a request may write at most {limit} vectors; this one has {count}"
            )))
        }
    }

    /// Upserts records whose `data` the index's models embed, dense and sparse as the index has them
    /// (`upsert-data`).
    ///
    /// # Errors
    /// An index without models, a model that is not installed, and whatever [`Vectors::upsert`] refuses.
    pub async fn upsert_data(
        self: &Arc<Self>,
        index: &IndexRef,
        namespace: &str,
        records: Vec<Record>,
    ) -> Result<(), VectorError> {
        let texts = records
            .iter()
            .map(|r| r.data.clone().unwrap_or_default())
            .collect();
        self.upsert_embedded(index, namespace, records, texts).await
    }

    /// Upserts records whose vectors the index's models embed from `texts`, one per record (a search
    /// index's documents, whose text is drawn from their content).
    ///
    /// # Errors
    /// As [`Vectors::upsert_data`].
    pub async fn upsert_embedded(
        self: &Arc<Self>,
        index: &IndexRef,
        namespace: &str,
        mut records: Vec<Record>,
        texts: Vec<String>,
    ) -> Result<(), VectorError> {
        Self::check_write_count(index, records.len())?;
        let embedded = embed(&self.embedders, &index.spec, index.models, texts, None).await?;
        for (record, (vector, sparse)) in records.iter_mut().zip(embedded) {
            record.vector = vector;
            record.sparse = sparse;
        }
        self.upsert(index, namespace, records).await
    }

    /// Checks a query against the index and the plan, and embeds a text query with the index's models.
    async fn check_query(&self, index: &IndexRef, query: &mut Query) -> Result<(), VectorError> {
        let limit = index.limits.max_reads_per_request;
        if !limit.allows(query.top_k as u64) {
            return Err(VectorError::LimitExceeded(format!(
                "topK may be at most {limit} on this index's plan"
            )));
        }
        if let QueryInput::Text { data, mode } = &query.input {
            let (dense, sparse) = embed(
                &self.embedders,
                &index.spec,
                index.models,
                vec![data.clone()],
                Some(*mode),
            )
            .await?
            .pop()
            .unwrap_or_default();
            query.input = QueryInput::Vectors { dense, sparse };
        }
        let QueryInput::Vectors { dense, sparse } = &mut query.input else {
            return Err(VectorError::Internal("a text query was not embedded".into()));
        };
        if let Some(vector) = dense {
            if !index.spec.has_dense() {
                return Err(VectorError::WrongParts(format!(
                    "this {} index cannot be queried with a dense vector",
                    index.spec.index_type
                )));
            }
            check_dense(&index.spec, vector)?;
        }
        if let Some(given) = sparse.take() {
            if !index.spec.has_sparse() {
                return Err(VectorError::WrongParts(format!(
                    "this {} index cannot be queried with a sparse vector",
                    index.spec.index_type
                )));
            }
            *sparse = Some(normalise_sparse(given)?);
        }
        if dense.is_none() && sparse.is_none() {
            let needed = match (index.spec.has_dense(), index.spec.has_sparse()) {
                (true, true) => "`vector` and/or `sparseVector`",
                (true, false) => "`vector`",
                (false, _) => "`sparseVector`",
            };
            return Err(VectorError::InvalidRequest(format!("a query needs {needed}")));
        }
        Ok(())
    }

    /// The best `top_k` records for a query.
    ///
    /// # Errors
    /// Parts the index does not have, a wrong dimension, plan limits.
    pub async fn query(
        &self,
        index: &IndexRef,
        namespace: &str,
        mut query: Query,
    ) -> Result<Vec<Hit>, VectorError> {
        self.check_query(index, &mut query).await?;
        let state = self.loaded(index).await?;
        let spec = index.spec;
        let namespace = namespace.to_owned();
        // Exhaustive scans are CPU work: keep them off the async runtime.
        tokio::task::spawn_blocking(move || {
            let namespaces = read(&state.namespaces);
            Ok(match namespaces.get(&namespace) {
                Some(found) => run_query(&spec, found, &query),
                None => Vec::new(),
            })
        })
        .await
        .map_err(|e| VectorError::Internal(format!("query task failed: {e}")))?
    }

    /// Deletes the selected records; returns how many existed.
    ///
    /// # Errors
    /// Store failures.
    pub async fn delete(
        &self,
        index: &IndexRef,
        namespace: &str,
        selection: Selection,
    ) -> Result<usize, VectorError> {
        feed::retry_behind(|| self.delete_once(index, namespace, &selection)).await
    }

    async fn delete_once(
        &self,
        index: &IndexRef,
        namespace: &str,
        selection: &Selection,
    ) -> Result<usize, VectorError> {
        let state = self.loaded(index).await?;
        let mut position = state.writes.lock().await;
        self.catch_up(index.id, &state, &mut position).await?;
        let ids: Vec<String> = {
            let namespaces = read(&state.namespaces);
            let Some(found) = namespaces.get(namespace) else {
                return Ok(0);
            };
            match selection {
                Selection::Ids(ids) => {
                    let mut unique: Vec<String> =
                        ids.iter().filter(|id| found.get(id).is_some()).cloned().collect();
                    unique.sort();
                    unique.dedup();
                    unique
                }
                Selection::Prefix(prefix) => found
                    .records()
                    .filter(|r| r.id().starts_with(prefix.as_str()))
                    .map(|r| r.id().to_owned())
                    .collect(),
                Selection::Filter(filter) => found
                    .records()
                    .filter(|r| r.passes(Some(filter)))
                    .map(|r| r.id().to_owned())
                    .collect(),
            }
        };
        if ids.is_empty() {
            return Ok(0);
        }
        self.commit(
            index.id,
            &mut position,
            vec![Change::Delete {
                namespace: namespace.to_owned(),
                ids: ids.clone(),
            }],
        )
        .await?;
        let mut namespaces = write(&state.namespaces);
        if let Some(found) = namespaces.get_mut(namespace) {
            for id in &ids {
                found.remove(id);
            }
        }
        Ok(ids.len())
    }

    /// Changes parts of one record; `false` when it does not exist.
    ///
    /// # Errors
    /// Parts the index does not have, a wrong dimension, malformed metadata; store failures.
    pub async fn update(
        &self,
        index: &IndexRef,
        namespace: &str,
        update: Update,
    ) -> Result<bool, VectorError> {
        if self.store.feed().is_none() {
            return self.update_once(index, namespace, update).await;
        }
        feed::retry_behind(|| self.update_once(index, namespace, update.clone())).await
    }

    async fn update_once(
        &self,
        index: &IndexRef,
        namespace: &str,
        mut update: Update,
    ) -> Result<bool, VectorError> {
        // New data on an index with models is embedded again, as `upsert-data` would; a vector given with
        // it wins for its part.
        if let Some(data) = &update.data
            && (index.models.dense.is_some() || index.models.sparse.is_some())
        {
            let embedded = embed(
                &self.embedders,
                &index.spec,
                index.models,
                vec![data.clone()],
                None,
            )
            .await?;
            if let Some((vector, sparse)) = embedded.into_iter().next() {
                update.vector = update.vector.take().or(vector);
                update.sparse = update.sparse.take().or(sparse);
            }
        }
        let state = self.loaded(index).await?;
        let mut position = state.writes.lock().await;
        self.catch_up(index.id, &state, &mut position).await?;
        let stored = {
            let namespaces = read(&state.namespaces);
            let Some(found) = namespaces.get(namespace) else {
                return Ok(false);
            };
            let (Some(current), Some(sequence)) = (found.get(&update.id), found.sequence_of(&update.id))
            else {
                return Ok(false);
            };
            let mut record = current.to_record();
            if let Some(vector) = update.vector {
                record.vector = Some(vector);
            }
            if let Some(sparse) = update.sparse {
                record.sparse = Some(sparse);
            }
            if let Some(data) = update.data {
                record.data = Some(data);
            }
            if let Some(metadata) = update.metadata {
                record.metadata = match update.mode {
                    MetadataUpdate::Overwrite => Some(metadata),
                    MetadataUpdate::Patch => {
                        let mut merged = record
                            .metadata
                            .take()
                            .unwrap_or(Value::Object(serde_json::Map::new()));
                        merge_patch(&mut merged, &metadata);
                        Some(merged)
                    }
                };
            }
            StoredRecord {
                sequence,
                record: check_record(&index.spec, record)?,
            }
        };
        self.commit(
            index.id,
            &mut position,
            vec![Change::Put {
                namespace: namespace.to_owned(),
                records: vec![stored.clone()],
            }],
        )
        .await?;
        if let Some(found) = write(&state.namespaces).get_mut(namespace) {
            found.put(stored);
        }
        // A new dense vector waits for the indexer like an upserted one.
        self.indexing.notify_one();
        Ok(true)
    }

    /// Empties one namespace, or every namespace when `namespace` is `None`.
    ///
    /// # Errors
    /// Store failures.
    pub async fn reset(&self, index: &IndexRef, namespace: Option<&str>) -> Result<(), VectorError> {
        feed::retry_behind(|| self.reset_once(index, namespace)).await
    }

    async fn reset_once(&self, index: &IndexRef, namespace: Option<&str>) -> Result<(), VectorError> {
        let state = self.loaded(index).await?;
        let mut position = state.writes.lock().await;
        self.catch_up(index.id, &state, &mut position).await?;
        let targets: Vec<String> = match namespace {
            Some(name) => vec![name.to_owned()],
            None => read(&state.namespaces).keys().cloned().collect(),
        };
        let changes = targets
            .iter()
            .map(|n| Change::Reset { namespace: n.clone() })
            .collect();
        self.commit(index.id, &mut position, changes).await?;
        let mut namespaces = write(&state.namespaces);
        for name in targets {
            namespaces.insert(name, Namespace::new(&index.spec));
        }
        Ok(())
    }

    /// Counts per namespace.
    ///
    /// # Errors
    /// Store failures on first load.
    pub async fn info(&self, index: &IndexRef) -> Result<IndexInfo, VectorError> {
        let state = self.loaded(index).await?;
        self.fresh(index.id, &state).await?;
        let namespaces = read(&state.namespaces);
        let mut info = IndexInfo {
            vector_count: 0,
            pending_vector_count: 0,
            index_size: 0,
            namespaces: BTreeMap::new(),
        };
        for (name, namespace) in namespaces.iter() {
            info.vector_count += namespace.len();
            info.pending_vector_count += namespace.pending_len();
            info.index_size += namespace.dense_memory_bytes();
            info.namespaces.insert(
                name.clone(),
                NamespaceInfo {
                    vector_count: namespace.len(),
                    pending_vector_count: namespace.pending_len(),
                },
            );
        }
        Ok(info)
    }

    /// The indexes loaded so far (a cell still loading is left out), taken out of the map's lock.
    fn loaded_states(&self) -> Vec<(IndexId, Arc<LoadedIndex>)> {
        self.loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter_map(|(id, cell)| cell.get().map(|state| (*id, Arc::clone(state))))
            .collect()
    }

    /// Every index loaded in this process, with its vectors and the vectors not yet in a graph (for
    /// metrics; an index not used since the start is not loaded and not listed).
    pub fn loaded_counts(&self) -> Vec<LoadedCounts> {
        self.loaded_states()
            .into_iter()
            .map(|(index, state)| {
                let namespaces = read(&state.namespaces);
                LoadedCounts {
                    index,
                    vectors: namespaces.values().map(Namespace::len).sum(),
                    pending: namespaces.values().map(Namespace::pending_len).sum(),
                    memory_bytes: namespaces.values().map(Namespace::dense_memory_bytes).sum(),
                    regions_due: namespaces.values().filter(|n| n.wants_regions()).count(),
                }
            })
            .collect()
    }
}

/// The counts of one loaded index (see [`Vectors::loaded_counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadedCounts {
    /// The index.
    pub index: IndexId,
    /// Records across its namespaces.
    pub vectors: usize,
    /// Of those, not in a graph yet.
    pub pending: usize,
    /// Bytes its dense vectors and graphs hold.
    pub memory_bytes: usize,
    /// Namespaces whose graph is due to train its regions for filtered searches: the indexer trains
    /// them once it has nothing pending.
    pub regions_due: usize,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_patch_follows_rfc_7396() {
        let mut target = json!({"field": "value", "field2": "value2", "nested": {"a": 1, "b": 2}});
        merge_patch(
            &mut target,
            &json!({"new_field": "new_value", "field2": null, "nested": {"b": null, "c": 3}}),
        );
        assert_eq!(
            target,
            json!({"field": "value", "new_field": "new_value", "nested": {"a": 1, "c": 3}})
        );
    }
}
