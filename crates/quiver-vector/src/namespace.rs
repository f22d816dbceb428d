//! One namespace in memory: records by id, insertion order, the dense index and the sparse postings.
//!
//! A record is visible to fetch, range and query as soon as it is put; its dense vector joins the graph
//! later ([`Namespace::index_pending`], run by the background indexer). Until then, queries scan the
//! pending vectors exhaustively, so nothing acknowledged is ever missing from results.
//!
//! A dense vector is held once: by its record while it is pending, by the graph once it is in it (the
//! graph keeps it exactly as written). Records are read through [`RecordRef`], which finds it in
//! either place.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hashbrown::HashTable;
use quiver_core::index::SimilarityFunction;
use serde_json::Value;

use crate::dense::{DenseIndex, ExactIndex, TopK};
use crate::filter::Filter;
use crate::hnsw::{Batch, Hnsw, HnswParams, RegionSample, TrainedRegions};
use crate::metadata_index::MetadataIndex;
use crate::postings::Postings;
use crate::recent_listings::RecentListings;
use crate::record::{IndexSpec, Record, SparseVector, StoredRecord};
use crate::score::rank_key;

mod image;
mod indexing;
mod restore;

pub use image::GraphImage;
pub use restore::{Restored, Restoring};

/// A record of a namespace, read in place: its parts, with the dense vector from wherever the
/// namespace holds it.
#[derive(Debug, Clone, Copy)]
pub struct RecordRef<'a> {
    entry: &'a Entry,
    slot: usize,
    /// The graph, where the dense vector is once indexed (looked up only when asked for: a filter
    /// reads metadata alone).
    graph: &'a Hnsw,
}

impl<'a> RecordRef<'a> {
    /// Identifier.
    pub fn id(&self) -> &'a str {
        &self.entry.id
    }

    /// Dense part.
    pub fn vector(&self) -> Option<&'a [f32]> {
        match &self.entry.vector {
            Some(vector) => Some(&vector[..]),
            // A live record's vector left it for the graph exactly where the graph has a live node.
            None => self
                .graph
                .is_live(self.slot)
                .then(|| self.graph.node_vector(self.slot)),
        }
    }

    /// Sparse part.
    pub fn sparse(&self) -> Option<&'a SparseVector> {
        self.entry.sparse.as_deref()
    }

    /// Metadata.
    pub fn metadata(&self) -> Option<&'a Value> {
        self.entry.metadata.as_deref()
    }

    /// Raw text.
    pub fn data(&self) -> Option<&'a str> {
        self.entry.data.as_deref()
    }

    /// Whether the metadata passes `filter` (see [`Filter::passes`]).
    pub fn passes(&self, filter: Option<&Filter>) -> bool {
        Filter::passes(filter, self.metadata())
    }

    /// The whole record, copied.
    pub fn to_record(&self) -> Record {
        Record {
            id: self.id().to_owned(),
            vector: self.vector().map(<[f32]>::to_vec),
            sparse: self.sparse().cloned(),
            metadata: self.metadata().cloned(),
            data: self.data().map(str::to_owned),
        }
    }
}

/// A record as a namespace holds it, each part boxed so that a part a record lacks costs a pointer at
/// most: 64 bytes, where a `Record` and its sequence took 168 (a million records: 100 MB less).
#[derive(Debug)]
struct Entry {
    id: Box<str>,
    /// The dense vector while it is pending; the graph holds it once it is indexed.
    vector: Option<Box<[f32]>>,
    sparse: Option<Box<SparseVector>>,
    metadata: Option<Box<Value>>,
    data: Option<Box<str>>,
}

impl From<Record> for Entry {
    fn from(record: Record) -> Entry {
        Entry {
            id: record.id.into_boxed_str(),
            vector: record.vector.map(Vec::into_boxed_slice),
            sparse: record.sparse.map(Box::new),
            metadata: record.metadata.map(Box::new),
            data: record.data.map(String::into_boxed_str),
        }
    }
}

