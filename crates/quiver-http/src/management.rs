//! The management API: `/v2/vector/index...` and `/v2/search...` (HTTP Basic).

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use quiver_admin::catalog::{IndexKind, IndexName, IndexRecord, IndexSettings};
use quiver_admin::{Account, NewSearchIndex, NewVectorIndex};
use quiver_core::index::{IndexType, SimilarityFunction};
use quiver_core::plan::{PlanLimits, PlanType};
use serde::Serialize;
use serde_json::Value;

use crate::auth::ManagementAccount;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Fields, JsonBody};
use crate::router::AppState;

/// The management routes, relative to the server root.
pub fn routes(body_limit: usize) -> Router<AppState> {
    Router::new()
        .route(
            "/v2/vector/index",
            get(list_vector_indexes).post(create_vector_index),
        )
        .route(
            "/v2/vector/index/{id}",
            get(get_vector_index).delete(delete_vector_index),
        )
        .route("/v2/vector/index/stats", get(crate::stats::vector_global_stats))
        .route(
            "/v2/vector/index/{id}/stats",
            get(crate::stats::vector_index_stats),
        )
        .route("/v2/search/stats", get(crate::stats::search_global_stats))
        .route("/v2/search/{id}/stats", get(crate::stats::search_index_stats))
        .route("/v2/vector/index/{id}/rename", post(rename_vector_index))
        .route(
            "/v2/vector/index/{id}/reset-password",
            post(reset_vector_index_password),
        )
        .route("/v2/vector/index/{id}/setplan", post(set_vector_index_plan))
        .route("/v2/vector/index/{id}/transfer", post(transfer_vector_index))
        .route("/v2/search", get(list_search_indexes).post(create_search_index))
        .route(
            "/v2/search/{id}",
            get(get_search_index).delete(delete_search_index),
        )
        .route("/v2/search/{id}/rename", post(rename_search_index))
        .route(
            "/v2/search/{id}/reset-password",
            post(reset_search_index_password),
        )
        .route("/v2/search/{id}/transfer", post(transfer_search_index))
        .layer(DefaultBodyLimit::max(body_limit))
}

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
struct LimitsResponse {
    max_vector_count: i64,
    max_daily_updates: i64,
    max_daily_queries: i64,
    max_monthly_bandwidth: i64,
    max_writes_per_second: i64,
    max_query_per_second: i64,
    max_reads_per_request: i64,
    max_writes_per_request: i64,
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
    max_total_metadata_size: i64,
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
    max_monthly_reranks: i64,
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
    fn with_throughput(mut self, points: Vec<TimeSeriesPoint>) -> IndexResponse {
        match &mut self {
            IndexResponse::Vector(response) => response.throughput_vector = points,
            IndexResponse::Search(response) => response.throughput_vector = points,
        }
        self
    }
}

/// The wire record of `record`, with its last hour of traffic.
async fn full_response(state: &AppState, owner: &Account, record: IndexRecord) -> ApiResult<IndexResponse> {
    let points = crate::stats::throughput(state, record.id).await?;
    Ok(index_response(owner, record).with_throughput(points))
}

fn index_response(owner: &Account, record: IndexRecord) -> IndexResponse {
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

fn parse_new_vector_index(body: &Value) -> ApiResult<NewVectorIndex> {
    let fields = Fields::of(body)?;
    let name: IndexName = required_name(&fields)?;
    let index_type = fields
        .optional_enum::<IndexType>("index_type")?
        .unwrap_or(IndexType::Dense);
    let similarity_function = match index_type {
        IndexType::Sparse => fields
            .optional_enum::<SimilarityFunction>("similarity_function")?
            .unwrap_or(SimilarityFunction::DotProduct),
        IndexType::Dense | IndexType::Hybrid => fields.required_enum("similarity_function")?,
    };
    Ok(NewVectorIndex {
        name,
        region: fields.required_enum("region")?,
        similarity_function,
        dimension_count: fields.optional_u32("dimension_count")?,
        plan: fields
            .optional_enum::<PlanType>("type")?
            .unwrap_or(PlanType::Free),
        index_type,
        embedding_model: fields.optional_enum("embedding_model")?,
        sparse_embedding_model: fields.optional_enum("sparse_embedding_model")?,
    })
}

fn parse_new_search_index(body: &Value) -> ApiResult<NewSearchIndex> {
    let fields = Fields::of(body)?;
    Ok(NewSearchIndex {
        name: required_name(&fields)?,
        region: fields.required_enum("region")?,
        plan: fields.required_enum("type")?,
    })
}

fn required_name(fields: &Fields<'_>) -> ApiResult<IndexName> {
    fields
        .optional_parsed::<IndexName>("name")?
        .ok_or_else(|| ApiError::bad_request("name: is required"))
}

/// The JSON string `"OK"`, as upstream write endpoints answer.
fn ok() -> Json<&'static str> {
    Json("OK")
}

