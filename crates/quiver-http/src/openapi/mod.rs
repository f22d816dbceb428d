//! The OpenAPI 3.1 description of every route, served at `GET /openapi.json` and committed as
//! `docs/openapi.json`.
//!
//! Each area lists its operations in a module of its own (`management`, `vector`, `queue`,
//! `operations`) with the builder `Op`; `schemas` holds the shapes they share. Two tests keep
//! the description honest: one compares its operations with the routes the routers register (read from
//! their source), so neither can change without the other; the other checks that the committed file
//! is this module's output. `scripts/schemathesis` then sends every operation generated requests and
//! checks each answer against its schema.

mod management;
mod operations;
mod queue;
mod schemas;
mod vector;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

/// The credentials an operation wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// None (health, the description itself).
    Open,
    /// The account's email and API key (HTTP Basic).
    Management,
    /// The account's queue token (Bearer, or `svc_token` in the query).
    Queue,
    /// An index's token (Bearer).
    Index,
    /// `http.metrics_token`, when one is set.
    Metrics,
}

/// One operation: a method on a path, what it reads and what it answers.
#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub(crate) method: &'static str,
    pub(crate) path: String,
    tag: &'static str,
    summary: &'static str,
    auth: Auth,
    /// Methods the route also takes with the same meaning (the vector API takes any).
    also: &'static [&'static str],
    parameters: Vec<Value>,
    body: Option<Value>,
    answers: BTreeMap<String, Value>,
}

impl Op {
    pub(crate) fn new(
        method: &'static str,
        path: impl Into<String>,
        tag: &'static str,
        auth: Auth,
        summary: &'static str,
    ) -> Op {
        Op {
            method,
            path: path.into(),
            tag,
            summary,
            auth,
            also: &[],
            parameters: Vec::new(),
            body: None,
            answers: BTreeMap::new(),
        }
    }