/// Threads a graph builds on: every core.
fn build_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// Whether the slot table's `slot` holds the record `id`: how the table is searched by id.
fn holds_id<'a>(entries: &'a [Option<Entry>], id: &'a str) -> impl Fn(&u32) -> bool + 'a {
    move |&slot| entries[slot as usize].as_ref().is_some_and(|e| &*e.id == id)
}

/// The records of one namespace.
#[derive(Debug)]
pub struct Namespace {
    entries: Vec<Option<Entry>>,
    /// Live slots, found by their entries' ids (which are not copied here).
    by_id: HashTable<u32>,
    hasher: RandomState,
    order: BTreeMap<u64, usize>,
    dense: Hnsw,
    similarity: SimilarityFunction,
    /// Slots whose dense vector is not in the graph yet, in slot order (those of a batch in flight
    /// too, until it is linked).
    pending: Vec<usize>,
    /// A batch appended to the graph but not linked yet (see [`Namespace::begin_indexing`]).
    in_flight: Option<Batch>,
    /// The sparse vectors' inverted index.
    postings: Postings,
    /// The metadata's inverted index, for filters.
    metadata_index: MetadataIndex,
    /// Listings of recent filters, dropped whenever `metadata_index` changes.
    recent_listings: RecentListings,
    /// Each slot's sequence (slots are never reused, so it never changes).
    sequences: Vec<u64>,
    next_sequence: u64,
    /// Vectors inserted into the graph since this namespace was made (or restored).
    graph_inserts: u64,
    /// `graph_inserts` when the last snapshot image was taken.
    saved_inserts: AtomicU64,
    /// The whole graph is unsaved: no snapshot holds it under this namespace's name (it was renamed).
    is_unsaved_whole: AtomicBool,
    /// Regions were installed since the last snapshot image was taken.
    is_regions_unsaved: AtomicBool,
}

impl Namespace {
    /// An empty namespace of an index with `spec`.
    pub fn new(spec: &IndexSpec) -> Namespace {
        Namespace {
            entries: Vec::new(),
            by_id: HashTable::new(),
            hasher: RandomState::new(),
            order: BTreeMap::new(),
            dense: Hnsw::new(spec.similarity, spec.dimension, HnswParams::default()),
            similarity: spec.similarity,
            pending: Vec::new(),
            in_flight: None,
            postings: Postings::default(),
            metadata_index: MetadataIndex::default(),
            recent_listings: RecentListings::default(),
            sequences: Vec::new(),
            next_sequence: 1,
            graph_inserts: 0,
            saved_inserts: AtomicU64::new(0),
            is_unsaved_whole: AtomicBool::new(false),
            is_regions_unsaved: AtomicBool::new(false),
        }
    }

    /// How many records it holds.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether it holds no records.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The sequence the next new record gets.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// The sequence of an existing record (a replaced record keeps its place in insertion order).
    pub fn sequence_of(&self, id: &str) -> Option<u64> {
        self.slot_of(id).map(|slot| self.sequences[slot])
    }

    /// The live slot of the record `id`.
    fn slot_of(&self, id: &str) -> Option<usize> {
        self.by_id
            .find(self.hasher.hash_one(id), holds_id(&self.entries, id))
            .map(|&slot| slot as usize)
    }

    /// Puts a stored record in place, replacing one with the same id. Slots are never reused (graph
    /// nodes stay valid waypoints), so a replaced record moves to a fresh slot.
    pub fn put(&mut self, stored: StoredRecord) {
        self.remove(&stored.record.id);
        let slot = self.entries.len();
        self.entries.push(None);
        self.sequences.push(0);
        if stored.record.vector.is_some() {
            self.pending.push(slot);
        }
        self.place(slot, stored);
    }

