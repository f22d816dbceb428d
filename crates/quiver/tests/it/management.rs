//! The management API through real HTTP: every endpoint, its auth failures, its validation errors,
//! envelopes, and isolation between accounts.

use quiver_core::Clock;
use quiver_testkit::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.expect("the server answers");
    let status = response.status();
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("a JSON body, got {text:?} ({status})"));
    (status, body)
}

fn dense_index(name: &str) -> Value {
    json!({"name": name, "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 384})
}

async fn create_vector_index(server: &TestServer, body: Value) -> Value {
    let (status, created) = send(server.management(Method::POST, "/v2/vector/index").json(&body)).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    created
}

#[tokio::test]
async fn a_vector_index_is_created_with_every_record_field_and_read_back() {
    let server = TestServer::embedded().await;
    let created = create_vector_index(&server, dense_index("docs")).await;
    let id = created["id"].as_str().unwrap();
    assert_eq!(id.len(), 36, "a UUID");
    assert_eq!(created["name"], "docs");
    assert_eq!(created["customer_id"], server.account().email.as_str());
    assert_eq!(created["similarity_function"], "COSINE");
    assert_eq!(created["dimension_count"], 384);
    assert_eq!(created["index_type"], "DENSE");
    assert_eq!(created["embedding_model"], "");
    assert_eq!(created["type"], "free");
    assert_eq!(created["region"], "us-east-1");
    assert_eq!(created["max_daily_queries"], 10_000);
    assert_eq!(created["max_vector_count"], 200_000);
    assert!(created["throughput_vector"].is_array());
    let endpoint = created["endpoint"].as_str().unwrap();
    assert_eq!(
        endpoint.split('-').count(),
        3,
        "a readable endpoint name: {endpoint}"
    );
    let token = created["token"].as_str().unwrap();
    assert!(token.len() >= 40 && token != created["read_only_token"].as_str().unwrap());
    let created_at = created["creation_time"].as_i64().unwrap();
    let now_secs = server.clock().now().as_secs();
    assert!(
        (now_secs - 5..=now_secs).contains(&created_at),
        "creation_time is unix seconds"
    );

    let (status, fetched) = send(server.management(Method::GET, &format!("/v2/vector/index/{id}"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(fetched, created);
    let (_, listed) = send(server.management(Method::GET, "/v2/vector/index")).await;
    assert_eq!(listed, json!([created]));
}

#[tokio::test]
async fn hosted_models_set_the_dimension_and_hybrid_and_sparse_indexes_are_accepted() {
    let server = TestServer::embedded().await;
    let minilm = create_vector_index(
        &server,
        json!({"name": "minilm", "region": "eu-west-1", "similarity_function": "DOT_PRODUCT",
               "embedding_model": "ALL_MINILM_L6_V2", "type": "paid"}),
    )
    .await;
    assert_eq!(
        (minilm["dimension_count"].clone(), minilm["type"].clone()),
        (json!(384), json!("payg"))
    );
    assert_eq!(minilm["max_daily_queries"], -1);
    // A model whose files are not installed (the tests install only all-MiniLM-L6-v2) is a 400 that
    // says how to install it.
    let (status, error) = send(server.management(Method::POST, "/v2/vector/index").json(&json!(
        {"name": "bge", "region": "eu-west-1", "similarity_function": "COSINE", "embedding_model": "BGE_BASE_EN_V1_5"}
    )))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let message = error["error"].as_str().unwrap();
    assert!(message.starts_with("embedding_model: "), "{message}");
    assert!(
        message.contains("quiver models pull BGE_BASE_EN_V1_5"),
        "{message}"
    );
    let hybrid = create_vector_index(
        &server,
        json!({"name": "hy", "region": "us-central1", "similarity_function": "COSINE", "dimension_count": 384,
               "embedding_model": "ALL_MINILM_L6_V2", "index_type": "HYBRID", "sparse_embedding_model": "BM25",
               "type": "fixed"}),
    )
    .await;
    assert_eq!(hybrid["index_type"], "HYBRID");
    assert_eq!(hybrid["sparse_embedding_model"], "BM25");
    assert_eq!(hybrid["reserved_price"], 60.0);
    let sparse = create_vector_index(
        &server,
        json!({"name": "sp", "region": "us-east-1", "index_type": "SPARSE", "sparse_embedding_model": "BM25"}),
    )
    .await;
    assert_eq!(sparse["dimension_count"], 0);
}

#[tokio::test]
async fn invalid_vector_index_requests_are_400s_naming_the_field() {
    let server = TestServer::embedded().await;
    let cases = [
        (
            json!({"region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3}),
            "name",
        ),
        (
            json!({"name": "x", "similarity_function": "COSINE", "dimension_count": 3}),
            "region",
        ),
        (
            json!({"name": "x", "region": "mars", "similarity_function": "COSINE", "dimension_count": 3}),
            "region",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "HAMMING", "dimension_count": 3}),
            "similarity_function",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "COSINE"}),
            "dimension_count",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": "big"}),
            "dimension_count",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 2000}),
            "dimension_count",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3, "type": "pro"}),
            "type",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3, "index_type": "DEEP"}),
            "index_type",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3, "embedding_model": "GPT"}),
            "embedding_model",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3, "embedding_model": "BGE_SMALL_EN_V1_5"}),
            "dimension_count",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3, "sparse_embedding_model": "BM25"}),
            "sparse_embedding_model",
        ),
        (
            json!({"name": "x", "region": "us-east-1", "similarity_function": "COSINE", "embedding_model": "BGE_M3"}),
            "embedding_model",
        ),
        (
            json!({"name": "   ", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3}),
            "name",
        ),
    ];
    for (body, field) in cases {
        let (status, error) = send(server.management(Method::POST, "/v2/vector/index").json(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} -> {error}");
        let message = error["error"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{field}:")),
            "{body}: message {message:?} should name {field}"
        );
    }
    let (_, listed) = send(server.management(Method::GET, "/v2/vector/index")).await;
    assert_eq!(listed, json!([]), "nothing was stored");
}

