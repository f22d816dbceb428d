//! The loaded indexes' graph snapshots ([`crate::snapshot`]): read when an index is loaded, so its
//! graphs come back without inserting every vector again; written by the indexer when enough of a graph
//! is new, and at shutdown.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use quiver_core::IndexId;
use tokio::sync::mpsc::{Receiver, Sender};
use tracing::{info, warn};

use super::{LoadedIndex, Vectors, read, write};
use crate::error::VectorError;
use crate::namespace::{GraphImage, Namespace, Restored, Restoring};
use crate::record::IndexSpec;
use crate::snapshot::{self, SnapshotError, Snapshots};
use crate::store::{FeedPosition, LoadPart, VectorFeed};

/// Milliseconds since `started`, for log fields.
fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A namespace's snapshot as read: its image, or why it is not used.
type Read = Result<GraphImage, SnapshotError>;

/// Parts of a load read ahead of the namespaces being built from them.
const PARTS_AHEAD: usize = 4;

/// Namespaces built from the stored records that arrive on `parts` (the default one always there),
/// each graph from its snapshot in `images` where that one is sound. Each part's vectors are dropped
/// as it is taken, where the graph holds them.
fn build_namespaces(
    index: IndexId,
    spec: &IndexSpec,
    mut parts: Receiver<LoadPart>,
    mut images: HashMap<String, Read>,
    snapshots: Option<&Snapshots>,
) -> BTreeMap<String, Namespace> {
    let started = Instant::now();
    let mut image_of = |name: &str| match images.remove(name) {
        Some(Ok(image)) => Some(image),
        Some(Err(error)) => {
            warn!(index.id = %index, namespace = %name, %error, "a graph snapshot is not used; the graph is built from the store");
            None
        }
        None => None,
    };
    let mut restoring: BTreeMap<String, Restoring> = BTreeMap::new();
    while let Some((name, records)) = parts.blocking_recv() {
        let namespace = restoring
            .entry(name)
            .or_insert_with_key(|name| Restoring::new(spec, image_of(name)));
        for stored in records {
            namespace.add(stored);
        }
    }
    restoring
        .entry(String::new())
        .or_insert_with(|| Restoring::new(spec, image_of("")));
    let mut totals = Restored::default();
    let mut namespaces = BTreeMap::new();
    for (name, namespace) in restoring {
        let (namespace, restored) = namespace.finish();
        totals.from_snapshot += restored.from_snapshot;
        totals.pending += restored.pending;
        namespaces.insert(name, namespace);
    }
    if let Some(snapshots) = snapshots {
        if let Err(error) = snapshots.remove_others(index, |name| namespaces.contains_key(name)) {
            warn!(index.id = %index, %error, "removing the snapshots of namespaces that are gone failed");
        }
        info!(
            index.id = %index,
            vectors.from_snapshot = totals.from_snapshot,
            vectors.pending = totals.pending,
            duration_ms = elapsed_ms(started),
            "vector index built from its records and snapshots"
        );
    }
    namespaces
}

/// Sends what `feed` holds of `index` to `parts`, one part per namespace, and answers the position it
/// stands at.
pub(super) async fn feed_in_parts(
    feed: &dyn VectorFeed,
    index: IndexId,
    parts: Sender<LoadPart>,
) -> Result<FeedPosition, VectorError> {
    let (namespaces, position) = feed.load_at(index).await?;
    for part in namespaces {
        parts
            .send(part)
            .await
            .map_err(|_| VectorError::Internal("the load stopped taking records".into()))?;
    }
    Ok(position)
}

impl Vectors {
    /// Keeps graph snapshots under `dir`, read when an index is loaded and written as graphs grow and
    /// at shutdown (without this, every graph is built from the store at each load).
    #[must_use]
    pub fn with_snapshots(self, dir: PathBuf) -> Vectors {
        self.with_snapshot_files(Snapshots::new(dir))
    }

    /// [`Vectors::with_snapshots`] with the files `snapshots` keeps (which may map more than large
    /// ones).
    #[must_use]
    pub fn with_snapshot_files(mut self, snapshots: Snapshots) -> Vectors {
        self.snapshots = Some(snapshots);
        self
    }