    /// Puts a record in an empty slot (which `entries` and `sequences` already cover): by id, in
    /// insertion order, and in the postings.
    fn place(&mut self, slot: usize, stored: StoredRecord) {
        let StoredRecord { sequence, record } = stored;
        self.sequences[slot] = sequence;
        let hash = self.hasher.hash_one(record.id.as_str());
        if let Some(sparse) = &record.sparse {
            self.postings.add(slot, sparse);
        }
        self.order.insert(sequence, slot);
        self.next_sequence = self.next_sequence.max(sequence + 1);
        let number = u32::try_from(slot).expect("a namespace holds fewer than 2^32 slots");
        if let Some(metadata) = &record.metadata {
            self.metadata_index.add(number, metadata);
            self.recent_listings.clear();
        }
        self.entries[slot] = Some(Entry::from(record));
        let (entries, hasher) = (&self.entries, &self.hasher);
        // Every slot in the table has its entry (a removal takes the slot out first), so the 0 for a
        // missing one is never used.
        self.by_id.insert_unique(hash, number, |&other| {
            entries[other as usize]
                .as_ref()
                .map_or(0, |e| hasher.hash_one(&*e.id))
        });
    }

    /// Removes a record; whether it existed.
    pub fn remove(&mut self, id: &str) -> bool {
        let Ok(found) = self
            .by_id
            .find_entry(self.hasher.hash_one(id), holds_id(&self.entries, id))
        else {
            return false;
        };
        let slot = found.remove().0 as usize;
        if let Some(entry) = self.entries[slot].take() {
            self.order.remove(&self.sequences[slot]);
            if let Some(sparse) = &entry.sparse {
                self.postings.remove(slot, sparse);
            }
            if let Some(metadata) = &entry.metadata {
                let entries = &self.entries;
                self.metadata_index
                    .remove(metadata, |slot| entries[slot as usize].is_some());
                self.recent_listings.clear();
            }
        }
        self.dense.remove(slot);
        if let Ok(position) = self.pending.binary_search(&slot) {
            self.pending.remove(position);
        }
        true
    }

