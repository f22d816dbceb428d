//! The index a vector request addresses, found once per request from its Bearer token by
//! [`authenticate`] and handed to handlers and metering as a request extension.

use axum::extract::{FromRequestParts, OriginalUri, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use quiver_admin::AdminError;
use quiver_admin::catalog::{IndexRecord, IndexSettings};
use quiver_core::index::{DenseModel, IndexType, SimilarityFunction, SparseModel};
use quiver_vector::record::IndexSpec;
use quiver_vector::service::IndexRef;
use quiver_vector::text::TextModels;

use crate::auth::bearer_token;
use crate::error::ApiError;
use crate::state::AppState;

/// The index a request addresses, and whether its token only reads.
#[derive(Debug, Clone)]
pub(super) struct VectorCaller {
    /// The engine's view of the index.
    pub(crate) index: IndexRef,
    /// The operation, the path's first segment after the index (`upsert`, `query-data`, ...).
    pub(crate) operation: String,
    /// Whether the index is a search index, whose records are documents (`super::documents`).
    pub(crate) search: bool,
    read_only: bool,
}

impl VectorCaller {
    /// Refuses read-only tokens (403, naming the operation).
    pub(crate) fn require_write(&self) -> Result<(), ApiError> {
        if self.read_only {
            Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("Forbidden: /{} is not allowed", self.operation),
            ))
        } else {
            Ok(())
        }
    }
}

/// The engine's view of an index record. A search index is a hybrid index of all-MiniLM-L6-v2 (384
/// dimensions, cosine) and BM25, whose records are documents (`super::documents`).
pub fn vector_index(record: &IndexRecord) -> IndexRef {
    let (spec, models) = match &record.settings {
        IndexSettings::VectorV1(settings) => (
            IndexSpec {
                dimension: settings.dimension_count as usize,
                similarity: settings.similarity_function,
                index_type: settings.index_type,
            },
            TextModels {
                dense: settings.embedding_model,
                sparse: settings.sparse_embedding_model,
            },
        ),
        IndexSettings::SearchV1(_) => (
            IndexSpec {
                dimension: SEARCH_MODEL.dimensions() as usize,
                similarity: SimilarityFunction::Cosine,
                index_type: IndexType::Hybrid,
            },
            TextModels {
                dense: Some(SEARCH_MODEL),
                sparse: Some(SparseModel::Bm25),
            },
        ),
    };
    IndexRef {
        id: record.id,
        name: record.name.to_string(),
        spec,
        limits: record.limits(),
        models,
    }
}

/// The dense model of every search index.
const SEARCH_MODEL: DenseModel = DenseModel::AllMiniLmL6V2;

/// Operations of the vector API that a search index does not take, with the one to use instead.
const NOT_FOR_SEARCH: [(&str, &str); 8] = [
    ("upsert", "`/upsert-data` with documents"),
    ("query", "`/search`"),
    ("query-data", "`/search`"),
    ("update", "`/upsert-data` with the whole document"),
    ("resumable-query", "`/search`"),
    ("resumable-query-data", "`/search`"),
    ("resumable-query-next", "`/search`"),
    ("resumable-query-end", "`/search`"),
];

/// Refuses an operation the index's kind does not take (400, naming it and what to use instead).
fn check_operation(search: bool, operation: &str) -> Result<(), ApiError> {
    if search {
        if let Some((_, instead)) = NOT_FOR_SEARCH.iter().find(|(op, _)| *op == operation) {
            return Err(ApiError::bad_request(format!(
                "/{operation} is not available on a search index; use {instead}"
            )));
        }
    } else if operation == "search" {
        return Err(ApiError::bad_request(
            "/search is available on search indexes only; a vector index queries with `/query-data`",
        ));
    }
    Ok(())
}

/// The index endpoint a path names (`/vector/{endpoint}/...`), and the operation after it.
fn split_path(path: &str) -> (Option<&str>, &str) {
    let (endpoint, rest) = match path.strip_prefix("/vector/") {
        Some(rest) => {
            let (endpoint, rest) = rest.split_once('/').unwrap_or((rest, ""));
            (Some(endpoint), rest)
        }
        None => (None, path),
    };
    (
        endpoint,
        rest.trim_start_matches('/').split('/').next().unwrap_or(""),
    )
}

/// Finds the index from the request's token: 401 for a missing or unknown token, 404 when the path
/// names another index, 400 for an operation the index's kind does not take.
async fn caller_of(state: &AppState, parts: &Parts) -> Result<VectorCaller, ApiError> {
    let unauthorized = || ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized: Invalid auth token");
    let token = bearer_token(parts, &[]).ok_or_else(unauthorized)?;
    let (record, read_only) = match state.admin.index_by_token(&token).await {
        Ok(found) => found,
        Err(AdminError::Unauthorized) => return Err(unauthorized()),
        Err(other) => return Err(other.into()),
    };
    // Under `nest`, `parts.uri` has lost the `/vector/{endpoint}` prefix; the original keeps it.
    let path = parts
        .extensions
        .get::<OriginalUri>()
        .map_or_else(|| parts.uri.path(), |o| o.0.path());
    let (endpoint, operation) = split_path(path);
    if let Some(endpoint) = endpoint
        && endpoint != record.endpoint
    {
        return Err(ApiError::not_found(format!(
            "index `{endpoint}` does not match this token"
        )));
    }
    let search = matches!(record.settings, IndexSettings::SearchV1(_));
    check_operation(search, operation)?;
    Ok(VectorCaller {
        index: vector_index(&record),
        operation: operation.to_owned(),
        search,
        read_only,
    })
}

/// Authenticates every vector request once, before metering and the handler.
pub(crate) async fn authenticate(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let caller = caller_of(&state, &parts).await?;
    parts.extensions.insert(caller);
    Ok(next.run(Request::from_parts(parts, body)).await)
}

impl<S: Send + Sync> FromRequestParts<S> for VectorCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<VectorCaller>()
            .cloned()
            .ok_or_else(|| ApiError::internal(&"a vector route is missing its authentication layer"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operation_is_the_first_segment_after_the_index() {
        assert_eq!(split_path("/upsert/ns"), (None, "upsert"));
        assert_eq!(split_path("/vector/abc/query-data"), (Some("abc"), "query-data"));
        assert_eq!(split_path("/vector/abc"), (Some("abc"), ""));
        assert_eq!(split_path("/delete-namespace/"), (None, "delete-namespace"));
    }

    #[test]
    fn each_kind_of_index_refuses_the_other_kinds_queries_and_names_what_to_use() {
        let refused = |search, op| check_operation(search, op).unwrap_err().message().to_owned();
        assert_eq!(
            refused(true, "query-data"),
            "/query-data is not available on a search index; use `/search`"
        );
        assert!(refused(true, "upsert").ends_with("use `/upsert-data` with documents"));
        assert!(refused(true, "resumable-query-end").ends_with("use `/search`"));
        assert!(refused(false, "search").starts_with("/search is available on search indexes only"));
        for op in [
            "upsert-data",
            "search",
            "fetch",
            "range",
            "delete",
            "reset",
            "info",
        ] {
            assert!(check_operation(true, op).is_ok(), "{op}");
        }
        assert!(check_operation(false, "query-data").is_ok());
    }
}