async fn create_vector_index(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<IndexResponse>> {
    let request = parse_new_vector_index(&body)?;
    state.admin.check_vector_index(&request)?;
    // A dense model must be installed before an index can use it.
    if let Some(model) = request.embedding_model {
        state
            .embedders
            .dir()
            .check(model)
            .map_err(|e| ApiError::bad_request(format!("embedding_model: {e}")))?;
    }
    let record = state.admin.create_vector_index(&owner, request).await?;
    Ok(Json(full_response(&state, &owner, record).await?))
}

async fn create_search_index(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<IndexResponse>> {
    let request = parse_new_search_index(&body)?;
    let record = state.admin.create_search_index(&owner, request).await?;
    Ok(Json(full_response(&state, &owner, record).await?))
}

async fn set_vector_index_plan(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Json<&'static str>> {
    let plan = Fields::of(&body)?.required_enum::<PlanType>("target_plan")?;
    state.admin.set_plan(&owner, IndexKind::Vector, &id, plan).await?;
    Ok(ok())
}

/// Handlers shared by both kinds of index, instantiated per kind below.
async fn list_indexes(
    state: AppState,
    owner: Account,
    kind: IndexKind,
) -> ApiResult<Json<Vec<IndexResponse>>> {
    let records = state.admin.indexes(&owner, kind).await?;
    {
        let mut responses = Vec::with_capacity(records.len());
        for record in records {
            responses.push(full_response(&state, &owner, record).await?);
        }
        Ok(Json(responses))
    }
}

async fn get_index(
    state: AppState,
    owner: Account,
    kind: IndexKind,
    id: String,
) -> ApiResult<Json<IndexResponse>> {
    let record = state.admin.index(&owner, kind, &id).await?;
    Ok(Json(full_response(&state, &owner, record).await?))
}

async fn delete_index(
    state: AppState,
    owner: Account,
    kind: IndexKind,
    id: String,
) -> ApiResult<Json<&'static str>> {
    let record = state.admin.delete_index(&owner, kind, &id).await?;
    if kind == IndexKind::Vector {
        state.vectors.drop_index(record.id).await?;
    }
    Ok(ok())
}

async fn rename_index(
    state: AppState,
    owner: Account,
    kind: IndexKind,
    id: String,
    body: Value,
) -> ApiResult<Json<&'static str>> {
    // Resolve the index first, so an unknown id is a 404 whatever the body.
    state.admin.index(&owner, kind, &id).await?;
    let name = required_name(&Fields::of(&body)?)?;
    state.admin.rename_index(&owner, kind, &id, name).await?;
    Ok(ok())
}

async fn reset_index_password(
    state: AppState,
    owner: Account,
    kind: IndexKind,
    id: String,
) -> ApiResult<Json<&'static str>> {
    state.admin.reset_index_tokens(&owner, kind, &id).await?;
    Ok(ok())
}

async fn transfer_index(
    state: AppState,
    owner: Account,
    kind: IndexKind,
    id: String,
    body: Value,
) -> ApiResult<Json<&'static str>> {
    state.admin.index(&owner, kind, &id).await?;
    let target = Fields::of(&body)?.required_str("target_account")?;
    state.admin.transfer_index(&owner, kind, &id, target).await?;
    Ok(ok())
}

macro_rules! per_kind {
    ($kind:expr, $list:ident, $get:ident, $delete:ident, $rename:ident, $reset:ident, $transfer:ident) => {
        async fn $list(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
        ) -> ApiResult<Json<Vec<IndexResponse>>> {
            list_indexes(state, owner, $kind).await
        }

        async fn $get(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
            Path(id): Path<String>,
        ) -> ApiResult<Json<IndexResponse>> {
            get_index(state, owner, $kind, id).await
        }

        async fn $delete(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
            Path(id): Path<String>,
        ) -> ApiResult<Json<&'static str>> {
            delete_index(state, owner, $kind, id).await
        }

        async fn $rename(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
            Path(id): Path<String>,
            JsonBody(body): JsonBody,
        ) -> ApiResult<Json<&'static str>> {
            rename_index(state, owner, $kind, id, body).await
        }

        async fn $reset(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
            Path(id): Path<String>,
        ) -> ApiResult<Json<&'static str>> {
            reset_index_password(state, owner, $kind, id).await
        }

        async fn $transfer(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
            Path(id): Path<String>,
            JsonBody(body): JsonBody,
        ) -> ApiResult<Json<&'static str>> {
            transfer_index(state, owner, $kind, id, body).await
        }
    };
}

per_kind!(
    IndexKind::Vector,
    list_vector_indexes,
    get_vector_index,
    delete_vector_index,
    rename_vector_index,
    reset_vector_index_password,
    transfer_vector_index
);
per_kind!(
    IndexKind::Search,
    list_search_indexes,
    get_search_index,
    delete_search_index,
    rename_search_index,
    reset_search_index_password,
    transfer_search_index
);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_vector_index_request_with_only_the_required_fields_gets_defaults() {
        let body = json!({"name": "docs", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3});
        let parsed = parse_new_vector_index(&body).unwrap();
        assert_eq!(
            (parsed.plan, parsed.index_type, parsed.dimension_count),
            (PlanType::Free, IndexType::Dense, Some(3))
        );
    }

    #[test]
    fn a_sparse_index_may_leave_out_the_similarity_function() {
        let body = json!({"name": "words", "region": "eu-west-1", "index_type": "SPARSE", "sparse_embedding_model": "BM25"});
        assert_eq!(
            parse_new_vector_index(&body).unwrap().similarity_function,
            SimilarityFunction::DotProduct
        );
        let dense = json!({"name": "words", "region": "eu-west-1", "dimension_count": 3});
        assert_eq!(
            parse_new_vector_index(&dense).unwrap_err().message(),
            "similarity_function: is required"
        );
    }

    #[test]
    fn search_indexes_need_name_region_and_type() {
        let body = json!({"name": "s", "region": "us-east-1", "type": "payg"});
        assert!(
            parse_new_search_index(&body)
                .unwrap_err()
                .message()
                .starts_with("region:")
        );
        let body = json!({"name": "s", "region": "us-central1"});
        assert_eq!(
            parse_new_search_index(&body).unwrap_err().message(),
            "type: is required"
        );
    }
}
