//! Index handlers of the management API: create, list, read, delete, rename, reset tokens, set plans, transfer.

use axum::Json;
use axum::extract::{Path, State};
use quiver_admin::Account;
use quiver_admin::catalog::{IndexKind, IndexRecord};
use serde_json::Value;

use crate::auth::ManagementAccount;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, Typed, typed_value};
use crate::management::wire::{
    CreateSearchIndexRequest, CreateVectorIndexRequest, IndexResponse, RenameRequest, SetPlanRequest,
    TransferRequest, index_response,
};
use crate::state::AppState;

/// The wire record of `record`, with its last hour of traffic.
async fn full_response(state: &AppState, owner: &Account, record: IndexRecord) -> ApiResult<IndexResponse> {
    let points = super::stats::throughput(state, record.id).await?;
    Ok(index_response(owner, record).with_throughput(points))
}

/// The JSON string `"OK"`, as upstream write endpoints answer.
fn ok() -> Json<&'static str> {
    Json("OK")
}

pub(super) async fn create_vector_index(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    Typed(body): Typed<CreateVectorIndexRequest>,
) -> ApiResult<Json<IndexResponse>> {
    let request = body.into_new_index()?;
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

pub(super) async fn create_search_index(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    Typed(body): Typed<CreateSearchIndexRequest>,
) -> ApiResult<Json<IndexResponse>> {
    let request = body.into_new_index()?;
    let record = state.admin.create_search_index(&owner, request).await?;
    Ok(Json(full_response(&state, &owner, record).await?))
}

pub(super) async fn set_vector_index_plan(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    Path(id): Path<String>,
    Typed(body): Typed<SetPlanRequest>,
) -> ApiResult<Json<&'static str>> {
    let plan = body.into_plan()?;
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
    state.vectors.drop_index(record.id).await?;
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
    let name = typed_value::<RenameRequest>(body)?.into_name()?;
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
    let target = typed_value::<TransferRequest>(body)?.into_target()?;
    state.admin.transfer_index(&owner, kind, &id, &target).await?;
    Ok(ok())
}

macro_rules! per_kind {
    ($kind:expr, $list:ident, $get:ident, $delete:ident, $rename:ident, $reset:ident, $transfer:ident) => {
        pub(super) async fn $list(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
        ) -> ApiResult<Json<Vec<IndexResponse>>> {
            list_indexes(state, owner, $kind).await
        }

        pub(super) async fn $get(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
            Path(id): Path<String>,
        ) -> ApiResult<Json<IndexResponse>> {
            get_index(state, owner, $kind, id).await
        }

        pub(super) async fn $delete(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
            Path(id): Path<String>,
        ) -> ApiResult<Json<&'static str>> {
            delete_index(state, owner, $kind, id).await
        }

        pub(super) async fn $rename(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
            Path(id): Path<String>,
            JsonBody(body): JsonBody,
        ) -> ApiResult<Json<&'static str>> {
            rename_index(state, owner, $kind, id, body).await
        }

        pub(super) async fn $reset(
            State(state): State<AppState>,
            ManagementAccount(owner): ManagementAccount,
            Path(id): Path<String>,
        ) -> ApiResult<Json<&'static str>> {
            reset_index_password(state, owner, $kind, id).await
        }

        pub(super) async fn $transfer(
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
    use quiver_admin::{NewSearchIndex, NewVectorIndex};
    use quiver_core::index::{IndexType, SimilarityFunction};
    use quiver_core::plan::PlanType;
    use serde_json::json;

    use super::*;

    fn new_vector_index(body: Value) -> ApiResult<NewVectorIndex> {
        typed_value::<CreateVectorIndexRequest>(body)?.into_new_index()
    }

    fn new_search_index(body: Value) -> ApiResult<NewSearchIndex> {
        typed_value::<CreateSearchIndexRequest>(body)?.into_new_index()
    }

    #[test]
    fn field_errors_name_the_field_and_what_is_allowed() {
        let wrong = |body: Value| new_vector_index(body).unwrap_err().message().to_owned();
        let region = wrong(json!({"name": "n", "region": "mars-1", "similarity_function": "COSINE"}));
        assert!(
            region.starts_with("region: `mars-1` is not allowed; expected one of: eu-west-1"),
            "{region}"
        );
        let count = wrong(json!({"name": "n", "region": "eu-west-1", "dimension_count": -3}));
        assert!(count.starts_with("dimension_count:"), "{count}");
        let name = wrong(json!({"name": 7}));
        assert!(name.starts_with("name: invalid type: integer `7`"), "{name}");
        let unknown = wrong(json!({"name": "n", "dimensions": 3}));
        assert!(unknown.contains("unknown field `dimensions`"), "{unknown}");
        assert_eq!(wrong(json!({})), "name: is required");
        let array = wrong(json!([1]));
        assert!(array.contains("invalid type"), "{array}");
    }

    #[test]
    fn empty_strings_and_nulls_read_as_absent() {
        let body = json!({"name": "n", "region": "eu-west-1", "similarity_function": "COSINE",
                          "dimension_count": 3, "embedding_model": "", "sparse_embedding_model": null});
        let parsed = new_vector_index(body).unwrap();
        assert_eq!(
            (parsed.embedding_model, parsed.sparse_embedding_model),
            (None, None)
        );
    }

    #[test]
    fn a_vector_index_request_with_only_the_required_fields_gets_defaults() {
        let body = json!({"name": "docs", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3});
        let parsed = new_vector_index(body).unwrap();
        assert_eq!(
            (parsed.plan, parsed.index_type, parsed.dimension_count),
            (PlanType::Free, IndexType::Dense, Some(3))
        );
    }

    #[test]
    fn a_sparse_index_may_leave_out_the_similarity_function() {
        let body = json!({"name": "words", "region": "eu-west-1", "index_type": "SPARSE", "sparse_embedding_model": "BM25"});
        assert_eq!(
            new_vector_index(body).unwrap().similarity_function,
            SimilarityFunction::DotProduct
        );
        let dense = json!({"name": "words", "region": "eu-west-1", "dimension_count": 3});
        assert_eq!(
            new_vector_index(dense).unwrap_err().message(),
            "similarity_function: is required"
        );
    }

    #[test]
    fn search_indexes_need_name_region_and_type() {
        let body = json!({"name": "s", "region": "us-east-1", "type": "payg"});
        assert!(
            new_search_index(body)
                .unwrap_err()
                .message()
                .starts_with("region:")
        );
        let body = json!({"name": "s", "region": "us-central1"});
        assert_eq!(new_search_index(body).unwrap_err().message(), "type: is required");
    }
}
