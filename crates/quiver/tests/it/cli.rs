//! The `quiver` binary end to end: serve, answer, SIGTERM, exit 0; credentials; accounts; check-config.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BOOTSTRAP_VARIABLES: [&str; 5] = [
    "QUIVER_ADMIN_EMAIL",
    "QUIVER_ADMIN_API_KEY",
    "QUIVER_QUEUE_TOKEN",
    "QUIVER_CURRENT_SIGNING_KEY",
    "QUIVER_NEXT_SIGNING_KEY",
];

pub(crate) fn quiver(data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quiver"));
    command.arg("--data-dir").arg(data_dir).env("RUST_LOG", "warn");
    for name in BOOTSTRAP_VARIABLES {
        command.env_remove(name);
    }
    command
}

/// A running `quiver serve` and what it printed before it started listening. Dropped while it still
/// runs (its test failed before stopping it), it is killed, so it does not outlive its test.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) printed: Vec<String>,
    pub(crate) base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // Best effort: the test may be unwinding, and has nothing to report these to.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn serve(command: Command) -> Served {
    serve_with(command, &[])
}

pub(crate) fn serve_with(mut command: Command, flags: &[&str]) -> Served {
    let mut child = command
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(flags)
        .stdout(Stdio::piped())
        .spawn()
        .expect("quiver starts");
    let Some(stdout) = child.stdout.take() else {
        let _ = child.kill();
        let status = child.wait();
        panic!("no piped stdout (exit: {status:?})");
    };
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut printed = Vec::new();
    loop {
        let Ok(line) = received.recv_timeout(Duration::from_secs(60)) else {
            let _ = child.kill();
            let status = child.wait();
            panic!("quiver did not print its address (exit: {status:?}); it printed {printed:?}");
        };
        if let Some(base) = line.strip_prefix("listening on ") {
            return Served {
                child,
                printed,
                base: base.to_owned(),
            };
        }
        printed.push(line);
    }
}

