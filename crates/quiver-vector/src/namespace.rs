//! One namespace in memory: records by id, insertion order, and the dense index.

use std::collections::{BTreeMap, HashMap};

use crate::dense::DenseIndex;
use crate::hnsw::{Hnsw, HnswParams};
use crate::record::{IndexSpec, Record, StoredRecord};

#[derive(Debug)]
struct Entry {
    sequence: u64,
    record: Record,
}

/// The records of one namespace.
#[derive(Debug)]
pub struct Namespace {
    entries: Vec<Option<Entry>>,
    by_id: HashMap<String, usize>,
    order: BTreeMap<u64, usize>,
    dense: Box<dyn DenseIndex>,
    next_sequence: u64,
}

impl Namespace {
    /// An empty namespace of an index with `spec`.
    pub fn new(spec: &IndexSpec) -> Namespace {
        Namespace {
            entries: Vec::new(),
            by_id: HashMap::new(),
            order: BTreeMap::new(),
            dense: Box::new(Hnsw::new(spec.similarity, spec.dimension, HnswParams::default())),
            next_sequence: 1,
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
        self.by_id
            .get(id)
            .and_then(|slot| self.entries[*slot].as_ref())
            .map(|e| e.sequence)
    }

    /// Puts a stored record in place, replacing one with the same id. Slots are never reused (graph
    /// nodes stay valid waypoints), so a replaced record moves to a fresh slot.
    pub fn put(&mut self, stored: StoredRecord) {
        let StoredRecord { sequence, record } = stored;
        self.remove(&record.id);
        let slot = self.entries.len();
        self.entries.push(None);
        self.by_id.insert(record.id.clone(), slot);
        if let Some(vector) = &record.vector {
            self.dense.insert(slot, vector);
        }
        self.order.insert(sequence, slot);
        self.next_sequence = self.next_sequence.max(sequence + 1);
        self.entries[slot] = Some(Entry { sequence, record });
    }

    /// Removes a record; whether it existed.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(slot) = self.by_id.remove(id) else {
            return false;
        };
        if let Some(entry) = self.entries[slot].take() {
            self.order.remove(&entry.sequence);
        }
        self.dense.remove(slot);
        true
    }

    /// A record by id.
    pub fn get(&self, id: &str) -> Option<&Record> {
        self.by_id
            .get(id)
            .and_then(|slot| self.entries[*slot].as_ref())
            .map(|e| &e.record)
    }

    /// The record in a slot.
    pub fn at(&self, slot: usize) -> Option<&Record> {
        self.entries.get(slot).and_then(Option::as_ref).map(|e| &e.record)
    }

    /// Records in insertion order from `sequence` on, with their sequences.
    pub fn from_sequence(&self, sequence: u64) -> impl Iterator<Item = (u64, &Record)> {
        self.order
            .range(sequence..)
            .filter_map(|(seq, slot)| self.entries[*slot].as_ref().map(|e| (*seq, &e.record)))
    }

    /// Every record, in insertion order.
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.from_sequence(0).map(|(_, record)| record)
    }

    /// Up to `k` accepted slots nearest to `query`, best first, with ranking keys.
    pub fn search_dense(
        &self,
        query: &[f32],
        k: usize,
        accept: &dyn Fn(&Record) -> bool,
    ) -> Vec<(usize, f32)> {
        self.dense
            .search(query, k, &|slot| self.at(slot).is_some_and(accept))
    }

    /// Bytes the dense index holds.
    pub fn dense_memory_bytes(&self) -> usize {
        self.dense.memory_bytes()
    }
}
