//! The vector REST API: the index is found from its Bearer token (also under `/vector/{endpoint}/...`).
//! Every endpoint takes any of GET, POST, PUT and DELETE, and reads a JSON body whatever the method;
//! where no input is needed, an empty body, `[]`, `{}` or `null` all mean "none".

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Json, Router};
use quiver_admin::catalog::IndexSettings;
use quiver_embed::{EmbedError, Embedders};
use quiver_vector::VectorError;
use quiver_vector::filter::Filter;
use quiver_vector::record::IndexSpec;
use quiver_vector::record::Record;
use quiver_vector::service::{IndexRef, MetadataUpdate, Query, Selection, Update};
use quiver_vector::text::{QueryMode, TextModels, embed};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::auth::bearer_token;
use crate::error::{ApiError, Envelope};
use crate::extract::JsonBody;
use crate::router::AppState;
use crate::vector_namespaces::{
    delete_namespace, delete_unnamed_namespace, list_namespaces, rename_namespace,
};
use crate::vector_resumable::{resumable_end, resumable_next, resumable_query};
use crate::vector_wire::{
    DenseInfo, Include, InfoOut, SparseInfo, VectorOut, count_of, dense_of, fusion_of, id_of, ids_of,
    namespaces_out, record_of, sparse_of, text_of, weighting_of,
};

/// Most vectors a fetch by prefix returns.
const PREFIX_FETCH_LIMIT: usize = 1000;

/// The vector routes, at the root and under `/vector/{endpoint}`.
pub fn routes(body_limit: usize) -> Router<AppState> {
    let endpoints = || {
        let mut router = Router::new();
        for (path, handler) in [
            ("upsert", "upsert"),
            ("query", "query"),
            ("fetch", "fetch"),
            ("range", "range"),
            ("delete", "delete"),
            ("update", "update"),
            ("reset", "reset"),
            ("random", "random"),
            ("resumable-query", "resumable-query"),
            ("upsert-data", "upsert-data"),
            ("query-data", "query"),
            ("resumable-query-data", "resumable-query"),
        ] {
            let handler = match handler {
                "upsert" => any(upsert),
                "query" => any(query),
                "fetch" => any(fetch),
                "range" => any(range),
                "delete" => any(delete),
                "update" => any(update),
                "reset" => any(reset),
                "random" => any(random),
                "resumable-query" => any(resumable_query),
                _ => any(upsert_data),
            };
            router = router
                .route(&format!("/{path}"), handler.clone())
                .route(&format!("/{path}/{{namespace}}"), handler);
        }
        router
            .route("/info", any(info))
            .route("/list-namespaces", any(list_namespaces))
            .route("/delete-namespace/{namespace}", any(delete_namespace))
            .route("/delete-namespace", any(delete_unnamed_namespace))
            .route("/delete-namespace/", any(delete_unnamed_namespace))
            .route("/rename-namespace", any(rename_namespace))
            .route("/resumable-query-next", any(resumable_next))
            .route("/resumable-query-end", any(resumable_end))
    };
    Router::new()
        .merge(endpoints())
        .nest("/vector/{endpoint}", endpoints())
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(middleware::from_fn(add_status_to_errors))
}

/// Vector errors carry their status in the body too, whichever layer produced them.
async fn add_status_to_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return (
            parts.status,
            Json(serde_json::json!({"error": "error", "status": status.as_u16()})),
        )
            .into_response();
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(mut fields)) if !fields.contains_key("status") => {
            fields.insert("status".into(), Value::from(status.as_u16()));
            let mut rebuilt = (parts.status, Json(Value::Object(fields))).into_response();
            for (name, value) in parts.headers.iter().filter(|(n, _)| *n != header::CONTENT_LENGTH) {
                rebuilt.headers_mut().insert(name.clone(), value.clone());
            }
            rebuilt
        }
        Ok(_) | Err(_) => Response::from_parts(parts, Body::from(bytes)),
    }
}