/// Creates a cosine index of `dimension` on a `quiver serve --dev` at `base`, with the development
/// management credentials; its read-write token.
pub(crate) async fn create_dense_index(
    client: &reqwest::Client,
    base: &str,
    name: &str,
    dimension: u32,
) -> String {
    let created: serde_json::Value = client
        .post(format!("{base}/v2/vector/index"))
        .basic_auth("dev@quiver.local", Some("quiver-dev-api-key"))
        .json(&serde_json::json!({"name": name, "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": dimension}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created["token"].as_str().expect("an index token").to_owned()
}

/// Runs `command` and checks that it fails, saying `reason` on standard error.
pub(crate) fn fails_saying(mut command: Command, reason: &str) {
    let output = command.output().expect("quiver runs");
    assert!(!output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(reason),
        "{output:?}"
    );
}

pub(crate) fn printed_value(lines: &[String], label: &str) -> String {
    lines
        .iter()
        .find_map(|line| line.trim().strip_prefix(label).map(|rest| rest.trim().to_owned()))
        .unwrap_or_else(|| panic!("no {label} in {lines:?}"))
}

pub(crate) fn terminate(mut served: Served) {
    let status = Command::new("kill")
        .args(["-TERM", &served.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let exit = served.child.wait().expect("quiver exits");
    assert!(exit.success(), "quiver exited with {exit:?} after SIGTERM");
}

async fn list_indexes(base: &str, email: &str, key: &str) -> reqwest::StatusCode {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    client
        .get(format!("{base}/v2/vector/index"))
        .basic_auth(email, Some(key))
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn quiver_serve_answers_prints_credentials_once_and_exits_zero_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(quiver(dir.path()));
    let email = printed_value(&served.printed, "email:");
    let api_key = printed_value(&served.printed, "api key:");
    assert!(api_key.len() >= 40, "a generated API key is long: {api_key}");
    assert_eq!(
        list_indexes(&served.base, &email, &api_key).await,
        reqwest::StatusCode::OK
    );
    assert_eq!(
        list_indexes(&served.base, &email, "wrong").await,
        reqwest::StatusCode::UNAUTHORIZED
    );
    terminate(served);

    let again = serve(quiver(dir.path()));
    assert!(
        again.printed.is_empty(),
        "credentials are printed only at first start: {:?}",
        again.printed
    );
    assert_eq!(
        list_indexes(&again.base, &email, &api_key).await,
        reqwest::StatusCode::OK
    );
    terminate(again);

    let output = quiver(dir.path()).arg("credentials").output().unwrap();
    assert!(output.status.success());
    let printed: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(printed_value(&printed, "email:"), email);
    assert_eq!(printed_value(&printed, "api key:"), api_key);
}

#[tokio::test]
async fn environment_credentials_win_and_dev_mode_uses_the_documented_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = quiver(dir.path());
    command
        .env("QUIVER_ADMIN_EMAIL", "ops@example.com")
        .env("QUIVER_ADMIN_API_KEY", "from-the-environment");
    let served = serve(command);
    assert_eq!(
        list_indexes(&served.base, "ops@example.com", "from-the-environment").await,
        reqwest::StatusCode::OK
    );
    terminate(served);

    let served = serve_with(quiver(dir.path()), &["--dev"]);
    assert_eq!(
        printed_value(&served.printed, "token:"),
        "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0="
    );
    assert_eq!(
        printed_value(&served.printed, "current signing key:"),
        "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r"
    );
    assert_eq!(
        list_indexes(&served.base, "dev@quiver.local", "quiver-dev-api-key").await,
        reqwest::StatusCode::OK
    );
    terminate(served);

    let mut by_config = quiver(dir.path());
    by_config
        .env("QUIVER__SERVER__DEV", "true")
        .env("QUIVER_ADMIN_API_KEY", "env-beats-dev");
    let served = serve(by_config);
    assert_eq!(
        list_indexes(&served.base, "dev@quiver.local", "env-beats-dev").await,
        reqwest::StatusCode::OK
    );
    terminate(served);
}

/// Publishes with `request_id` as `X-Request-Id` (the caller's id is kept), then makes a request without
/// credentials and an id of its own (it gets a fresh one); returns the message's id and the fresh id.
async fn publish_then_refuse(served: &Served, request_id: &str) -> (String, String) {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let token = printed_value(&served.printed, "token:");
    let published = client
        .post(format!("{}/v2/publish/http://127.0.0.1:9/hook", served.base))
        .bearer_auth(&token)
        .header("Svc-Delay", "7d")
        .header("X-Request-Id", request_id)
        .body("hi")
        .send()
        .await
        .unwrap();
    assert_eq!(published.headers()["x-request-id"], request_id);
    let message_id = published.json::<serde_json::Value>().await.unwrap()["messageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = client
        .get(format!("{}/v2/topics", served.base))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);
    let fresh = refused.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(!fresh.is_empty() && fresh != request_id);
    (message_id, fresh)
}

#[tokio::test]
async fn json_logs_name_every_request_by_its_id_and_a_publish_by_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = quiver(dir.path());
    command.env("RUST_LOG", "info").stderr(Stdio::piped());
    let mut served = serve_with(command, &["--dev", "--log-format", "json"]);
    let (message_id, fresh) = publish_then_refuse(&served, "from-the-proxy-1").await;

    let stderr = served.child.stderr.take().unwrap();
    terminate(served);
    let lines: Vec<serde_json::Value> = BufReader::new(stderr)
        .lines()
        .map(|line| serde_json::from_str(&line.unwrap()).expect("every line is JSON"))
        .collect();
    let served_line = |id: &str| {
        lines
            .iter()
            .find(|l| l["fields"]["message"] == "request served" && l["fields"]["request.id"] == id)
            .unwrap_or_else(|| panic!("no request line for {id} in {lines:?}"))
            .clone()
    };
    let publish = served_line("from-the-proxy-1");
    assert_eq!(publish["level"], "INFO");
    assert_eq!(publish["fields"]["http.method"], "POST");
    assert_eq!(publish["fields"]["http.route"], "/v2/publish/{*destination}");
    assert_eq!(publish["fields"]["http.status"], 200);
    assert_eq!(publish["fields"]["message.id"], message_id.as_str());
    let refused = served_line(&fresh);
    assert_eq!(refused["fields"]["http.status"], 401);
    assert!(
        refused["fields"]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("Unauthorized")),
        "{refused}"
    );
}

/// The default text format writes request lines itself (see `request_lines` in the binary): the line
/// carries every field, in the place and spelling of `tracing`'s other lines.
#[tokio::test]
async fn text_logs_name_every_request_by_its_id_and_a_publish_by_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = quiver(dir.path());
    command.env("RUST_LOG", "info").stderr(Stdio::piped());
    let mut served = serve_with(command, &["--dev"]);
    let (message_id, refused_id) = publish_then_refuse(&served, "from-the-proxy-2").await;

    let stderr = served.child.stderr.take().unwrap();
    terminate(served);
    let lines: Vec<String> = BufReader::new(stderr).lines().map(Result::unwrap).collect();
    let served_line = |id: &str| {
        lines
            .iter()
            .find(|l| l.contains(&format!("request served request.id={id} ")))
            .unwrap_or_else(|| panic!("no request line for {id} in {lines:?}"))
            .clone()
    };
    let publish = served_line("from-the-proxy-2");
    let (time, rest) = publish.split_once(' ').unwrap();
    assert!(
        time.len() == 27 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
        "{publish}"
    );
    assert!(
        rest.starts_with(" INFO quiver_http::router: request served request.id=from-the-proxy-2 http.method=POST http.route=/v2/publish/{*destination} http.status=200 duration_us="),
        "{publish}"
    );
    assert!(
        publish.ends_with(&format!(" message.id=\"{message_id}\"")),
        "{publish}"
    );
    let refused = served_line(&refused_id);
    assert!(
        refused.contains(" http.method=GET http.route=/v2/topics http.status=401 duration_us="),
        "{refused}"
    );
    assert!(refused.contains(" error=\"Unauthorized"), "{refused}");
    // Other lines still come from `tracing`'s formatter, in the same shape.
    assert!(
        lines.iter().any(|l| l.contains(" INFO quiver_server::app: shut")),
        "{lines:?}"
    );
}

