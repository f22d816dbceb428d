//! Index records as the management API writes them.

use quiver_admin::Account;
use quiver_admin::catalog::{IndexName, NewSearchIndex, NewVectorIndex};
use quiver_admin::catalog::{IndexRecord, IndexSettings};
use quiver_core::index::{
    DenseModel, IndexType, SearchRegion, SimilarityFunction, SparseModel, VectorRegion,
};
use quiver_core::plan::PlanType;
use quiver_core::plan::{Limit, PlanLimits};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::extract::{Vocabulary, text_parsed};

/// A data point of a time series, as the wire writes it.
#[derive(Debug, Clone, Serialize)]
pub struct TimeSeriesPoint {
    /// Time, `YYYY-MM-DD HH:MM:SS.fff +0000 UTC`.
    pub x: String,
    /// Value.
    pub y: f64,
}

/// The limits every index record carries.
#[derive(Debug, Serialize)]
pub(crate) struct LimitsResponse {
    max_vector_count: Limit,
    max_daily_updates: Limit,
    max_daily_queries: Limit,
    max_monthly_bandwidth: Limit,
    max_writes_per_second: Limit,
    max_query_per_second: Limit,
    max_reads_per_request: Limit,
    max_writes_per_request: Limit,
}

impl From<PlanLimits> for LimitsResponse {
    fn from(limits: PlanLimits) -> Self {
        LimitsResponse {
            max_vector_count: limits.max_vector_count,
            max_daily_updates: limits.max_daily_updates,
            max_daily_queries: limits.max_daily_queries,
            max_monthly_bandwidth: limits.max_monthly_bandwidth,
            max_writes_per_second: limits.max_writes_per_second,
            max_query_per_second: limits.max_query_per_second,
            max_reads_per_request: limits.max_reads_per_request,
            max_writes_per_request: limits.max_writes_per_request,
        }
    }
}

/// A vector index record (wire-format §2.1).
#[derive(Debug, Serialize)]
pub struct VectorIndexResponse {
    customer_id: String,
    id: String,
    name: String,
    similarity_function: &'static str,
    dimension_count: u32,
    embedding_model: &'static str,
    sparse_embedding_model: &'static str,
    index_type: &'static str,
    endpoint: String,
    token: String,
    read_only_token: String,
    #[serde(rename = "type")]
    plan: &'static str,
    region: &'static str,
    #[serde(flatten)]
    limits: LimitsResponse,
    max_total_metadata_size: Limit,
    reserved_price: f64,
    creation_time: i64,
    throughput_vector: Vec<TimeSeriesPoint>,
}

/// A search index record (SPEC 2.3).
#[derive(Debug, Serialize)]
pub struct SearchIndexResponse {
    customer_id: String,
    id: String,
    name: String,
    endpoint: String,
    #[serde(rename = "type")]
    plan: &'static str,
    region: &'static str,
    integration_email: String,
    /// The upstream spelling of `integration_email`, kept for clients that read it.
    vercel_email: String,
    token: String,
    read_only_token: String,
    #[serde(flatten)]
    limits: LimitsResponse,
    max_monthly_reranks: Limit,
    creation_time: i64,
    input_enrichment_enabled: bool,
    throughput_vector: Vec<TimeSeriesPoint>,
}

/// An index record of either kind, as the wire writes it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum IndexResponse {
    /// A vector index.
    Vector(Box<VectorIndexResponse>),
    /// A search index.
    Search(Box<SearchIndexResponse>),
}

impl IndexResponse {
    /// Sets the last hour's requests per minute.
    pub(crate) fn with_throughput(mut self, points: Vec<TimeSeriesPoint>) -> IndexResponse {
        match &mut self {
            IndexResponse::Vector(response) => response.throughput_vector = points,
            IndexResponse::Search(response) => response.throughput_vector = points,
        }
        self
    }
}

pub(crate) fn index_response(owner: &Account, record: IndexRecord) -> IndexResponse {
    let limits = record.limits();
    match record.settings {
        IndexSettings::VectorV1(settings) => IndexResponse::Vector(Box::new(VectorIndexResponse {
            customer_id: owner.email.to_string(),
            id: record.id.to_string(),
            name: record.name.into(),
            similarity_function: settings.similarity_function.as_str(),
            dimension_count: settings.dimension_count,
            embedding_model: settings.embedding_model.map_or("", |m| m.as_str()),
            sparse_embedding_model: settings.sparse_embedding_model.map_or("", |m| m.as_str()),
            index_type: settings.index_type.as_str(),
            endpoint: record.endpoint,
            token: record.token,
            read_only_token: record.read_only_token,
            plan: record.plan.as_str(),
            region: settings.region.as_str(),
            limits: limits.into(),
            max_total_metadata_size: limits.max_total_metadata_size,
            reserved_price: limits.reserved_price,
            creation_time: record.created_at.as_secs(),
            throughput_vector: Vec::new(),
        })),
        IndexSettings::SearchV1(settings) => IndexResponse::Search(Box::new(SearchIndexResponse {
            customer_id: owner.email.to_string(),
            id: record.id.to_string(),
            name: record.name.into(),
            endpoint: record.endpoint,
            plan: record.plan.as_str(),
            region: settings.region.as_str(),
            integration_email: String::new(),
            vercel_email: String::new(),
            token: record.token,
            read_only_token: record.read_only_token,
            limits: limits.into(),
            max_monthly_reranks: limits.max_monthly_reranks,
            creation_time: record.created_at.as_secs(),
            input_enrichment_enabled: settings.input_enrichment_enabled,
            throughput_vector: Vec::new(),
        })),
    }
}