pub(crate) fn vector_error(error: ApiError) -> ApiError {
    error.in_envelope(Envelope::WithStatus)
}

impl From<VectorError> for ApiError {
    fn from(error: VectorError) -> ApiError {
        let api = match error {
            VectorError::DimensionMismatch { .. }
            | VectorError::WrongParts(_)
            | VectorError::NoEmbeddingModel => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, error.to_string())
            }
            VectorError::InvalidRequest(_) | VectorError::Filter(_) | VectorError::LimitExceeded(_) => {
                ApiError::bad_request(error.to_string())
            }
            VectorError::NamespaceNotFound { .. } | VectorError::ResumableQueryNotFound(_) => {
                ApiError::not_found(error.to_string())
            }
            VectorError::Unsupported(_) => ApiError::new(StatusCode::NOT_IMPLEMENTED, error.to_string()),
            VectorError::Embedding(ref inner) => match inner {
                EmbedError::NotInstalled { .. } | EmbedError::Unsupported(_) => {
                    ApiError::bad_request(error.to_string())
                }
                EmbedError::Stopped => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, error.to_string()),
                EmbedError::BadModel(_)
                | EmbedError::Checksum { .. }
                | EmbedError::Io(_)
                | EmbedError::Tokenizer(_) => ApiError::internal(&error),
            },
            VectorError::Store(inner) => inner.into(),
            VectorError::Internal(cause) => ApiError::internal(&cause),
        };
        vector_error(api)
    }
}

/// The index a request addresses, and whether its token only reads.
#[derive(Debug, Clone)]
pub struct VectorCaller {
    pub(crate) index: IndexRef,
    settings: quiver_admin::catalog::VectorSettings,
    read_only: bool,
}

impl VectorCaller {
    fn models(&self) -> TextModels {
        TextModels {
            dense: self.settings.embedding_model,
            sparse: self.settings.sparse_embedding_model,
        }
    }

    pub(crate) fn require_write(&self, path: &str) -> Result<(), ApiError> {
        if self.read_only {
            let endpoint = path
                .rsplit_once("/vector/")
                .map_or(path, |(_, rest)| rest.split_once('/').map_or(rest, |(_, r)| r));
            let name = endpoint.trim_start_matches('/').split('/').next().unwrap_or("");
            Err(vector_error(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("Forbidden: /{name} is not allowed"),
            )))
        } else {
            Ok(())
        }
    }
}

impl FromRequestParts<AppState> for VectorCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let unauthorized = || {
            vector_error(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: Invalid auth token",
            ))
        };
        let token = bearer_token(parts, &[]).ok_or_else(unauthorized)?;
        let (record, read_only) = match state.admin.index_by_token(&token).await {
            Ok(found) => found,
            Err(quiver_admin::AdminError::Unauthorized) => return Err(unauthorized()),
            Err(other) => return Err(vector_error(other.into())),
        };
        // Under `nest`, `parts.uri` has lost the `/vector/{endpoint}` prefix; the original keeps it.
        let original = parts
            .extensions
            .get::<axum::extract::OriginalUri>()
            .map_or_else(|| parts.uri.clone(), |o| o.0.clone());
        if let Some(rest) = original.path().strip_prefix("/vector/") {
            let endpoint = rest.split('/').next().unwrap_or("");
            if endpoint != record.endpoint {
                return Err(vector_error(ApiError::not_found(format!(
                    "index `{endpoint}` does not match this token"
                ))));
            }
        }
        let limits = record.limits();
        let IndexSettings::VectorV1(settings) = record.settings else {
            return Err(vector_error(ApiError::new(
                StatusCode::NOT_IMPLEMENTED,
                "this token belongs to a search index, whose data API is not available yet",
            )));
        };
        let spec = IndexSpec {
            dimension: settings.dimension_count as usize,
            similarity: settings.similarity_function,
            index_type: settings.index_type,
        };
        Ok(VectorCaller {
            index: IndexRef {
                id: record.id,
                name: record.name.to_string(),
                spec,
                limits,
            },
            settings,
            read_only,
        })
    }
}

