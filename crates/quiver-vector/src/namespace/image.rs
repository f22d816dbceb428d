//! What a snapshot keeps of a namespace ([`GraphImage`]), and what the namespace counts of its graph
//! since its last snapshot: inserts, a rename, regions trained (see `snapshot::is_due`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::Namespace;
use crate::hnsw::Hnsw;
use crate::mapped::MappedFile;

/// What a snapshot keeps of a namespace: its graph, and for each live node the id of the record it
/// stands for.
#[derive(Debug)]
pub struct GraphImage {
    /// The graph.
    pub graph: Hnsw,
    /// By node: the record's id where the node is live.
    pub ids: Vec<Option<String>>,
}

impl Namespace {
    /// Reads the graph's vectors that `image` (this namespace's, by [`Namespace::image`]) shares from
    /// `file`, which holds `image`'s graph encoded with its vectors at byte `vectors_at`.
    pub(crate) fn adopt_mapped(&mut self, image: &GraphImage, file: &Arc<MappedFile>, vectors_at: usize) {
        self.dense.adopt_mapped(&image.graph, file, vectors_at);
    }

    /// Bytes of the graph's vectors read in place from mapped snapshot files.
    pub fn mapped_vector_bytes(&self) -> usize {
        self.dense.mapped_vector_bytes()
    }

    /// Vectors moved into the graph since the last [`Namespace::image`] (or since it was made).
    pub fn unsaved_inserts(&self) -> u64 {
        let since = self
            .graph_inserts
            .saturating_sub(self.saved_inserts.load(Ordering::Relaxed));
        if self.is_unsaved_whole.load(Ordering::Relaxed) {
            since.max(self.dense.node_count() as u64)
        } else {
            since
        }
    }

    /// Whether the graph's regions were trained since the last [`Namespace::image`]: a start from
    /// that snapshot would train them again.
    pub fn regions_unsaved(&self) -> bool {
        self.is_regions_unsaved.load(Ordering::Relaxed)
    }

    /// Counts the whole graph as unsaved (the namespace was renamed: its snapshot has the old name).
    pub fn unsave_whole(&self) {
        self.is_unsaved_whole.store(true, Ordering::Relaxed);
    }

    /// Nodes of the graph (live or not).
    pub fn graph_nodes(&self) -> usize {
        self.dense.node_count()
    }

    /// A copy of the graph and its nodes' ids, for a snapshot written after the caller lets go of the
    /// namespace; its inserts count as saved from now on, written or not (a write that fails is not
    /// tried again until the next is due, so a full disk is not hit after every indexed chunk).
    /// Pending vectors are not in it: they are pending again after a restart from it.
    pub fn image(&self) -> GraphImage {
        let ids = (0..self.dense.node_count())
            .map(|node| {
                self.dense
                    .is_live(node)
                    .then(|| self.at(node).map(|record| record.id().to_owned()))
                    .flatten()
            })
            .collect();
        self.saved_inserts.store(self.graph_inserts, Ordering::Relaxed);
        self.is_unsaved_whole.store(false, Ordering::Relaxed);
        self.is_regions_unsaved.store(false, Ordering::Relaxed);
        GraphImage {
            graph: self.dense.copy_for_image(),
            ids,
        }
    }
}
