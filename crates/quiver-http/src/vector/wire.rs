//! The vector API's wire shapes (wire-format §1): request parsing with field-naming errors, and
//! responses whose floats print in the shortest form that round-trips as f32.

use std::collections::BTreeMap;

use quiver_vector::filter::Filter;
use quiver_vector::record::{Record, SparseVector};
use quiver_vector::service::{Fusion, Hit, IndexInfo, Weighting};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// Which optional parts a response carries.
#[derive(Debug, Clone, Copy, Default)]
pub struct Include {
    /// `vector` and `sparseVector`.
    pub vectors: bool,
    /// `metadata`.
    pub metadata: bool,
    /// `data`.
    pub data: bool,
}

impl Include {
    /// Reads `includeVectors`, `includeMetadata`, `includeData` (default false).
    pub fn from(object: &Map<String, Value>) -> Result<Include, ApiError> {
        Ok(Include {
            vectors: flag(object, "includeVectors")?,
            metadata: flag(object, "includeMetadata")?,
            data: flag(object, "includeData")?,
        })
    }
}

/// A sparse vector as the wire writes it.
#[derive(Debug, Serialize)]
pub struct SparseOut {
    indices: Vec<u32>,
    values: Vec<f32>,
}

/// A vector (fetch, range, random) or a score (query) on the wire.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VectorOut {
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vector: Option<Vec<f32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sparse_vector: Option<SparseOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<String>,
}

impl VectorOut {
    /// A record with the parts asked for.
    pub fn record(record: Record, include: Include, score: Option<f32>) -> VectorOut {
        VectorOut {
            id: record.id,
            score,
            vector: if include.vectors { record.vector } else { None },
            sparse_vector: if include.vectors {
                record.sparse.map(|s| SparseOut {
                    indices: s.indices,
                    values: s.values,
                })
            } else {
                None
            },
            metadata: if include.metadata { record.metadata } else { None },
            data: if include.data { record.data } else { None },
        }
    }

    /// A query hit.
    pub fn hit(hit: Hit, include: Include) -> VectorOut {
        VectorOut::record(hit.record, include, Some(hit.score))
    }
}

/// The info object (wire-format §1.8).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InfoOut {
    pub(crate) vector_count: usize,
    pub(crate) pending_vector_count: usize,
    pub(crate) index_size: usize,
    pub(crate) dimension: usize,
    pub(crate) similarity_function: &'static str,
    pub(crate) index_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) dense_index: Option<DenseInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sparse_index: Option<SparseInfo>,
    pub(crate) namespaces: BTreeMap<String, NamespaceOut>,
}

/// `denseIndex` of info.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DenseInfo {
    pub(crate) dimension: usize,
    pub(crate) similarity_function: &'static str,
    pub(crate) embedding_model: &'static str,
}

/// `sparseIndex` of info.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SparseInfo {
    pub(crate) embedding_model: &'static str,
}

/// Per-namespace counts of info.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceOut {
    vector_count: usize,
    pending_vector_count: usize,
}

/// The namespace counts of an [`IndexInfo`].
pub fn namespaces_out(info: &IndexInfo) -> BTreeMap<String, NamespaceOut> {
    info.namespaces
        .iter()
        .map(|(name, counts)| {
            (
                name.clone(),
                NamespaceOut {
                    vector_count: counts.vector_count,
                    pending_vector_count: counts.pending_vector_count,
                },
            )
        })
        .collect()
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request(message)
}

/// A boolean field (absent or null: false).
pub fn flag(object: &Map<String, Value>, name: &str) -> Result<bool, ApiError> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(_) => Err(bad(format!("{name}: must be true or false"))),
    }
}

/// An id: a string, or a number given as its text.
pub fn id_of(value: &Value, field: &str) -> Result<String, ApiError> {
    match value {
        Value::String(text) if !text.is_empty() => Ok(text.clone()),
        Value::Number(number) => Ok(number.to_string()),
        Value::String(_) | Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => Err(bad(
            format!("{field}: an id must be a non-empty string or a number"),
        )),
    }
}

