//! The index catalogue: what an index is, who owns it, and how it is reached.

use std::fmt;

use quiver_core::index::{
    DenseModel, IndexType, SearchRegion, SimilarityFunction, SparseModel, VectorRegion,
};
use quiver_core::plan::{PlanLimits, PlanType};
use quiver_core::{AccountId, IndexId, Timestamp};
use serde::{Deserialize, Serialize};

/// Which data plane an index belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexKind {
    /// A vector index (dense, sparse or hybrid).
    Vector,
    /// A search index (documents with hosted embeddings and reranking).
    Search,
}

impl IndexKind {
    /// The stored spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            IndexKind::Vector => "vector",
            IndexKind::Search => "search",
        }
    }
}

/// A display name for an index: 1 to 100 characters, no control characters, not blank.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IndexName(String);

/// Why a text is not an acceptable index name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an index name must be 1 to 100 characters without control characters, and not blank")]
pub struct InvalidIndexName;

impl IndexName {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for IndexName {
    type Error = InvalidIndexName;
    fn try_from(text: String) -> Result<Self, InvalidIndexName> {
        let length = text.chars().count();
        if (1..=100).contains(&length) && !text.trim().is_empty() && !text.chars().any(char::is_control) {
            Ok(IndexName(text))
        } else {
            Err(InvalidIndexName)
        }
    }
}

impl From<IndexName> for String {
    fn from(name: IndexName) -> String {
        name.0
    }
}

impl fmt::Display for IndexName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Settings of a vector index, fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorSettings {
    /// Deployment region.
    pub region: VectorRegion,
    /// Dense similarity function (also reported, unused, for sparse indexes).
    pub similarity_function: SimilarityFunction,
    /// Dense dimension; 0 for sparse-only indexes.
    pub dimension_count: u32,
    /// Dense, sparse or hybrid.
    pub index_type: IndexType,
    /// Hosted dense model, if any.
    pub embedding_model: Option<DenseModel>,
    /// Hosted sparse model, if any.
    pub sparse_embedding_model: Option<SparseModel>,
}

/// Settings of a search index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchSettings {
    /// Deployment region.
    pub region: SearchRegion,
    /// Whether queries are enriched before search.
    pub input_enrichment_enabled: bool,
}

/// Kind-specific settings, stored tagged and versioned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum IndexSettings {
    /// Version 1 of the vector settings.
    #[serde(rename = "vector_v1")]
    VectorV1(VectorSettings),
    /// Version 1 of the search settings.
    #[serde(rename = "search_v1")]
    SearchV1(SearchSettings),
}

/// One index in the catalogue.
#[derive(Clone, PartialEq, Eq)]
pub struct IndexRecord {
    /// Stable identifier (a UUID).
    pub id: IndexId,
    /// Owning account.
    pub account_id: AccountId,
    /// Display name.
    pub name: IndexName,
    /// Unique, readable name used in addresses (`glowing-baboon-15797`).
    pub endpoint: String,
    /// Plan, which sets the limits.
    pub plan: PlanType,
    /// Bearer token that may read and write.
    pub token: String,
    /// Bearer token that may only read.
    pub read_only_token: String,
    /// When the index was created.
    pub created_at: Timestamp,
    /// Kind-specific settings.
    pub settings: IndexSettings,
}

impl fmt::Debug for IndexRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexRecord")
            .field("id", &self.id)
            .field("account_id", &self.account_id)
            .field("name", &self.name)
            .field("endpoint", &self.endpoint)
            .field("plan", &self.plan)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl IndexRecord {
    /// Which data plane the index belongs to.
    pub fn kind(&self) -> IndexKind {
        match self.settings {
            IndexSettings::VectorV1(_) => IndexKind::Vector,
            IndexSettings::SearchV1(_) => IndexKind::Search,
        }
    }

    /// What the index's plan allows.
    pub fn limits(&self) -> PlanLimits {
        match self.kind() {
            IndexKind::Vector => self.plan.vector_limits(),
            IndexKind::Search => self.plan.search_limits(),
        }
    }
}

/// A request to create a vector index, already parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewVectorIndex {
    /// Display name.
    pub name: IndexName,
    /// Deployment region.
    pub region: VectorRegion,
    /// Dense similarity function.
    pub similarity_function: SimilarityFunction,
    /// Dense dimension; may be left out when `embedding_model` sets it, ignored for sparse indexes.
    pub dimension_count: Option<u32>,
    /// Plan (default free).
    pub plan: PlanType,
    /// Dense, sparse or hybrid (default dense).
    pub index_type: IndexType,
    /// Hosted dense model.
    pub embedding_model: Option<DenseModel>,
    /// Hosted sparse model.
    pub sparse_embedding_model: Option<SparseModel>,
}

/// A request to create a search index, already parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSearchIndex {
    /// Display name.
    pub name: IndexName,
    /// Deployment region.
    pub region: SearchRegion,
    /// Plan.
    pub plan: PlanType,
}
