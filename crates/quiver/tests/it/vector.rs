//! The vector REST API through real HTTP, with tokens from the management API.

use quiver_testkit::TestServer;
use quiver_testkit::calls::{VectorIndex, call, dense, ok, send_with_text as send};
use quiver_testkit::poll::until;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The index's info once the background indexer has no vector pending, as a client waits for it:
/// polled within the index's rate limit, for up to 30 s.
async fn info_once_indexed(server: &TestServer, idx: &VectorIndex) -> Value {
    until(
        "no vector pending",
        std::time::Duration::from_secs(30),
        || async {
            let info = ok(server, idx, "/info", Value::Null).await;
            (info["pendingVectorCount"] == 0).then_some(info)
        },
    )
    .await
}

#[tokio::test]
async fn upserted_vectors_are_queried_with_normalised_scores_and_requested_parts() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    let upserted = ok(
        &server,
        &idx,
        "/upsert",
        json!([
            {"id": "id-0", "vector": [0.1, 0.2], "metadata": {"kind": "a"}, "data": "zero"},
            {"id": 1, "vector": [0.2, 0.1]},
            {"id": "id-2", "vector": [-0.1, -0.2], "metadata": {"kind": "b"}},
        ]),
    )
    .await;
    assert_eq!(upserted, "Success");

    let (_, answer, text) = call(&server, &idx, "/query", json!({"vector": [0.1, 0.2], "topK": 2, "includeMetadata": true, "includeVectors": true, "includeData": true})).await;
    let hits = answer["result"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0]["id"], "id-0");
    assert_eq!(hits[0]["score"], 1.0, "an identical vector scores exactly 1");
    assert!(
        text.contains("[0.1,0.2]"),
        "floats print in their shortest f32 form: {text}"
    );
    assert_eq!(hits[0]["metadata"], json!({"kind": "a"}));
    assert_eq!(hits[0]["data"], "zero");
    assert_eq!(hits[1]["id"], "1", "numeric ids come back as strings");
    assert!(hits[1].get("metadata").is_none(), "absent metadata is omitted");
    let score = hits[1]["score"].as_f64().unwrap();
    assert!(
        (score - (1.0 + 0.8) / 2.0).abs() < 1e-6,
        "cosine (1 + 0.8) / 2, got {score}"
    );

    let bare = ok(&server, &idx, "/query", json!({"vector": [-0.1, -0.2]})).await;
    assert_eq!(bare.as_array().unwrap().len(), 3, "topK defaults to 10");
    assert_eq!(
        bare[0],
        json!({"id": "id-2", "score": 1.0}),
        "only id and score unless asked"
    );
    assert_eq!(bare[2]["score"], 0.0);
}

