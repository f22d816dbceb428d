//! Restoring a namespace from its stored records and its graph snapshot: each record's vector takes
//! its node in the snapshot's graph where the node holds exactly that vector, and waits for the
//! indexer otherwise.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use super::{GraphImage, Namespace};
use crate::dense::DenseIndex;
use crate::hnsw::{Derived, Hnsw};
use crate::record::{IndexSpec, StoredRecord};

/// How a namespace came back from its records and a snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restored {
    /// Records whose vector took its node from the snapshot.
    pub from_snapshot: usize,
    /// Records whose vector waits for the indexer (new or changed since the snapshot, or no snapshot).
    pub pending: usize,
}

/// A namespace being restored by [`Namespace::restore`] from its stored records, which may come in
/// parts and in any order: each record's vector is checked against the snapshot's graph as it comes and
/// dropped when the graph holds it, so that a load holds one part's vectors at a time, not every
/// record's.
#[derive(Debug)]
pub struct Restoring {
    namespace: Namespace,
    dimension: usize,
    /// The snapshot's graph, shared with the thread that derives its half-precision copies and codes
    /// from its vectors while the records arrive (they are checked against the same vectors).
    graph: Option<Arc<Hnsw>>,
    /// That thread (`None` for a small graph, or where it was not started: the copies are then made
    /// at the end).
    deriving: Option<JoinHandle<Option<Derived>>>,
    /// The live node made for each id in the snapshot.
    node_of: HashMap<String, usize>,
    /// By node of the snapshot's graph (`None` without a snapshot): whether a record claimed it.
    claimed: Option<Vec<bool>>,
    /// Records whose vector is their node's, without it.
    placed: Vec<(usize, StoredRecord)>,
    /// Records whose vector waits for the indexer.
    later: Vec<StoredRecord>,
}

/// Graphs smaller than this derive their copies when their load ends: it takes them milliseconds.
/// (Every graph of a unit test derives apart, so the tests of a load go through that thread.)
const DERIVED_APART_FROM: usize = if cfg!(test) { 1 } else { 10_000 };

/// At most this many graphs derive their copies on threads of their own at once (each uses two), so a
/// load of many large namespaces does not start a thread for each; the others derive when their load
/// ends.
const MOST_DERIVING: usize = 2;

/// Graphs deriving their copies on threads of their own now, in this process.
static DERIVING: AtomicUsize = AtomicUsize::new(0);

/// One of the [`MOST_DERIVING`] places of a count (the process's is [`DERIVING`]), given back when
/// dropped (also by a thread that panicked).
struct DerivingPlace(&'static AtomicUsize);

impl DerivingPlace {
    fn take(deriving: &'static AtomicUsize) -> Option<DerivingPlace> {
        let taken = deriving.fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
            (running < MOST_DERIVING).then_some(running + 1)
        });
        // Made only once the count has risen: a place dropped gives one back.
        if taken.is_ok() {
            Some(DerivingPlace(deriving))
        } else {
            None
        }
    }
}

impl Drop for DerivingPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Starts deriving `graph`'s copies on a thread of its own, where it is large enough and fewer than
/// [`MOST_DERIVING`] graphs already are; `None` otherwise (or where no thread could be started).
fn derive_apart(graph: &Arc<Hnsw>) -> Option<JoinHandle<Option<Derived>>> {
    derive_apart_counted(graph, &DERIVING)
}

/// [`derive_apart`], with places from `deriving` (a test counts its own: `cargo test` runs the other
/// tests of a load beside it, in the same process).
fn derive_apart_counted(
    graph: &Arc<Hnsw>,
    deriving: &'static AtomicUsize,
) -> Option<JoinHandle<Option<Derived>>> {
    if graph.node_count() < DERIVED_APART_FROM {
        return None;
    }
    let place = DerivingPlace::take(deriving)?;
    let graph = Arc::clone(graph);
    std::thread::Builder::new()
        .name("restore-derive".into())
        .spawn(move || {
            let _place = place;
            graph.derived()
        })
        // A thread that cannot be started (the system's limit) only costs the overlap: the copies
        // are derived when the load ends, as for a small graph.
        .ok()
}

impl Restoring {
    /// Starts a namespace of an index with `spec` whose graph comes from `image` where it holds a
    /// record's id with exactly its vector.
    pub fn new(spec: &IndexSpec, image: Option<GraphImage>) -> Restoring {
        let namespace = Namespace::new(spec);
        let mut node_of = HashMap::new();
        let mut claimed = None;
        let mut placed = Vec::new();
        let mut shared = None;
        let mut deriving = None;
        if let Some(GraphImage { graph, ids }) = image {
            let nodes = graph.node_count();
            // At most a record a node; reserved at once, as growing would touch and copy twice the
            // memory (a large share of a restart's time is the kernel handing out fresh pages).
            placed.reserve_exact(nodes);
            node_of.reserve(nodes);
            for (node, id) in ids.into_iter().enumerate().take(nodes) {
                if let Some(id) = id
                    && graph.is_live(node)
                {
                    node_of.entry(id).or_insert(node);
                }
            }
            claimed = Some(vec![false; nodes]);
            let graph = Arc::new(graph);
            deriving = derive_apart(&graph);
            shared = Some(graph);
        }
        Restoring {
            namespace,
            dimension: spec.dimension,
            graph: shared,
            deriving,
            node_of,
            claimed,
            placed,
            later: Vec::new(),
        }
    }

