//! Request helpers shared by the HTTP tests: send and read JSON, publish a message, call an index.

use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{Value, json};

use crate::TestServer;

/// Sends `request` and reads the answer: its status, and its body as JSON (or as a JSON string when it
/// is not JSON).
///
/// # Panics
/// When the server does not answer.
pub async fn send(request: RequestBuilder) -> (StatusCode, Value) {
    let (status, body, text) = send_with_text(request).await;
    (status, if body.is_null() { Value::String(text) } else { body })
}

/// Sends `request` and reads the answer: its status, its body as JSON (`null` when it is not JSON) and
/// as text.
///
/// # Panics
/// When the server does not answer.
pub async fn send_with_text(request: RequestBuilder) -> (StatusCode, Value, String) {
    let response = request.send().await.expect("the server answers");
    let status = response.status();
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, body, text)
}

/// Publishes `body` to `destination` with `headers` through the queue API.
pub async fn publish(
    server: &TestServer,
    destination: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, Value) {
    let mut request = server
        .queue(Method::POST, &format!("/v2/publish/{destination}"))
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(request).await
}

/// A vector index created through the management API: its tokens, endpoint and id.
#[derive(Debug, Clone)]
pub struct VectorIndex {
    /// Read-write token.
    pub token: String,
    /// Read-only token.
    pub read_only: String,
    /// Endpoint name (`/vector/{endpoint}/...`).
    pub endpoint: String,
    /// Index id.
    pub id: String,
}

/// Creates a vector index from a management API `body`.
///
/// # Panics
/// When the index cannot be created.
pub async fn index(server: &TestServer, body: Value) -> VectorIndex {
    VectorIndex::of(&server.create_vector_index(body).await)
}

/// Creates a search index from a management API `body` (`POST /v2/search`).
///
/// # Panics
/// When the index cannot be created.
pub async fn search_index(server: &TestServer, body: Value) -> VectorIndex {
    let response = server
        .management(Method::POST, "/v2/search")
        .json(&body)
        .send()
        .await
        .expect("the server answers");
    assert_eq!(response.status(), StatusCode::OK, "creating a search index");
    VectorIndex::of(&response.json().await.expect("an index record"))
}

impl VectorIndex {
    /// The tokens and names of an index record.
    fn of(record: &Value) -> VectorIndex {
        let field = |name: &str| record[name].as_str().expect("a text field").to_owned();
        VectorIndex {
            token: field("token"),
            read_only: field("read_only_token"),
            endpoint: field("endpoint"),
            id: field("id"),
        }
    }
}

/// Creates a dense index with `similarity` (`COSINE`, `EUCLIDEAN`, `DOT_PRODUCT`) and `dimension`.
pub async fn dense(server: &TestServer, similarity: &str, dimension: u32) -> VectorIndex {
    index(
        server,
        json!({"name": "v", "region": "us-east-1", "similarity_function": similarity, "dimension_count": dimension}),
    )
    .await
}

/// POSTs `body` to the vector endpoint `path` with the read-write token.
pub async fn call(
    server: &TestServer,
    index: &VectorIndex,
    path: &str,
    body: Value,
) -> (StatusCode, Value, String) {
    send_with_text(server.vector(&index.token, Method::POST, path).json(&body)).await
}

/// As [`call`], expecting success: the `result` of the answer.
///
/// # Panics
/// When the call does not answer 200 without an error.
pub async fn ok(server: &TestServer, index: &VectorIndex, path: &str, body: Value) -> Value {
    let (status, answer, text) = call(server, index, path, body).await;
    assert_eq!(status, StatusCode::OK, "{path}: {text}");
    assert!(answer.get("error").is_none());
    answer["result"].clone()
}