/// `{"result": ...}`, serialised without passing floats through `serde_json::Value`.
#[derive(Debug, Serialize)]
struct Success<T> {
    result: T,
}

pub(crate) fn success<T: Serialize>(result: T) -> Response {
    Json(Success { result }).into_response()
}

pub(crate) type Handled = Result<Response, ApiError>;

pub(crate) fn namespace_of(params: &Option<Path<HashMap<String, String>>>) -> String {
    params
        .as_ref()
        .and_then(|Path(map)| map.get("namespace").cloned())
        .unwrap_or_default()
}

/// The body as an object; `None` for "no input" (`null`, `[]`, `{}` count as none only where allowed).
pub(crate) fn object_of(body: &Value) -> Result<&Map<String, Value>, ApiError> {
    match body {
        Value::Object(object) => Ok(object),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_) => Err(
            vector_error(ApiError::bad_request("request body must be a JSON object")),
        ),
    }
}

async fn upsert(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    uri: axum::http::Uri,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write(uri.path())?;
    let records = match &body {
        Value::Array(items) => items.iter().map(record_of).collect::<Result<Vec<_>, _>>(),
        Value::Object(_) => record_of(&body).map(|r| vec![r]),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => Err(ApiError::bad_request(
            "request body must be a vector object or an array of them",
        )),
    }
    .map_err(vector_error)?;
    state
        .vectors
        .upsert(&caller.index, &namespace_of(&params), records)
        .await?;
    Ok(success("Success"))
}

fn query_mode_of(object: &Map<String, Value>) -> Result<QueryMode, ApiError> {
    match text_of(object, "queryMode")? {
        None | Some("") => Ok(QueryMode::Hybrid),
        Some(text) if text.eq_ignore_ascii_case("HYBRID") => Ok(QueryMode::Hybrid),
        Some(text) if text.eq_ignore_ascii_case("DENSE") => Ok(QueryMode::Dense),
        Some(text) if text.eq_ignore_ascii_case("SPARSE") => Ok(QueryMode::Sparse),
        Some(other) => Err(ApiError::bad_request(format!(
            "queryMode: `{other}` is not allowed; expected HYBRID, DENSE or SPARSE"
        ))),
    }
}

pub(crate) async fn parse_query(
    embedders: &Arc<Embedders>,
    caller: &VectorCaller,
    object: &Map<String, Value>,
) -> Result<(Query, Include), ApiError> {
    let filter = match text_of(object, "filter")? {
        Some(text) => Filter::parse(text).map_err(|e| ApiError::bad_request(e.to_string()))?,
        None => None,
    };
    let (vector, sparse) = match text_of(object, "data")? {
        Some(text) => embed(
            embedders,
            &caller.index.spec,
            caller.models(),
            vec![text.to_owned()],
            Some(query_mode_of(object)?),
        )
        .await?
        .pop()
        .unwrap_or_default(),
        None => (
            object
                .get("vector")
                .filter(|v| !v.is_null())
                .map(|v| dense_of(v, "vector"))
                .transpose()?,
            object
                .get("sparseVector")
                .filter(|v| !v.is_null())
                .map(|v| sparse_of(v, "sparseVector"))
                .transpose()?,
        ),
    };
    let query = Query {
        vector,
        sparse,
        top_k: count_of(object, "topK")?.unwrap_or(10),
        filter,
        weighting: weighting_of(object)?,
        fusion: fusion_of(object)?,
    };
    Ok((query, Include::from(object)?))
}