    /// The route takes these methods too, with the same meaning.
    pub(crate) fn also(mut self, methods: &'static [&'static str]) -> Op {
        self.also = methods;
        self
    }

    /// A JSON body of `schema`.
    pub(crate) fn json(mut self, schema: Value, required: bool) -> Op {
        self.body = Some(json!({
            "required": required,
            "content": {"application/json": {"schema": schema}},
        }));
        self
    }

    /// A body of any type, forwarded as it is (a message's body).
    pub(crate) fn raw_body(mut self) -> Op {
        self.body = Some(json!({
            "required": false,
            "content": {"*/*": {"schema": {"type": "string"}}},
        }));
        self
    }

    /// A query parameter.
    pub(crate) fn query(mut self, name: &str, schema: Value, description: &str) -> Op {
        self.parameters.push(json!({
            "name": name, "in": "query", "required": false,
            "description": description, "schema": schema,
        }));
        self
    }

    /// A request header.
    pub(crate) fn header(mut self, name: &str, description: &str) -> Op {
        self.parameters.push(json!({
            "name": name, "in": "header", "required": false,
            "description": description, "schema": {"type": "string"},
        }));
        self
    }

    /// A 200 answer with a JSON body of `schema`.
    pub(crate) fn ok(self, schema: Value) -> Op {
        self.answer("200", "Done.", Some(schema))
    }

    /// A 200 answer with no body.
    pub(crate) fn ok_empty(self) -> Op {
        self.answer("200", "Done.", None)
    }

    /// An answer with this status and, when given, a JSON body of `schema`.
    pub(crate) fn answer(mut self, status: &str, description: &str, schema: Option<Value>) -> Op {
        let mut answer = json!({"description": description});
        if let Some(schema) = schema {
            answer["content"] = json!({"application/json": {"schema": schema}});
        }
        self.answers.insert(status.to_owned(), answer);
        self
    }

    /// Gives answer `status` a body of `media_type`.
    pub(crate) fn content(mut self, status: &str, media_type: &str, schema: Value) -> Op {
        if let Some(answer) = self.answers.get_mut(status) {
            answer["content"] = json!({media_type: {"schema": schema}});
        }
        self
    }

    fn parameters(&self) -> Vec<Value> {
        let mut parameters: Vec<Value> = self
            .path
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| {
                json!({
                    "name": name, "in": "path", "required": true,
                    "schema": schemas::path_parameter(name),
                })
            })
            .collect();
        parameters.extend(self.parameters.iter().cloned());
        parameters
    }

    fn to_json(&self) -> Value {
        let mut operation = Map::new();
        operation.insert("tags".into(), json!([self.tag]));
        operation.insert("summary".into(), json!(self.summary));
        operation.insert(
            "operationId".into(),
            json!(format!("{} {}", self.method, self.path)),
        );
        let security = match self.auth {
            Auth::Open => json!([]),
            Auth::Management => json!([{"management": []}]),
            Auth::Queue => json!([{"queueToken": []}, {"queueTokenQuery": []}]),
            Auth::Index => json!([{"indexToken": []}]),
            Auth::Metrics => json!([{}, {"metricsToken": []}]),
        };
        operation.insert("security".into(), security);
        let parameters = self.parameters();
        if !parameters.is_empty() {
            operation.insert("parameters".into(), Value::Array(parameters));
        }
        if let Some(body) = &self.body {
            operation.insert("requestBody".into(), body.clone());
        }
        let mut answers: Map<String, Value> = self.answers.clone().into_iter().collect();
        answers.insert(
            "default".into(),
            json!({
                "description": "An error, with the status that fits it (4xx for what the caller sent).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            }),
        );
        operation.insert("responses".into(), Value::Object(answers));
        if !self.also.is_empty() {
            operation.insert("x-quiver-also-methods".into(), json!(self.also));
        }
        Value::Object(operation)
    }
}

/// Every operation, area by area.
pub(crate) fn operations() -> Vec<Op> {
    let mut all = operations::operations();
    all.extend(management::operations());
    all.extend(vector::operations());
    all.extend(queue::operations());
    all
}

/// The whole description as a JSON value.
fn document_value() -> Value {
    let mut paths: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for op in operations() {
        paths
            .entry(op.path.clone())
            .or_default()
            .insert(op.method.to_ascii_lowercase(), op.to_json());
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Quiver",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Quiver's three APIs on one port: the management API (HTTP Basic), vector \
                indexes (a Bearer token per index; every vector route is also served under \
                `/vector/{endpoint}/...` and takes GET, POST, PUT and DELETE alike) and the message queue \
                (the account's queue token). Errors are JSON objects with an `error` message; the vector \
                API's also carry `status`. Header names are spelled `Svc-*`; `Upstash-*` is accepted too.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": "http://127.0.0.1:8080", "description": "`quiver serve --dev`"}],
        "tags": [
            {"name": "management", "description": "Accounts' vector and search indexes, and their statistics."},
            {"name": "vector", "description": "Records of one index, found by the index's token."},
            {"name": "queue", "description": "Messages, URL groups, queues, schedules, dead letters, logs."},
            {"name": "workflow", "description": "Workflow runs, their waiters and their dead letters."},
            {"name": "operations", "description": "Health, metrics and this description."},
        ],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "management": {"type": "http", "scheme": "basic",
                    "description": "The account's email and API key."},
                "queueToken": {"type": "http", "scheme": "bearer",
                    "description": "The account's queue token (or its read-only token, for reads)."},
                "queueTokenQuery": {"type": "apiKey", "in": "query", "name": "svc_token",
                    "description": "The queue token in the query (`qstash_token` is accepted too)."},
                "indexToken": {"type": "http", "scheme": "bearer",
                    "description": "The index's token (or its read-only token, for reads)."},
                "metricsToken": {"type": "http", "scheme": "bearer",
                    "description": "`http.metrics_token`, when it is set."},
            },
            "schemas": schemas::components(),
        },
    })
}

/// The description as pretty-printed JSON, made once.
#[must_use]
pub fn document() -> &'static str {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        // A JSON value's alternate form is its pretty text, and writing it cannot fail.
        format!("{:#}\n", document_value())
    })
}

#[cfg(test)]
mod tests;
