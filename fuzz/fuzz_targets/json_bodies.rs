//! Every route that reads a JSON body, through the real server: a Quiver node on a fresh data
//! directory, reached over loopback. The first byte picks the route, the rest is the body. Whatever the
//! body, the answer is a whole HTTP answer, never a 5xx (501, for what this node does not offer, aside),
//! and an error answer is a JSON object that says why. A panic anywhere in the server aborts the run.
#![no_main]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;

use base64::Engine;
use libfuzzer_sys::fuzz_target;
use quiver_admin::BootstrapCredentials;
use quiver_core::clock::SystemClock;
use quiver_server::{App, AppOptions, Config};

/// Where a route's credentials come from.
#[derive(Clone, Copy)]
enum Auth {
    /// The account's email and API key (HTTP Basic).
    Management,
    /// The account's queue token.
    Queue,
    /// The dense index's token.
    Dense,
    /// The hybrid (dense and BM25) index's token.
    Hybrid,
}

/// The routes, as method, path and credentials; `{index}` is the dense index's id.
const MANAGEMENT: [(&str, &str); 6] = [
    ("POST", "/v2/vector/index"),
    ("POST", "/v2/search"),
    ("POST", "/v2/vector/index/{index}/rename"),
    ("POST", "/v2/vector/index/{index}/setplan"),
    ("POST", "/v2/vector/index/{index}/transfer"),
    ("POST", "/v2/search/{index}/rename"),
];
const VECTOR: [&str; 16] = [
    "/upsert",
    "/upsert-data",
    "/query",
    "/query-data",
    "/fetch",
    "/range",
    "/delete",
    "/update",
    "/random",
    "/resumable-query",
    "/resumable-query-next",
    "/resumable-query-end",
    "/rename-namespace",
    "/info",
    "/list-namespaces",
    "/upsert/fuzz-namespace",
];
const QUEUE: [(&str, &str); 15] = [
    ("POST", "/v2/batch"),
    ("POST", "/v2/topics/fuzz/endpoints"),
    ("DELETE", "/v2/topics/fuzz/endpoints"),
    ("PATCH", "/v2/topics/fuzz"),
    ("POST", "/v2/queues"),
    ("DELETE", "/v2/messages"),
    ("DELETE", "/v2/dlq"),
    ("POST", "/v2/dlq/retry"),
    ("POST", "/v2/wait/fuzz"),
    ("POST", "/v2/notify/fuzz"),
    ("DELETE", "/v2/workflows/runs"),
    ("DELETE", "/v2/workflows/dlq"),
    ("POST", "/v2/workflows/dlq/restart"),
    ("POST", "/llm/v1/chat/completions"),
    ("POST", "/v2/publish/http://127.0.0.1:9/fuzz"),
];

fn route(choice: u8) -> (&'static str, String, Auth) {
    let all = MANAGEMENT.len() + 2 * VECTOR.len() + QUEUE.len();
    let mut pick = usize::from(choice) % all;
    if pick < MANAGEMENT.len() {
        let (method, path) = MANAGEMENT[pick];
        return (method, path.to_owned(), Auth::Management);
    }
    pick -= MANAGEMENT.len();
    if pick < 2 * VECTOR.len() {
        let auth = if pick < VECTOR.len() { Auth::Dense } else { Auth::Hybrid };
        return ("POST", VECTOR[pick % VECTOR.len()].to_owned(), auth);
    }
    let (method, path) = QUEUE[pick - 2 * VECTOR.len()];
    (method, path.to_owned(), Auth::Queue)
}

/// The node and its credentials, made once per process.
struct Node {
    address: SocketAddr,
    basic: String,
    queue_token: String,
    dense: (String, String),
    hybrid: String,
    _runtime: tokio::runtime::Runtime,
    _app: App,
}

fn node() -> &'static Node {
    static NODE: OnceLock<Node> = OnceLock::new();
    NODE.get_or_init(|| {
        let data_dir = std::env::temp_dir().join(format!("quiver-fuzz-json-bodies-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data_dir);
        let mut config = Config::default();
        config.server.bind = "127.0.0.1:0".parse().expect("an address");
        config.server.data_dir = data_dir;
        config.queue.allow_private_destinations = true;
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let app = runtime
            .block_on(App::start(AppOptions {
                config,
                clock: std::sync::Arc::new(SystemClock),
                bootstrap: BootstrapCredentials::default(),
                request_lines: None,
            }))
            .expect("the node starts");
        let account = &app.bootstrap().account;
        let basic = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", account.email.as_str(), account.api_key));
        let address = app.local_addr();
        let create = |body: &str| {
            let (status, answer) = send(address, "POST", "/v2/vector/index", &format!("Basic {basic}"), body.as_bytes());
            assert_eq!(status, 200, "{answer}");
            let index: serde_json::Value = serde_json::from_str(&answer).expect("an index");
            (
                index["id"].as_str().expect("an id").to_owned(),
                index["token"].as_str().expect("a token").to_owned(),
            )
        };
        let dense = create(r#"{"name":"dense","region":"us-east-1","similarity_function":"COSINE","dimension_count":4}"#);
        let (_, hybrid) = create(
            r#"{"name":"hybrid","region":"us-east-1","similarity_function":"DOT_PRODUCT","dimension_count":4,"index_type":"HYBRID","sparse_embedding_model":"BM25"}"#,
        );
        Node {
            address,
            basic,
            queue_token: account.queue_token.clone(),
            dense,
            hybrid,
            _runtime: runtime,
            _app: app,
        }
    })
}

/// One request over a connection of its own; the status and the answer's body.
fn send(address: SocketAddr, method: &str, path: &str, authorization: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(address).expect("the node listens");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: fuzz\r\nAuthorization: {authorization}\r\nContent-Type: application/json\r\nSvc-Delay: 1d\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("the head is sent");
    stream.write_all(body).expect("the body is sent");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("the answer is read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{method} {path}: no whole answer: {answer:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or_else(|| panic!("{method} {path}: no status: {head:?}"));
    (status, body.to_owned())
}

fuzz_target!(|data: &[u8]| {
    let Some((&choice, body)) = data.split_first() else {
        return;
    };
    let node = node();
    let (method, path, auth) = route(choice);
    let path = path.replace("{index}", &node.dense.0);
    let authorization = match auth {
        Auth::Management => format!("Basic {}", node.basic),
        Auth::Queue => format!("Bearer {}", node.queue_token),
        Auth::Dense => format!("Bearer {}", node.dense.1),
        Auth::Hybrid => format!("Bearer {}", node.hybrid),
    };
    let (status, answer) = send(node.address, method, &path, &authorization, body);
    assert!(status < 500 || status == 501, "{method} {path}: {status} {answer}");
    if status >= 400 {
        let error: serde_json::Value =
            serde_json::from_str(&answer).unwrap_or_else(|_| panic!("{method} {path}: {status} {answer}"));
        assert!(error.is_object(), "{method} {path}: {status} {answer}");
    }
});