    /// A record by id.
    pub fn get(&self, id: &str) -> Option<RecordRef<'_>> {
        self.slot_of(id).and_then(|slot| self.at(slot))
    }

    /// The record in a slot.
    pub fn at(&self, slot: usize) -> Option<RecordRef<'_>> {
        let entry = self.entries.get(slot)?.as_ref()?;
        Some(RecordRef {
            entry,
            slot,
            graph: &self.dense,
        })
    }

    /// Records in insertion order from `sequence` on, with their sequences.
    pub fn from_sequence(&self, sequence: u64) -> impl Iterator<Item = (u64, RecordRef<'_>)> {
        self.order
            .range(sequence..)
            .filter_map(|(seq, slot)| self.at(*slot).map(|record| (*seq, record)))
    }

    /// Every record, in insertion order.
    pub fn records(&self) -> impl Iterator<Item = RecordRef<'_>> {
        self.from_sequence(0).map(|(_, record)| record)
    }

    /// Up to `k` slots nearest to `query` whose records pass `filter`, best first, with ranking keys.
    /// Where the metadata index can tell which records may pass, only those are judged; the listings of
    /// recent filters are kept until the metadata changes.
    pub fn search_dense(&self, query: &[f32], k: usize, filter: Option<&Filter>) -> Vec<(usize, f32)> {
        let accept = |record: RecordRef<'_>| record.passes(filter);
        let judge = |slot: usize| self.at(slot).is_some_and(accept);
        let from_graph = match filter {
            Some(filter) => match self
                .recent_listings
                .listing(filter, |repeated| self.metadata_index.planned(filter, repeated))
            {
                Some(listed) => self
                    .dense
                    .search_listed(query, k, &listed.slots, listed.exact, &judge),
                None => self.dense.search_with(query, k, &judge),
            },
            None => self.dense.search_all(query, k),
        };
        if self.pending.is_empty() {
            return from_graph;
        }
        let prepared_query = ExactIndex::prepare(self.similarity, query);
        let mut best = TopK::new(k);
        for (slot, key) in from_graph {
            best.offer(slot, key);
        }
        for &slot in &self.pending {
            let Some(record) = self.at(slot) else { continue };
            let Some(vector) = record.vector() else { continue };
            if accept(record) {
                let prepared = ExactIndex::prepare(self.similarity, vector);
                best.offer(slot, rank_key(self.similarity, &prepared_query, &prepared));
            }
        }
        best.into_sorted()
    }

    /// Live records with a sparse vector.
    pub fn sparse_records(&self) -> usize {
        self.postings.records()
    }

    /// How many live records have sparse dimension `index`.
    pub fn sparse_frequency(&self, index: u32) -> usize {
        self.postings.frequency(index)
    }

    /// Up to `k` accepted records (all, without `accept`) that share a sparse dimension with `query`
    /// (sorted by index), best first, by their inner product with each query value weighted; of equal
    /// scores, the one inserted first. Only the records that share a dimension are read (the
    /// postings), and of those only the ones kept are looked at when nothing is to be filtered.
    pub fn search_sparse(
        &self,
        query: &SparseVector,
        k: usize,
        weight: impl Fn(u32) -> f32,
        accept: Option<&dyn Fn(RecordRef<'_>) -> bool>,
    ) -> Vec<(RecordRef<'_>, f32)> {
        // Ranked by insertion order on ties, as a scan in that order would (a sequence fits a usize on
        // the 64-bit targets Quiver builds for).
        let rank = |slot: usize| usize::try_from(self.sequences[slot]).unwrap_or(usize::MAX);
        let accepts = accept.map(|accept| move |slot: usize| self.at(slot).is_some_and(accept));
        self.postings
            .top(
                query,
                weight,
                k,
                rank,
                accepts.as_ref().map(|f| f as &dyn Fn(usize) -> bool),
            )
            .into_iter()
            .filter_map(|(sequence, score)| {
                let slot = self.order.get(&(sequence as u64))?;
                Some((self.at(*slot)?, score))
            })
            .collect()
    }

    /// Dense vectors not in the graph yet.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// A sample of the graph's vectors to train regions on, where the graph wants them (see
    /// [`Hnsw::wants_regions`]); the sample is copied, so training holds no lock.
    pub fn region_sample(&self) -> Option<RegionSample> {
        self.dense
            .wants_regions()
            .then(|| self.dense.region_sample())
            .flatten()
    }

    /// Whether the graph is due to train regions (see [`Hnsw::wants_regions`]).
    pub fn wants_regions(&self) -> bool {
        self.dense.wants_regions()
    }

    /// Installs regions trained on a sample this namespace's graph gave (see
    /// [`Hnsw::install_regions`]).
    pub fn install_regions(&mut self, trained: TrainedRegions) {
        self.dense.install_regions(trained);
        self.is_regions_unsaved.store(true, Ordering::Relaxed);
    }

    /// Bytes the dense index holds.
    pub fn dense_memory_bytes(&self) -> usize {
        self.dense.memory_bytes()
    }
}

#[cfg(test)]
impl Namespace {
    /// Trains and installs the graph's regions, whatever its size (the indexer waits for
    /// `REGIONS_FROM` nodes).
    pub(crate) fn train_regions_now(&mut self) {
        let trained = self.dense.region_sample().expect("a graph with nodes").train();
        self.install_regions(trained);
    }

    /// Whether the graph has regions.
    pub(crate) fn has_regions(&self) -> bool {
        self.dense.has_regions()
    }

    /// The ids of the `k` records nearest to `query` (unfiltered), nearest first.
    pub(crate) fn nearest_ids(&self, query: &[f32], k: usize) -> Vec<String> {
        self.nearest_passing_ids(query, k, None)
    }