async fn upsert_data(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    uri: axum::http::Uri,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write(uri.path())?;
    let item = |value: &Value| -> Result<Record, ApiError> {
        let Value::Object(object) = value else {
            return Err(ApiError::bad_request("each item must be a JSON object"));
        };
        let id = id_of(
            object
                .get("id")
                .ok_or_else(|| ApiError::bad_request("id: is required"))?,
            "id",
        )?;
        let data = text_of(object, "data")?
            .ok_or_else(|| ApiError::bad_request("data: is required"))?
            .to_owned();
        let metadata = match object.get("metadata") {
            None | Some(Value::Null) => None,
            Some(value @ Value::Object(_)) => Some(value.clone()),
            Some(_) => return Err(ApiError::bad_request("metadata: must be a JSON object")),
        };
        Ok(Record {
            id,
            vector: None,
            sparse: None,
            metadata,
            data: Some(data),
        })
    };
    let mut records = match &body {
        Value::Array(items) => items.iter().map(item).collect::<Result<Vec<_>, _>>(),
        Value::Object(_) => item(&body).map(|r| vec![r]),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => Err(ApiError::bad_request(
            "request body must be a {id, data} object or an array of them",
        )),
    }
    .map_err(vector_error)?;
    let texts = records
        .iter()
        .map(|r| r.data.clone().unwrap_or_default())
        .collect();
    let embedded = embed(&state.embedders, &caller.index.spec, caller.models(), texts, None).await?;
    for (record, (vector, sparse)) in records.iter_mut().zip(embedded) {
        record.vector = vector;
        record.sparse = sparse;
    }
    state
        .vectors
        .upsert(&caller.index, &namespace_of(&params), records)
        .await?;
    Ok(success("Success"))
}

async fn query(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    let namespace = namespace_of(&params);
    let embedders = &state.embedders;
    let run = async |object: &Map<String, Value>| {
        parse_query(embedders, &caller, object)
            .await
            .map_err(vector_error)
    };
    match &body {
        Value::Array(items) if items.len() != 1 => {
            let mut all = Vec::with_capacity(items.len());
            for item in items {
                let (query, include) = run(object_of(item)?).await?;
                let hits = state.vectors.query(&caller.index, &namespace, query).await?;
                all.push(
                    hits.into_iter()
                        .map(|h| VectorOut::hit(h, include))
                        .collect::<Vec<_>>(),
                );
            }
            Ok(success(all))
        }
        Value::Array(items) => {
            let (query, include) = run(object_of(&items[0])?).await?;
            let hits = state.vectors.query(&caller.index, &namespace, query).await?;
            Ok(success(
                hits.into_iter()
                    .map(|h| VectorOut::hit(h, include))
                    .collect::<Vec<_>>(),
            ))
        }
        other @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Object(_)) => {
            let (query, include) = run(object_of(other)?).await?;
            let hits = state.vectors.query(&caller.index, &namespace, query).await?;
            Ok(success(
                hits.into_iter()
                    .map(|h| VectorOut::hit(h, include))
                    .collect::<Vec<_>>(),
            ))
        }
    }
}

