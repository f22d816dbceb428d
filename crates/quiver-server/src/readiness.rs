//! What `GET /readyz` checks on this node: every store takes writes, and every vector index (with the
//! model that embeds its text) is loaded. Indexes are loaded at start by [`warm_up`], so a node leaves
//! the load balancer's rotation only while it really cannot serve, and the first query after a restart
//! does not pay for the load.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use quiver_admin::AdminStore;
use quiver_admin::catalog::IndexKind;
use quiver_http::health::Readiness;
use quiver_store::Database;
use quiver_store_pg::PgDatabase;
use quiver_vector::Vectors;
use quiver_vector::service::IndexRef;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// How long a store may take to show it takes writes before the node counts as not ready (a writer
/// behind a long queue of writes is not ready for more either).
const STORE_ANSWER: Duration = Duration::from_secs(5);

/// A store to probe.
#[derive(Clone)]
pub(crate) enum StoreProbe {
    /// One SQLite database file.
    Sqlite(Database),
    /// The PostgreSQL database.
    Postgres(PgDatabase),
}

impl StoreProbe {
    fn name(&self) -> String {
        match self {
            StoreProbe::Sqlite(database) => database
                .path()
                .file_name()
                .map_or_else(|| "a database".to_owned(), |n| n.to_string_lossy().into_owned()),
            StoreProbe::Postgres(_) => "PostgreSQL".to_owned(),
        }
    }

    async fn check(&self) -> Result<(), String> {
        let answer = match self {
            StoreProbe::Sqlite(database) => {
                tokio::time::timeout(STORE_ANSWER, database.check_writable()).await
            }
            StoreProbe::Postgres(database) => {
                tokio::time::timeout(STORE_ANSWER, database.check_writable()).await
            }
        };
        match answer {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(format!("{} does not take writes: {error}", self.name())),
            Err(_) => Err(format!(
                "{} did not take a write within {} s",
                self.name(),
                STORE_ANSWER.as_secs()
            )),
        }
    }
}

/// How far the start-up load of the vector indexes has come.
#[derive(Debug, Default)]
struct WarmUpState {
    /// The catalogue has been read and every index tried once.
    is_done: bool,
    /// Indexes found in the catalogue.
    total: usize,
    /// Of those, loaded.
    loaded: usize,
    /// Indexes whose load failed, tried again by each readiness check, with the last error.
    failed: Vec<(IndexRef, String)>,
    /// Why the catalogue could not be read, while it could not.
    catalogue_error: Option<String>,
}

/// This node's readiness: its stores and its start-up load.
pub(crate) struct NodeReadiness {
    stores: Vec<StoreProbe>,
    vectors: Arc<Vectors>,
    warm_up: Mutex<WarmUpState>,
}

impl std::fmt::Debug for NodeReadiness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeReadiness").finish_non_exhaustive()
    }
}

impl NodeReadiness {
    pub(crate) fn new(stores: Vec<StoreProbe>, vectors: Arc<Vectors>) -> NodeReadiness {
        NodeReadiness {
            stores,
            vectors,
            warm_up: Mutex::new(WarmUpState::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, WarmUpState> {
        self.warm_up.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Loads every vector index of the catalogue (and its model), until done or `stop`. A catalogue that
    /// cannot be read is read again every second.
    pub(crate) async fn warm_up(self: Arc<Self>, catalogue: Arc<dyn AdminStore>, stop: CancellationToken) {
        let indexes = loop {
            match vector_indexes(catalogue.as_ref()).await {
                Ok(indexes) => break indexes,
                Err(error) => {
                    warn!(%error, "reading the catalogue to load the vector indexes failed; trying again");
                    self.state().catalogue_error = Some(error);
                }
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        };
        {
            let mut state = self.state();
            state.catalogue_error = None;
            state.total = indexes.len();
        }
        let ids: Vec<_> = indexes.iter().map(|index| index.id).collect();
        self.vectors.remove_snapshots_except(&ids);
        let started = std::time::Instant::now();
        for index in indexes {
            if stop.is_cancelled() {
                return;
            }
            let id = index.id;
            if let Err(error) = self.load(index).await {
                warn!(index.id = %id, %error, "loading a vector index at start failed");
            }
        }
        let mut state = self.state();
        state.is_done = true;
        info!(
            indexes = state.loaded,
            failed = state.failed.len(),
            duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "vector indexes loaded"
        );
    }

    /// Tries the failed loads again (a model may have been installed since), keeping those that fail.
    async fn retry_failed(&self) {
        let failed = std::mem::take(&mut self.state().failed);
        for (index, _) in failed {
            // Still failing: kept, with its error, among the reasons.
            let _ = self.load(index).await;
        }
    }

    /// Loads `index` and counts the outcome: loaded, or failed with its error (tried again later; the
    /// error names the model and its install command, never the index).
    async fn load(&self, index: IndexRef) -> Result<(), String> {
        let outcome = self.vectors.preload(&index).await;
        let mut state = self.state();
        match outcome {
            Ok(()) => {
                state.loaded += 1;
                Ok(())
            }
            Err(error) => {
                let error = error.to_string();
                state.failed.push((index, error.clone()));
                Err(error)
            }
        }
    }
}

/// Every vector and search index of every account, as readiness loads them.
///
/// A vector index names its model, which had to be installed to create it, and is ready with it. A
/// search index's model is never chosen by its creator: it is left out here, so a node without it is
/// ready and serves everything else, and the index's first write or search names the model to install.
async fn vector_indexes(catalogue: &dyn AdminStore) -> Result<Vec<IndexRef>, String> {
    let mut indexes = Vec::new();
    for account in catalogue.accounts().await.map_err(|e| e.to_string())? {
        for kind in [IndexKind::Vector, IndexKind::Search] {
            let records = catalogue
                .indexes(account.id, kind)
                .await
                .map_err(|e| e.to_string())?;
            indexes.extend(records.iter().map(|record| {
                let mut index = quiver_http::vector::vector_index(record);
                if kind == IndexKind::Search {
                    index.models.dense = None;
                }
                index
            }));
        }
    }
    Ok(indexes)
}

#[async_trait::async_trait]
impl Readiness for NodeReadiness {
    async fn unready_reasons(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        for store in &self.stores {
            if let Err(reason) = store.check().await {
                reasons.push(reason);
            }
        }
        self.retry_failed().await;
        let state = self.state();
        if let Some(error) = &state.catalogue_error {
            reasons.push(format!("the catalogue cannot be read: {error}"));
        } else if !state.is_done {
            reasons.push(format!(
                "loading vector indexes: {} of {} loaded",
                state.loaded, state.total
            ));
        }
        // The errors name models and install commands, never the index.
        let mut errors: Vec<&str> = state.failed.iter().map(|(_, error)| error.as_str()).collect();
        errors.sort_unstable();
        errors.dedup();
        for error in errors {
            let count = state.failed.iter().filter(|(_, e)| e == error).count();
            reasons.push(format!("{count} vector index(es) cannot be loaded: {error}"));
        }
        reasons
    }
}