    /// Takes a stored record: its vector takes its node in the snapshot's graph when the node was made
    /// for its id and holds exactly its vector (bit for bit), and waits for the indexer otherwise.
    pub fn add(&mut self, mut stored: StoredRecord) {
        let (Some(claimed), Some(graph)) = (&mut self.claimed, self.graph.as_deref()) else {
            self.later.push(stored);
            return;
        };
        let dimension = self.dimension;
        let node = self
            .node_of
            .get(stored.record.id.as_str())
            .copied()
            .filter(|&node| {
                !claimed[node]
                    && stored.record.vector.as_ref().is_some_and(|vector| {
                        vector.len() == dimension
                            && vector
                                .iter()
                                .zip(graph.node_vector(node))
                                .all(|(a, b)| a.to_bits() == b.to_bits())
                    })
            });
        match node {
            Some(node) => {
                claimed[node] = true;
                // The graph holds the same vector.
                stored.record.vector = None;
                self.placed.push((node, stored));
            }
            None => self.later.push(stored),
        }
    }

    /// The namespace, with every node of the snapshot's graph that no record claimed deleted (a
    /// waypoint), and the records whose vectors it did not hold pending, in sequence order.
    pub fn finish(self) -> (Namespace, Restored) {
        let Restoring {
            mut namespace,
            graph,
            deriving,
            claimed,
            mut placed,
            mut later,
            ..
        } = self;
        let mut restored = Restored::default();
        if let (Some(claimed), Some(graph)) = (claimed, graph) {
            let nodes = claimed.len();
            namespace.entries.resize_with(nodes, || None);
            namespace.sequences.resize(nodes, 0);
            restored.from_snapshot = placed.len();
            // In slot order, so the metadata index's postings grow at their ends. Placing needs no
            // graph, so it runs while the graph's copies may still be being derived.
            placed.sort_unstable_by_key(|(slot, _)| *slot);
            for (slot, stored) in placed {
                namespace.place(slot, stored);
            }
            let derived =
                deriving.map(|thread| thread.join().expect("deriving a loaded graph's copies panicked"));
            // The deriving thread has ended, and with it its share of the graph.
            let mut graph = Arc::into_inner(graph).expect("the graph is shared with no one else");
            match derived {
                Some(Some(derived)) => graph.install(derived),
                Some(None) => {}
                None => graph.derive_halves(),
            }
            namespace.dense = graph;
            for (node, is_claimed) in claimed.iter().enumerate() {
                if !is_claimed {
                    namespace.dense.remove(node);
                }
            }
            // Checking and deriving read every vector once; a mapped file's pages go back to the page
            // cache until a search or fetch needs them.
            namespace.dense.release_mapped_pages();
        }
        later.sort_by_key(|stored| stored.sequence);
        for stored in later {
            namespace.put(stored);
        }
        restored.pending = namespace.pending.len();
        (namespace, restored)
    }
}

impl Namespace {
    /// A namespace holding `records`, whose dense vectors take their nodes in `image`'s graph where the
    /// node was made for that record's id and exactly that vector (bit for bit); every
    /// other vector is pending, and every node no record claims is deleted (a waypoint). Nothing of
    /// the image is trusted beyond that check, so an image from any earlier moment (a stale snapshot)
    /// is safe, and saves the work for what did not change since.
    pub fn restore(
        spec: &IndexSpec,
        records: Vec<StoredRecord>,
        image: Option<GraphImage>,
    ) -> (Namespace, Restored) {
        let mut restoring = Restoring::new(spec, image);
        for stored in records {
            restoring.add(stored);
        }
        restoring.finish()
    }
}

#[cfg(test)]
mod tests {
    use quiver_core::index::SimilarityFunction;

    use super::*;
    use crate::hnsw::HnswParams;

    #[test]
    fn no_more_than_two_graphs_derive_their_copies_apart_at_once() {
        let mut graph = Hnsw::new(SimilarityFunction::Cosine, 4, HnswParams::default());
        graph.insert(0, &[1.0, 0.0, 0.0, 0.0]);
        // Without its derived copies, as a snapshot brings it.
        let graph = Arc::new(graph.copy_for_image());
        // Places of its own: other tests of a load may hold the process's.
        static PLACES: AtomicUsize = AtomicUsize::new(0);
        let taken: Vec<_> = (0..MOST_DERIVING)
            .map(|_| DerivingPlace::take(&PLACES).unwrap())
            .collect();
        assert!(
            derive_apart_counted(&graph, &PLACES).is_none(),
            "every place is taken"
        );
        drop(taken);
        let thread = derive_apart_counted(&graph, &PLACES).expect("a place is free");
        let derived = thread.join().unwrap();
        assert!(
            derived.is_some(),
            "a graph as a snapshot brings it has its copies to derive"
        );
        // The place went back when the thread ended, with the thread's share of the graph.
        assert_eq!(PLACES.load(Ordering::Acquire), 0);
        assert_eq!(Arc::strong_count(&graph), 1);
    }
}
