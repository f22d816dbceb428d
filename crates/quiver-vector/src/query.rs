//! What a query asks and what it finds.

use crate::filter::Filter;
use crate::record::{Record, SparseVector};
use crate::text::QueryMode;

/// How sparse query values are weighted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weighting {
    /// As given.
    #[default]
    None,
    /// By inverse document frequency over the namespace.
    Idf,
}

/// How the dense and sparse rankings of a hybrid query are fused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fusion {
    /// Reciprocal rank fusion: `1 / (60 + rank)`, rank from 1.
    #[default]
    Rrf,
    /// Distribution-based score fusion: mean +/- 3 sigma normalisation, then sum.
    Dbsf,
    /// DBSF's normalisation, then the dense part weighted by the given share and the sparse part by
    /// the rest (a search index's `semanticWeight`).
    Weighted(SemanticWeight),
}

/// The dense part's share of a weighted fusion: a number from 0 to 1.
#[derive(Debug, Clone, Copy)]
pub struct SemanticWeight(f32);

impl SemanticWeight {
    /// The weight, if `value` lies in 0..=1.
    pub fn new(value: f64) -> Option<SemanticWeight> {
        (0.0..=1.0)
            .contains(&value)
            .then_some(SemanticWeight(value as f32))
    }

    /// The dense part's share.
    pub fn dense(self) -> f32 {
        self.0
    }

    /// The sparse part's share.
    pub fn sparse(self) -> f32 {
        1.0 - self.0
    }
}

impl PartialEq for SemanticWeight {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for SemanticWeight {}

/// What a query searches with.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryInput {
    /// Vectors the caller gives: a dense part, a sparse part, or both.
    Vectors {
        /// Dense part.
        dense: Option<Vec<f32>>,
        /// Sparse part.
        sparse: Option<SparseVector>,
    },
    /// Text that the index's models embed; `mode` picks the parts of a hybrid index.
    Text {
        /// The text.
        data: String,
        /// Which parts to use.
        mode: QueryMode,
    },
}

impl Default for QueryInput {
    fn default() -> Self {
        QueryInput::Vectors {
            dense: None,
            sparse: None,
        }
    }
}

/// A query.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// What it searches with.
    pub input: QueryInput,
    /// Most results.
    pub top_k: usize,
    /// Metadata filter.
    pub filter: Option<Filter>,
    /// Sparse weighting.
    pub weighting: Weighting,
    /// Hybrid fusion.
    pub fusion: Fusion,
}

/// A query result.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Similarity (dense: in [0, 1]).
    pub score: f32,
    /// The record.
    pub record: Record,
}

impl Query {
    /// The dense part (none until text is embedded).
    pub fn dense(&self) -> Option<&[f32]> {
        match &self.input {
            QueryInput::Vectors { dense, .. } => dense.as_deref(),
            QueryInput::Text { .. } => None,
        }
    }

    /// The sparse part (none until text is embedded).
    pub fn sparse(&self) -> Option<&SparseVector> {
        match &self.input {
            QueryInput::Vectors { sparse, .. } => sparse.as_ref(),
            QueryInput::Text { .. } => None,
        }
    }
}
