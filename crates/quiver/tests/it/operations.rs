//! What operators and browsers rely on: `/healthz` and `/readyz` without credentials, readiness that
//! names what is wrong (and nothing of anyone's data), and CORS on every API.

use quiver_testkit::TestServer;
use quiver_testkit::calls::{call, dense, index, ok, publish, search_index, send};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// `/readyz` once the start-up load is over: it answers "loading" until then.
async fn readiness(server: &TestServer) -> (StatusCode, Value) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let answer = send(server.client().get(server.url("/readyz"))).await;
        let loading = answer.1["reasons"].as_array().is_some_and(|reasons| {
            reasons
                .iter()
                .any(|r| r.as_str().is_some_and(|r| r.starts_with("loading")))
        });
        if !loading {
            return answer;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the vector indexes were still loading after 20 s"
        );
    }
}

#[tokio::test]
async fn health_and_readiness_answer_without_credentials() {
    let mut server = TestServer::embedded().await;
    let (status, body) = send(server.client().get(server.url("/healthz"))).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"status": "ok"})));
    assert_eq!(
        readiness(&server).await,
        (StatusCode::OK, json!({"status": "ready"}))
    );

    // After a restart, the indexes are loaded before the node says it is ready.
    let vectors = dense(&server, "COSINE", 2).await;
    ok(
        &server,
        &vectors,
        "/upsert",
        json!([{"id": "a", "vector": [1.0, 0.0]}]),
    )
    .await;
    server.restart().await;
    assert_eq!(readiness(&server).await.0, StatusCode::OK);
    // Loaded before any request named it: metrics list only loaded indexes.
    let page = metrics_page(&server).await;
    assert_eq!(
        sample(
            &page,
            &format!(r#"quiver_index_vectors{{index="{}"}}"#, vectors.id)
        ),
        Some(1.0),
        "{page}"
    );
    let info = ok(&server, &vectors, "/info", json!({})).await;
    assert_eq!(info["vectorCount"], 1);
}

/// Restarts `server` with an empty models directory, which the caller keeps while the server runs.
async fn restart_without_models(server: &mut TestServer) -> tempfile::TempDir {
    let empty = tempfile::tempdir().unwrap();
    let missing = empty.path().to_owned();
    server
        .restart_with(move |config| config.embeddings.models_dir = missing)
        .await;
    empty
}

