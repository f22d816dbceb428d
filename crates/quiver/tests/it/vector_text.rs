//! Dense text embeddings through real HTTP: indexes with a hosted model, upsert-data and query-data
//! with the real all-MiniLM-L6-v2 weights, hybrid indexes with both hosted models, and the errors for
//! a model that is not installed.

use quiver_testkit::TestServer;
use quiver_testkit::calls::{call, index, ok, send};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const CORPUS: [(&str, &str); 4] = [
    ("cat", "A cat is sleeping on the warm windowsill."),
    ("rates", "The central bank raised interest rates again."),
    (
        "rust",
        "Rust programs are memory safe without a garbage collector.",
    ),
    ("soup", "Tomato soup is best served with grilled cheese."),
];

/// The ids of a query's or a search's hits, in order.
pub(crate) fn ids(hits: &Value) -> Vec<&str> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_minilm_index_embeds_documents_and_queries() {
    let server = TestServer::embedded().await;
    let minilm = index(
        &server,
        json!({"name": "t", "region": "us-east-1", "similarity_function": "COSINE", "embedding_model": "ALL_MINILM_L6_V2"}),
    )
    .await;
    let docs: Vec<Value> = CORPUS
        .iter()
        .map(|(id, text)| json!({"id": id, "data": text, "metadata": {"len": text.len()}}))
        .collect();
    assert_eq!(
        ok(&server, &minilm, "/upsert-data", Value::Array(docs)).await,
        "Success"
    );

    let hits = ok(
        &server,
        &minilm,
        "/query-data",
        json!({"data": "my kitten naps in the sun", "topK": 2, "includeData": true, "includeVectors": true}),
    )
    .await;
    assert_eq!(ids(&hits)[0], "cat");
    assert_eq!(hits[0]["data"], CORPUS[0].1);
    assert_eq!(hits[0]["vector"].as_array().unwrap().len(), 384);

    // The stored vector is the one the model gives: querying with the document's own text scores 1.
    let same = ok(
        &server,
        &minilm,
        "/query-data",
        json!({"data": CORPUS[2].1, "topK": 1}),
    )
    .await;
    assert_eq!(ids(&same), ["rust"]);
    assert!((same[0]["score"].as_f64().unwrap() - 1.0).abs() < 1e-4);

    // A batch of texts answers one list per text, in order; a one-item array answers a flat list.
    let batch = ok(
        &server,
        &minilm,
        "/query-data",
        json!([{"data": "a programming language", "topK": 1}, {"data": "monetary policy", "topK": 1}]),
    )
    .await;
    assert_eq!(ids(&batch[0]), ["rust"]);
    assert_eq!(ids(&batch[1]), ["rates"]);
    let flat = ok(
        &server,
        &minilm,
        "/query-data",
        json!([{"data": "soup recipe", "topK": 1}]),
    )
    .await;
    assert_eq!(ids(&flat), ["soup"]);

    // Text in a namespace, and the plain query endpoint with `data`.
    ok(
        &server,
        &minilm,
        "/upsert-data/recipes",
        json!({"id": "pie", "data": "Apple pie with cinnamon."}),
    )
    .await;
    let namespaced = ok(
        &server,
        &minilm,
        "/query-data/recipes",
        json!({"data": "dessert", "topK": 3}),
    )
    .await;
    assert_eq!(ids(&namespaced), ["pie"]);
    let via_query = ok(&server, &minilm, "/query", json!({"data": "dessert", "topK": 1})).await;
    assert_ne!(
        ids(&via_query),
        ["pie"],
        "the default namespace does not hold the pie"
    );

    // A text far longer than the model's 256 tokens is truncated, not refused.
    let long = "grilled cheese ".repeat(3000);
    ok(
        &server,
        &minilm,
        "/upsert-data",
        json!({"id": "long", "data": long}),
    )
    .await;

    let info = ok(&server, &minilm, "/info", json!(null)).await;
    assert_eq!(info["dimension"], 384);
    assert_eq!(info["denseIndex"]["embeddingModel"], "ALL_MINILM_L6_V2");
}

#[tokio::test]
async fn a_hybrid_index_fuses_minilm_and_bm25_and_honours_the_query_mode() {
    let server = TestServer::embedded().await;
    let hybrid = index(
        &server,
        json!({"name": "h", "region": "us-east-1", "index_type": "HYBRID", "similarity_function": "COSINE",
               "embedding_model": "ALL_MINILM_L6_V2", "sparse_embedding_model": "BM25"}),
    )
    .await;
    let docs: Vec<Value> = CORPUS
        .iter()
        .map(|(id, text)| json!({"id": id, "data": text}))
        .collect();
    ok(&server, &hybrid, "/upsert-data", Value::Array(docs)).await;
    let fetched = ok(
        &server,
        &hybrid,
        "/fetch",
        json!({"ids": ["cat"], "includeVectors": true}),
    )
    .await;
    assert_eq!(fetched[0]["vector"].as_array().unwrap().len(), 384);
    assert!(
        !fetched[0]["sparseVector"]["indices"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    for mode in ["HYBRID", "DENSE", "SPARSE"] {
        let hits = ok(
            &server,
            &hybrid,
            "/query-data",
            json!({"data": "interest rates", "topK": 1, "queryMode": mode}),
        )
        .await;
        assert_eq!(ids(&hits), ["rates"], "{mode}");
    }
    // Only the dense part understands a paraphrase that shares no word with the document.
    let dense = ok(
        &server,
        &hybrid,
        "/query-data",
        json!({"data": "feline", "topK": 1, "queryMode": "DENSE"}),
    )
    .await;
    assert_eq!(ids(&dense), ["cat"]);
    let sparse = ok(
        &server,
        &hybrid,
        "/query-data",
        json!({"data": "feline", "topK": 1, "queryMode": "SPARSE"}),
    )
    .await;
    assert!(ids(&sparse).is_empty(), "no shared term, no sparse hit");

    // Updating a record's data embeds the new text into both parts, as upsert-data would.
    let updated = ok(
        &server,
        &hybrid,
        "/update",
        json!({"id": "soup", "data": "A kitten naps on the sofa; the feline purrs."}),
    )
    .await;
    assert_eq!(updated, json!({"updated": 1}));
    for mode in ["DENSE", "SPARSE"] {
        let hits = ok(
            &server,
            &hybrid,
            "/query-data",
            json!({"data": "feline kitten", "topK": 1, "queryMode": mode}),
        )
        .await;
        assert_eq!(ids(&hits), ["soup"], "{mode}");
    }
}

#[tokio::test]
async fn a_model_that_is_not_installed_is_a_clear_400() {
    let empty = tempfile::tempdir().unwrap();
    let models = empty.path().to_owned();
    let server = TestServer::with_config(move |config| config.embeddings.models_dir = models).await;
    let (status, body) = send(
        server
            .management(Method::POST, "/v2/vector/index")
            .json(&json!({"name": "t", "region": "us-east-1", "similarity_function": "COSINE", "embedding_model": "BGE_BASE_EN_V1_5"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = body["error"].as_str().unwrap();
    assert!(
        message.contains("quiver models pull BGE_BASE_EN_V1_5"),
        "{message}"
    );
    let list = send(server.management(Method::GET, "/v2/vector/index")).await.1;
    assert_eq!(list.as_array().unwrap().len(), 0, "nothing was created");

    // An index without any model refuses text with the wire's 422.
    let plain = index(
        &server,
        json!({"name": "p", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3}),
    )
    .await;
    let (status, body, _) = call(
        &server,
        &plain,
        "/upsert-data",
        json!({"id": "a", "data": "hello"}),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(body["status"], 422);
}