/// A required field of a request body: absent, `null` and `""` are a 400 naming it.
fn required<T>(value: Option<T>, name: &str) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::bad_request(format!("{name}: is required")))
}

/// The body of creating a vector index. Text fields read `null` and `""` as absent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateVectorIndexRequest {
    #[serde(default, deserialize_with = "text_parsed")]
    name: Option<IndexName>,
    #[serde(default, deserialize_with = "text_parsed")]
    region: Option<Vocabulary<VectorRegion>>,
    #[serde(default, deserialize_with = "text_parsed")]
    similarity_function: Option<Vocabulary<SimilarityFunction>>,
    #[serde(default)]
    dimension_count: Option<u32>,
    #[serde(default, rename = "type", deserialize_with = "text_parsed")]
    plan: Option<Vocabulary<PlanType>>,
    #[serde(default, deserialize_with = "text_parsed")]
    index_type: Option<Vocabulary<IndexType>>,
    #[serde(default, deserialize_with = "text_parsed")]
    embedding_model: Option<Vocabulary<DenseModel>>,
    #[serde(default, deserialize_with = "text_parsed")]
    sparse_embedding_model: Option<Vocabulary<SparseModel>>,
}

impl CreateVectorIndexRequest {
    /// The index asked for, with the defaults: a dense index on the free plan, and for a sparse index
    /// the dot product.
    ///
    /// # Errors
    /// A required field is missing (400).
    pub(crate) fn into_new_index(self) -> Result<NewVectorIndex, ApiError> {
        let name = required(self.name, "name")?;
        let region = required(self.region, "region")?.0;
        let index_type = self.index_type.map_or(IndexType::Dense, |v| v.0);
        let similarity_function = match (index_type, self.similarity_function) {
            (_, Some(given)) => given.0,
            (IndexType::Sparse, None) => SimilarityFunction::DotProduct,
            (IndexType::Dense | IndexType::Hybrid, None) => {
                return Err(ApiError::bad_request("similarity_function: is required"));
            }
        };
        Ok(NewVectorIndex {
            name,
            region,
            similarity_function,
            dimension_count: self.dimension_count,
            plan: self.plan.map_or(PlanType::Free, |v| v.0),
            index_type,
            embedding_model: self.embedding_model.map(|v| v.0),
            sparse_embedding_model: self.sparse_embedding_model.map(|v| v.0),
        })
    }
}

/// The body of creating a search index.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateSearchIndexRequest {
    #[serde(default, deserialize_with = "text_parsed")]
    name: Option<IndexName>,
    #[serde(default, deserialize_with = "text_parsed")]
    region: Option<Vocabulary<SearchRegion>>,
    #[serde(default, rename = "type", deserialize_with = "text_parsed")]
    plan: Option<Vocabulary<PlanType>>,
}

impl CreateSearchIndexRequest {
    /// The index asked for.
    ///
    /// # Errors
    /// A required field is missing (400).
    pub(crate) fn into_new_index(self) -> Result<NewSearchIndex, ApiError> {
        Ok(NewSearchIndex {
            name: required(self.name, "name")?,
            region: required(self.region, "region")?.0,
            plan: required(self.plan, "type")?.0,
        })
    }
}

/// The body of renaming an index.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RenameRequest {
    #[serde(default, deserialize_with = "text_parsed")]
    name: Option<IndexName>,
}

impl RenameRequest {
    /// The new name.
    ///
    /// # Errors
    /// No name (400).
    pub(crate) fn into_name(self) -> Result<IndexName, ApiError> {
        required(self.name, "name")
    }
}

/// The body of changing an index's plan.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetPlanRequest {
    #[serde(default, deserialize_with = "text_parsed")]
    target_plan: Option<Vocabulary<PlanType>>,
}

impl SetPlanRequest {
    /// The plan asked for.
    ///
    /// # Errors
    /// No plan (400).
    pub(crate) fn into_plan(self) -> Result<PlanType, ApiError> {
        required(self.target_plan, "target_plan").map(|v| v.0)
    }
}

/// The body of transferring an index to another account.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TransferRequest {
    #[serde(default)]
    target_account: Option<String>,
}

impl TransferRequest {
    /// The account to hand the index to.
    ///
    /// # Errors
    /// No account (400).
    pub(crate) fn into_target(self) -> Result<String, ApiError> {
        required(self.target_account.filter(|t| !t.is_empty()), "target_account")
    }
}
