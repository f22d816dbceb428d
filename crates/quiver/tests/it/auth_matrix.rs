//! Authentication, route by route: every management, queue and vector route under no credentials, a
//! wrong credential, another account's credential, another index's token and the read-only tokens on
//! writes. The answers are the documented 401, 403 and 404, never a 2xx, never a 5xx, and never
//! another account's data. A last test checks the route lists against the OpenAPI description, so a
//! route added to the API without its row here fails.

use quiver_admin::Account;
use quiver_testkit::TestServer;
use quiver_testkit::calls::{VectorIndex, dense, index, ok, publish, send_with_text};
use reqwest::{Method, StatusCode};
use serde_json::json;

/// What one account owns, to be asked for by the others.
struct Owned {
    vector: VectorIndex,
    search_id: String,
    message: String,
    schedule: String,
}

async fn lay_down(server: &TestServer) -> Owned {
    let vector = index(
        server,
        json!({"name": "secret-vectors", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 2}),
    )
    .await;
    ok(
        server,
        &vector,
        "/upsert",
        json!([{"id": "secret-record", "vector": [1.0, 0.0], "metadata": {"owner": "a"}}]),
    )
    .await;
    let (_, search, _) = send_with_text(
        server
            .management(Method::POST, "/v2/search")
            .json(&json!({"name": "secret-search", "region": "us-central1", "type": "free"})),
    )
    .await;
    let (status, published) = publish(
        server,
        "https://example.com/secret-destination",
        &[("Svc-Delay", "1h")],
        "secret body",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    let (_, _, _) = send_with_text(
        server
            .queue(Method::POST, "/v2/topics/secret-group/endpoints")
            .json(&json!({"endpoints": [{"url": "https://example.com/secret-endpoint"}]})),
    )
    .await;
    let (_, _, _) = send_with_text(
        server
            .queue(Method::POST, "/v2/queues")
            .json(&json!({"queueName": "secret-queue", "parallelism": 1})),
    )
    .await;
    let (_, schedule, _) = send_with_text(
        server
            .queue(Method::POST, "/v2/schedules/https://example.com/secret-schedule")
            .header("Svc-Cron", "0 0 * * *"),
    )
    .await;
    Owned {
        vector,
        search_id: search["id"].as_str().expect("a search index id").to_owned(),
        message: published["messageId"].as_str().unwrap().to_owned(),
        schedule: schedule["scheduleId"].as_str().expect("a schedule id").to_owned(),
    }
}

/// The words of the first account's data that no other caller may see.
const SECRETS: [&str; 9] = [
    "secret-vectors",
    "secret-record",
    "secret-search",
    "secret-destination",
    "secret body",
    "secret-group",
    "secret-endpoint",
    "secret-queue",
    "secret-schedule",
];

/// Who calls.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Caller {
    Nobody,
    Wrong,
    OtherAccount,
    ReadOnly,
}

fn judge(route: &str, caller: Caller, status: StatusCode, body: &str, allowed: &[StatusCode]) {
    assert!(
        !status.is_server_error(),
        "{route} as {caller:?}: {status} {body}"
    );
    assert!(
        allowed.contains(&status),
        "{route} as {caller:?}: {status}, wanted one of {allowed:?}: {body}"
    );
    // An error may echo what the caller asked for; anything else of the first account must not show.
    for secret in SECRETS.iter().filter(|secret| !route.contains(*secret)) {
        assert!(
            !body.contains(secret),
            "{route} as {caller:?} showed `{secret}`: {body}"
        );
    }
}

/// The body each management route reads.
fn management_body(method: &Method, path: &str) -> serde_json::Value {
    if path.ends_with("/rename") {
        json!({"name": "renamed"})
    } else if path.ends_with("/transfer") {
        json!({"target_account": "other@example.com"})
    } else if path.ends_with("/setplan") {
        json!({"target_plan": "payg"})
    } else if *method == Method::POST && path == "/v2/search" {
        json!({"name": "new", "region": "us-central1", "type": "free"})
    } else if *method == Method::POST && path == "/v2/vector/index" {
        json!({"name": "new", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 2})
    } else {
        json!({})
    }
}