    /// The ids of the `k` records nearest to `query` that pass `filter`, nearest first.
    pub(crate) fn nearest_passing_ids(
        &self,
        query: &[f32],
        k: usize,
        filter: Option<&Filter>,
    ) -> Vec<String> {
        self.search_dense(query, k, filter)
            .into_iter()
            .map(|(slot, _)| self.at(slot).expect("search returns live slots").id().to_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use quiver_core::index::{IndexType, SimilarityFunction};

    use super::*;

    fn dense(dimension: usize, similarity: SimilarityFunction) -> IndexSpec {
        IndexSpec {
            dimension,
            similarity,
            index_type: IndexType::Dense,
        }
    }

    fn record(id: &str, vector: Vec<f32>) -> StoredRecord {
        StoredRecord {
            sequence: 0,
            record: Record {
                id: id.into(),
                vector: Some(vector),
                sparse: None,
                metadata: None,
                data: None,
            },
        }
    }

    #[test]
    fn vectors_are_found_before_and_after_they_join_the_graph() {
        let mut namespace = Namespace::new(&dense(2, SimilarityFunction::Cosine));
        for i in 0..3_000_u32 {
            let angle = i as f32 * 0.001;
            namespace.put(StoredRecord {
                sequence: u64::from(i) + 1,
                ..record(&format!("v{i}"), vec![angle.cos(), angle.sin()])
            });
        }
        assert_eq!(namespace.pending_len(), 3_000);
        let nearest = |namespace: &Namespace| namespace.nearest_ids(&[1.0, 0.0], 3);
        assert_eq!(
            nearest(&namespace),
            ["v0", "v1", "v2"],
            "pending vectors are scanned"
        );
        while namespace.index_pending(500) > 0 {}
        assert_eq!(namespace.pending_len(), 0);
        assert_eq!(
            nearest(&namespace),
            ["v0", "v1", "v2"],
            "the graph finds the same"
        );
        assert!(namespace.remove("v0"));
        assert_eq!(nearest(&namespace), ["v1", "v2", "v3"]);
    }

    #[test]
    fn a_vector_is_held_once_and_read_back_as_written_after_it_joins_the_graph() {
        let mut namespace = Namespace::new(&dense(3, SimilarityFunction::Cosine));
        let written = vec![0.1_f32, -3.7, 12.25];
        namespace.put(record("a", written.clone()));
        namespace.put(record("b", vec![1.0, 1.0, 1.0]));
        assert_eq!(
            namespace.get("a").and_then(|r| r.vector()),
            Some(written.as_slice())
        );
        assert_eq!(namespace.index_pending(10), 2);
        let slot = namespace.slot_of("a").unwrap();
        assert!(
            namespace.entries[slot].as_ref().unwrap().vector.is_none(),
            "the graph holds the only copy"
        );
        let read = namespace.get("a").unwrap().to_record();
        assert_eq!(read.vector, Some(written.clone()), "bit for bit, not normalised");
        let nearest = namespace.search_dense(&[0.2, -7.4, 24.5], 1, None);
        assert_eq!(nearest[0].0, namespace.slot_of("a").unwrap());
        assert!(
            (nearest[0].1 - 1.0).abs() < 1e-6,
            "ranked by cosine: {}",
            nearest[0].1
        );
        assert!(namespace.remove("a"));
        assert!(namespace.get("a").is_none());
    }

    #[test]
    fn filters_answered_from_the_metadata_index_find_what_judging_every_record_finds() {
        let mut namespace = Namespace::new(&dense(4, SimilarityFunction::Euclidean));
        let mut state = 7_u64;
        let mut coordinate = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1 << 24) as f32
        };
        let metadata = |i: u32, version: u32| serde_json::json!({"tag": (i + version) % 40, "group": i % 2, "score": i % 7, "name": format!("r{i}")});
        for i in 0..6_000_u32 {
            let vector = (0..4).map(|_| coordinate()).collect();
            namespace.put(StoredRecord {
                sequence: u64::from(i) + 1,
                record: Record {
                    metadata: Some(metadata(i, 0)),
                    ..record(&format!("v{i}"), vector).record
                },
            });
        }
        while namespace.index_pending(1_000) > 0 {}
        // Changed and removed records leave the index; the changed ones come back pending.
        for i in (0..6_000_u32).step_by(3) {
            let vector = (0..4).map(|_| coordinate()).collect();
            namespace.put(StoredRecord {
                sequence: 10_000 + u64::from(i),
                record: Record {
                    metadata: Some(metadata(i, 1)),
                    ..record(&format!("v{i}"), vector).record
                },
            });
        }
        for i in (1..6_000_u32).step_by(5) {
            namespace.remove(&format!("v{i}"));
        }
        while namespace.index_pending(700) > 1_000 {}
        assert!(namespace.pending_len() > 0, "some records are still pending");
        // A narrow beam, so that a listing of half the records is walked rather than scanned.
        namespace.dense.set_ef_search(16);
        let query = [0.5_f32, 0.25, 0.75, 0.5];
        for (filter, listing_is_scanned) in [
            ("tag = 7", true),
            ("tag IN (7, 8) AND score > 3", true),
            ("tag IN (7, 8) AND group = 1", true),
            ("name = 'r42' OR name = 'r4242'", true),
            ("tag IN (7, 8) AND name GLOB 'r1*'", true),
            ("group = 1", false),
            ("group = 1 AND score > 3", false),
            ("group = 1 AND name GLOB 'r1*'", false),
        ] {
            let parsed = Filter::parse(filter).unwrap().unwrap();
            let mut passing: Vec<(f32, String)> = namespace
                .records()
                .filter(|record| record.passes(Some(&parsed)))
                .map(|record| {
                    let vector = record.vector().unwrap();
                    let distance: f32 = vector.iter().zip(&query).map(|(a, b)| (a - b) * (a - b)).sum();
                    (distance, record.id().to_owned())
                })
                .collect();
            passing.sort_by(|a, b| a.0.total_cmp(&b.0));
            let truth: Vec<String> = passing.into_iter().take(10).map(|(_, id)| id).collect();
            let found = namespace.nearest_passing_ids(&query, 10, Some(&parsed));
            if listing_is_scanned {
                assert_eq!(found, truth, "{filter}");
            } else {
                let hits = found.iter().filter(|id| truth.contains(id)).count();
                assert!(hits >= 9, "{filter}: {hits} of the 10 nearest");
                assert!(
                    found
                        .iter()
                        .all(|id| namespace.get(id).unwrap().passes(Some(&parsed))),
                    "{filter}: every hit passes"
                );
            }
        }
    }

