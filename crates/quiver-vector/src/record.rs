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
        Filter::passes(filter, self.metadata.as_ref())
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

/// The stored form of vectors, the same in every backend: a dense vector is its `f32`s little-endian;
/// a sparse vector is its `u32` indices little-endian, then as many `f32` values.
pub mod bytes {
    use super::SparseVector;

    /// A dense vector's stored bytes.
    pub fn of_dense(vector: &[f32]) -> Vec<u8> {
        vector.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// A dense vector from its stored bytes.
    pub fn to_dense(bytes: &[u8]) -> Vec<f32> {
        crate::codec::f32s_of(bytes).collect()
    }

    /// A sparse vector's stored bytes.
    pub fn of_sparse(sparse: &SparseVector) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(sparse.indices.len() * 8);
        bytes.extend(sparse.indices.iter().flat_map(|i| i.to_le_bytes()));
        bytes.extend(sparse.values.iter().flat_map(|v| v.to_le_bytes()));
        bytes
    }

    /// A sparse vector from its stored bytes.
    pub fn to_sparse(bytes: &[u8]) -> SparseVector {
        let (indices, values) = bytes.split_at(bytes.len() / 2);
        SparseVector {
            indices: indices
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            values: to_dense(values),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn vectors_round_trip_through_their_stored_bytes() {
            let dense = vec![0.1_f32, -2.5, 3.0e-7];
            assert_eq!(to_dense(&of_dense(&dense)), dense);
            let sparse = SparseVector {
                indices: vec![1, 70_000],
                values: vec![0.5, -0.25],
            };
            assert_eq!(to_sparse(&of_sparse(&sparse)), sparse);
        }
    }
}