/// Management routes: HTTP Basic.
fn management_routes(owned: &Owned) -> Vec<(Method, String, bool)> {
    let vector = &owned.vector.id;
    let search = &owned.search_id;
    let mut routes = vec![
        (Method::GET, "/v2/vector/index".to_owned(), false),
        (Method::POST, "/v2/vector/index".to_owned(), false),
        (Method::GET, "/v2/vector/index/stats".to_owned(), false),
        (Method::GET, "/v2/search".to_owned(), false),
        (Method::POST, "/v2/search".to_owned(), false),
        (Method::GET, "/v2/search/stats".to_owned(), false),
    ];
    for (base, id) in [("/v2/vector/index", vector), ("/v2/search", search)] {
        routes.extend([
            (Method::GET, format!("{base}/{id}"), true),
            (Method::DELETE, format!("{base}/{id}"), true),
            (Method::POST, format!("{base}/{id}/rename"), true),
            (Method::POST, format!("{base}/{id}/reset-password"), true),
            (Method::POST, format!("{base}/{id}/transfer"), true),
            (Method::GET, format!("{base}/{id}/stats"), true),
        ]);
    }
    routes.push((Method::POST, format!("/v2/vector/index/{vector}/setplan"), true));
    routes
}

#[tokio::test]
async fn management_routes_refuse_strangers_and_hide_other_accounts_indexes() {
    let server = TestServer::embedded().await;
    let owned = lay_down(&server).await;
    let other: Account = server.create_account("other@example.com").await;
    for (method, path, names_owned) in management_routes(&owned) {
        let body = management_body(&method, &path);
        let nobody = server
            .client()
            .request(method.clone(), server.url(&path))
            .json(&body);
        let (status, _, text) = send_with_text(nobody).await;
        judge(&path, Caller::Nobody, status, &text, &[StatusCode::UNAUTHORIZED]);
        let wrong = server
            .client()
            .request(method.clone(), server.url(&path))
            .basic_auth(server.account().email.as_str(), Some("not-the-key"))
            .json(&body);
        let (status, _, text) = send_with_text(wrong).await;
        judge(&path, Caller::Wrong, status, &text, &[StatusCode::UNAUTHORIZED]);
        if names_owned {
            let stranger = server.management_as(&other, method.clone(), &path).json(&body);
            let (status, _, text) = send_with_text(stranger).await;
            judge(
                &path,
                Caller::OtherAccount,
                status,
                &text,
                &[StatusCode::NOT_FOUND],
            );
        } else if method == Method::GET {
            // Lists and global statistics answer the caller's own (empty) share.
            let stranger = server.management_as(&other, method.clone(), &path);
            let (status, _, text) = send_with_text(stranger).await;
            judge(&path, Caller::OtherAccount, status, &text, &[StatusCode::OK]);
        }
    }
    // Nothing of the first account changed.
    let (status, _, text) =
        send_with_text(server.management(Method::GET, &format!("/v2/vector/index/{}", owned.vector.id)))
            .await;
    assert_eq!(status, StatusCode::OK);
    assert!(text.contains("secret-vectors"));
}