#[tokio::test]
async fn euclidean_and_dot_product_scores_follow_the_documented_formulas() {
    let server = TestServer::embedded().await;
    let euclid = dense(&server, "EUCLIDEAN", 2).await;
    ok(
        &server,
        &euclid,
        "/upsert",
        json!([{"id": "a", "vector": [1.0, 0.0]}]),
    )
    .await;
    let hits = ok(
        &server,
        &euclid,
        "/query",
        json!({"vector": [0.0, 1.0], "topK": 1}),
    )
    .await;
    assert!((hits[0]["score"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-6);
    let dot = dense(&server, "DOT_PRODUCT", 2).await;
    ok(
        &server,
        &dot,
        "/upsert",
        json!([{"id": "a", "vector": [0.6, 0.8]}]),
    )
    .await;
    let hits = ok(&server, &dot, "/query", json!({"vector": [0.8, 0.6], "topK": 1})).await;
    assert!((hits[0]["score"].as_f64().unwrap() - (1.0 + 0.96) / 2.0).abs() < 1e-6);
    let hits = ok(&server, &dot, "/query", json!({"vector": [0.6, 0.8], "topK": 1})).await;
    assert_eq!(hits[0]["score"], 1.0);
}

#[tokio::test]
async fn batch_queries_nest_only_for_two_or_more() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    ok(
        &server,
        &idx,
        "/upsert",
        json!([{"id": "a", "vector": [1.0, 0.0]}, {"id": "b", "vector": [0.0, 1.0]}]),
    )
    .await;
    let single = ok(
        &server,
        &idx,
        "/query",
        json!([{"vector": [1.0, 0.0], "topK": 1}]),
    )
    .await;
    assert_eq!(single[0]["id"], "a", "one element: a flat list");
    let many = ok(
        &server,
        &idx,
        "/query",
        json!([{"vector": [1.0, 0.0], "topK": 1}, {"vector": [0.0, 1.0], "topK": 2}]),
    )
    .await;
    assert_eq!(many[0].as_array().unwrap().len(), 1);
    assert_eq!(many[1][0]["id"], "b");
    assert_eq!(many[1].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn fetch_by_ids_or_prefix_and_never_both() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    ok(&server, &idx, "/upsert", json!([{"id": "doc-1", "vector": [1.0, 0.0], "metadata": {"n": 1}}, {"id": "doc-2", "vector": [0.0, 1.0]}, {"id": "x", "vector": [1.0, 1.0]}])).await;
    let fetched = ok(
        &server,
        &idx,
        "/fetch",
        json!({"ids": ["doc-2", "missing", "doc-1"], "includeMetadata": true}),
    )
    .await;
    assert_eq!(
        fetched,
        json!([{"id": "doc-2"}, null, {"id": "doc-1", "metadata": {"n": 1}}])
    );
    let by_prefix = ok(
        &server,
        &idx,
        "/fetch",
        json!({"prefix": "doc-", "includeVectors": true}),
    )
    .await;
    assert_eq!(
        by_prefix,
        json!([{"id": "doc-1", "vector": [1.0, 0.0]}, {"id": "doc-2", "vector": [0.0, 1.0]}])
    );
    let (status, error, _) = call(&server, &idx, "/fetch", json!({"ids": ["x"], "prefix": "d"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        error,
        json!({"error": "Only one of ids or prefix must be provided.", "status": 400})
    );
}

#[tokio::test]
async fn range_pages_through_every_vector_in_insertion_order() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    let vectors: Vec<Value> = (0..20)
        .map(|i| json!({"id": format!("id-{i}"), "vector": [1.0, i as f32]}))
        .collect();
    ok(&server, &idx, "/upsert", Value::Array(vectors)).await;
    let mut seen = Vec::new();
    let mut cursor = json!("");
    loop {
        let page = ok(
            &server,
            &idx,
            "/range",
            json!({"cursor": cursor, "limit": 6, "includeVectors": false}),
        )
        .await;
        seen.extend(
            page["vectors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["id"].as_str().unwrap().to_owned()),
        );
        cursor = page["nextCursor"].clone();
        if cursor == "" {
            break;
        }
    }
    let expected: Vec<String> = (0..20).map(|i| format!("id-{i}")).collect();
    assert_eq!(seen, expected);
    let first = ok(
        &server,
        &idx,
        "/range",
        json!({"cursor": "0", "limit": 4, "prefix": "id-1"}),
    )
    .await;
    let ids: Vec<&str> = first["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["id-1", "id-10", "id-11", "id-12"]);
    assert_eq!(
        first["nextCursor"], "4",
        "cursors count from 0, among the prefix's vectors"
    );
    let second = ok(
        &server,
        &idx,
        "/range",
        json!({"cursor": "4", "limit": 100, "prefix": "id-1"}),
    )
    .await;
    assert_eq!(second["vectors"][0]["id"], "id-13");
    assert_eq!(second["nextCursor"], "");
    let page = ok(&server, &idx, "/range", json!({"cursor": 0, "limit": 5})).await;
    assert_eq!(page["nextCursor"], "5");
}

#[tokio::test]
async fn delete_by_ids_prefix_or_filter_counts_what_existed() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    let vectors: Vec<Value> = (0..6)
        .map(|i| json!({"id": format!("v{i}"), "vector": [1.0, i as f32], "metadata": {"n": i}}))
        .collect();
    ok(&server, &idx, "/upsert", Value::Array(vectors)).await;
    assert_eq!(
        ok(&server, &idx, "/delete", json!({"ids": ["v0", "v0", "missing"]})).await,
        json!({"deleted": 1})
    );
    assert_eq!(
        ok(&server, &idx, "/delete", json!({"filter": "n >= 4"})).await,
        json!({"deleted": 2})
    );
    assert_eq!(
        ok(&server, &idx, "/delete", json!({"prefix": "v1"})).await,
        json!({"deleted": 1})
    );
    let (status, error, _) = call(&server, &idx, "/delete", json!({"ids": ["v2"], "prefix": "v"})).await;
    assert_eq!(
        (status, error["error"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("Only and only one of the ids, prefix, or filter must be provided.")
        )
    );
    let left = ok(&server, &idx, "/range", json!({"cursor": "", "limit": 10})).await;
    let ids: Vec<&str> = left["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["v2", "v3"]);
}

#[tokio::test]
async fn filters_select_results_and_a_bad_filter_names_its_position() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    ok(&server, &idx, "/upsert", json!([
        {"id": "tr", "vector": [1.0, 0.0], "metadata": {"country": "Turkey", "industries": ["Tourism"], "pop": 15}},
        {"id": "de", "vector": [1.0, 0.1], "metadata": {"country": "Germany", "industries": ["Steel"], "pop": 3}},
    ])).await;
    let hits = ok(
        &server,
        &idx,
        "/query",
        json!({"vector": [1.0, 0.1], "filter": "industries CONTAINS 'Tourism' AND pop > 10"}),
    )
    .await;
    assert_eq!(hits.as_array().unwrap().len(), 1);
    assert_eq!(hits[0]["id"], "tr");
    let (status, error, _) = call(
        &server,
        &idx,
        "/query",
        json!({"vector": [1.0, 0.0], "filter": "country = 'x' AND"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        error["error"].as_str().unwrap().contains("position 18"),
        "{error}"
    );
}

#[tokio::test]
async fn update_overwrites_or_patches_and_reports_missing_ids() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    ok(&server, &idx, "/upsert", json!([{"id": "u", "vector": [1.0, 0.0], "metadata": {"field": "value", "field2": "value2"}, "data": "old"}])).await;
    let patched = ok(&server, &idx, "/update", json!({"id": "u", "metadata": {"new_field": "new_value", "field2": null}, "metadataUpdateMode": "PATCH"})).await;
    assert_eq!(patched, json!({"updated": 1}));
    let fetched = ok(
        &server,
        &idx,
        "/fetch",
        json!({"ids": ["u"], "includeMetadata": true, "includeData": true}),
    )
    .await;
    assert_eq!(
        fetched[0]["metadata"],
        json!({"field": "value", "new_field": "new_value"})
    );
    ok(
        &server,
        &idx,
        "/update",
        json!({"id": "u", "vector": [0.0, 1.0], "data": "new", "metadata": {"only": 1}}),
    )
    .await;
    let fetched = ok(
        &server,
        &idx,
        "/fetch",
        json!({"ids": ["u"], "includeMetadata": true, "includeData": true, "includeVectors": true}),
    )
    .await;
    assert_eq!(
        fetched[0],
        json!({"id": "u", "vector": [0.0, 1.0], "metadata": {"only": 1}, "data": "new"})
    );
    assert_eq!(
        ok(&server, &idx, "/update", json!({"id": "nope", "data": "x"})).await,
        json!({"updated": 0})
    );
    let (status, error, _) = call(&server, &idx, "/update", json!({"id": "u", "vector": [1.0]})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    // The updated vector reaches the graph without another write to wake the indexer.
    info_once_indexed(&server, &idx).await;
}

#[tokio::test]
async fn namespaces_are_created_on_write_listed_counted_renamed_reset_and_deleted() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    ok(
        &server,
        &idx,
        "/upsert/ns1",
        json!({"id": "a", "vector": [1.0, 0.0]}),
    )
    .await;
    ok(&server, &idx, "/upsert", json!({"id": "b", "vector": [1.0, 0.0]})).await;
    ok(
        &server,
        &idx,
        "/upsert/ns2",
        json!([{"id": "c", "vector": [1.0, 0.0]}, {"id": "d", "vector": [0.0, 1.0]}]),
    )
    .await;
    let (status, listed, _) = send(server.vector(&idx.token, Method::GET, "/list-namespaces")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["result"], json!(["", "ns1", "ns2"]));
    let hits = ok(
        &server,
        &idx,
        "/query/ns2",
        json!({"vector": [0.0, 1.0], "topK": 5}),
    )
    .await;
    assert_eq!(
        hits.as_array().unwrap().len(),
        2,
        "queries stay inside their namespace"
    );

    // Indexing runs in the background, so a client waits for it before reading counts that
    // say nothing is pending.
    info_once_indexed(&server, &idx).await;
    let (_, info, _) = send(server.vector(&idx.token, Method::GET, "/info")).await;
    let info = &info["result"];
    assert_eq!(info["vectorCount"], 4);
    assert_eq!(info["pendingVectorCount"], 0);
    assert_eq!(info["dimension"], 2);
    assert_eq!(info["similarityFunction"], "COSINE");
    assert_eq!(info["indexType"], "DENSE");
    assert_eq!(
        info["denseIndex"],
        json!({"dimension": 2, "similarityFunction": "COSINE", "embeddingModel": ""})
    );
    assert!(info.get("sparseIndex").is_none());
    assert_eq!(
        info["namespaces"]["ns2"],
        json!({"vectorCount": 2, "pendingVectorCount": 0})
    );
    assert!(info["indexSize"].is_u64());

    assert_eq!(
        ok(
            &server,
            &idx,
            "/rename-namespace",
            json!({"namespace": "ns1", "newNamespace": "renamed"})
        )
        .await,
        json!({"renamed": true})
    );
    let (status, _, _) = call(
        &server,
        &idx,
        "/rename-namespace",
        json!({"namespace": "renamed", "newNamespace": "ns2"}),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "an existing target needs deleteExisting"
    );
    ok(&server, &idx, "/reset/ns2", Value::Null).await;
    let (_, info, _) = send(server.vector(&idx.token, Method::POST, "/info").body("[]")).await;
    assert_eq!(
        info["result"]["namespaces"]["ns2"]["vectorCount"], 0,
        "reset empties but keeps the namespace"
    );
    assert_eq!(
        ok(&server, &idx, "/delete-namespace/renamed", Value::Null).await,
        "Success"
    );
    let (status, error, _) =
        send(server.vector(&idx.token, Method::DELETE, "/delete-namespace/renamed")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error["error"], "Namespace renamed for the index v does not exist");
    let (status, _, _) = send(server.vector(&idx.token, Method::DELETE, "/reset?all")).await;
    assert_eq!(status, StatusCode::OK);
    let (_, info, _) = send(server.vector(&idx.token, Method::PUT, "/info").body("{}")).await;
    assert_eq!(info["result"]["vectorCount"], 0);
}

#[tokio::test]
async fn wrong_dimensions_are_422_with_the_wire_message() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 3).await;
    let (status, error, _) = call(&server, &idx, "/upsert", json!({"id": "a", "vector": [0.1, 0.2]})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        error,
        json!({"error": "Invalid vector dimension: 2, expected: 3", "status": 422})
    );
    let (status, _, _) = call(&server, &idx, "/query", json!({"vector": [0.1]})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, error, _) = call(&server, &idx, "/upsert", json!({"id": "a"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    let (status, error, _) = call(&server, &idx, "/upsert", json!({"vector": [1, 2, 3]})).await;
    assert_eq!(
        (status, error["error"].clone()),
        (StatusCode::BAD_REQUEST, json!("id: is required"))
    );
    let (status, _, _) = call(&server, &idx, "/upsert-data", json!({"id": "a", "data": "text"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, error, _) = call(&server, &idx, "/query-data", json!({"data": "text"})).await;
    assert_eq!(
        error["error"],
        "Embedding data for this index is not allowed. The index must be created with an embedding model to use it."
    );
}

#[tokio::test]
async fn tokens_decide_access_and_the_read_only_token_only_reads() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    ok(&server, &idx, "/upsert", json!({"id": "a", "vector": [1.0, 0.0]})).await;
    for (token, what) in [(None, "none"), (Some("wrong"), "wrong")] {
        let mut request = server
            .client()
            .post(server.url("/query"))
            .json(&json!({"vector": [1.0, 0.0]}));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let (status, error, _) = send(request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}");
        assert_eq!(
            error,
            json!({"error": "Unauthorized: Invalid auth token", "status": 401})
        );
    }
    let reader =
        |path: &str, body: Value| send(server.vector(&idx.read_only, Method::POST, path).json(&body));
    for (path, body) in [
        ("/query", json!({"vector": [1.0, 0.0]})),
        ("/fetch", json!({"ids": ["a"]})),
        ("/range", json!({"cursor": "", "limit": 1})),
        ("/info", Value::Null),
        ("/list-namespaces", Value::Null),
    ] {
        let (status, _, text) = reader(path, body).await;
        assert_eq!(status, StatusCode::OK, "{path}: {text}");
    }
    for (path, body) in [
        ("/upsert", json!({"id": "b", "vector": [1.0, 0.0]})),
        ("/update", json!({"id": "a", "data": "x"})),
        ("/delete", json!({"ids": ["a"]})),
        ("/reset", Value::Null),
        ("/delete-namespace/x", Value::Null),
        (
            "/rename-namespace",
            json!({"namespace": "a", "newNamespace": "b"}),
        ),
    ] {
        let (status, error, _) = reader(path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(error["status"], 403);
        assert!(error["error"].as_str().unwrap().starts_with("Forbidden"));
    }
    let (_, fetched, _) = reader("/fetch", json!({"ids": ["a", "b"]})).await;
    assert_eq!(
        fetched["result"],
        json!([{"id": "a"}, null]),
        "nothing was written"
    );

    let (status, _, text) = send(
        server
            .vector(
                &idx.token,
                Method::POST,
                &format!("/vector/{}/query", idx.endpoint),
            )
            .json(&json!({"vector": [1.0, 0.0]})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the explicit /vector/{{endpoint}} prefix works: {text}"
    );
    let (status, _, _) = send(
        server
            .vector(&idx.token, Method::POST, "/vector/someone-else-1/query")
            .json(&json!({"vector": [1.0, 0.0]})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn resumable_queries_continue_where_they_stopped_until_ended() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "EUCLIDEAN", 1).await;
    let vectors: Vec<Value> = (0..6)
        .map(|i| json!({"id": format!("p{i}"), "vector": [i as f32]}))
        .collect();
    ok(&server, &idx, "/upsert", Value::Array(vectors)).await;
    let started = ok(
        &server,
        &idx,
        "/resumable-query",
        json!({"vector": [0.0], "topK": 2, "maxIdle": 60}),
    )
    .await;
    let uuid = started["uuid"].as_str().unwrap().to_owned();
    let first: Vec<&str> = started["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(first, ["p0", "p1"]);
    let next = ok(
        &server,
        &idx,
        "/resumable-query-next",
        json!({"uuid": uuid, "additionalK": 3}),
    )
    .await;
    let ids: Vec<&str> = next
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["p2", "p3", "p4"]);
    // A page is held to the plan's reads per request, as a query's topK is; the query goes on.
    let (status, error, _) = call(
        &server,
        &idx,
        "/resumable-query-next",
        json!({"uuid": uuid, "additionalK": 407_394_508_497_208_u64}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("additionalK may be at most 1000"),
        "{error}"
    );
    // A page past what the index holds returns the rest.
    let rest = ok(
        &server,
        &idx,
        "/resumable-query-next",
        json!({"uuid": uuid, "additionalK": 1_000}),
    )
    .await;
    assert_eq!(rest.as_array().unwrap().len(), 1, "{rest}");
    assert_eq!(rest[0]["id"], "p5");
    assert_eq!(
        ok(&server, &idx, "/resumable-query-end", json!({"uuid": uuid})).await,
        "Success"
    );
    let (status, _, _) = call(
        &server,
        &idx,
        "/resumable-query-next",
        json!({"uuid": uuid, "additionalK": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _, _) = call(&server, &idx, "/resumable-query-end", json!({"uuid": uuid})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn plan_limits_bound_reads_and_writes_per_request() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    let (status, error, _) = call(
        &server,
        &idx,
        "/query",
        json!({"vector": [1.0, 0.0], "topK": 5000}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["error"].as_str().unwrap().contains("topK"), "{error}");
    let many: Vec<Value> = (0..1001)
        .map(|i| json!({"id": i, "vector": [1.0, 0.0]}))
        .collect();
    let (status, error, _) = call(&server, &idx, "/upsert", Value::Array(many)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    let (_, info, _) = call(&server, &idx, "/info", Value::Null).await;
    assert_eq!(
        info["result"]["vectorCount"], 0,
        "nothing past the limit was written"
    );
}

#[tokio::test]
async fn vectors_survive_a_restart_and_go_with_their_index() {
    let mut server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    ok(&server, &idx, "/upsert/ns", json!([{"id": "kept", "vector": [0.5, 0.5], "metadata": {"m": 1}, "data": "d"}, {"id": "gone", "vector": [1.0, 0.0]}])).await;
    ok(&server, &idx, "/delete/ns", json!({"ids": ["gone"]})).await;
    server.restart().await;
    let hits = ok(
        &server,
        &idx,
        "/query/ns",
        json!({"vector": [0.5, 0.5], "includeMetadata": true, "includeData": true}),
    )
    .await;
    assert_eq!(
        hits,
        json!([{"id": "kept", "score": 1.0, "metadata": {"m": 1}, "data": "d"}])
    );
    let (status, _) = (
        server
            .management(Method::DELETE, &format!("/v2/vector/index/{}", idx.id))
            .send()
            .await
            .unwrap()
            .status(),
        (),
    );
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = call(&server, &idx, "/info", Value::Null).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a deleted index's token stops working"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upserts_that_arrive_together_are_written_together_and_each_is_kept() {
    use crate::operations::{metrics_page, sample};

    let mut server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    let commits =
        |page: &str| sample(page, "quiver_store_commit_writes_count{database=\"vectors.db\"}").unwrap_or(0.0);
    let before = commits(&metrics_page(&server).await);
    // 80 clients upsert one vector each at once: v0 to v63, and v0 to v15 again with metadata.
    let mut clients = Vec::new();
    for i in 0..80 {
        let request = server
            .vector(&idx.token, Method::POST, "/upsert")
            .json(&if i < 64 {
                json!({"id": format!("v{i}"), "vector": [1.0, i as f32]})
            } else {
                json!({"id": format!("v{}", i - 64), "vector": [1.0, (i - 64) as f32], "metadata": {"again": true}})
            });
        clients.push(tokio::spawn(
            async move { request.send().await.unwrap().status() },
        ));
    }
    for client in clients {
        assert_eq!(client.await.unwrap(), StatusCode::OK);
    }
    let written = commits(&metrics_page(&server).await) - before;
    assert!(
        written < 40.0,
        "80 upserts arriving together took {written} commits of the vector store"
    );
    let info = ok(&server, &idx, "/info", Value::Null).await;
    assert_eq!(info["vectorCount"], 64);
    server.restart().await;
    let page = ok(
        &server,
        &idx,
        "/range",
        json!({"cursor": "", "limit": 100, "includeMetadata": true}),
    )
    .await;
    let mut ids: Vec<String> = page["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    let mut expected: Vec<String> = (0..64).map(|i| format!("v{i}")).collect();
    expected.sort();
    assert_eq!(ids, expected, "every acknowledged upsert is stored, each id once");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_vectors_are_queryable_at_once_and_the_graph_catches_up() {
    let server = TestServer::embedded().await;
    let idx = dense(&server, "COSINE", 2).await;
    for batch in 0..3 {
        let vectors: Vec<Value> = (0..1000)
            .map(|i| {
                let angle = (batch * 1000 + i) as f32 * 0.0005;
                json!({"id": format!("v{}", batch * 1000 + i), "vector": [angle.cos(), angle.sin()]})
            })
            .collect();
        ok(&server, &idx, "/upsert", Value::Array(vectors)).await;
    }
    let hits = ok(&server, &idx, "/query", json!({"vector": [1.0, 0.0], "topK": 3})).await;
    let ids: Vec<&str> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["v0", "v1", "v2"]);
    // Every acknowledged vector is counted while the graph catches up, pending or not.
    until(
        "the background indexer draining the pending vectors",
        std::time::Duration::from_secs(30),
        || async {
            let info = ok(&server, &idx, "/info", Value::Null).await;
            assert_eq!(info["vectorCount"], 3000);
            (info["pendingVectorCount"] == 0).then_some(())
        },
    )
    .await;
    let hits = ok(&server, &idx, "/query", json!({"vector": [1.0, 0.0], "topK": 3})).await;
    let ids: Vec<&str> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["v0", "v1", "v2"], "the graph answers the same");
}
