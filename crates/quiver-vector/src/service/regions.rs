//! Regions for the graphs' filtered searches ([`crate::hnsw::Hnsw::wants_regions`]), trained by the
//! indexer after each pass.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{LoadedIndex, Vectors, read, write};

impl Vectors {
    /// Trains regions for the namespaces of `state` whose graphs want them (see
    /// [`crate::hnsw::Hnsw::wants_regions`]): each graph's sample is copied under a read lock, trained with
    /// no lock held, and installed under a short write lock, so queries and writes go on meanwhile. A
    /// namespace removed meanwhile is skipped; one removed and made again under its name takes centres
    /// trained on the old one's vectors, which only makes its filtered searches read more regions until
    /// its graph doubles and trains again.
    ///
    /// A training still running when `shutdown` is cancelled is given up: the graph's snapshot has no
    /// regions then, and the next start trains them again.
    pub(super) async fn train_regions(state: &Arc<LoadedIndex>, shutdown: &CancellationToken) {
        let state = Arc::clone(state);
        let shutdown = shutdown.clone();
        let trained = tokio::task::spawn_blocking(move || {
            let samples: Vec<(String, crate::hnsw::RegionSample)> = read(&state.namespaces)
                .iter()
                .filter_map(|(name, namespace)| Some((name.clone(), namespace.region_sample()?)))
                .collect();
            for (name, sample) in samples {
                let started = std::time::Instant::now();
                let Some(trained) = sample.train_until(&|| shutdown.is_cancelled()) else {
                    tracing::debug!(namespace = %name, "training regions given up: the process is stopping");
                    return;
                };
                let explained = trained.explained();
                if let Some(namespace) = write(&state.namespaces).get_mut(&name) {
                    namespace.install_regions(trained);
                }
                tracing::debug!(
                    namespace = %name,
                    explained,
                    duration_ms = started.elapsed().as_millis() as u64,
                    "trained the regions of a namespace's graph for filtered searches"
                );
            }
        })
        .await;
        if let Err(error) = trained {
            tracing::error!(%error, "training regions failed; filtered searches walk the graph");
        }
    }
}