/// Queue routes: `(method, path, whether it writes, whether it names the first account's things)`.
fn queue_routes(owned: &Owned) -> Vec<(Method, String, bool, bool)> {
    let message = &owned.message;
    let schedule = &owned.schedule;
    let read = |path: &str, names: bool| (Method::GET, path.to_owned(), false, names);
    let write = |method: Method, path: &str, names: bool| (method, path.to_owned(), true, names);
    vec![
        write(Method::POST, "/v2/publish/https://example.com/x", false),
        // Another account enqueues into a queue of its own that has the same name.
        write(
            Method::POST,
            "/v2/enqueue/secret-queue/https://example.com/x",
            false,
        ),
        write(Method::POST, "/v2/batch", false),
        write(Method::POST, "/v2/batch/trigger", false),
        write(Method::POST, "/v2/trigger/https://example.com/x", false),
        read("/v2/messages", false),
        read(&format!("/v2/messages/{message}"), true),
        write(Method::DELETE, &format!("/v2/messages/{message}"), true),
        write(Method::DELETE, "/v2/messages", false),
        read("/v2/dlq", false),
        read("/v2/dlq/some-dlq-id", true),
        write(Method::DELETE, "/v2/dlq/some-dlq-id", true),
        write(Method::POST, "/v2/dlq/retry/some-dlq-id", true),
        write(Method::DELETE, "/v2/dlq", false),
        write(Method::POST, "/v2/dlq/retry", false),
        read("/v2/events", false),
        read("/v2/logs", false),
        read("/v2/topics", false),
        read("/v2/topics/secret-group", true),
        // Another account adds to a group of its own that has the same name.
        write(Method::POST, "/v2/topics/secret-group/endpoints", false),
        write(Method::DELETE, "/v2/topics/secret-group/endpoints", true),
        write(Method::PATCH, "/v2/topics/secret-group", true),
        write(Method::DELETE, "/v2/topics/secret-group", true),
        read("/v2/queues", false),
        read("/v2/queues/secret-queue", true),
        write(Method::POST, "/v2/queues", false),
        write(Method::POST, "/v2/queues/secret-queue/pause", true),
        write(Method::POST, "/v2/queues/secret-queue/resume", true),
        write(Method::DELETE, "/v2/queues/secret-queue", true),
        read("/v2/schedules", false),
        read(&format!("/v2/schedules/{schedule}"), true),
        write(Method::PATCH, &format!("/v2/schedules/{schedule}/pause"), true),
        write(Method::PATCH, &format!("/v2/schedules/{schedule}/resume"), true),
        write(Method::DELETE, &format!("/v2/schedules/{schedule}"), true),
        write(Method::POST, "/v2/schedules/https://example.com/x", false),
        write(Method::POST, &format!("/v2/schedules/{schedule}/pause"), true),
        write(Method::POST, &format!("/v2/schedules/{schedule}/resume"), true),
        read("/v2/flowControl", false),
        read("/v2/flowControl/some-key", true),
        write(Method::POST, "/v2/flowControl/some-key/pause", false),
        read("/v2/globalParallelism", false),
        write(Method::POST, "/v2/wait/some-event", false),
        read("/v2/waiters/some-event", false),
        write(Method::POST, "/v2/notify/some-event", false),
        write(Method::POST, "/v2/notify/wfr_some-run/some-event", false),
        read("/v2/workflows/events", false),
        read("/v2/workflows/logs", false),
        read("/v2/workflows/runs/wfr_some-run", true),
        write(Method::DELETE, "/v2/workflows/runs/wfr_some-run", true),
        write(Method::DELETE, "/v2/workflows/runs", false),
        read("/v2/workflows/dlq", false),
        write(Method::DELETE, "/v2/workflows/dlq", false),
        write(Method::DELETE, "/v2/workflows/dlq/some-dlq-id", true),
        write(Method::POST, "/v2/workflows/dlq/restart", false),
        write(Method::POST, "/v2/workflows/dlq/restart/some-dlq-id", true),
        write(Method::DELETE, "/v2/workflows/dlq/callback/some-dlq-id", true),
        read("/v2/keys", false),
        write(Method::POST, "/v2/keys/rotate", false),
        write(Method::POST, "/llm/v1/chat/completions", false),
    ]
}

