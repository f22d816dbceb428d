//! Sparse and hybrid indexes through real HTTP: scoring by shared dimensions, fusion, BM25 text
//! embedding and IDF weighting.

use quiver_testkit::TestServer;
use quiver_testkit::calls::{call, index, ok};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn sparse_and_hybrid_indexes_score_by_shared_dimensions_and_fusion() {
    let server = TestServer::embedded().await;
    let sparse = index(
        &server,
        json!({"name": "s", "region": "us-east-1", "index_type": "SPARSE"}),
    )
    .await;
    ok(
        &server,
        &sparse,
        "/upsert",
        json!([
            {"id": "a", "sparseVector": {"indices": [1, 2], "values": [0.1, 0.2]}},
            {"id": "b", "sparseVector": {"indices": [2, 3], "values": [0.3, 0.4]}},
            {"id": "c", "sparseVector": {"indices": [4], "values": [1.0]}},
        ]),
    )
    .await;
    let hits = ok(
        &server,
        &sparse,
        "/query",
        json!({"sparseVector": {"indices": [2, 3], "values": [1.0, 1.0]}, "topK": 5, "includeVectors": true}),
    )
    .await;
    let ids: Vec<&str> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["b", "a"], "only vectors sharing a dimension, best first");
    assert!((hits[0]["score"].as_f64().unwrap() - 0.7).abs() < 1e-6);
    assert_eq!(
        hits[0]["sparseVector"],
        json!({"indices": [2, 3], "values": [0.3, 0.4]})
    );
    let (status, _, _) = call(&server, &sparse, "/upsert", json!({"id": "d", "vector": [1.0]})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    // Repeated indices, as the official suites' random sparse vectors have: their values add up.
    ok(
        &server,
        &sparse,
        "/upsert",
        json!({"id": "r", "sparseVector": {"indices": [9, 4, 9], "values": [0.5, 1.0, 0.25]}}),
    )
    .await;
    let fetched = ok(
        &server,
        &sparse,
        "/fetch",
        json!({"ids": ["r"], "includeVectors": true}),
    )
    .await;
    assert_eq!(
        fetched[0]["sparseVector"],
        json!({"indices": [4, 9], "values": [1.0, 0.75]})
    );

    let hybrid = index(&server, json!({"name": "h", "region": "us-east-1", "index_type": "HYBRID", "similarity_function": "COSINE", "dimension_count": 2})).await;
    let (status, _, _) = call(
        &server,
        &hybrid,
        "/upsert",
        json!({"id": "x", "vector": [1.0, 0.0]}),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "a hybrid index needs both parts"
    );
    ok(
        &server,
        &hybrid,
        "/upsert",
        json!([
            {"id": "x", "vector": [1.0, 0.0], "sparseVector": {"indices": [1], "values": [1.0]}},
            {"id": "y", "vector": [0.0, 1.0], "sparseVector": {"indices": [2], "values": [1.0]}},
        ]),
    )
    .await;
    let fused = ok(
        &server,
        &hybrid,
        "/query",
        json!({"vector": [1.0, 0.0], "sparseVector": {"indices": [1], "values": [1.0]}}),
    )
    .await;
    assert_eq!(fused[0]["id"], "x");
    assert!(
        (fused[0]["score"].as_f64().unwrap() - 2.0 / 60.0).abs() < 1e-6,
        "RRF: 1/60 from each list, the first rank being 0"
    );
    let dense_only = ok(
        &server,
        &hybrid,
        "/query",
        json!({"vector": [0.0, 1.0], "topK": 1}),
    )
    .await;
    assert_eq!(dense_only[0]["id"], "y");

    // The official suite's hybrid data: DBSF fuses each part's own top 2, normalised with the sample
    // standard deviation; the sparse part has one hit, which scores 0.5.
    ok(
        &server,
        &hybrid,
        "/upsert/suite",
        json!([
            {"id": "id0", "vector": [0.1, 0.2], "sparseVector": {"indices": [0, 1], "values": [0.1, 0.2]}},
            {"id": "id1", "vector": [0.2, 0.3], "sparseVector": {"indices": [1, 2], "values": [0.2, 0.3]}},
            {"id": "id2", "vector": [0.3, 0.4], "sparseVector": {"indices": [2, 3], "values": [0.3, 0.4]}},
        ]),
    )
    .await;
    let fused = ok(
        &server,
        &hybrid,
        "/query/suite",
        json!({"vector": [0.1, 0.1], "sparseVector": {"indices": [0], "values": [0.1]}, "topK": 2,
               "fusionAlgorithm": "DBSF", "weightingStrategy": "IDF"}),
    )
    .await;
    assert_eq!(
        (&fused[0]["id"], &fused[1]["id"]),
        (&json!("id2"), &json!("id0")),
        "{fused}"
    );
    assert!(
        (fused[0]["score"].as_f64().unwrap() - 0.617851).abs() < 1e-5,
        "{fused}"
    );
    assert_eq!(fused[1]["score"], 0.5);
}

