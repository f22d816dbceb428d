//! A search index's documents (the `@upstash/search` client's API): `upsert-data` with
//! `{id, content, metadata}`, `search`, and documents in the answers of fetch, range and random.
//!
//! A search index is a hybrid index (`super::caller::vector_index`). A document is stored as a record
//! whose metadata is the document's content with the document's own metadata under the reserved key
//! `@metadata`, so that filters test content fields as `field` and metadata fields as
//! `@metadata.field`, as the client's filter trees write them; content given as a string is kept
//! under `@content`. Its vectors embed the content's fields as `name: value` lines (never its
//! metadata).

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use quiver_vector::record::Record;
use quiver_vector::service::{Fusion, Hit, Query, QueryInput, SemanticWeight, Weighting};
use quiver_vector::text::QueryMode;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::state::AppState;
use crate::vector::caller::VectorCaller;
use crate::vector::reply::{Handled, namespace_of, object_of, success};
use crate::vector::wire::{Include, count_of, filter_of, flag, one_or_many, required_id, text_of};

/// The dense part's share of a search when the request names none.
const DEFAULT_SEMANTIC_WEIGHT: f64 = 0.75;

/// The key under which a stored document's record keeps the document's metadata.
const METADATA_KEY: &str = "@metadata";

/// The key under which a stored document's record keeps content given as a string, not an object.
const TEXT_KEY: &str = "@content";

/// Results of a search when the request names no `topK`.
const DEFAULT_LIMIT: usize = 5;

/// A document to write: the record to store and the text its vectors embed.
#[derive(Debug)]
struct Document {
    record: Record,
    text: String,
}

/// A document of `upsert-data`: `id`, `content` (an object, or a string) and an optional `metadata`
/// object.
fn document_of(value: &Value) -> Result<Document, ApiError> {
    let Value::Object(object) = value else {
        return Err(ApiError::bad_request("each document must be a JSON object"));
    };
    if let Some(unknown) = object
        .keys()
        .find(|k| !["id", "content", "metadata"].contains(&k.as_str()))
    {
        return Err(ApiError::bad_request(format!(
            "{unknown}: is not a field of a document; a document has id, content and metadata"
        )));
    }
    let mut text = String::new();
    let mut stored = match object.get("content") {
        Some(Value::Object(content)) => {
            if let Some(reserved) = [METADATA_KEY, TEXT_KEY]
                .into_iter()
                .find(|k| content.contains_key(*k))
            {
                return Err(ApiError::bad_request(format!(
                    "content: `{reserved}` is a reserved field name"
                )));
            }
            for (key, value) in content {
                append_text(&mut text, key, value);
            }
            content.clone()
        }
        Some(Value::String(content)) => {
            text.push_str(content);
            Map::from_iter([(TEXT_KEY.to_owned(), Value::String(content.clone()))])
        }
        None | Some(Value::Null) => return Err(ApiError::bad_request("content: is required")),
        Some(_) => {
            return Err(ApiError::bad_request(
                "content: must be a JSON object or a string",
            ));
        }
    };
    if text.trim().is_empty() {
        return Err(ApiError::bad_request(
            "content: holds no text to index; give it at least one non-empty value",
        ));
    }
    match object.get("metadata") {
        None | Some(Value::Null) => {}
        Some(metadata @ Value::Object(_)) => {
            stored.insert(METADATA_KEY.to_owned(), metadata.clone());
        }
        Some(_) => return Err(ApiError::bad_request("metadata: must be a JSON object")),
    }
    Ok(Document {
        record: Record {
            id: required_id(object)?,
            vector: None,
            sparse: None,
            metadata: Some(Value::Object(stored)),
            data: None,
        },
        text,
    })
}

