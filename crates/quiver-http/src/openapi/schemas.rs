//! The shapes operations share, as JSON Schema (2020-12, as OpenAPI 3.1 has it), and small helpers to
//! write the rest.

use serde_json::{Value, json};

/// A reference to a shared shape.
pub(crate) fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// An array of `items`.
pub(crate) fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// An object with these properties, the first `required` of them required. Others may follow: answers
/// grow fields over time, and clients ignore what they do not know.
pub(crate) fn object(properties: &[(&str, Value)], required: usize) -> Value {
    let names: Vec<&str> = properties.iter().map(|(name, _)| *name).collect();
    json!({
        "type": "object",
        "properties": properties.iter().cloned().map(|(name, schema)| (name.to_owned(), schema)).collect::<serde_json::Map<_, _>>(),
        "required": names[..required.min(names.len())],
    })
}

/// `{"result": schema}`, the vector API's answer.
pub(crate) fn result(schema: Value) -> Value {
    object(&[("result", schema)], 1)
}

pub(crate) fn string() -> Value {
    json!({"type": "string"})
}

pub(crate) fn integer() -> Value {
    json!({"type": "integer"})
}

pub(crate) fn number() -> Value {
    json!({"type": "number"})
}

pub(crate) fn boolean() -> Value {
    json!({"type": "boolean"})
}

/// One of these words.
pub(crate) fn words(words: &[&str]) -> Value {
    json!({"type": "string", "enum": words})
}

/// Any JSON object.
pub(crate) fn any_object() -> Value {
    json!({"type": "object"})
}

/// A path parameter's schema, by its name.
pub(crate) fn path_parameter(name: &str) -> Value {
    match name {
        "destination" | "url" => json!({
            "type": "string",
            "description": "An absolute http(s) URL, or the name of a URL group.",
            "examples": ["https://example.com/hook", "my-group"],
        }),
        "name" | "queue" => json!({
            "type": "string",
            "pattern": "^[A-Za-z0-9._-]{1,128}$",
            "description": "1 to 128 of A-Z, a-z, 0-9, `.`, `_` and `-`.",
        }),
        "namespace" => json!({"type": "string", "description": "A namespace of the index."}),
        "schedule" => json!({
            "type": "string",
            "description": "Creating: the destination (a URL or a URL group's name); else the schedule's id.",
        }),
        "dlq" => json!({
            "type": "string",
            "description": "Deleting: a dead letter's id; POST: `restart` or `resume`.",
        }),
        _ => string(),
    }
}

/// Header names and their values, as messages, dead letters and schedules show them.
fn header_arrays() -> Value {
    json!({"type": "object", "additionalProperties": array(string())})
}

/// A time series point.
fn point() -> Value {
    object(&[("x", string()), ("y", number())], 2)
}

/// The limits every index record carries.
const LIMITS: [&str; 8] = [
    "max_vector_count",
    "max_daily_updates",
    "max_daily_queries",
    "max_monthly_bandwidth",
    "max_writes_per_second",
    "max_query_per_second",
    "max_reads_per_request",
    "max_writes_per_request",
];

fn index_record(fields: &[(&str, Value)]) -> Value {
    let mut properties: Vec<(&str, Value)> = vec![
        ("customer_id", string()),
        ("id", string()),
        ("name", string()),
        ("endpoint", string()),
        ("token", string()),
        ("read_only_token", string()),
        ("type", words(&["free", "payg", "fixed"])),
        ("region", string()),
        ("creation_time", integer()),
        ("throughput_vector", array(point())),
    ];
    properties.extend(LIMITS.iter().map(|name| (*name, integer())));
    let required = properties.len();
    properties.extend(fields.iter().cloned());
    object(&properties, required)
}

/// A message as it waits (`GET /v2/messages/{id}`), and the part of a dead letter that is the message.
fn message_fields() -> Vec<(&'static str, Value)> {
    vec![
        ("messageId", string()),
        ("url", string()),
        ("method", string()),
        ("notBefore", integer()),
        ("createdAt", integer()),
        ("retried", integer()),
        ("header", header_arrays()),
        ("body", string()),
        ("bodyBase64", string()),
        ("maxRetries", integer()),
        ("timeout", integer()),
        ("topicName", string()),
        ("endpointName", string()),
        ("queueName", string()),
        ("scheduleId", string()),
        ("callback", string()),
        ("failureCallback", string()),
        ("flowControlKey", string()),
        ("label", string()),
        ("labels", array(string())),
    ]
}