#[test]
fn accounts_create_prints_new_credentials_and_refuses_a_taken_email() {
    let dir = tempfile::tempdir().unwrap();
    let created = quiver(dir.path())
        .args(["accounts", "create", "new@example.com"])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let printed = String::from_utf8(created.stdout).unwrap();
    assert!(
        printed.contains("new@example.com") && printed.contains("api key:") && printed.contains("token:")
    );
    let again = quiver(dir.path())
        .args(["accounts", "create", "new@example.com"])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let invalid = quiver(dir.path())
        .args(["accounts", "create", "not-an-email"])
        .output()
        .unwrap();
    assert!(!invalid.status.success());
}

#[test]
fn check_config_prints_overrides_and_redacts_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let output = quiver(dir.path())
        .arg("check-config")
        .env("QUIVER__STORAGE__READ_CONNECTIONS", "3")
        .env("QUIVER_ADMIN_API_KEY", "super-secret-key")
        .env("QUIVER__QUEUE__LLM_API_KEY", "sk-provider-secret")
        .output()
        .unwrap();
    assert!(output.status.success());
    let printed = String::from_utf8(output.stdout).unwrap();
    assert!(printed.contains("read_connections = 3"), "{printed}");
    assert!(printed.contains("QUIVER_ADMIN_API_KEY = <redacted>"));
    assert!(!printed.contains("super-secret-key"));
    assert!(printed.contains(r#"llm_api_key = "<redacted>""#), "{printed}");
    assert!(!printed.contains("sk-provider-secret"));

    let invalid = quiver(dir.path())
        .arg("check-config")
        .env("QUIVER__SERVER__NOPE", "1")
        .output()
        .unwrap();
    assert!(!invalid.status.success());
    assert!(String::from_utf8_lossy(&invalid.stderr).contains("nope"));
}

#[test]
fn help_explains_every_command() {
    let output = Command::new(env!("CARGO_BIN_EXE_quiver"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    for command in ["serve", "credentials", "accounts", "check-config", "models"] {
        assert!(help.contains(command), "--help lacks {command}");
    }
    assert!(
        !help.contains("bench"),
        "benchmarks are quiver-bench's, never the product binary's"
    );
}

/// A SIGKILL while attempts are on the wire: none of them was answered, so each message goes out again
/// after the restart (at least once, never lost), and is then delivered for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_in_flight_when_the_server_is_killed_are_delivered_after_the_restart() {
    use std::collections::HashSet;

    let dir = tempfile::tempdir().unwrap();
    let receiver = quiver_testkit::Receiver::start().await;
    // No attempt before the kill gets its answer.
    receiver.respond_with(quiver_testkit::Reply::status(200).after(Duration::from_secs(60)));
    let mut served = serve_with(quiver(dir.path()), &["--dev"]);
    let token = printed_value(&served.printed, "token:");
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut published = HashSet::new();
    for n in 0..20 {
        let response = client
            .post(format!(
                "{}/v2/publish/{}",
                served.base,
                receiver.url("/in-flight")
            ))
            .bearer_auth(&token)
            .body(format!("message {n}"))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success());
        let body: serde_json::Value = response.json().await.unwrap();
        published.insert(body["messageId"].as_str().unwrap().to_owned());
    }
    let in_flight: HashSet<String> = receiver
        .wait_for(20, Duration::from_secs(10))
        .await
        .iter()
        .filter_map(|r| r.header("upstash-message-id").map(str::to_owned))
        .collect();
    assert_eq!(
        in_flight, published,
        "every message is on the wire when the server dies"
    );
    let child = &mut served.child;
    child.kill().expect("SIGKILL is sent");
    child.wait().expect("the killed process is reaped");

    receiver.respond_with(quiver_testkit::Reply::status(200));
    let restarted = serve_with(quiver(dir.path()), &["--dev"]);
    let again: HashSet<String> = receiver
        .wait_for(40, Duration::from_secs(30))
        .await
        .iter()
        .skip(20)
        .filter_map(|r| r.header("upstash-message-id").map(str::to_owned))
        .collect();
    assert_eq!(again, published, "each message goes out again after the restart");
    // Answered this time: delivered for good (recorded once the answer is in, so shortly after the
    // receiver saw the request), and not sent a third time.
    for id in &published {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let events: serde_json::Value = client
                .get(format!("{}/v2/events?messageId={id}", restarted.base))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let states: Vec<String> = events["events"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .filter_map(|e| e["state"].as_str().map(str::to_owned))
                .collect();
            if states.last().map(String::as_str) == Some("DELIVERED") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{id} is not recorded as delivered: {states:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert!(
        receiver
            .try_wait_for(41, Duration::from_millis(500))
            .await
            .is_none(),
        "no message is delivered a third time"
    );
    terminate(restarted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_message_is_delivered_after_a_sigkill_under_load() {
    use std::collections::HashSet;
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let receiver = quiver_testkit::Receiver::start().await;
    // Slow answers keep many deliveries pending or in flight when the process dies.
    receiver.respond_with(quiver_testkit::Reply::status(200).after(Duration::from_millis(100)));
    let mut served = serve_with(quiver(dir.path()), &["--dev"]);
    let token = printed_value(&served.printed, "token:");
    let destination = receiver.url("/crash");
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();

    let publishers: Vec<_> = (0..8)
        .map(|worker| {
            let (client, token, acknowledged) = (client.clone(), token.clone(), Arc::clone(&acknowledged));
            let url = format!("{}/v2/publish/{destination}", served.base);
            tokio::spawn(async move {
                // Half the publishers delay their messages past the kill, so the restart has stored work
                // to do however fast deliveries kept up before it.
                let delay = if worker % 2 == 0 { "0s" } else { "3s" };
                for sequence in 0..10_000 {
                    let sent = client
                        .post(&url)
                        .bearer_auth(&token)
                        .header("Svc-Delay", delay)
                        .body(format!("{worker}-{sequence}"))
                        .send()
                        .await;
                    let Ok(response) = sent else { return };
                    if !response.status().is_success() {
                        continue;
                    }
                    // The kill can cut an answer after its status line: without its body, nothing was
                    // acknowledged.
                    let Ok(body) = response.json::<serde_json::Value>().await else {
                        return;
                    };
                    acknowledged
                        .lock()
                        .unwrap()
                        .push(body["messageId"].as_str().unwrap().to_owned());
                }
            })
        })
        .collect();
    while acknowledged.lock().unwrap().len() < 400 {
        tokio::task::yield_now().await;
    }
    let child = &mut served.child;
    child.kill().expect("SIGKILL is sent");
    child.wait().expect("the killed process is reaped");
    for publisher in publishers {
        publisher.await.unwrap();
    }
    let acknowledged: HashSet<String> = acknowledged.lock().unwrap().iter().cloned().collect();
    let delivered_before_kill = receiver.requests().len();
    assert!(
        delivered_before_kill < acknowledged.len(),
        "the kill must leave work undone for the test to mean anything ({delivered_before_kill} of {})",
        acknowledged.len()
    );

    let restarted = serve_with(quiver(dir.path()), &["--dev"]);
    let mut delivered = HashSet::new();
    for _ in 0..600 {
        delivered = receiver
            .requests()
            .iter()
            .filter_map(|r| r.header("upstash-message-id").map(str::to_owned))
            .collect();
        if acknowledged.is_subset(&delivered) {
            break;
        }
        receiver
            .try_wait_for(receiver.requests().len() + 1, Duration::from_millis(100))
            .await;
    }
    let missing: Vec<&String> = acknowledged.difference(&delivered).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged messages were lost: {:?}",
        missing.len(),
        acknowledged.len(),
        missing.iter().take(5).collect::<Vec<_>>()
    );
    terminate(restarted);
}

/// A vector in a direction of its own, drawn from its id (splitmix64 of the id's bytes).
fn crash_vector(id: &str) -> Vec<f32> {
    let mut state = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
    });
    (0..8)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_acknowledged_vector_is_lost_when_the_server_is_killed_during_upserts_and_snapshots() {
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let mut served = serve_with(quiver(dir.path()), &["--dev"]);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let token = create_dense_index(&client, &served.base, "crash", 8).await;
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let (client, token, acknowledged) = (client.clone(), token.clone(), Arc::clone(&acknowledged));
            let url = format!("{}/upsert", served.base);
            tokio::spawn(async move {
                for batch in 0..10_000 {
                    let ids: Vec<String> = (0..50).map(|i| format!("w{writer}-b{batch}-{i}")).collect();
                    let body: Vec<serde_json::Value> = ids
                        .iter()
                        .map(|id| serde_json::json!({"id": id, "vector": crash_vector(id)}))
                        .collect();
                    let Ok(response) = client.post(&url).bearer_auth(&token).json(&body).send().await else {
                        return;
                    };
                    if response.status().is_success() {
                        acknowledged.lock().unwrap().extend(ids);
                    }
                }
            })
        })
        .collect();
    // Killed once graph snapshots are written, so the restart loads one and replays the writes after it.
    let snapshots = dir.path().join("snapshots");
    let has_snapshot = || {
        std::fs::read_dir(&snapshots).is_ok_and(|indexes| {
            indexes.flatten().any(|index| {
                std::fs::read_dir(index.path()).is_ok_and(|files| {
                    files
                        .flatten()
                        .any(|file| file.path().extension().is_some_and(|e| e == "graph"))
                })
            })
        })
    };
    let waited = std::time::Instant::now();
    while acknowledged.lock().unwrap().len() < 2_000 || !has_snapshot() {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(120),
            "no graph snapshot was written within two minutes of upserts"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let child = &mut served.child;
    child.kill().expect("SIGKILL is sent");
    child.wait().expect("the killed process is reaped");
    for writer in writers {
        writer.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();

    let restarted = serve_with(quiver(dir.path()), &["--dev"]);
    let mut missing = Vec::new();
    for chunk in acknowledged.chunks(500) {
        let fetched: serde_json::Value = client
            .post(format!("{}/fetch", restarted.base))
            .bearer_auth(&token)
            .json(&serde_json::json!({"ids": chunk}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for (id, found) in chunk.iter().zip(fetched["result"].as_array().unwrap()) {
            if found.is_null() {
                missing.push(id.clone());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged vectors were lost, e.g. {:?}",
        missing.len(),
        acknowledged.len(),
        &missing[..missing.len().min(3)]
    );
    // Queryable too: from the snapshot's graph, or pending and scanned. Each vector is its own nearest.
    let mut not_found = Vec::new();
    for id in acknowledged.iter().step_by(acknowledged.len() / 300 + 1) {
        let hits: serde_json::Value = client
            .post(format!("{}/query", restarted.base))
            .bearer_auth(&token)
            .json(&serde_json::json!({"vector": crash_vector(id), "topK": 1}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if hits["result"][0]["id"] != id.as_str() {
            not_found.push((id.clone(), hits["result"][0]["id"].clone()));
        }
    }
    assert!(
        not_found.is_empty(),
        "not their own nearest after the restart: {not_found:?}"
    );
    terminate(restarted);
}
