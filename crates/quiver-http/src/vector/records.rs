//! Writing and reading records: upsert, upsert-data, fetch, range, delete, update, reset, random, info.

use std::collections::HashMap;

use axum::extract::{Path, State};
use quiver_vector::filter::Filter;
use quiver_vector::service::{MetadataUpdate, Selection, Update};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::state::AppState;
use crate::vector::caller::VectorCaller;
use crate::vector::documents::{self, DocumentOut};
use crate::vector::reply::{Handled, namespace_of, object_of, success};
use crate::vector::wire::{
    DenseInfo, Include, InfoOut, SparseInfo, VectorOut, count_of, data_record_of, ids_of, metadata_of,
    namespaces_out, one_or_many, record_of, required_id, text_of, vectors_of,
};

/// A record in the answer of fetch, range or random: a vector, or a search index's document.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum RecordOut {
    Vector(VectorOut),
    Document(DocumentOut),
}

impl VectorCaller {
    /// A record with the parts asked for, in the shape of the caller's index.
    fn render(&self, record: quiver_vector::record::Record, include: Include) -> RecordOut {
        if self.search {
            RecordOut::Document(DocumentOut::record(record, include, None))
        } else {
            RecordOut::Vector(VectorOut::record(record, include, None))
        }
    }
}

/// Most vectors a fetch by prefix returns.
pub(crate) const PREFIX_FETCH_LIMIT: usize = 1000;

pub(crate) async fn upsert(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write()?;
    let records = one_or_many(&body, record_of, "a vector object or an array of them")?;
    state
        .vectors
        .upsert(&caller.index, &namespace_of(&params), records)
        .await?;
    Ok(success("Success"))
}

pub(crate) async fn upsert_data(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write()?;
    if caller.search {
        return documents::upsert_documents(&state, &caller, &namespace_of(&params), &body).await;
    }
    let records = one_or_many(&body, data_record_of, "a {id, data} object or an array of them")?;
    state
        .vectors
        .upsert_data(&caller.index, &namespace_of(&params), records)
        .await?;
    Ok(success("Success"))
}

pub(crate) async fn fetch(
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
    let include = Include::from(object)?;
    let ids = object.get("ids").filter(|v| !v.is_null());
    let prefix = text_of(object, "prefix")?;
    match (ids, prefix) {
        (Some(_), Some(_)) => Err(ApiError::bad_request(
            "Only one of ids or prefix must be provided.",
        )),
        (Some(ids), None) => {
            let ids = ids_of(ids, "ids")?;
            let found = state.vectors.fetch(&caller.index, &namespace, &ids).await?;
            Ok(success(
                found
                    .into_iter()
                    .map(|r| r.map(|r| caller.render(r, include)))
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
                    .map(|r| caller.render(r, include))
                    .collect::<Vec<_>>(),
            ))
        }
        (None, None) => Err(ApiError::bad_request("fetch needs `ids` or `prefix`")),
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RangePage {
    next_cursor: String,
    vectors: Vec<RecordOut>,
}

pub(crate) async fn range(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    let object = object_of(&body)?;
    let include = Include::from(object)?;
    let cursor = match object.get("cursor") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        Some(_) => return Err(ApiError::bad_request("cursor: must be a string")),
    };
    let cursor = if cursor == "0" { String::new() } else { cursor };
    let limit = count_of(object, "limit")?.ok_or_else(|| ApiError::bad_request("limit: is required"))?;
    let prefix = text_of(object, "prefix")?;
    let (records, next_cursor) = state
        .vectors
        .range(&caller.index, &namespace_of(&params), &cursor, limit, prefix)
        .await?;
    Ok(success(RangePage {
        next_cursor,
        vectors: records.into_iter().map(|r| caller.render(r, include)).collect(),
    }))
}

#[derive(Debug, Serialize)]
pub(crate) struct Deleted {
    deleted: usize,
}

pub(crate) async fn delete(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write()?;
    let selection = match &body {
        Value::Array(_) | Value::String(_) | Value::Number(_) => Selection::Ids(ids_of(&body, "ids")?),
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
                ["ids"] => Selection::Ids(ids_of(&object["ids"], "ids")?),
                ["prefix"] => Selection::Prefix(text_of(object, "prefix")?.unwrap_or_default().to_owned()),
                ["filter"] => {
                    let text = text_of(object, "filter")?.unwrap_or_default();
                    match Filter::parse(text) {
                        Ok(Some(filter)) => Selection::Filter(filter),
                        Ok(None) => return Err(ApiError::bad_request("filter: is empty")),
                        Err(error) => return Err(ApiError::bad_request(error.to_string())),
                    }
                }
                _ => {
                    return Err(ApiError::bad_request(
                        "Only and only one of the ids, prefix, or filter must be provided.",
                    ));
                }
            }
        }
        Value::Null | Value::Bool(_) => {
            return Err(ApiError::bad_request(
                "Only and only one of the ids, prefix, or filter must be provided.",
            ));
        }
    };
    let deleted = state
        .vectors
        .delete(&caller.index, &namespace_of(&params), selection)
        .await?;
    Ok(success(Deleted { deleted }))
}

#[derive(Debug, Serialize)]
pub(crate) struct Updated {
    updated: usize,
}

pub(crate) async fn update(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write()?;
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
        let (vector, sparse) = vectors_of(object)?;
        Ok(Update {
            id: required_id(object)?,
            vector,
            sparse,
            data: text_of(object, "data")?.map(str::to_owned),
            metadata: metadata_of(object)?,
            mode,
        })
    };
    let update = parse()?;
    let updated = state
        .vectors
        .update(&caller.index, &namespace_of(&params), update)
        .await?;
    Ok(success(Updated {
        updated: usize::from(updated),
    }))
}

pub(crate) async fn reset(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    uri: axum::http::Uri,
) -> Handled {
    caller.require_write()?;
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

pub(crate) async fn info(State(state): State<AppState>, caller: VectorCaller) -> Handled {
    let info = state.vectors.info(&caller.index).await?;
    let spec = caller.index.spec;
    let model = caller.index.models.dense.map_or("", |m| m.as_str());
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
            embedding_model: caller.index.models.sparse.map_or("", |m| m.as_str()),
        }),
        namespaces: namespaces_out(&info),
    };
    Ok(success(out))
}

pub(crate) async fn random(
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
    Ok(success(found.map(|r| caller.render(r, include))))
}