#[tokio::test]
async fn a_bm25_sparse_index_embeds_text_on_upsert_and_query() {
    let server = TestServer::embedded().await;
    let idx = index(&server, json!({"name": "text", "region": "us-east-1", "index_type": "SPARSE", "sparse_embedding_model": "BM25"})).await;
    let docs = json!([
        {"id": "cats", "data": "Cats are small domesticated felines that love to sleep.", "metadata": {"topic": "pets"}},
        {"id": "dogs", "data": "Dogs are loyal companions and love long walks.", "metadata": {"topic": "pets"}},
        {"id": "rust", "data": "Rust is a systems programming language focused on safety.", "metadata": {"topic": "code"}},
    ]);
    assert_eq!(ok(&server, &idx, "/upsert-data", docs).await, "Success");
    let hits = ok(
        &server,
        &idx,
        "/query-data",
        json!({"data": "sleeping cats", "topK": 3, "includeData": true, "includeMetadata": true}),
    )
    .await;
    assert_eq!(hits[0]["id"], "cats", "{hits}");
    assert_eq!(
        hits[0]["data"],
        "Cats are small domesticated felines that love to sleep."
    );
    assert_eq!(
        hits.as_array().unwrap().len(),
        1,
        "only documents sharing a term match"
    );
    let fetched = ok(
        &server,
        &idx,
        "/fetch",
        json!({"ids": ["rust"], "includeVectors": true, "includeData": true}),
    )
    .await;
    assert!(
        fetched[0]["sparseVector"]["indices"].as_array().unwrap().len() >= 4,
        "the stored sparse vector came from the text"
    );

    let filtered = ok(
        &server,
        &idx,
        "/query-data",
        json!({"data": "love", "filter": "topic = 'pets'", "topK": 5}),
    )
    .await;
    let ids: std::collections::BTreeSet<&str> = filtered
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["cats", "dogs"].into_iter().collect());

    let batch = ok(
        &server,
        &idx,
        "/query-data",
        json!([{"data": "programming language"}, {"data": "walks"}]),
    )
    .await;
    assert_eq!(batch[0][0]["id"], "rust");
    assert_eq!(batch[1][0]["id"], "dogs");
    let single = ok(&server, &idx, "/query-data", json!([{"data": "walks"}])).await;
    assert_eq!(single[0]["id"], "dogs", "a one-item batch answers a flat list");

    let resumable = ok(
        &server,
        &idx,
        "/resumable-query-data",
        json!({"data": "love", "topK": 1}),
    )
    .await;
    assert_eq!(resumable["scores"].as_array().unwrap().len(), 1);

    ok(
        &server,
        &idx,
        "/upsert-data/other",
        json!({"id": "n1", "data": "namespaced cats"}),
    )
    .await;
    let in_namespace = ok(&server, &idx, "/query-data/other", json!({"data": "cats"})).await;
    assert_eq!(in_namespace[0]["id"], "n1");

    let (status, error, _) = call(&server, &idx, "/upsert-data", json!({"id": "x"})).await;
    assert_eq!(
        (status, error["error"].clone()),
        (StatusCode::BAD_REQUEST, json!("data: is required"))
    );
}

#[tokio::test]
async fn idf_weighting_favours_rare_terms() {
    let server = TestServer::embedded().await;
    let idx = index(&server, json!({"name": "idf", "region": "us-east-1", "index_type": "SPARSE", "sparse_embedding_model": "BM25"})).await;
    // "common" is in every document; "rare" in one. Without IDF the document with "common" twice wins;
    // with IDF the one holding the rare term does.
    ok(
        &server,
        &idx,
        "/upsert",
        json!([
            {"id": "a", "sparseVector": {"indices": [1, 2], "values": [0.9, 0.1]}},
            {"id": "b", "sparseVector": {"indices": [1], "values": [1.0]}},
            {"id": "c", "sparseVector": {"indices": [1], "values": [0.8]}},
            {"id": "d", "sparseVector": {"indices": [1, 3], "values": [0.5, 0.6]}},
        ]),
    )
    .await;
    let query = json!({"sparseVector": {"indices": [1, 3], "values": [1.0, 1.0]}, "topK": 1});
    assert_eq!(ok(&server, &idx, "/query", query.clone()).await[0]["id"], "d");
    let plain = json!({"sparseVector": {"indices": [1, 2], "values": [1.0, 0.1]}, "topK": 1});
    assert_eq!(ok(&server, &idx, "/query", plain.clone()).await[0]["id"], "b");
    let mut weighted = plain;
    weighted["weightingStrategy"] = json!("IDF");
    assert_eq!(
        ok(&server, &idx, "/query", weighted).await[0]["id"],
        "a",
        "the rare dimension 2 outweighs the common 1"
    );
}