async fn fetch(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    let namespace = namespace_of(&params);
    let empty = Map::new();
    let object = match &body {
        Value::Null => &empty,
        other @ (Value::Bool(_)
        | Value::Number(_)
        | Value::String(_)
        | Value::Array(_)
        | Value::Object(_)) => object_of(other)?,
    };
    let include = Include::from(object).map_err(vector_error)?;
    let ids = object.get("ids").filter(|v| !v.is_null());
    let prefix = text_of(object, "prefix").map_err(vector_error)?;
    match (ids, prefix) {
        (Some(_), Some(_)) => Err(vector_error(ApiError::bad_request(
            "Only one of ids or prefix must be provided.",
        ))),
        (Some(ids), None) => {
            let ids = ids_of(ids, "ids").map_err(vector_error)?;
            let found = state.vectors.fetch(&caller.index, &namespace, &ids).await?;
            Ok(success(
                found
                    .into_iter()
                    .map(|r| r.map(|r| VectorOut::record(r, include, None)))
                    .collect::<Vec<_>>(),
            ))
        }
        (None, Some(prefix)) => {
            let found = state
                .vectors
                .fetch_prefix(&caller.index, &namespace, prefix, PREFIX_FETCH_LIMIT)
                .await?;
            Ok(success(
                found
                    .into_iter()
                    .map(|r| VectorOut::record(r, include, None))
                    .collect::<Vec<_>>(),
            ))
        }
        (None, None) => Err(vector_error(ApiError::bad_request(
            "fetch needs `ids` or `prefix`",
        ))),
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RangePage {
    next_cursor: String,
    vectors: Vec<VectorOut>,
}

async fn range(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    let object = object_of(&body)?;
    let include = Include::from(object).map_err(vector_error)?;
    let cursor = match object.get("cursor") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        Some(_) => return Err(vector_error(ApiError::bad_request("cursor: must be a string"))),
    };
    let cursor = if cursor == "0" { String::new() } else { cursor };
    let limit = count_of(object, "limit")
        .map_err(vector_error)?
        .ok_or_else(|| vector_error(ApiError::bad_request("limit: is required")))?;
    let max = caller.index.limits.max_reads_per_request;
    if max >= 0 && limit as i64 > max {
        return Err(vector_error(ApiError::bad_request(format!(
            "limit may be at most {max} on this index's plan"
        ))));
    }
    let prefix = text_of(object, "prefix").map_err(vector_error)?;
    let (records, next_cursor) = state
        .vectors
        .range(&caller.index, &namespace_of(&params), &cursor, limit, prefix)
        .await?;
    Ok(success(RangePage {
        next_cursor,
        vectors: records
            .into_iter()
            .map(|r| VectorOut::record(r, include, None))
            .collect(),
    }))
}

#[derive(Debug, Serialize)]
struct Deleted {
    deleted: usize,
}

async fn delete(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    uri: axum::http::Uri,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write(uri.path())?;
    let selection = match &body {
        Value::Array(_) | Value::String(_) | Value::Number(_) => {
            Selection::Ids(ids_of(&body, "ids").map_err(vector_error)?)
        }
        Value::Object(object) => {
            let given: Vec<&str> = ["ids", "prefix", "filter"]
                .into_iter()
                .filter(|k| {
                    object
                        .get(*k)
                        .is_some_and(|v| !v.is_null() && v.as_str() != Some(""))
                })
                .collect();
            match given.as_slice() {
                ["ids"] => Selection::Ids(ids_of(&object["ids"], "ids").map_err(vector_error)?),
                ["prefix"] => Selection::Prefix(
                    text_of(object, "prefix")
                        .map_err(vector_error)?
                        .unwrap_or_default()
                        .to_owned(),
                ),
                ["filter"] => {
                    let text = text_of(object, "filter")
                        .map_err(vector_error)?
                        .unwrap_or_default();
                    match Filter::parse(text) {
                        Ok(Some(filter)) => Selection::Filter(filter),
                        Ok(None) => return Err(vector_error(ApiError::bad_request("filter: is empty"))),
                        Err(error) => return Err(vector_error(ApiError::bad_request(error.to_string()))),
                    }
                }
                _ => {
                    return Err(vector_error(ApiError::bad_request(
                        "Only and only one of the ids, prefix, or filter must be provided.",
                    )));
                }
            }
        }
        Value::Null | Value::Bool(_) => {
            return Err(vector_error(ApiError::bad_request(
                "Only and only one of the ids, prefix, or filter must be provided.",
            )));
        }
    };
    let deleted = state
        .vectors
        .delete(&caller.index, &namespace_of(&params), selection)
        .await?;
    Ok(success(Deleted { deleted }))
}

#[derive(Debug, Serialize)]
struct Updated {
    updated: usize,
}

async fn update(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    uri: axum::http::Uri,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write(uri.path())?;
    let object = object_of(&body)?;
    let parse = || -> Result<Update, ApiError> {
        let mode = match text_of(object, "metadataUpdateMode")? {
            None | Some("") => MetadataUpdate::Overwrite,
            Some(text) if text.eq_ignore_ascii_case("OVERWRITE") => MetadataUpdate::Overwrite,
            Some(text) if text.eq_ignore_ascii_case("PATCH") => MetadataUpdate::Patch,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "metadataUpdateMode: `{other}` is not allowed; expected OVERWRITE or PATCH"
                )));
            }
        };
        Ok(Update {
            id: id_of(
                object
                    .get("id")
                    .ok_or_else(|| ApiError::bad_request("id: is required"))?,
                "id",
            )?,
            vector: object
                .get("vector")
                .filter(|v| !v.is_null())
                .map(|v| dense_of(v, "vector"))
                .transpose()?,
            sparse: object
                .get("sparseVector")
                .filter(|v| !v.is_null())
                .map(|v| sparse_of(v, "sparseVector"))
                .transpose()?,
            data: text_of(object, "data")?.map(str::to_owned),
            metadata: match object.get("metadata") {
                None | Some(Value::Null) => None,
                Some(value @ Value::Object(_)) => Some(value.clone()),
                Some(_) => return Err(ApiError::bad_request("metadata: must be a JSON object")),
            },
            mode,
        })
    };
    let mut update = parse().map_err(vector_error)?;
    // New data on an index with models is embedded again, as `upsert-data` would; a vector given with it
    // wins for its part.
    let models = caller.models();
    if let Some(data) = &update.data
        && (models.dense.is_some() || models.sparse.is_some())
    {
        let embedded = embed(
            &state.embedders,
            &caller.index.spec,
            models,
            vec![data.clone()],
            None,
        )
        .await?;
        if let Some((vector, sparse)) = embedded.into_iter().next() {
            update.vector = update.vector.take().or(vector);
            update.sparse = update.sparse.take().or(sparse);
        }
    }
    let updated = state
        .vectors
        .update(&caller.index, &namespace_of(&params), update)
        .await?;
    Ok(success(Updated {
        updated: usize::from(updated),
    }))
}

