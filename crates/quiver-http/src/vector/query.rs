//! `query`, `query-data` and the query reading shared with resumable queries.

use std::collections::HashMap;

use axum::extract::{Path, State};
use quiver_vector::service::{Query, QueryInput};
use quiver_vector::text::QueryMode;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::state::AppState;
use crate::vector::caller::VectorCaller;
use crate::vector::reply::{Handled, namespace_of, object_of, success};
use crate::vector::wire::{
    Include, VectorOut, count_of, filter_of, fusion_of, text_of, vectors_of, weighting_of,
};

pub(crate) fn query_mode_of(object: &Map<String, Value>) -> Result<QueryMode, ApiError> {
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

/// A query as the body states it: text (`data`, with `queryMode`) or vectors, and its options.
pub(crate) fn parse_query(object: &Map<String, Value>) -> Result<(Query, Include), ApiError> {
    let input = match text_of(object, "data")? {
        Some(text) => QueryInput::Text {
            data: text.to_owned(),
            mode: query_mode_of(object)?,
        },
        None => {
            let (dense, sparse) = vectors_of(object)?;
            QueryInput::Vectors { dense, sparse }
        }
    };
    let query = Query {
        input,
        top_k: count_of(object, "topK")?.unwrap_or(10),
        filter: filter_of(object)?,
        weighting: weighting_of(object)?,
        fusion: fusion_of(object)?,
    };
    Ok((query, Include::from(object)?))
}

/// `query` and `query-data`: one query, or a batch (an array) answered with a list per query; a batch
/// of one answers as a single query.
pub(crate) async fn query(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    let namespace = namespace_of(&params);
    let run = async |item: &Value| -> Result<Vec<VectorOut>, ApiError> {
        let (query, include) = parse_query(object_of(item)?)?;
        let hits = state.vectors.query(&caller.index, &namespace, query).await?;
        Ok(hits.into_iter().map(|h| VectorOut::hit(h, include)).collect())
    };
    match &body {
        Value::Array(items) if items.len() != 1 => {
            let mut all = Vec::with_capacity(items.len());
            for item in items {
                all.push(run(item).await?);
            }
            Ok(success(all))
        }
        Value::Array(items) => Ok(success(run(&items[0]).await?)),
        single @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Object(_)) => {
            Ok(success(run(single).await?))
        }
    }
}