#[tokio::test]
async fn queue_routes_refuse_strangers_and_read_only_writers_and_hide_other_accounts_data() {
    let server = TestServer::embedded().await;
    let owned = lay_down(&server).await;
    let other: Account = server.create_account("other@example.com").await;
    for (method, path, writes, names_owned) in queue_routes(&owned) {
        let body = if path.ends_with("/endpoints") {
            json!({"endpoints": [{"url": "https://example.com/e"}]})
        } else if path == "/v2/queues" {
            json!({"queueName": "secret-queue", "parallelism": 2})
        } else if method == Method::PATCH && path.starts_with("/v2/topics/") {
            json!({"headers": {"X-Default": "1"}})
        } else if path == "/v2/batch" {
            json!([{"destination": "https://example.com/x", "body": "b"}])
        } else {
            json!({})
        };
        let attempt = |token: Option<&str>| {
            let request = server
                .client()
                .request(method.clone(), server.url(&path))
                .header("Svc-Cron", "* * * * *")
                .header("Svc-Delay", "1h")
                .json(&body);
            match token {
                Some(token) => request.bearer_auth(token),
                None => request,
            }
        };
        let (status, _, text) = send_with_text(attempt(None)).await;
        judge(&path, Caller::Nobody, status, &text, &[StatusCode::UNAUTHORIZED]);
        let (status, _, text) = send_with_text(attempt(Some("not-a-token"))).await;
        judge(&path, Caller::Wrong, status, &text, &[StatusCode::UNAUTHORIZED]);
        if writes {
            let read_only = server.account().queue_read_only_token.clone();
            let (status, _, text) = send_with_text(attempt(Some(&read_only))).await;
            judge(&path, Caller::ReadOnly, status, &text, &[StatusCode::FORBIDDEN]);
        }
        // Another account reaches only its own (empty) share: a named thing of the first account is
        // not found, a list is the other account's own, and nothing of the first account shows.
        if names_owned || !writes {
            let (status, _, text) = send_with_text(attempt(Some(&other.queue_token))).await;
            let allowed: &[StatusCode] = if names_owned && method == Method::DELETE {
                // Deleting by name is idempotent: the other account's own (missing) group or queue
                // of that name may answer 200. That the first account's stays is checked below.
                &[StatusCode::NOT_FOUND, StatusCode::OK]
            } else if names_owned {
                &[StatusCode::NOT_FOUND]
            } else {
                &[StatusCode::OK]
            };
            judge(&path, Caller::OtherAccount, status, &text, allowed);
        }
    }
    // The first account's message, group, queue and schedule are all still there.
    for path in [
        format!("/v2/messages/{}", owned.message),
        "/v2/topics/secret-group".to_owned(),
        "/v2/queues/secret-queue".to_owned(),
        format!("/v2/schedules/{}", owned.schedule),
    ] {
        let (status, _, text) = send_with_text(server.queue(Method::GET, &path)).await;
        assert_eq!(status, StatusCode::OK, "{path}: {text}");
    }
}

#[tokio::test]
async fn vector_routes_refuse_strangers_read_only_writers_and_other_indexes() {
    let server = TestServer::embedded().await;
    let owned = lay_down(&server).await;
    let other = dense(&server, "COSINE", 2).await;
    for (route, writes, body) in vector_routes() {
        let attempt = |path: &str, token: Option<&str>| {
            let request = server.client().post(server.url(path)).json(&body);
            match token {
                Some(token) => request.bearer_auth(token),
                None => request,
            }
        };
        let (status, _, text) = send_with_text(attempt(&route, None)).await;
        judge(&route, Caller::Nobody, status, &text, &[StatusCode::UNAUTHORIZED]);
        let (status, _, text) = send_with_text(attempt(&route, Some("not-a-token"))).await;
        judge(&route, Caller::Wrong, status, &text, &[StatusCode::UNAUTHORIZED]);
        if writes {
            let (status, _, text) = send_with_text(attempt(&route, Some(&owned.vector.read_only))).await;
            judge(&route, Caller::ReadOnly, status, &text, &[StatusCode::FORBIDDEN]);
        }
        // Another index's token names that index: through the first index's explicit prefix it gets
        // nowhere.
        let prefixed = format!("/vector/{}{route}", owned.vector.endpoint);
        let (status, _, text) = send_with_text(attempt(&prefixed, Some(&other.token))).await;
        judge(
            &prefixed,
            Caller::OtherAccount,
            status,
            &text,
            &[
                StatusCode::UNAUTHORIZED,
                StatusCode::FORBIDDEN,
                StatusCode::NOT_FOUND,
            ],
        );
    }
    // The first index is as it was.
    let fetched = ok(
        &server,
        &owned.vector,
        "/fetch",
        json!({"ids": ["secret-record"], "includeMetadata": true}),
    )
    .await;
    assert_eq!(fetched[0]["metadata"]["owner"], "a");
}