    #[test]
    fn a_pattern_most_of_many_names_match_is_listed_once_asked_again() {
        let mut namespace = Namespace::new(&dense(1, SimilarityFunction::Euclidean));
        let named = |i: u16| StoredRecord {
            sequence: 0,
            record: Record {
                metadata: Some(serde_json::json!({ "name": format!("r{i}") })),
                ..record(&format!("v{i}"), vec![f32::from(i)]).record
            },
        };
        for i in 0..3_000_u16 {
            namespace.put(named(i));
        }
        while namespace.index_pending(500) > 0 {}
        let most = Filter::parse("name NOT GLOB '*3'").unwrap().unwrap();
        let nearest = |namespace: &Namespace| namespace.nearest_passing_ids(&[12.6], 3, Some(&most));
        assert_eq!(nearest(&namespace), ["v12", "v14", "v11"]);
        assert_eq!(
            namespace.recent_listings.len(),
            0,
            "asked once, nine in ten of 3,000 names match: judged, nothing listed"
        );
        assert_eq!(nearest(&namespace), ["v12", "v14", "v11"]);
        assert_eq!(namespace.recent_listings.len(), 1, "asked again: listed and kept");
        assert_eq!(
            nearest(&namespace),
            ["v12", "v14", "v11"],
            "the kept listing answers"
        );

        // After a write, the filter is judged again until it is asked twice.
        namespace.put(named(3_000));
        assert_eq!(nearest(&namespace), ["v12", "v14", "v11"]);
        assert_eq!(namespace.recent_listings.len(), 0);
    }

