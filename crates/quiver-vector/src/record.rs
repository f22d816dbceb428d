//! Records and the settings of the index that holds them.

use quiver_core::index::{IndexType, SimilarityFunction};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::filter::Filter;

/// A sparse vector: parallel indices and values.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SparseVector {
    /// Non-zero dimensions.
    pub indices: Vec<u32>,
    /// Their values.
    pub values: Vec<f32>,
}

/// One stored vector with its metadata and data.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Identifier (numeric ids arrive as their text).
    pub id: String,
    /// Dense part.
    pub vector: Option<Vec<f32>>,
    /// Sparse part.
    pub sparse: Option<SparseVector>,
    /// Metadata (a JSON object).
    pub metadata: Option<Value>,
    /// Raw text.
    pub data: Option<String>,
}

impl Record {
    /// Whether the record's metadata passes `filter` (no filter passes everything; no metadata is `null`).
    pub fn passes(&self, filter: Option<&Filter>) -> bool {
        filter.is_none_or(|f| f.matches(self.metadata.as_ref().unwrap_or(&Value::Null)))
    }
}

/// What the engine needs to know about an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexSpec {
    /// Dense dimension (0 for sparse-only).
    pub dimension: usize,
    /// Dense similarity function.
    pub similarity: SimilarityFunction,
    /// Which parts records have.
    pub index_type: IndexType,
}

impl IndexSpec {
    /// Whether records carry a dense part.
    pub fn has_dense(&self) -> bool {
        matches!(self.index_type, IndexType::Dense | IndexType::Hybrid)
    }

    /// Whether records carry a sparse part.
    pub fn has_sparse(&self) -> bool {
        matches!(self.index_type, IndexType::Sparse | IndexType::Hybrid)
    }
}

/// A record as stored, with its position in insertion order.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRecord {
    /// Position in the namespace's insertion order.
    pub sequence: u64,
    /// The record.
    pub record: Record,
}