#[tokio::test]
async fn an_index_whose_model_went_missing_makes_the_node_unready_without_naming_the_index() {
    let Some(models) = std::env::var_os("QUIVER_MODELS_DIR") else {
        panic!("QUIVER_MODELS_DIR must name the installed models (scripts/test sets it)");
    };
    let mut server = TestServer::embedded().await;
    index(
        &server,
        json!({"name": "secret-project", "region": "us-east-1", "similarity_function": "COSINE", "embedding_model": "ALL_MINILM_L6_V2"}),
    )
    .await;
    let empty = restart_without_models(&mut server).await;
    let (status, body) = readiness(&server).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "unavailable");
    let reasons = body["reasons"].to_string();
    assert!(
        reasons.contains("1 vector index(es) cannot be loaded"),
        "{reasons}"
    );
    assert!(
        reasons.contains("quiver models pull ALL_MINILM_L6_V2"),
        "{reasons}"
    );
    assert!(!reasons.contains("secret-project"), "{reasons}");

    // Installing the model heals the node without a restart.
    std::os::unix::fs::symlink(
        std::path::Path::new(&models).join("ALL_MINILM_L6_V2"),
        empty.path().join("ALL_MINILM_L6_V2"),
    )
    .unwrap();
    assert_eq!(readiness(&server).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_search_index_without_its_model_leaves_the_node_ready_and_its_search_says_what_to_install() {
    let mut server = TestServer::embedded().await;
    let documents = search_index(
        &server,
        json!({"name": "docs", "region": "eu-west-1", "type": "payg"}),
    )
    .await;
    ok(
        &server,
        &documents,
        "/upsert-data/notes",
        json!({"id": "a", "content": {"text": "kept across the restart"}}),
    )
    .await;
    let _empty = restart_without_models(&mut server).await;
    let (status, body) = readiness(&server).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let fetched = ok(
        &server,
        &documents,
        "/fetch/notes",
        json!({"ids": ["a"], "includeData": true}),
    )
    .await;
    assert_eq!(fetched[0]["content"], json!({"text": "kept across the restart"}));
    let (status, answer, text) =
        call(&server, &documents, "/search/notes", json!({"query": "restart"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("quiver models pull ALL_MINILM_L6_V2"),
        "{text}"
    );
}

/// A browser's preflight for `method` on `path` from `origin`.
async fn preflight(server: &TestServer, path: &str, origin: &str) -> reqwest::Response {
    server
        .client()
        .request(Method::OPTIONS, server.url(path))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "authorization, content-type, upstash-delay",
        )
        .send()
        .await
        .unwrap()
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).map(|v| v.to_str().unwrap())
}

#[tokio::test]
async fn every_api_answers_preflights_and_marks_its_answers_for_browsers() {
    let server = TestServer::embedded().await;
    let vectors = dense(&server, "COSINE", 2).await;
    for path in [
        "/v2/publish/https://example.com",
        "/v2/vector/index",
        "/upsert",
        "/query/ns",
        "/no/such/route",
    ] {
        let answer = preflight(&server, path, "https://app.example").await;
        assert_eq!(answer.status(), StatusCode::NO_CONTENT, "{path}");
        assert_eq!(
            header(&answer, "access-control-allow-origin"),
            Some("*"),
            "{path}"
        );
        assert_eq!(
            header(&answer, "access-control-allow-headers"),
            Some("authorization, content-type, upstash-delay"),
            "{path}"
        );
        assert!(
            header(&answer, "access-control-allow-methods").is_some_and(|m| m.contains("POST")),
            "{path}"
        );
    }

    // Answers, errors included, carry the origin and expose their headers (Retry-After, Svc-...).
    let answer = server
        .vector(&vectors.token, Method::POST, "/upsert")
        .header("Origin", "https://app.example")
        .json(&json!({"id": "a", "vector": [1.0, 0.0]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(header(&answer, "access-control-allow-origin"), Some("*"));
    assert_eq!(header(&answer, "access-control-expose-headers"), Some("*"));
    let refused = server
        .client()
        .get(server.url("/v2/topics"))
        .header("Origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(header(&refused, "access-control-allow-origin"), Some("*"));

    // An `OPTIONS` that is no preflight (no Origin) is routed as before.
    let plain = server
        .client()
        .request(Method::OPTIONS, server.url("/v2/topics"))
        .send()
        .await
        .unwrap();
    assert_ne!(plain.status(), StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn listed_origins_are_echoed_and_others_are_refused_by_name() {
    let server = TestServer::with_config(|config| {
        config.http.cors_allowed_origins = vec!["https://console.example".to_owned()];
    })
    .await;
    let allowed = preflight(
        &server,
        "/v2/publish/https://example.com",
        "https://console.example",
    )
    .await;
    assert_eq!(allowed.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        header(&allowed, "access-control-allow-origin"),
        Some("https://console.example")
    );
    assert_eq!(header(&allowed, "vary"), Some("Origin"));

    let other = preflight(&server, "/v2/publish/https://example.com", "https://evil.example").await;
    assert_eq!(other.status(), StatusCode::FORBIDDEN);
    assert_eq!(header(&other, "access-control-allow-origin"), None);
    let body: Value = other.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("`https://evil.example` is not allowed"),
        "{body}"
    );

    let answer = server
        .queue(Method::GET, "/v2/topics")
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(header(&answer, "access-control-allow-origin"), None);
    assert_eq!(header(&answer, "vary"), Some("Origin"));
}

/// The value of the sample `name{labels}` in a metrics page, if it is there.
pub(crate) fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

pub(crate) async fn metrics_page(server: &TestServer) -> String {
    let answer = server.client().get(server.url("/metrics")).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert!(
        answer.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    answer.text().await.unwrap()
}

#[tokio::test]
async fn metrics_show_requests_the_queue_the_writers_and_the_indexes() {
    let server = TestServer::embedded().await;
    for _ in 0..3 {
        let published = server
            .queue(Method::POST, "/v2/publish/https://example.com/later")
            .header("Svc-Delay", "1h")
            .body("later")
            .send()
            .await
            .unwrap();
        assert_eq!(published.status(), StatusCode::OK);
    }
    let vectors = dense(&server, "COSINE", 2).await;
    ok(
        &server,
        &vectors,
        "/upsert",
        json!([{"id": "a", "vector": [1.0, 0.0]}, {"id": "b", "vector": [0.0, 1.0]}]),
    )
    .await;

    let page = metrics_page(&server).await;
    assert_eq!(
        sample(
            &page,
            r#"quiver_http_requests_total{area="queue",route="/v2/publish/{*destination}",method="POST",status="200"}"#
        ),
        Some(3.0),
        "{page}"
    );
    assert_eq!(
        sample(
            &page,
            r#"quiver_http_request_duration_seconds_count{area="vector",route="/upsert"}"#
        ),
        Some(1.0),
        "{page}"
    );
    assert_eq!(
        sample(&page, r#"quiver_queue_messages{state="delayed"}"#),
        Some(3.0),
        "{page}"
    );
    assert_eq!(
        sample(&page, r#"quiver_queue_messages{state="waiting"}"#),
        Some(0.0)
    );
    assert!(
        sample(&page, r#"quiver_store_commit_writes_count{database="queue.db"}"#)
            .is_some_and(|commits| commits >= 1.0),
        "{page}"
    );
    // Cumulative buckets end at the count.
    assert_eq!(
        sample(
            &page,
            r#"quiver_store_commit_writes_bucket{le="+Inf",database="queue.db"}"#
        ),
        sample(&page, r#"quiver_store_commit_writes_count{database="queue.db"}"#)
    );
    let index_id = vectors.id.as_str();
    assert_eq!(
        sample(&page, &format!(r#"quiver_index_vectors{{index="{index_id}"}}"#)),
        Some(2.0),
        "{page}"
    );
    assert!(sample(&page, "process_resident_memory_bytes").is_some_and(|bytes| bytes > 0.0));
    assert!(page.trim_end().ends_with("# EOF"));
}

#[tokio::test]
async fn a_metrics_token_keeps_metrics_from_anyone_without_it() {
    let server = TestServer::with_config(|config| config.http.metrics_token = "scrape-me".to_owned()).await;
    let refused = server.client().get(server.url("/metrics")).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let wrong = server
        .client()
        .get(server.url("/metrics"))
        .bearer_auth("guess")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let allowed = server
        .client()
        .get(server.url("/metrics"))
        .bearer_auth("scrape-me")
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), StatusCode::OK);
    // Health stays open: balancers carry no token.
    let health = server.client().get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
}

#[tokio::test]
async fn hostile_clients_leave_the_server_answering_others_and_silent_ones_are_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = TestServer::with_config(|config| config.http.header_read_timeout_ms = 300).await;
    let address = server.url("").trim_start_matches("http://").to_owned();
    // A thousand connections that drip half a request line, and fifty slow bodies.
    let mut held = Vec::new();
    for _ in 0..1_000 {
        let mut idle = tokio::net::TcpStream::connect(&address).await.unwrap();
        idle.write_all(b"POST /v2/publish/https://example.com/x HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        held.push(idle);
    }
    let token = server.account().queue_token.clone();
    for _ in 0..50 {
        let mut slow = tokio::net::TcpStream::connect(&address).await.unwrap();
        let head = format!(
            "POST /v2/publish/https://example.com/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Length: 1048576\r\n\r\nfirst bytes"
        );
        slow.write_all(head.as_bytes()).await.unwrap();
        held.push(slow);
    }
    // An oversized head is refused with 431.
    let mut big = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "GET /v2/topics HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "x".repeat(1 << 20)
    );
    // The server may close before reading it all; the answer is what counts.
    let _ = big.write_all(head.as_bytes()).await;
    let mut answer = vec![0; 64];
    let read = big.read(&mut answer).await.unwrap();
    assert!(
        String::from_utf8_lossy(&answer[..read]).starts_with("HTTP/1.1 431"),
        "{}",
        String::from_utf8_lossy(&answer[..read])
    );

    // Others are answered meanwhile.
    let (status, published) = publish(&server, "https://example.com/x", &[("Svc-Delay", "1h")], "ok").await;
    assert_eq!(status, StatusCode::OK, "{published}");

    // A connection that says nothing is closed once the header read timeout passes.
    let mut silent = tokio::net::TcpStream::connect(&address).await.unwrap();
    let mut byte = [0; 1];
    let closed = tokio::time::timeout(std::time::Duration::from_secs(20), silent.read(&mut byte))
        .await
        .expect("the server closes a silent connection");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    // So are the dripping ones.
    let closed = tokio::time::timeout(std::time::Duration::from_secs(20), held[0].read(&mut byte))
        .await
        .expect("the server closes a connection that never finishes its head");
    assert!(
        matches!(closed, Ok(0) | Err(_)) || byte.starts_with(b"H"),
        "{closed:?}"
    );
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_answered_408_and_a_prompt_one_is_served() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = TestServer::with_config(|config| config.http.body_read_timeout_ms = 500).await;
    let address = server.url("").trim_start_matches("http://").to_owned();
    let token = server.account().queue_token.clone();
    let head = |length: usize| {
        format!(
            "POST /v2/publish/https://example.com/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nSvc-Delay: 1h\r\nConnection: close\r\nContent-Length: {length}\r\n\r\n"
        )
    };
    let answer_of = |mut stream: tokio::net::TcpStream| async move {
        let mut answer = Vec::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(20),
            stream.read_to_end(&mut answer),
        )
        .await
        .expect("the server answers and closes")
        .unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    };

    // Half a body, then silence.
    let mut dripping = tokio::net::TcpStream::connect(&address).await.unwrap();
    dripping
        .write_all(format!("{}first half", head(20)).as_bytes())
        .await
        .unwrap();
    let answer = answer_of(dripping).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains(r#""error":"the request body did not arrive within 500 ms""#),
        "{answer}"
    );

    // A body sent in two parts that arrives in time is served.
    let mut prompt = tokio::net::TcpStream::connect(&address).await.unwrap();
    prompt
        .write_all(format!("{}first half", head(20)).as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    prompt.write_all(b"second hal").await.unwrap();
    let answer = answer_of(prompt).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn the_api_description_is_served_without_credentials_and_describes_every_area() {
    let server = TestServer::embedded().await;
    let answer = server
        .client()
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let description: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(description["openapi"], "3.1.0");
    let paths = description["paths"].as_object().unwrap();
    for path in [
        "/v2/vector/index",
        "/query/{namespace}",
        "/v2/publish/{destination}",
        "/v2/workflows/logs",
    ] {
        assert!(paths.contains_key(path), "{path} is described");
    }
}