/// A list of ids.
pub fn ids_of(value: &Value, field: &str) -> Result<Vec<String>, ApiError> {
    match value {
        Value::Array(items) => items.iter().map(|item| id_of(item, field)).collect(),
        other @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Object(_)) => {
            Ok(vec![id_of(other, field)?])
        }
    }
}

/// The largest squared length a vector may have: a quarter of f32's range, so that no score between two
/// vectors (a dot product, a squared distance) can overflow to infinity and tie or misorder results.
/// That is a length of about 9.2e18.
const MAX_SQUARED_LENGTH: f64 = f32::MAX as f64 / 4.0;

/// A dense vector (or a sparse vector's values): numbers that fit a 32-bit float, whose squared length
/// fits a quarter of f32's range (a length of about 9.2e18).
pub fn dense_of(value: &Value, field: &str) -> Result<Vec<f32>, ApiError> {
    let Value::Array(items) = value else {
        return Err(bad(format!("{field}: must be an array of numbers")));
    };
    let mut squared_length = 0.0_f64;
    let vector = items
        .iter()
        .enumerate()
        .map(|(at, item)| {
            let x = item
                .as_f64()
                .ok_or_else(|| bad(format!("{field}: must be an array of numbers")))?;
            squared_length += x * x;
            // Rounding to f32 keeps a finite value finite only within f32's range.
            let rounded = x as f32;
            if rounded.is_finite() {
                Ok(rounded)
            } else {
                Err(bad(format!(
                    "{field}[{at}]: {x:e} is outside the range of a 32-bit float (about ±3.4e38)"
                )))
            }
        })
        .collect::<Result<Vec<f32>, ApiError>>()?;
    if squared_length > MAX_SQUARED_LENGTH {
        return Err(bad(format!(
            "{field}: its length, {:.3e}, passes the largest Quiver can score without overflow (about 9.2e18); scale the vectors down",
            squared_length.sqrt()
        )));
    }
    Ok(vector)
}

/// A sparse vector `{indices, values}`.
pub fn sparse_of(value: &Value, field: &str) -> Result<SparseVector, ApiError> {
    let Value::Object(object) = value else {
        return Err(bad(format!("{field}: must be an object with indices and values")));
    };
    let indices = match object.get("indices") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_u64()
                    .and_then(|i| u32::try_from(i).ok())
                    .ok_or_else(|| bad(format!("{field}.indices: must be non-negative whole numbers")))
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(bad(format!("{field}.indices: is required and must be an array"))),
    };
    let values = match object.get("values") {
        Some(value @ Value::Array(_)) => dense_of(value, &format!("{field}.values"))?,
        _ => return Err(bad(format!("{field}.values: is required and must be an array"))),
    };
    Ok(SparseVector { indices, values })
}

/// An optional field that must be a string.
pub fn text_of<'a>(object: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, ApiError> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(bad(format!("{name}: must be a string"))),
    }
}

/// One item, or an array of them; `expected` names what the body must be otherwise.
pub fn one_or_many<T>(
    body: &Value,
    item: impl Fn(&Value) -> Result<T, ApiError>,
    expected: &str,
) -> Result<Vec<T>, ApiError> {
    match body {
        Value::Array(items) => items.iter().map(item).collect(),
        Value::Object(_) => Ok(vec![item(body)?]),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            Err(bad(format!("request body must be {expected}")))
        }
    }
}

/// The required `id` of an object.
pub fn required_id(object: &Map<String, Value>) -> Result<String, ApiError> {
    id_of(object.get("id").ok_or_else(|| bad("id: is required"))?, "id")
}

/// The optional `vector` and `sparseVector` of an object.
pub fn vectors_of(object: &Map<String, Value>) -> Result<(Option<Vec<f32>>, Option<SparseVector>), ApiError> {
    let dense = match object.get("vector") {
        None | Some(Value::Null) => None,
        Some(value) => Some(dense_of(value, "vector")?),
    };
    let sparse = match object.get("sparseVector") {
        None | Some(Value::Null) => None,
        Some(value) => Some(sparse_of(value, "sparseVector")?),
    };
    Ok((dense, sparse))
}