/// Appends a content field's text, a `key: value` line per leaf that is not blank: strings as they
/// are, numbers and booleans as written, and arrays and objects by their leaves (each under its own
/// key), so that a query's words meet the field's name and value together.
fn append_text(text: &mut String, key: &str, value: &Value) {
    let mut line = |leaf: &str| {
        if leaf.trim().is_empty() {
            return;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(key);
        text.push_str(": ");
        text.push_str(leaf);
    };
    match value {
        Value::Null => {}
        Value::String(leaf) => line(leaf),
        Value::Bool(leaf) => line(&leaf.to_string()),
        Value::Number(leaf) => line(&leaf.to_string()),
        Value::Array(items) => items.iter().for_each(|item| append_text(text, key, item)),
        Value::Object(fields) => fields
            .iter()
            .for_each(|(inner, field)| append_text(text, inner, field)),
    }
}

/// `upsert-data` on a search index: one document or an array of them.
pub(crate) async fn upsert_documents(
    state: &AppState,
    caller: &VectorCaller,
    namespace: &str,
    body: &Value,
) -> Handled {
    let documents = one_or_many(
        body,
        document_of,
        "a {id, content, metadata} document or an array of them",
    )?;
    let (records, texts) = documents.into_iter().map(|d| (d.record, d.text)).unzip();
    state
        .vectors
        .upsert_embedded(&caller.index, namespace, records, texts)
        .await?;
    Ok(success("Success"))
}

/// A document on the wire: fetch, range and random leave out `score`.
#[derive(Debug, Serialize)]
pub(crate) struct DocumentOut {
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vector: Option<Vec<f32>>,
}

impl DocumentOut {
    /// A stored document with the parts asked for: `includeData` gives its content, `includeMetadata`
    /// its metadata, `includeVectors` its dense vector.
    pub(crate) fn record(record: Record, include: Include, score: Option<f32>) -> DocumentOut {
        let mut content = match record.metadata {
            Some(Value::Object(content)) => content,
            // Written by `document_of` as an object; anything else was not a document's.
            Some(_) | None => Map::new(),
        };
        let metadata = content.remove(METADATA_KEY);
        let content = match content.remove(TEXT_KEY) {
            Some(text) => text,
            None => Value::Object(content),
        };
        DocumentOut {
            id: record.id,
            content: include.data.then_some(content),
            metadata: if include.metadata { metadata } else { None },
            score,
            vector: if include.vectors { record.vector } else { None },
        }
    }
}

/// Fields a search request may name.
const SEARCH_FIELDS: [&str; 9] = [
    "query",
    "topK",
    "includeData",
    "includeMetadata",
    "filter",
    "reranking",
    "semanticWeight",
    "inputEnrichment",
    "_appendOriginalInputToEnrichmentResult",
];

/// A search as the body states it.
fn search_of(object: &Map<String, Value>) -> Result<(Query, Include), ApiError> {
    if let Some(unknown) = object.keys().find(|k| !SEARCH_FIELDS.contains(&k.as_str())) {
        return Err(ApiError::bad_request(format!(
            "{unknown}: is not a field of a search; expected {}",
            SEARCH_FIELDS.join(", ")
        )));
    }
    let query = match text_of(object, "query")? {
        Some(text) if !text.trim().is_empty() => text.to_owned(),
        Some(_) | None => return Err(ApiError::bad_request("query: is required and must not be empty")),
    };
    if flag(object, "reranking")? {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "reranking: Quiver does not offer it (it needs a reranking model); leave it out or set it to false",
        ));
    }
    // Enrichment rewrites a query with a language model where one runs, and is on by default (the
    // Python client always sends `true`); Quiver runs none, so every query is searched as given, which
    // is also what `_appendOriginalInputToEnrichmentResult` keeps.
    flag(object, "inputEnrichment")?;
    flag(object, "_appendOriginalInputToEnrichmentResult")?;
    let weight = match object.get("semanticWeight") {
        None | Some(Value::Null) => Some(DEFAULT_SEMANTIC_WEIGHT),
        Some(value) => value.as_f64(),
    }
    .and_then(SemanticWeight::new)
    .ok_or_else(|| ApiError::bad_request("semanticWeight: must be a number from 0 to 1"))?;
    let query = Query {
        input: QueryInput::Text {
            data: query,
            mode: QueryMode::Hybrid,
        },
        top_k: count_of(object, "topK")?.unwrap_or(DEFAULT_LIMIT),
        filter: filter_of(object)?,
        weighting: Weighting::Idf,
        fusion: Fusion::Weighted(weight),
    };
    let include = Include {
        vectors: false,
        metadata: flag(object, "includeMetadata")?,
        data: flag(object, "includeData")?,
    };
    Ok((query, include))
}