    /// Builds an index's namespaces from the records `load` sends (it answers the position they stand
    /// at), with their graphs from snapshots: the snapshots are read and checked on a blocking thread
    /// while the store starts reading the records, and the namespaces are built off the async runtime
    /// as the records arrive, so that a large index's vectors are never all in memory at once.
    pub(super) async fn build<F, Fut>(
        &self,
        index: IndexId,
        spec: IndexSpec,
        load: F,
    ) -> Result<(BTreeMap<String, Namespace>, FeedPosition), VectorError>
    where
        F: FnOnce(Sender<LoadPart>) -> Fut,
        Fut: Future<Output = Result<FeedPosition, VectorError>>,
    {
        let started = Instant::now();
        let snapshots = self.snapshots.clone();
        let reading = snapshots.clone().map(|snapshots| {
            tokio::task::spawn_blocking(move || -> HashMap<String, Read> {
                let started = Instant::now();
                let images: HashMap<String, Read> = snapshots
                    .read_all(index, &spec)
                    .into_iter()
                    .map(|(name, read)| (name, read.map(|(image, _)| image)))
                    .collect();
                if !images.is_empty() {
                    info!(index.id = %index, files = images.len(), duration_ms = elapsed_ms(started), "graph snapshots read");
                }
                images
            })
        });
        let (sender, parts) = tokio::sync::mpsc::channel(PARTS_AHEAD);
        let building = async move {
            let images = match reading {
                Some(reading) => reading
                    .await
                    .map_err(|e| VectorError::Internal(format!("snapshot reading task failed: {e}")))?,
                None => HashMap::new(),
            };
            tokio::task::spawn_blocking(move || {
                build_namespaces(index, &spec, parts, images, snapshots.as_ref())
            })
            .await
            .map_err(|e| VectorError::Internal(format!("loading task failed: {e}")))
        };
        // A load that fails part way leaves the namespaces built from what it sent: they are dropped.
        let (position, namespaces) = tokio::join!(load(sender), building);
        let namespaces = namespaces?;
        let position = position?;
        info!(index.id = %index, duration_ms = elapsed_ms(started), "vector index loaded");
        Ok((namespaces, position))
    }

    /// Removes the snapshots of indexes that are neither in `indexes` (the catalogue's, read at start)
    /// nor loaded: indexes deleted while this node was down, or by another node, whose snapshots no
    /// later load would remove.
    pub fn remove_snapshots_except(&self, indexes: &[IndexId]) {
        let Some(snapshots) = &self.snapshots else {
            return;
        };
        let indexes: std::collections::HashSet<&IndexId> = indexes.iter().collect();
        match snapshots.remove_indexes_except(|index| indexes.contains(&index) || self.is_loaded(index)) {
            Ok(0) => {}
            Ok(removed) => info!(
                indexes = removed,
                "removed the graph snapshots of deleted indexes"
            ),
            Err(error) => warn!(%error, "removing the graph snapshots of deleted indexes failed"),
        }
    }

    /// Removes a deleted index's snapshots.
    pub(super) fn remove_snapshots(&self, index: IndexId) {
        if let Some(snapshots) = &self.snapshots
            && let Err(error) = snapshots.remove_index(index)
        {
            warn!(index.id = %index, %error, "removing a deleted index's graph snapshots failed");
        }
    }

    /// Writes the snapshots of `state`'s namespaces that are due (see [`snapshot::is_due`]). The
    /// graphs are copied under the index's locks (writes to it wait for the copy, queries do not) and
    /// written after they are let go. A snapshot that cannot be written is logged and written again
    /// when the next is due; until then a start uses the previous one for what it still matches.
    pub(super) async fn write_snapshots(&self, index: IndexId, state: &Arc<LoadedIndex>, is_shutdown: bool) {
        let Some(snapshots) = self.snapshots.clone() else {
            return;
        };
        if !read(&state.namespaces)
            .values()
            .any(|namespace| snapshot::is_due(namespace, is_shutdown))
        {
            return;
        }
        let started = Instant::now();
        let position = state.writes.lock().await;
        let copied = Arc::clone(state);
        let at = *position;
        let images = tokio::task::spawn_blocking(move || {
            read(&copied.namespaces)
                .iter()
                .filter(|(_, namespace)| snapshot::is_due(namespace, is_shutdown))
                .map(|(name, namespace)| (name.clone(), namespace.image()))
                .collect::<Vec<_>>()
        })
        .await;
        drop(position);
        let images = match images {
            Ok(images) => images,
            Err(error) => {
                warn!(index.id = %index, %error, "copying graphs for their snapshots failed");
                return;
            }
        };
        let copy_ms = elapsed_ms(started);
        for (name, image) in images {
            let started = Instant::now();
            let nodes = image.graph.node_count();
            let snapshots = snapshots.clone();
            let namespace = name.clone();
            let written = tokio::task::spawn_blocking(move || {
                snapshots
                    .write(index, &namespace, &image, at)
                    .map(|written| (written, image))
            })
            .await;
            match written {
                Ok(Ok((written, image))) => {
                    // The graph's vectors the file holds are read from it from now on; the memory they
                    // held goes with the image.
                    if let Some(namespace) = write(&state.namespaces).get_mut(&name) {
                        written.adopt_into(namespace, &image);
                    }
                    drop(image);
                    info!(
                        index.id = %index,
                        namespace = %name,
                        nodes,
                        bytes = written.bytes,
                        copy_ms,
                        duration_ms = elapsed_ms(started),
                        "graph snapshot written"
                    );
                }
                Ok(Err(error)) => {
                    warn!(index.id = %index, namespace = %name, %error, "writing a graph snapshot failed; it is written again when the next is due");
                }
                Err(error) => {
                    warn!(index.id = %index, namespace = %name, %error, "the task writing a graph snapshot failed");
                }
            }
        }
        // The index was deleted while its snapshots were written: they go with it.
        if !self.is_loaded(index) {
            self.remove_snapshots(index);
        }
    }
}
