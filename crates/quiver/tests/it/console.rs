//! The web console: its sign-in sessions and proxy over HTTP, and its pages in a real Chromium
//! (`console-tests/`, installed by `scripts/test`; a missing install is a failure, never a skip).

use std::path::PathBuf;
use std::time::Duration;

use quiver_testkit::calls::send;
use quiver_testkit::{Receiver, Reply, TestServer};
use reqwest::Method;
use reqwest::header::{COOKIE, SET_COOKIE};
use serde_json::{Value, json};

/// Signs in through the console API: the cookie to send back and the CSRF token.
async fn sign_in(server: &TestServer) -> (String, String) {
    let account = server.account();
    let answer = server
        .client()
        .post(server.url("/console/api/session"))
        .json(&json!({"email": account.email.as_str(), "api_key": account.api_key}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let set_cookie = answer.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    let body: Value = answer.json().await.unwrap();
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    (cookie, body["csrf"].as_str().unwrap().to_owned())
}

fn console(
    server: &TestServer,
    method: Method,
    path: &str,
    cookie: &str,
    csrf: &str,
) -> reqwest::RequestBuilder {
    server
        .client()
        .request(method, server.url(&format!("/console/api{path}")))
        .header(COOKIE, cookie)
        .header("x-quiver-csrf", csrf)
}

#[tokio::test]
async fn signing_in_sets_a_strict_http_only_cookie_and_a_wrong_key_is_refused() {
    let server = TestServer::embedded().await;
    let wrong = server
        .client()
        .post(server.url("/console/api/session"))
        .json(&json!({"email": server.account().email.as_str(), "api_key": "wrong"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get(SET_COOKIE).is_none());
    let form = server
        .client()
        .post(server.url("/console/api/session"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("email=a&api_key=b")
        .send()
        .await
        .unwrap();
    assert_eq!(
        form.status(),
        415,
        "only JSON, which another site cannot send without a preflight"
    );

    let account = server.account();
    let answer = server
        .client()
        .post(server.url("/console/api/session"))
        .header("x-forwarded-proto", "https")
        .json(&json!({"email": account.email.as_str(), "api_key": account.api_key}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let cookie = answer.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    for part in [
        "Path=/console",
        "HttpOnly",
        "SameSite=Strict",
        "Secure",
        "Max-Age=43200",
    ] {
        assert!(cookie.contains(part), "{part} in {cookie}");
    }
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["email"], account.email.as_str());
    assert!(
        !body.to_string().contains(&account.api_key),
        "the key is never handed back"
    );
    server.stop().await;
}

#[tokio::test]
async fn the_proxy_calls_each_api_with_the_sessions_credentials_and_only_with_its_csrf_token() {
    let server = TestServer::embedded().await;
    let (cookie, csrf) = sign_in(&server).await;
    let created = console(&server, Method::POST, "/v2/vector/index", &cookie, &csrf)
        .json(&json!({"name": "proxied", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);
    let index: Value = created.json().await.unwrap();
    let id = index["id"].as_str().unwrap();

    let upsert = console(
        &server,
        Method::POST,
        &format!("/vector/{id}/upsert/ns"),
        &cookie,
        &csrf,
    )
    .json(&json!({"id": "a", "vector": [1.0, 0.0]}))
    .send()
    .await
    .unwrap();
    assert_eq!(upsert.status(), 200);
    let fetched: Value = server
        .vector(index["token"].as_str().unwrap(), Method::POST, "/fetch/ns")
        .json(&json!({"ids": ["a"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(fetched["result"][0]["id"], "a", "the write went to that index");

    let keys = console(&server, Method::GET, "/v2/keys", &cookie, &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(keys.status(), 200, "queue routes get the queue token");

    // The API's own errors come back as the API said them.
    let bad = console(&server, Method::POST, "/v2/vector/index", &cookie, &csrf)
        .json(&json!({"region": "us-east-1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.json::<Value>().await.unwrap()["error"], "name: is required");
    let other = console(
        &server,
        Method::POST,
        "/vector/no-such-index/query",
        &cookie,
        &csrf,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(other.status(), 404);

    // A search index's data plane is reached by its own path, with its token; an id of the other kind
    // is not found there.
    let (status, search) = send(
        console(&server, Method::POST, "/v2/search", &cookie, &csrf)
            .json(&json!({"name": "proxied-search", "region": "eu-west-1", "type": "payg"})),
    )
    .await;
    assert_eq!(status, 200, "{search}");
    let search_id = search["id"].as_str().unwrap();
    let (status, info) = send(console(
        &server,
        Method::GET,
        &format!("/search/{search_id}/info"),
        &cookie,
        &csrf,
    ))
    .await;
    assert_eq!(
        (status.as_u16(), &info["result"]["vectorCount"]),
        (200, &json!(0)),
        "{info}"
    );
    for path in [format!("/search/{id}/info"), format!("/vector/{search_id}/info")] {
        let (status, answer) = send(console(&server, Method::GET, &path, &cookie, &csrf)).await;
        assert_eq!(status, 404, "{path}: {answer}");
    }

    let without_csrf = server
        .client()
        .get(server.url("/console/api/v2/vector/index"))
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(without_csrf.status(), 403);
    let wrong_csrf = console(&server, Method::GET, "/v2/vector/index", &cookie, "guess")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_csrf.status(), 403);
    let without_cookie = server
        .client()
        .get(server.url("/console/api/v2/vector/index"))
        .header("x-quiver-csrf", &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(without_cookie.status(), 401);

    // No other origin may read the console's answers or be answered a preflight.
    let cross = console(&server, Method::GET, "/v2/vector/index", &cookie, &csrf)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert!(cross.headers().get("access-control-allow-origin").is_none());
    let preflight = server
        .client()
        .request(Method::OPTIONS, server.url("/console/api/v2/vector/index"))
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "DELETE")
        .send()
        .await
        .unwrap();
    assert!(preflight.headers().get("access-control-allow-origin").is_none());
    server.stop().await;
}

#[tokio::test]
async fn a_session_ends_at_sign_out_and_after_idle_time() {
    let server = TestServer::embedded().await;
    let (cookie, csrf) = sign_in(&server).await;
    let ok = console(&server, Method::GET, "/session", &cookie, &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    server.clock().advance(Duration::from_secs(31 * 60));
    let idle = console(&server, Method::GET, "/v2/vector/index", &cookie, &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(idle.status(), 401, "30 minutes without a request end it");

    let (cookie, csrf) = sign_in(&server).await;
    let out = console(&server, Method::DELETE, "/session", &cookie, &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 204);
    assert!(out.headers()[SET_COOKIE].to_str().unwrap().contains("Max-Age=0"));
    let after = console(&server, Method::GET, "/v2/vector/index", &cookie, &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 401);
    server.stop().await;
}

#[tokio::test]
async fn the_page_is_served_with_a_policy_that_allows_only_its_own_files() {
    let server = TestServer::embedded().await;
    let page = server.client().get(server.url("/console")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"));
    assert!(page.text().await.unwrap().contains("/console/app.js"));
    let script = server
        .client()
        .get(server.url("/console/app.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(script.headers()["content-type"], "text/javascript; charset=utf-8");
    let (cookie, csrf) = sign_in(&server).await;
    let cron: Value = console(
        &server,
        Method::GET,
        "/cron?expression=0%209%20*%20*%201&count=3",
        &cookie,
        &csrf,
    )
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let next = cron["next"].as_array().unwrap();
    assert_eq!(next.len(), 3);
    assert_eq!(
        next[1].as_i64().unwrap() - next[0].as_i64().unwrap(),
        7 * 24 * 3600 * 1000
    );
    let bad = console(&server, Method::GET, "/cron?expression=nope", &cookie, &csrf)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let options: Value = console(&server, Method::GET, "/options", &cookie, &csrf)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        options["regions"]
            .as_array()
            .unwrap()
            .contains(&json!("us-east-1"))
    );
    server.stop().await;
}

fn console_tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../console-tests")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_drives_indexes_data_the_queue_and_workflow_runs_in_chromium() {
    let dir = console_tests_dir();
    assert!(
        dir.join("node_modules/playwright-core").exists(),
        "console-tests/node_modules is missing: run scripts/test, which installs playwright-core"
    );
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "{chromium} is missing: run scripts/test, which installs Debian's chromium"
    );
    let server = TestServer::embedded().await;
    let failing = Receiver::start().await;
    failing.respond_with(Reply::status(500).with_body("the receiver is down"));
    // A workflow run whose first step waits on the failing receiver's retries: it stays running.
    let (status, run) = quiver_testkit::calls::send(
        server
            .queue(Method::POST, &format!("/v2/trigger/{}", failing.url("/workflow")))
            .body(r#"{"order": 7}"#),
    )
    .await;
    assert!(status.is_success(), "{run}");
    let screenshots = dir.join("output");
    let env = vec![
        (
            "WORKFLOW_RUN_ID",
            run["workflowRunId"].as_str().unwrap().to_owned(),
        ),
        ("QUIVER_URL", server.url("")),
        ("QUIVER_EMAIL", server.account().email.to_string()),
        ("QUIVER_API_KEY", server.account().api_key.clone()),
        ("FAILING_URL", failing.url("/orders")),
        ("SCREENSHOTS", screenshots.display().to_string()),
        ("CHROMIUM", chromium),
    ];
    crate::sdk::run_suite_in(
        dir,
        "node",
        &["--test", "--test-reporter=spec", "console.test.mjs"],
        env,
    )
    .await;
    server.stop().await;
}