async fn reset(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    uri: axum::http::Uri,
) -> Handled {
    caller.require_write(uri.path())?;
    let all = uri
        .query()
        .is_some_and(|q| q.split('&').any(|pair| pair == "all" || pair.starts_with("all=")));
    if all {
        state.vectors.reset(&caller.index, None).await?;
    } else {
        state
            .vectors
            .reset(&caller.index, Some(&namespace_of(&params)))
            .await?;
    }
    Ok(success("Success"))
}

async fn info(State(state): State<AppState>, caller: VectorCaller) -> Handled {
    let info = state.vectors.info(&caller.index).await?;
    let settings = &caller.settings;
    let spec = caller.index.spec;
    let model = settings.embedding_model.map_or("", |m| m.as_str());
    let out = InfoOut {
        vector_count: info.vector_count,
        pending_vector_count: info.pending_vector_count,
        index_size: info.index_size,
        dimension: spec.dimension,
        similarity_function: if spec.has_dense() {
            spec.similarity.as_str()
        } else {
            "DOT_PRODUCT"
        },
        index_type: spec.index_type.as_str(),
        dense_index: spec.has_dense().then(|| DenseInfo {
            dimension: spec.dimension,
            similarity_function: spec.similarity.as_str(),
            embedding_model: model,
        }),
        sparse_index: spec.has_sparse().then(|| SparseInfo {
            embedding_model: settings.sparse_embedding_model.map_or("", |m| m.as_str()),
        }),
        namespaces: namespaces_out(&info),
    };
    Ok(success(out))
}

async fn random(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
) -> Handled {
    let include = Include {
        vectors: true,
        metadata: true,
        data: true,
    };
    let found = state
        .vectors
        .random(&caller.index, &namespace_of(&params))
        .await?;
    Ok(success(found.map(|r| VectorOut::record(r, include, None))))
}