/// `search`: the documents that best match a text, by meaning and by words (`semanticWeight` shares
/// the score between the two), filtered on their content.
pub(crate) async fn search(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    let (query, include) = search_of(object_of(&body)?)?;
    let hits = state
        .vectors
        .query(&caller.index, &namespace_of(&params), query)
        .await?;
    Ok(success(
        hits.into_iter()
            .map(|Hit { score, record }| DocumentOut::record(record, include, Some(score)))
            .collect::<Vec<_>>(),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use quiver_vector::filter::Filter;

    use super::*;

    /// What the clients ask for: content and metadata, no vectors.
    const CONTENT_AND_METADATA: Include = Include {
        vectors: false,
        metadata: true,
        data: true,
    };

    fn refused(value: Value) -> String {
        document_of(&value).unwrap_err().message().to_owned()
    }

    #[test]
    fn a_document_stores_its_content_as_metadata_and_embeds_the_contents_values() {
        let document = document_of(&json!({
            "id": "d1",
            "content": {"title": "Dune", "year": 1965, "tags": ["sand", {"deep": true}], "none": null},
            "metadata": {"shelf": 3}
        }))
        .unwrap();
        assert_eq!(document.record.id, "d1");
        assert_eq!(
            document.record.metadata,
            Some(
                json!({"title": "Dune", "year": 1965, "tags": ["sand", {"deep": true}], "none": null, "@metadata": {"shelf": 3}})
            )
        );
        assert_eq!(document.record.data, None);
        let filter = |text: &str| Filter::parse(text).unwrap();
        assert!(
            document
                .record
                .passes(filter("@metadata.shelf = 3 AND title = 'Dune'").as_ref())
        );
        assert!(!document.record.passes(filter("shelf = 3").as_ref()));
        let mut lines: Vec<&str> = document.text.lines().collect();
        lines.sort_unstable();
        assert_eq!(lines, ["deep: true", "tags: sand", "title: Dune", "year: 1965"]);
        let out = DocumentOut::record(document.record, CONTENT_AND_METADATA, None);
        assert_eq!(
            serde_json::to_value(out).unwrap(),
            json!({"id": "d1", "content": {"title": "Dune", "year": 1965, "tags": ["sand", {"deep": true}], "none": null}, "metadata": {"shelf": 3}})
        );
    }

    #[test]
    fn content_given_as_a_string_is_embedded_and_returned_as_the_string() {
        let document =
            document_of(&json!({"id": "s", "content": "plain words", "metadata": {"k": 1}})).unwrap();
        assert_eq!(document.text, "plain words");
        let out = DocumentOut::record(document.record, CONTENT_AND_METADATA, Some(0.5));
        assert_eq!(
            serde_json::to_value(out).unwrap(),
            json!({"id": "s", "content": "plain words", "metadata": {"k": 1}, "score": 0.5})
        );
    }

    #[test]
    fn a_document_without_content_or_with_unknown_fields_is_refused_by_name() {
        assert_eq!(refused(json!({"id": "a"})), "content: is required");
        assert_eq!(
            refused(json!({"id": "a", "content": 7})),
            "content: must be a JSON object or a string"
        );
        assert!(refused(json!({"id": "a", "content": {"t": " "}})).starts_with("content: holds no text"));
        assert!(refused(json!({"id": "a", "content": ""})).starts_with("content: holds no text"));
        assert!(
            refused(json!({"id": "a", "data": "x", "content": {"t": "x"}}))
                .starts_with("data: is not a field of a document")
        );
        assert_eq!(
            refused(json!({"id": "a", "content": {"t": "x"}, "metadata": [1]})),
            "metadata: must be a JSON object"
        );
        assert_eq!(refused(json!({"content": {"t": "x"}})), "id: is required");
        assert!(
            refused(json!({"id": "a", "content": {"t": "x", "@metadata": {}}}))
                .starts_with("content: `@metadata` is a reserved field name")
        );
    }

    #[test]
    fn a_search_names_what_it_cannot_take() {
        let message = |body: Value| {
            let Value::Object(object) = body else {
                unreachable!()
            };
            search_of(&object).unwrap_err().message().to_owned()
        };
        assert_eq!(message(json!({})), "query: is required and must not be empty");
        assert!(message(json!({"query": "q", "topk": 2})).starts_with("topk: is not a field of a search"));
        assert_eq!(
            message(json!({"query": "q", "semanticWeight": 1.5})),
            "semanticWeight: must be a number from 0 to 1"
        );
        assert!(
            message(json!({"query": "q", "reranking": true}))
                .starts_with("reranking: Quiver does not offer it")
        );
        let Value::Object(object) =
            json!({"query": "q", "semanticWeight": 0.2, "reranking": false, "filter": "a = 1"})
        else {
            unreachable!()
        };
        let (query, _) = search_of(&object).unwrap();
        assert_eq!(query.top_k, DEFAULT_LIMIT);
        assert_eq!(query.fusion, Fusion::Weighted(SemanticWeight::new(0.2).unwrap()));
        assert!(query.filter.is_some());
    }
}