/// Vector routes: `(path, whether it writes, body)`; each that acts on a namespace also with one.
fn vector_routes() -> Vec<(String, bool, serde_json::Value)> {
    let in_namespace: [(&str, bool, serde_json::Value); 16] = [
        ("/upsert", true, json!([{"id": "x", "vector": [0.0, 1.0]}])),
        ("/upsert-data", true, json!([{"id": "x", "data": "text"}])),
        (
            "/update",
            true,
            json!({"id": "secret-record", "metadata": {"owner": "b"}}),
        ),
        ("/delete", true, json!({"ids": ["secret-record"]})),
        ("/reset", true, json!({})),
        (
            "/query",
            false,
            json!({"vector": [1.0, 0.0], "topK": 5, "includeMetadata": true}),
        ),
        (
            "/fetch",
            false,
            json!({"ids": ["secret-record"], "includeMetadata": true}),
        ),
        (
            "/range",
            false,
            json!({"cursor": "0", "limit": 10, "includeMetadata": true}),
        ),
        ("/random", false, json!({})),
        (
            "/resumable-query",
            false,
            json!({"vector": [1.0, 0.0], "topK": 5, "maxIdle": 60}),
        ),
        ("/query-data", false, json!({"data": "text", "topK": 5})),
        ("/search", false, json!({"query": "text", "topK": 5})),
        (
            "/resumable-query-data",
            false,
            json!({"data": "text", "topK": 5, "maxIdle": 60}),
        ),
        ("/upsert", true, json!({"id": "y", "vector": [1.0, 1.0]})),
        ("/fetch", false, json!({"prefix": "secret", "includeData": true})),
        ("/delete", true, json!({"filter": "owner = 'a'"})),
    ];
    let mut routes = Vec::new();
    for (route, writes, body) in in_namespace {
        routes.push((format!("{route}/ns"), writes, body.clone()));
        routes.push((route.to_owned(), writes, body));
    }
    routes.extend([
        ("/delete-namespace/ns".to_owned(), true, json!({})),
        ("/delete-namespace".to_owned(), true, json!({})),
        ("/delete-namespace/".to_owned(), true, json!({})),
        (
            "/rename-namespace".to_owned(),
            true,
            json!({"namespace": "", "newNamespace": "stolen"}),
        ),
        ("/info".to_owned(), false, json!({})),
        ("/list-namespaces".to_owned(), false, json!({})),
        (
            "/resumable-query-next".to_owned(),
            false,
            json!({"uuid": "00000000-0000-0000-0000-000000000000", "additionalK": 2}),
        ),
        (
            "/resumable-query-end".to_owned(),
            false,
            json!({"uuid": "00000000-0000-0000-0000-000000000000"}),
        ),
    ]);
    routes
}

/// Whether a concrete path fits a described path template: a `{parameter}` is one segment, or the rest
/// of the path for the parameters that take a URL.
fn fits(path: &str, template: &str) -> bool {
    let mut path = path.split('/');
    let mut expected_segments = template.split('/').peekable();
    while let Some(expected) = expected_segments.next() {
        let is_last = expected_segments.peek().is_none();
        if is_last && matches!(expected, "{destination}" | "{url}" | "{schedule}") {
            return path.next().is_some_and(|segment| !segment.is_empty());
        }
        let Some(segment) = path.next() else {
            return false;
        };
        let is_parameter = expected.starts_with('{') && expected.ends_with('}');
        if !(segment == expected || is_parameter && !segment.is_empty()) {
            return false;
        }
    }
    path.next().is_none()
}

#[test]
fn the_matrices_try_every_described_operation_that_wants_credentials() {
    let owned = Owned {
        vector: VectorIndex {
            token: String::new(),
            read_only: String::new(),
            endpoint: "endpoint".to_owned(),
            id: "vector-id".to_owned(),
        },
        search_id: "search-id".to_owned(),
        message: "msg_id".to_owned(),
        schedule: "scd_id".to_owned(),
    };
    let mut tried: Vec<(String, String)> = management_routes(&owned)
        .into_iter()
        .map(|(method, path, _)| (method.to_string(), path))
        .collect();
    tried.extend(
        queue_routes(&owned)
            .into_iter()
            .map(|(method, path, _, _)| (method.to_string(), path)),
    );
    tried.extend(
        vector_routes()
            .into_iter()
            .map(|(path, _, _)| ("POST".to_owned(), path)),
    );
    let description: serde_json::Value = serde_json::from_str(quiver_http::openapi::document()).unwrap();
    for (template, operations) in description["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            let security = operation["security"].as_array().unwrap();
            // Open routes (health, the description, webhooks) and metrics' optional token aside.
            if security
                .iter()
                .all(|scheme| scheme.as_object().is_none_or(|s| s.is_empty()))
                || security.iter().any(|scheme| scheme.get("metricsToken").is_some())
            {
                continue;
            }
            let method = method.to_ascii_uppercase();
            assert!(
                tried.iter().any(|(m, path)| *m == method && fits(path, template)),
                "the authentication matrix does not try {method} {template}"
            );
        }
    }
}