/// The shapes that several operations answer or read, by name.
pub(crate) fn components() -> Value {
    let mut dead_letter = message_fields();
    dead_letter.extend([
        ("dlqId", string()),
        ("responseStatus", integer()),
        ("responseHeader", header_arrays()),
        ("responseHeaders", header_arrays()),
        ("responseBody", string()),
        ("responseBodyBase64", string()),
        ("failedAt", integer()),
        ("workflowRunId", string()),
        ("workflowUrl", string()),
        ("workflowCreatedAt", integer()),
    ]);
    let stats_series = [
        "daily_update_requests",
        "daily_query_requests",
        "daily_rerank_requests",
        "daily_bandwidths",
        "query_throughput",
        "update_throughput",
        "query_latency_mean",
        "query_latency_99",
        "update_latency_mean",
        "update_latency_99",
        "embeds_latency_mean",
        "embeds_latency_99",
        "rerank_latency_mean",
        "rerank_latency_99",
        "vector_count",
        "data_size",
    ];
    let stats_counts = [
        "pending_index_count",
        "current_vector_count",
        "daily_query_count",
        "daily_update_count",
        "daily_rerank_count",
        "monthly_query_count",
        "monthly_update_count",
        "monthly_rerank_count",
        "monthly_bandwidth_usage",
        "storage_usage",
    ];
    let mut stats: Vec<(&str, Value)> = stats_counts.iter().map(|name| (*name, integer())).collect();
    stats.push(("monthly_cost", number()));
    stats.extend(stats_series.iter().map(|name| (*name, array(point()))));
    stats.push(("days", array(string())));
    let sparse = object(&[("indices", array(integer())), ("values", array(number()))], 2);
    let vector = object(
        &[
            ("id", string()),
            ("vector", array(number())),
            ("sparseVector", sparse.clone()),
            ("metadata", any_object()),
            ("data", string()),
        ],
        1,
    );
    let score = object(
        &[
            ("id", string()),
            ("score", number()),
            ("vector", array(number())),
            ("sparseVector", sparse.clone()),
            ("metadata", any_object()),
            ("data", string()),
        ],
        2,
    );
    // What a query by vector and a query by text share.
    let query_fields = |first: Vec<(&'static str, Value)>| {
        let mut fields = first;
        fields.extend([
            ("topK", integer()),
            ("includeMetadata", boolean()),
            ("includeVectors", boolean()),
            ("includeData", boolean()),
            ("filter", string()),
            ("weightingStrategy", words(&["IDF"])),
            ("fusionAlgorithm", words(&["RRF", "DBSF"])),
            ("queryMode", words(&["HYBRID", "DENSE", "SPARSE"])),
        ]);
        fields
    };
    let query = object(
        &query_fields(vec![
            ("vector", array(number())),
            ("sparseVector", r("SparseVector")),
        ]),
        0,
    );
    let query_data = object(&query_fields(vec![("data", string())]), 1);
    let upsert = object(
        &[
            ("id", json!({"type": ["string", "number"]})),
            ("vector", array(number())),
            ("sparseVector", r("SparseVector")),
            ("metadata", any_object()),
            ("data", string()),
        ],
        1,
    );
    let counts = object(
        &[("vectorCount", integer()), ("pendingVectorCount", integer())],
        2,
    );
    let info = object(
        &[
            ("vectorCount", integer()),
            ("pendingVectorCount", integer()),
            ("indexSize", integer()),
            ("dimension", integer()),
            ("similarityFunction", string()),
            ("indexType", words(&["DENSE", "SPARSE", "HYBRID"])),
            (
                "namespaces",
                json!({"type": "object", "additionalProperties": counts}),
            ),
            (
                "denseIndex",
                object(
                    &[
                        ("dimension", integer()),
                        ("similarityFunction", string()),
                        ("embeddingModel", string()),
                    ],
                    3,
                ),
            ),
            ("sparseIndex", object(&[("embeddingModel", string())], 1)),
        ],
        7,
    );
    json!({
        "Error": object(&[("error", string()), ("status", integer())], 1),
        "VectorIndex": index_record(&[
            ("similarity_function", string()),
            ("dimension_count", integer()),
            ("embedding_model", string()),
            ("sparse_embedding_model", string()),
            ("index_type", words(&["DENSE", "SPARSE", "HYBRID"])),
            ("max_total_metadata_size", integer()),
            ("reserved_price", number()),
        ]),
        "SearchIndex": index_record(&[
            ("integration_email", string()),
            ("vercel_email", string()),
            ("max_monthly_reranks", integer()),
            ("input_enrichment_enabled", boolean()),
        ]),
        "IndexStats": object(&stats, stats.len()),
        "GlobalStats": object(
            &[("record_count", integer()), ("request", integer()), ("bandwidth", integer()),
              ("storage", integer()), ("billing", number()), ("rerank_count", integer())],
            6,
        ),
        "SparseVector": sparse,
        "Vector": vector,
        "Score": score,
        "Document": object(
            &[("id", string()), ("content", json!({"type": ["object", "string"]})), ("metadata", any_object()),
              ("score", number()), ("vector", array(number()))],
            1,
        ),
        "Query": query,
        "QueryData": query_data,
        "Upsert": upsert,
        "Info": info,
        "Message": object(&message_fields(), 6),
        "DeadLetter": object(&dead_letter, 9),
        "DeadLetters": object(&[("messages", array(r("DeadLetter"))), ("cursor", string())], 1),
        "Event": object(
            &[("time", integer()), ("messageId", string()), ("state", string()), ("url", string()),
              ("error", string()), ("nextDeliveryTime", integer()), ("responseStatus", integer()),
              ("responseBody", string())],
            3,
        ),
        "Published": object(
            &[("messageId", string()), ("url", string()), ("deduplicated", boolean())],
            1,
        ),
        "UrlGroup": object(
            &[("name", string()), ("createdAt", integer()), ("updatedAt", integer()),
              ("endpoints", array(r("Endpoint")))],
            4,
        ),
        "Endpoint": object(&[("url", string()), ("name", string())], 1),
        "Schedule": object(
            &[("scheduleId", string()), ("cron", string()), ("destination", string()),
              ("createdAt", integer()), ("method", string()), ("isPaused", boolean()),
              ("header", header_arrays()), ("retries", integer()), ("body", string()),
              ("bodyBase64", string()), ("delay", integer()), ("timeout", integer()),
              ("callback", string()), ("failureCallback", string()), ("queueName", string()),
              ("lastScheduleTime", integer()), ("nextScheduleTime", integer()),
              ("lastScheduleStates", json!({"type": "object", "additionalProperties": string()}))],
            8,
        ),
        "Queue": object(
            &[("name", string()), ("createdAt", integer()), ("updatedAt", integer()),
              ("parallelism", integer()), ("lag", integer()), ("paused", boolean())],
            6,
        ),
        "FlowControl": object(
            &[("flowControlKey", string()), ("waitListSize", integer()), ("parallelismMax", integer()),
              ("parallelismCount", integer()), ("rateMax", integer()), ("rateCount", integer()),
              ("ratePeriod", integer()), ("isPaused", boolean())],
            1,
        ),
        "WorkflowRun": object(
            &[("workflowRunId", string()), ("workflowUrl", string()), ("workflowState", string()),
              ("workflowRunCreatedAt", integer()), ("steps", array(any_object())),
              ("workflowRunCompletedAt", integer()), ("label", string())],
            5,
        ),
        "RunStarted": object(
            &[("workflowRunId", string()), ("workflowCreatedAt", integer())],
            2,
        ),
        "Waiter": object(&[("url", string()), ("deadline", integer())], 0),
        "Notified": object(&[("waiter", any_object()), ("messageId", string())], 0),
        "Deleted": object(&[("deleted", integer()), ("cursor", string())], 1),
        "Cancelled": object(&[("cancelled", integer())], 1),
    })
}