    #[test]
    fn a_repeated_filter_reuses_its_listing_until_the_metadata_changes() {
        let mut namespace = Namespace::new(&dense(1, SimilarityFunction::Euclidean));
        let tagged = |id: &str, x: f32, tag: &str| StoredRecord {
            sequence: 0,
            record: Record {
                metadata: Some(serde_json::json!({ "tag": tag })),
                ..record(id, vec![x]).record
            },
        };
        for i in 0..300_u16 {
            let tag = ["a", "b", "c"][usize::from(i % 3)];
            namespace.put(tagged(&format!("v{i}"), f32::from(i), tag));
        }
        while namespace.index_pending(100) > 0 {}
        let united = Filter::parse("tag IN ('a', 'b')").unwrap().unwrap();
        let single = Filter::parse("tag = 'a'").unwrap().unwrap();
        let nearest = |namespace: &Namespace, filter| namespace.nearest_passing_ids(&[-5.0], 2, Some(filter));
        assert_eq!(nearest(&namespace, &united), ["v0", "v1"]);
        assert_eq!(nearest(&namespace, &single), ["v0", "v3"]);
        assert_eq!(
            namespace.recent_listings.len(),
            1,
            "a union of postings is kept; one posting is read in place"
        );
        assert_eq!(
            nearest(&namespace, &united),
            ["v0", "v1"],
            "the kept listing answers"
        );

        // A new record that passes, and one that no longer does, are seen at once.
        namespace.put(tagged("new", -4.0, "b"));
        assert_eq!(
            namespace.recent_listings.len(),
            0,
            "a write drops the kept listings"
        );
        assert_eq!(nearest(&namespace, &united), ["new", "v0"]);
        namespace.put(tagged("new", -4.0, "c"));
        assert_eq!(nearest(&namespace, &united), ["v0", "v1"]);
        assert!(namespace.remove("v0"));
        assert_eq!(nearest(&namespace, &united), ["v1", "v3"]);
    }

    #[test]
    fn removing_a_pending_record_drops_it_from_the_pending_list() {
        let mut namespace = Namespace::new(&dense(1, SimilarityFunction::Euclidean));
        namespace.put(record("a", vec![1.0]));
        namespace.put(record("b", vec![2.0]));
        assert!(namespace.remove("a"));
        assert_eq!(namespace.pending_len(), 1);
        namespace.put(record("b", vec![3.0]));
        assert_eq!(namespace.pending_len(), 1, "a replaced record is pending once");
        assert_eq!(namespace.index_pending(10), 1);
    }

    #[test]
    fn a_batch_in_flight_is_found_once_and_its_removed_records_stay_out() {
        let mut namespace = Namespace::new(&dense(2, SimilarityFunction::Euclidean));
        for i in 0..4_096_u16 {
            let point = vec![f32::from(i % 64), f32::from(i / 64)];
            namespace.put(record(&format!("v{i}"), point));
        }
        assert_eq!(namespace.index_pending(4_032), 4_032);
        // The last row of the grid (y = 63) is appended to the graph, not linked yet.
        assert!(namespace.begin_indexing(usize::MAX));
        assert_eq!(namespace.pending_len(), 64, "a batch in flight stays pending");
        assert_eq!(
            namespace.nearest_ids(&[63.0, 63.4], 3),
            ["v4095", "v4094", "v4031"],
            "a record in flight is scanned once, and never also returned by the graph"
        );
        // One record of the batch is removed, another replaced, while the batch is in flight.
        assert!(namespace.remove("v4094"));
        namespace.put(record("v4095", vec![-10.0, -10.0]));
        let linking = namespace.choose_indexing().expect("a batch is in flight");
        assert_eq!(namespace.finish_indexing(linking), 64);
        assert_eq!(namespace.pending_len(), 1, "the replacement is pending");
        assert_eq!(namespace.len(), 4_095);
        assert_eq!(
            namespace.nearest_ids(&[60.3, 63.4], 2),
            ["v4092", "v4093"],
            "the batch's records are found in the graph"
        );
        assert_eq!(namespace.nearest_ids(&[63.0, 63.4], 2), ["v4031", "v4030"]);
        assert_eq!(namespace.nearest_ids(&[-10.0, -10.0], 1), ["v4095"]);
        assert_eq!(namespace.index_pending(10), 1);
        assert_eq!(namespace.len(), 4_095);
    }
}