/// The optional `metadata` of an object, which must be an object itself.
pub fn metadata_of(object: &Map<String, Value>) -> Result<Option<Value>, ApiError> {
    match object.get("metadata") {
        None | Some(Value::Null) => Ok(None),
        Some(value @ Value::Object(_)) => Ok(Some(value.clone())),
        Some(_) => Err(bad("metadata: must be a JSON object")),
    }
}

/// A record of an upsert.
pub fn record_of(value: &Value) -> Result<Record, ApiError> {
    let Value::Object(object) = value else {
        return Err(bad("each vector must be a JSON object"));
    };
    let (vector, sparse) = vectors_of(object)?;
    Ok(Record {
        id: required_id(object)?,
        vector,
        sparse,
        metadata: metadata_of(object)?,
        data: text_of(object, "data")?.map(str::to_owned),
    })
}

/// A record of `upsert-data`: an id, the text to embed, and metadata.
pub fn data_record_of(value: &Value) -> Result<Record, ApiError> {
    let Value::Object(object) = value else {
        return Err(bad("each item must be a JSON object"));
    };
    let data = text_of(object, "data")?.ok_or_else(|| bad("data: is required"))?;
    Ok(Record {
        id: required_id(object)?,
        vector: None,
        sparse: None,
        metadata: metadata_of(object)?,
        data: Some(data.to_owned()),
    })
}

/// The optional `filter` of a query or a search: none when absent or empty, a 400 naming where the
/// text is wrong otherwise.
pub fn filter_of(object: &Map<String, Value>) -> Result<Option<Filter>, ApiError> {
    match text_of(object, "filter")? {
        Some(text) => Filter::parse(text).map_err(|e| bad(e.to_string())),
        None => Ok(None),
    }
}

/// `weightingStrategy`.
pub fn weighting_of(object: &Map<String, Value>) -> Result<Weighting, ApiError> {
    match text_of(object, "weightingStrategy")? {
        None | Some("") => Ok(Weighting::None),
        Some(text) if text.eq_ignore_ascii_case("IDF") => Ok(Weighting::Idf),
        Some(other) => Err(bad(format!(
            "weightingStrategy: `{other}` is not allowed; expected IDF"
        ))),
    }
}

/// `fusionAlgorithm`.
pub fn fusion_of(object: &Map<String, Value>) -> Result<Fusion, ApiError> {
    match text_of(object, "fusionAlgorithm")? {
        None | Some("") => Ok(Fusion::Rrf),
        Some(text) if text.eq_ignore_ascii_case("RRF") => Ok(Fusion::Rrf),
        Some(text) if text.eq_ignore_ascii_case("DBSF") => Ok(Fusion::Dbsf),
        Some(other) => Err(bad(format!(
            "fusionAlgorithm: `{other}` is not allowed; expected RRF or DBSF"
        ))),
    }
}

/// A non-negative whole number field.
pub fn count_of(object: &Map<String, Value>, name: &str) -> Result<Option<usize>, ApiError> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| bad(format!("{name}: must be a non-negative whole number"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> Result<Vec<f32>, String> {
        dense_of(&value, "vector").map_err(|error| error.message().to_owned())
    }

    #[test]
    fn a_vector_is_refused_where_f32_cannot_hold_it_or_its_scores() {
        assert_eq!(read(json!([1.5, -2, 0])), Ok(vec![1.5, -2.0, 0.0]));
        // A length of 9e18 still scores; a coordinate that rounds to infinity or a length that would
        // overflow a score is named, never stored.
        assert_eq!(read(json!([9e18, 0.0])), Ok(vec![9e18, 0.0]));
        let beyond = read(json!([0.0, 1e39])).unwrap_err();
        assert!(
            beyond.starts_with("vector[1]: 1e39 is outside the range of a 32-bit float"),
            "{beyond}"
        );
        let long = read(json!([3.4e38, -3.4e38])).unwrap_err();
        assert!(
            long.starts_with("vector: its length, 4.808e38, passes the largest"),
            "{long}"
        );
        assert!(read(json!([1e19, 1e19])).is_err());
        assert_eq!(
            read(json!("x")).unwrap_err(),
            "vector: must be an array of numbers"
        );
    }
}