#[tokio::test]
async fn malformed_bodies_are_json_400s_whatever_the_content_type() {
    let server = TestServer::embedded().await;
    let request = |body: &'static str| {
        server
            .management(Method::POST, "/v2/vector/index")
            .header("content-type", "text/plain")
            .body(body)
    };
    let (status, error) = send(request("{not json")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["error"].as_str().unwrap().contains("not valid JSON"));
    let (status, error) = send(request("")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["error"].as_str().unwrap().contains("empty"));
    let (status, _) = send(request("[1, 2]")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // A valid body without a JSON content type is accepted (SDKs and curl differ).
    let (status, _) = send(
        server
            .management(Method::POST, "/v2/vector/index")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(dense_index("plain").to_string()),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn rename_reset_password_and_setplan_change_the_record() {
    let server = TestServer::embedded().await;
    let created = create_vector_index(&server, dense_index("before")).await;
    let id = created["id"].as_str().unwrap();
    let path = |suffix: &str| format!("/v2/vector/index/{id}{suffix}");

    let (status, body) = send(
        server
            .management(Method::POST, &path("/rename"))
            .json(&json!({"name": "after"})),
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, json!("OK")));
    let (status, body) = send(server.management(Method::POST, &path("/reset-password"))).await;
    assert_eq!((status, body), (StatusCode::OK, json!("OK")));
    let (status, body) = send(
        server
            .management(Method::POST, &path("/setplan"))
            .json(&json!({"target_plan": "fixed"})),
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, json!("OK")));

    let (_, after) = send(server.management(Method::GET, &path(""))).await;
    assert_eq!(after["name"], "after");
    assert_eq!(after["type"], "fixed");
    assert_eq!(after["max_daily_queries"], 1_000_000);
    assert_ne!(after["token"], created["token"]);
    assert_ne!(after["read_only_token"], created["read_only_token"]);
    assert_eq!(after["endpoint"], created["endpoint"]);

    let (status, error) = send(
        server
            .management(Method::POST, &path("/setplan"))
            .json(&json!({"target_plan": "gold"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(error["error"].as_str().unwrap().starts_with("target_plan:"));
    let (status, error) = send(server.management(Method::POST, &path("/rename")).json(&json!({}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error["error"], "name: is required");
}

#[tokio::test]
async fn a_large_index_cannot_move_to_a_plan_whose_dimension_limit_it_exceeds() {
    let server = TestServer::embedded().await;
    let mut body = dense_index("big");
    body["dimension_count"] = json!(3072);
    body["type"] = json!("payg");
    let created = create_vector_index(&server, body).await;
    let path = format!("/v2/vector/index/{}/setplan", created["id"].as_str().unwrap());
    let (status, error) = send(
        server
            .management(Method::POST, &path)
            .json(&json!({"target_plan": "free"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    let (_, after) = send(server.management(
        Method::GET,
        &format!("/v2/vector/index/{}", created["id"].as_str().unwrap()),
    ))
    .await;
    assert_eq!(after["type"], "payg", "the plan did not change");
}

#[tokio::test]
async fn deleting_an_index_removes_it_and_a_second_delete_is_404() {
    let server = TestServer::embedded().await;
    let created = create_vector_index(&server, dense_index("doomed")).await;
    let path = format!("/v2/vector/index/{}", created["id"].as_str().unwrap());
    let (status, body) = send(server.management(Method::DELETE, &path)).await;
    assert_eq!((status, body), (StatusCode::OK, json!("OK")));
    let (status, error) = send(server.management(Method::GET, &path)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(error["error"].as_str().unwrap().contains("not found"));
    let (status, _) = send(server.management(Method::DELETE, &path)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn unknown_and_malformed_ids_are_404_on_every_index_route() {
    let server = TestServer::embedded().await;
    for id in ["00000000-0000-4000-8000-000000000000", "not-a-uuid"] {
        for (method, suffix, body) in [
            (Method::GET, "", json!(null)),
            (Method::DELETE, "", json!(null)),
            (Method::POST, "/rename", json!({"name": "x"})),
            (Method::POST, "/reset-password", json!(null)),
            (Method::POST, "/setplan", json!({"target_plan": "payg"})),
        ] {
            let path = format!("/v2/vector/index/{id}{suffix}");
            let (status, error) = send(server.management(method.clone(), &path).json(&body)).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
            assert!(error["error"].is_string());
        }
        for (method, suffix) in [
            (Method::GET, ""),
            (Method::DELETE, ""),
            (Method::POST, "/reset-password"),
        ] {
            let path = format!("/v2/search/{id}{suffix}");
            let (status, _) = send(server.management(method.clone(), &path)).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
        }
    }
}

#[tokio::test]
async fn search_indexes_are_created_listed_renamed_reset_and_deleted() {
    let server = TestServer::embedded().await;
    let body = json!({"name": "articles", "region": "us-central1", "type": "payg"});
    let (status, created) = send(server.management(Method::POST, "/v2/search").json(&body)).await;
    assert_eq!(status, StatusCode::OK, "{created}");
    for field in [
        "customer_id",
        "id",
        "name",
        "endpoint",
        "type",
        "region",
        "integration_email",
        "token",
        "read_only_token",
        "max_vector_count",
        "max_monthly_reranks",
        "max_daily_updates",
        "max_daily_queries",
        "max_monthly_bandwidth",
        "max_writes_per_second",
        "max_query_per_second",
        "max_reads_per_request",
        "max_writes_per_request",
        "creation_time",
        "input_enrichment_enabled",
        "throughput_vector",
    ] {
        assert!(
            created.get(field).is_some(),
            "search index record lacks {field}: {created}"
        );
    }
    assert_eq!(created["integration_email"], "");
    assert_eq!(created["type"], "payg");
    assert_eq!(created["max_monthly_reranks"], -1);
    let id = created["id"].as_str().unwrap();

    let (_, listed) = send(server.management(Method::GET, "/v2/search")).await;
    assert_eq!(listed, json!([created.clone()]));
    let (_, vectors) = send(server.management(Method::GET, "/v2/vector/index")).await;
    assert_eq!(vectors, json!([]), "search indexes are not vector indexes");
    let (status, _) = send(server.management(Method::GET, &format!("/v2/vector/index/{id}"))).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a search index is not found among vector indexes"
    );

    let (status, _) = send(
        server
            .management(Method::POST, &format!("/v2/search/{id}/rename"))
            .json(&json!({"name": "posts"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(server.management(Method::POST, &format!("/v2/search/{id}/reset-password"))).await;
    assert_eq!(status, StatusCode::OK);
    let (_, after) = send(server.management(Method::GET, &format!("/v2/search/{id}"))).await;
    assert_eq!(after["name"], "posts");
    assert_ne!(after["token"], created["token"]);

    let (status, body) = send(server.management(Method::DELETE, &format!("/v2/search/{id}"))).await;
    assert_eq!((status, body), (StatusCode::OK, json!("OK")));
    let (_, listed) = send(server.management(Method::GET, "/v2/search")).await;
    assert_eq!(listed, json!([]));
}

#[tokio::test]
async fn invalid_search_index_requests_are_400s_naming_the_field() {
    let server = TestServer::embedded().await;
    for (body, field) in [
        (json!({"region": "eu-west-1", "type": "free"}), "name"),
        (
            json!({"name": "s", "region": "us-east-1", "type": "free"}),
            "region",
        ),
        (json!({"name": "s", "type": "free"}), "region"),
        (json!({"name": "s", "region": "eu-west-1"}), "type"),
        (
            json!({"name": "s", "region": "eu-west-1", "type": "platinum"}),
            "type",
        ),
    ] {
        let (status, error) = send(server.management(Method::POST, "/v2/search").json(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            error["error"].as_str().unwrap().starts_with(&format!("{field}:")),
            "{body}: {error}"
        );
    }
}

#[tokio::test]
async fn every_management_route_requires_valid_basic_credentials() {
    let server = TestServer::embedded().await;
    let created = create_vector_index(&server, dense_index("guarded")).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let routes = [
        (Method::GET, "/v2/vector/index".to_owned()),
        (Method::POST, "/v2/vector/index".to_owned()),
        (Method::GET, format!("/v2/vector/index/{id}")),
        (Method::DELETE, format!("/v2/vector/index/{id}")),
        (Method::POST, format!("/v2/vector/index/{id}/rename")),
        (Method::POST, format!("/v2/vector/index/{id}/reset-password")),
        (Method::POST, format!("/v2/vector/index/{id}/setplan")),
        (Method::POST, format!("/v2/vector/index/{id}/transfer")),
        (Method::GET, "/v2/search".to_owned()),
        (Method::POST, "/v2/search".to_owned()),
        (Method::GET, format!("/v2/search/{id}")),
        (Method::DELETE, format!("/v2/search/{id}")),
        (Method::POST, format!("/v2/search/{id}/rename")),
        (Method::POST, format!("/v2/search/{id}/reset-password")),
        (Method::POST, format!("/v2/search/{id}/transfer")),
    ];
    let email = server.account().email.as_str().to_owned();
    for (method, path) in routes {
        let client = server.client();
        let attempts = [
            (
                "no credentials",
                client.request(method.clone(), server.url(&path)),
            ),
            (
                "wrong key",
                client
                    .request(method.clone(), server.url(&path))
                    .basic_auth(&email, Some("wrong")),
            ),
            (
                "unknown email",
                client
                    .request(method.clone(), server.url(&path))
                    .basic_auth("x@y.z", Some("k")),
            ),
            (
                "bearer",
                client
                    .request(method.clone(), server.url(&path))
                    .bearer_auth(created["token"].as_str().unwrap()),
            ),
            (
                "garbage",
                client
                    .request(method.clone(), server.url(&path))
                    .header("authorization", "Basic %%%"),
            ),
        ];
        for (what, request) in attempts {
            let response = request.json(&dense_index("sneaky")).send().await.unwrap();
            assert_eq!(
                response.status(),
                StatusCode::UNAUTHORIZED,
                "{what}: {method} {path}"
            );
            assert!(response.headers().contains_key("www-authenticate"));
            let body: Value = response.json().await.unwrap();
            assert!(
                body["error"].as_str().unwrap().starts_with("Unauthorized"),
                "{body}"
            );
        }
    }
    let (_, listed) = send(server.management(Method::GET, "/v2/vector/index")).await;
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "no unauthenticated request changed anything"
    );
}

#[tokio::test]
async fn one_account_never_sees_changes_or_deletes_another_accounts_indexes() {
    let server = TestServer::embedded().await;
    let other = server.create_account("other@example.com").await;
    let mine = create_vector_index(&server, dense_index("mine")).await;
    let (_, my_search) = send(
        server
            .management(Method::POST, "/v2/search")
            .json(&json!({"name": "s", "region": "eu-west-1", "type": "free"})),
    )
    .await;
    let (status, theirs) = send(
        server
            .management_as(&other, Method::POST, "/v2/vector/index")
            .json(&dense_index("theirs")),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(theirs["customer_id"], "other@example.com");

    let (_, listed) = send(server.management_as(&other, Method::GET, "/v2/vector/index")).await;
    assert_eq!(listed, json!([theirs]));
    let (_, listed) = send(server.management_as(&other, Method::GET, "/v2/search")).await;
    assert_eq!(listed, json!([]));

    let id = mine["id"].as_str().unwrap();
    let search_id = my_search["id"].as_str().unwrap();
    for (method, path, body) in [
        (Method::GET, format!("/v2/vector/index/{id}"), json!(null)),
        (
            Method::POST,
            format!("/v2/vector/index/{id}/rename"),
            json!({"name": "stolen"}),
        ),
        (
            Method::POST,
            format!("/v2/vector/index/{id}/reset-password"),
            json!(null),
        ),
        (
            Method::POST,
            format!("/v2/vector/index/{id}/setplan"),
            json!({"target_plan": "fixed"}),
        ),
        (
            Method::POST,
            format!("/v2/vector/index/{id}/transfer"),
            json!({"target_account": "other@example.com"}),
        ),
        (Method::DELETE, format!("/v2/vector/index/{id}"), json!(null)),
        (Method::GET, format!("/v2/search/{search_id}"), json!(null)),
        (Method::DELETE, format!("/v2/search/{search_id}"), json!(null)),
    ] {
        let (status, _) = send(server.management_as(&other, method.clone(), &path).json(&body)).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{method} {path} by another account"
        );
    }
    let (_, unchanged) = send(server.management(Method::GET, &format!("/v2/vector/index/{id}"))).await;
    assert_eq!(unchanged, mine);
    let (_, unchanged) = send(server.management(Method::GET, &format!("/v2/search/{search_id}"))).await;
    assert_eq!(unchanged, my_search);
}

#[tokio::test]
async fn an_index_transferred_to_another_account_moves_with_its_tokens() {
    let server = TestServer::embedded().await;
    let other = server.create_account("heir@example.com").await;
    let created = create_vector_index(&server, dense_index("gift")).await;
    let id = created["id"].as_str().unwrap();
    let path = format!("/v2/vector/index/{id}/transfer");
    let (status, error) = send(
        server
            .management(Method::POST, &path)
            .json(&json!({"target_account": "ghost@example.com"})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{error}");
    let (status, _) = send(
        server
            .management(Method::POST, &path)
            .json(&json!({"target_account": "heir@example.com"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(server.management(Method::GET, &format!("/v2/vector/index/{id}"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, received) =
        send(server.management_as(&other, Method::GET, &format!("/v2/vector/index/{id}"))).await;
    assert_eq!(received["token"], created["token"]);
    assert_eq!(received["customer_id"], "heir@example.com");
}

#[tokio::test]
async fn unknown_routes_wrong_methods_and_oversized_bodies_get_json_errors() {
    let server = TestServer::embedded().await;
    let (status, body) = send(server.management(Method::GET, "/v2/no-such-thing")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body["error"].is_string() && body.get("status").is_none(),
        "{body}"
    );

    let (status, body) = send(server.client().get(server.url("/no-such-vector-route"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body["status"], 404,
        "vector paths carry the status in the body: {body}"
    );

    let (status, body) = send(server.management(Method::PUT, "/v2/vector/index")).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(body["error"].as_str().unwrap().contains("PUT"));

    let huge = format!("{{\"name\": \"{}\"}}", "x".repeat(2 << 20));
    let (status, body) = send(server.management(Method::POST, "/v2/vector/index").body(huge)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(body["error"].is_string());
}
