//! The vector API's operations (a Bearer token per index). Each route takes GET, POST, PUT and DELETE
//! alike and reads a JSON body whatever the method; the description lists POST, which the SDKs send.

use serde_json::{Value, json};

use super::schemas::{any_object, array, boolean, integer, object, r, result, string, words};
use super::{Auth, Op};

const ANY_METHOD: &[&str] = &["GET", "PUT", "DELETE"];

fn op(path: impl Into<String>, summary: &'static str) -> Op {
    Op::new("POST", path, "vector", Auth::Index, summary).also(ANY_METHOD)
}

/// One item or an array of them.
fn one_or_many(item: Value) -> Value {
    json!({"anyOf": [item.clone(), array(item)]})
}

fn includes(mut fields: Vec<(&'static str, Value)>) -> Vec<(&'static str, Value)> {
    fields.extend([
        ("includeMetadata", boolean()),
        ("includeVectors", boolean()),
        ("includeData", boolean()),
    ]);
    fields
}

/// A query's answer: scores, or for a batch of two or more, one list of scores per query.
fn scores() -> Value {
    json!({"anyOf": [array(r("Score")), array(array(r("Score")))]})
}

/// The routes that act on one namespace, at `/{route}` (the default namespace) and
/// `/{route}/{namespace}`.
fn in_namespace() -> Vec<(&'static str, &'static str, Option<Value>, Value)> {
    let success = || json!({"type": "string", "const": "Success"});
    let query_data = r("QueryData");
    let resumable = |query: Value| json!({"allOf": [query, object(&[("maxIdle", integer())], 0)]});
    let started = object(&[("uuid", string()), ("scores", array(r("Score")))], 2);
    vec![
        (
            "upsert",
            "Insert or replace records with their vectors.",
            Some(one_or_many(r("Upsert"))),
            success(),
        ),
        (
            "upsert-data",
            "Insert or replace records whose text the index's model embeds; on a search index, documents whose content's values are embedded and whose content fields filters test.",
            Some(json!({"anyOf": [
                one_or_many(object(
                    &[
                        ("id", json!({"type": ["string", "number"]})),
                        ("data", string()),
                        ("metadata", any_object()),
                    ],
                    2,
                )),
                one_or_many(object(
                    &[
                        ("id", json!({"type": ["string", "number"]})),
                        ("content", json!({"type": ["object", "string"]})),
                        ("metadata", any_object()),
                    ],
                    2,
                )),
            ]})),
            success(),
        ),
        (
            "query",
            "The records nearest a vector (one query, or a batch).",
            Some(one_or_many(r("Query"))),
            scores(),
        ),
        (
            "query-data",
            "The records nearest a text (one query, or a batch).",
            Some(one_or_many(query_data.clone())),
            scores(),
        ),
        (
            "fetch",
            "Records by id (null for a missing one) or by id prefix.",
            Some(object(
                &includes(vec![
                    ("ids", array(json!({"type": ["string", "number"]}))),
                    ("prefix", string()),
                ]),
                0,
            )),
            array(json!({"anyOf": [r("Vector"), r("Document"), {"type": "null"}]})),
        ),
        (
            "range",
            "A page of records in index order.",
            Some(object(
                &includes(vec![
                    ("cursor", json!({"type": ["string", "integer"]})),
                    ("limit", json!({"type": "integer", "minimum": 1})),
                    ("prefix", string()),
                ]),
                1,
            )),
            object(
                &[
                    ("nextCursor", string()),
                    ("vectors", array(json!({"anyOf": [r("Vector"), r("Document")]}))),
                ],
                2,
            ),
        ),
        (
            "delete",
            "Delete records by ids, by id prefix or by metadata filter.",
            Some(json!({"anyOf": [
                object(&[("ids", array(json!({"type": ["string", "number"]}))), ("prefix", string()), ("filter", string())], 0),
                array(json!({"type": ["string", "number"]})),
                string(),
            ]})),
            object(&[("deleted", integer())], 1),
        ),
        (
            "update",
            "Change a record's vector, data or metadata (overwrite or merge patch).",
            Some(object(
                &[
                    ("id", json!({"type": ["string", "number"]})),
                    ("vector", array(json!({"type": "number"}))),
                    ("sparseVector", r("SparseVector")),
                    ("data", string()),
                    ("metadata", any_object()),
                    ("metadataUpdateMode", words(&["OVERWRITE", "PATCH"])),
                ],
                1,
            )),
            object(&[("updated", integer())], 1),
        ),
        (
            "reset",
            "Delete every record of the namespace (`?all`: of every namespace).",
            None,
            success(),
        ),
        (
            "random",
            "A record chosen at random, or null when there is none.",
            None,
            json!({"anyOf": [r("Vector"), r("Document"), {"type": "null"}]}),
        ),
        (
            "search",
            "Search indexes only: the documents that best match a text, by meaning and by words (`semanticWeight`, 0.75 when not given, is the meaning's share), filtered on content fields.",
            Some(object(
                &[
                    ("query", string()),
                    ("topK", integer()),
                    ("includeData", boolean()),
                    ("includeMetadata", boolean()),
                    ("filter", string()),
                    (
                        "semanticWeight",
                        json!({"type": "number", "minimum": 0, "maximum": 1}),
                    ),
                    ("reranking", boolean()),
                    ("inputEnrichment", boolean()),
                    ("_appendOriginalInputToEnrichmentResult", boolean()),
                ],
                1,
            )),
            array(r("Document")),
        ),
        (
            "resumable-query",
            "Start a query whose next results can be asked for later.",
            Some(resumable(r("Query"))),
            started.clone(),
        ),
        (
            "resumable-query-data",
            "Start a text query whose next results can be asked for later.",
            Some(resumable(query_data)),
            started,
        ),
    ]
}

pub(super) fn operations() -> Vec<Op> {
    let mut ops = Vec::new();
    for (route, summary, body, answer) in in_namespace() {
        for path in [format!("/{route}"), format!("/{route}/{{namespace}}")] {
            let mut op = op(path, summary);
            if route == "reset" {
                op = op.query("all", string(), "Present: reset every namespace.");
            }
            if let Some(body) = &body {
                op = op.json(body.clone(), false);
            }
            ops.push(op.ok(result(answer.clone())));
        }
    }
    let success = || result(json!({"type": "string", "const": "Success"}));
    ops.extend([
        op(
            "/info",
            "Counts, size, dimension and models of the index, and its namespaces.",
        )
        .ok(result(r("Info"))),
        op(
            "/list-namespaces",
            "The index's namespaces (the default one is \"\").",
        )
        .ok(result(array(string()))),
        op(
            "/delete-namespace/{namespace}",
            "Delete a namespace and its records.",
        )
        .ok(success()),
        op(
            "/delete-namespace",
            "Refused: the default namespace cannot be deleted.",
        ),
        op(
            "/delete-namespace/",
            "Refused: the default namespace cannot be deleted.",
        ),
        op("/rename-namespace", "Rename a namespace.")
            .json(
                object(
                    &[
                        ("namespace", string()),
                        ("newNamespace", string()),
                        ("deleteExisting", boolean()),
                    ],
                    2,
                ),
                true,
            )
            .ok(result(object(&[("renamed", boolean())], 1))),
        op(
            "/resumable-query-next",
            "The next `additionalK` results of a resumable query (10 when not given); a page may hold at most the plan's reads per request, as a query's `topK` may.",
        )
            .json(object(&[("uuid", string()), ("additionalK", integer())], 2), true)
            .ok(result(array(r("Score")))),
        op("/resumable-query-end", "End a resumable query.")
            .json(object(&[("uuid", string())], 1), true)
            .ok(success()),
    ]);
    ops
}
