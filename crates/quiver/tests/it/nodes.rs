//! Several `quiver` processes on one PostgreSQL database (the one `QUIVER_TEST_POSTGRES` names, in a
//! schema of each test's own): any node accepts any request, each message is delivered once, a node
//! killed with SIGKILL loses nothing it acknowledged, a schedule fires once, a flow-control key's
//! parallelism holds across nodes, and vector writes are seen on every node.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quiver_testkit::poll::{eventually, until};
use quiver_testkit::{Receiver, Reply};
use serde_json::{Value, json};

use crate::cli::{Served, printed_value, quiver, serve_with, terminate};

/// The database of the tests.
fn database_url() -> String {
    std::env::var("QUIVER_TEST_POSTGRES").unwrap_or_else(|_| "postgres://postgres@127.0.0.1/test".to_owned())
}

/// One test's nodes: a schema of its own (dropped at the end, also when the test fails) and a data
/// directory per node.
struct Cluster {
    schema: String,
    dirs: Vec<tempfile::TempDir>,
}

impl Cluster {
    fn new() -> Cluster {
        Cluster {
            schema: format!("quiver_nodes_{}", unique_suffix()),
            dirs: Vec::new(),
        }
    }

    /// Starts a node (in development mode: fixed credentials, loopback destinations allowed).
    fn start(&mut self) -> Served {
        self.start_as("Quiver")
    }

    /// Starts a node whose deliveries say `name` in their `User-Agent`, so a receiver can tell which
    /// node delivered.
    fn start_as(&mut self, name: &str) -> Served {
        let dir = tempfile::tempdir().expect("a data directory");
        let mut command = quiver(dir.path());
        command
            .args(["--store", &database_url()])
            .env("QUIVER__STORAGE__SCHEMA", &self.schema)
            .env("QUIVER__STORAGE__POOL_SIZE", "8")
            .env("QUIVER__QUEUE__USER_AGENT", name);
        self.dirs.push(dir);
        serve_with(command, &["--dev"])
    }
}

impl Drop for Cluster {
    /// Drops the schema on a thread and runtime of its own (the test's runtime may be unwinding).
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema);
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async {
                let (client, connection) =
                    tokio_postgres::connect(&database_url(), tokio_postgres::NoTls).await?;
                tokio::spawn(connection);
                client.batch_execute(&sql).await
            })
        })
        .join();
        if let Ok(Err(error)) = dropped {
            eprintln!("could not drop {}: {error}", self.schema);
        }
    }
}

/// A name part unique to this test: the process and a random number.
fn unique_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{}_{random:x}", std::process::id())
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().expect("a client")
}

async fn publish(
    node: &Served,
    token: &str,
    destination: &str,
    body: String,
    headers: &[(&str, &str)],
) -> String {
    let mut request = client()
        .post(format!("{}/v2/publish/{destination}", node.base))
        .bearer_auth(token)
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("the node answers");
    assert!(
        response.status().is_success(),
        "publish answered {}",
        response.status()
    );
    let answer: Value = response.json().await.expect("a JSON answer");
    answer["messageId"].as_str().expect("a message id").to_owned()
}

/// The message ids the receiver got, with how often each came.
fn deliveries(receiver: &Receiver) -> HashMap<String, usize> {
    let mut seen = HashMap::new();
    for request in receiver.requests() {
        if let Some(id) = request.header("upstash-message-id") {
            *seen.entry(id.to_owned()).or_default() += 1;
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_published_to_one_of_three_nodes_is_delivered_once() {
    let mut cluster = Cluster::new();
    let receiver = Receiver::start().await;
    let nodes = [cluster.start(), cluster.start(), cluster.start()];
    let token = printed_value(&nodes[0].printed, "token:");
    let mut published = HashSet::new();
    for n in 0..60 {
        let node = &nodes[n % 3];
        published.insert(publish(node, &token, &receiver.url("/once"), format!("m{n}"), &[]).await);
    }
    assert!(
        eventually(Duration::from_secs(20), || deliveries(&receiver).len()
            == published.len())
        .await,
        "every message arrives"
    );
    // Long enough for a second node's claim of the same message to have come too.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let seen = deliveries(&receiver);
    assert_eq!(seen.keys().cloned().collect::<HashSet<_>>(), published);
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    for node in nodes {
        terminate(node);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_under_publish_load_loses_no_acknowledged_message() {
    let mut cluster = Cluster::new();
    let receiver = Receiver::start().await;
    // Slow answers keep deliveries in flight on the node when it dies: those never finished, and only a
    // delivery after the kill counts for them.
    let answer_takes = Duration::from_millis(300);
    receiver.respond_with(Reply::status(200).after(answer_takes));
    let mut doomed = cluster.start_as("doomed");
    let survivor = cluster.start_as("survivor");
    let token = printed_value(&doomed.printed, "token:");
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let destination = receiver.url("/crash");
    let publishers: Vec<_> = (0..6)
        .map(|worker| {
            let base = if worker % 2 == 0 {
                doomed.base.clone()
            } else {
                survivor.base.clone()
            };
            let (token, acknowledged, destination) =
                (token.clone(), Arc::clone(&acknowledged), destination.clone());
            tokio::spawn(async move {
                let client = client();
                for sequence in 0..2_000 {
                    let sent = client
                        .post(format!("{base}/v2/publish/{destination}"))
                        .bearer_auth(&token)
                        .body(format!("{worker}-{sequence}"))
                        .send()
                        .await;
                    let Ok(response) = sent else { return };
                    if !response.status().is_success() {
                        continue;
                    }
                    // Without the body, nothing was acknowledged (the kill can cut the answer).
                    let Ok(body) = response.json::<Value>().await else {
                        return;
                    };
                    acknowledged
                        .lock()
                        .unwrap()
                        .push(body["messageId"].as_str().unwrap().to_owned());
                    if sequence >= 150 {
                        return;
                    }
                }
            })
        })
        .collect();
    while acknowledged.lock().unwrap().len() < 300 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let child = &mut doomed.child;
    child.kill().expect("SIGKILL is sent");
    let killed_at = Instant::now();
    child.wait().expect("the killed process is reaped");
    // A delivery counts when the survivor made it, or when the killed node's answer came before the kill.
    let by_doomed = |r: &quiver_testkit::RecordedRequest| r.header("user-agent") == Some("doomed");
    let delivered = |receiver: &Receiver| -> HashSet<String> {
        receiver
            .requests()
            .iter()
            .filter(|r| !by_doomed(r) || r.received_at + answer_takes < killed_at)
            .filter_map(|r| r.header("upstash-message-id").map(str::to_owned))
            .collect()
    };
    let in_flight_at_kill: HashSet<String> = receiver
        .requests()
        .iter()
        .filter(|r| by_doomed(r) && r.received_at + answer_takes >= killed_at)
        .filter_map(|r| r.header("upstash-message-id").map(str::to_owned))
        .collect();
    for publisher in publishers {
        publisher.await.unwrap();
    }
    let acknowledged: HashSet<String> = acknowledged.lock().unwrap().iter().cloned().collect();
    assert!(
        !in_flight_at_kill.is_empty(),
        "the kill must cut deliveries short for the test to mean anything"
    );
    let all_delivered = eventually(Duration::from_secs(60), || {
        acknowledged.is_subset(&delivered(&receiver))
    })
    .await;
    let seen = delivered(&receiver);
    let missing: Vec<&String> = acknowledged.iter().filter(|id| !seen.contains(*id)).collect();
    assert!(
        all_delivered,
        "{} of {} acknowledged messages were lost: {:?}",
        missing.len(),
        acknowledged.len(),
        missing.iter().take(5).collect::<Vec<_>>()
    );
    terminate(survivor);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_fires_once_a_minute_with_three_nodes_up() {
    let mut cluster = Cluster::new();
    let receiver = Receiver::start().await;
    let nodes = [cluster.start(), cluster.start(), cluster.start()];
    let token = printed_value(&nodes[0].printed, "token:");
    let response = client()
        .post(format!(
            "{}/v2/schedules/{}",
            nodes[1].base,
            receiver.url("/cron")
        ))
        .bearer_auth(&token)
        .header("Svc-Cron", "* * * * *")
        .body("tick")
        .send()
        .await
        .expect("the node answers");
    assert!(response.status().is_success(), "{}", response.status());
    assert!(
        eventually(Duration::from_secs(75), || !receiver.requests().is_empty()).await,
        "the schedule fires within a minute"
    );
    // Every node woke for the same minute; any other firing of it would come within moments.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        receiver.requests().len(),
        1,
        "one firing for the minute, not one per node"
    );
    for node in nodes {
        terminate(node);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_control_key_with_parallelism_one_never_has_two_deliveries_in_flight_across_nodes() {
    let mut cluster = Cluster::new();
    let receiver = Receiver::start().await;
    receiver.respond_with(Reply::status(200).after(Duration::from_millis(150)));
    let nodes = [cluster.start(), cluster.start(), cluster.start()];
    let token = printed_value(&nodes[0].printed, "token:");
    let headers = [
        ("Svc-Flow-Control-Key", "one-at-a-time"),
        ("Svc-Flow-Control-Value", "parallelism=1"),
    ];
    for n in 0..12 {
        publish(
            &nodes[n % 3],
            &token,
            &receiver.url("/flow"),
            format!("f{n}"),
            &headers,
        )
        .await;
    }
    assert!(
        eventually(Duration::from_secs(30), || receiver.requests().len() >= 12).await,
        "every message arrives"
    );
    assert_eq!(receiver.most_at_once(), 1, "two deliveries of the key overlapped");
    for node in nodes {
        terminate(node);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_starting_together_share_one_migrated_database_and_one_bootstrap_account() {
    let mut cluster = Cluster::new();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let spawned: Vec<_> = dirs
        .iter()
        .map(|dir| {
            let mut command = quiver(dir.path());
            command
                .args(["--store", &database_url()])
                .env("QUIVER__STORAGE__SCHEMA", &cluster.schema);
            std::thread::spawn(move || serve_with(command, &["--dev"]))
        })
        .collect();
    let nodes: Vec<Served> = spawned
        .into_iter()
        .map(|t| t.join().expect("a node starts"))
        .collect();
    let token = printed_value(&nodes[0].printed, "token:");
    for node in &nodes {
        let answer = client()
            .get(format!("{}/v2/topics", node.base))
            .bearer_auth(&token)
            .send()
            .await
            .expect("the node answers");
        assert!(answer.status().is_success(), "{}", answer.status());
    }
    let created = client()
        .post(format!("{}/v2/topics/shared/endpoints", nodes[0].base))
        .bearer_auth(&token)
        .json(&json!({"endpoints": [{"url": "http://127.0.0.1:1/x"}]}))
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success(), "{}", created.status());
    let seen: Value = client()
        .get(format!("{}/v2/topics/shared", nodes[1].base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        seen["name"], "shared",
        "a URL group made on one node is every node's: {seen}"
    );
    cluster.dirs.extend(dirs);
    for node in nodes {
        terminate(node);
    }
}

/// Creates a 2-dimension cosine index through `node`'s management API; returns its token.
async fn create_index(node: &Served) -> String {
    let email = printed_value(&node.printed, "email:");
    let key = printed_value(&node.printed, "api key:");
    let response = client()
        .post(format!("{}/v2/vector/index", node.base))
        .basic_auth(email, Some(key))
        .json(&json!({"name": "shared", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 2}))
        .send()
        .await
        .expect("the node answers");
    assert!(response.status().is_success(), "{}", response.status());
    let record: Value = response.json().await.expect("an index record");
    record["token"].as_str().expect("a token").to_owned()
}

/// The `result` of a vector API call on `node`.
async fn vectors(node: &Served, token: &str, path: &str, body: Value) -> Value {
    let response = client()
        .post(format!("{}{path}", node.base))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("the node answers");
    let status = response.status();
    let answer: Value = response.json().await.expect("a JSON answer");
    assert!(status.is_success(), "{path}: {status} {answer}");
    answer["result"].clone()
}

/// The ids of a query's hits.
fn hit_ids(result: &Value) -> Vec<String> {
    result
        .as_array()
        .map(|hits| {
            hits.iter()
                .filter_map(|h| h["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vector_written_on_one_node_is_read_at_once_and_queried_within_a_second_on_another() {
    let mut cluster = Cluster::new();
    let nodes = [cluster.start(), cluster.start()];
    let token = create_index(&nodes[0]).await;
    // The second node holds the index in memory before the write, so only following the feed brings it.
    let before = vectors(
        &nodes[1],
        &token,
        "/query",
        json!({"vector": [1.0, 0.0], "topK": 3}),
    )
    .await;
    assert!(hit_ids(&before).is_empty());
    vectors(
        &nodes[0],
        &token,
        "/upsert",
        json!([{"id": "v1", "vector": [1.0, 0.0]}]),
    )
    .await;
    let written = Instant::now();
    let fetched = vectors(&nodes[1], &token, "/fetch", json!({"ids": ["v1"]})).await;
    assert_eq!(
        fetched[0]["id"], "v1",
        "a fetch on another node sees an acknowledged write at once"
    );
    let mut found_after = None;
    while written.elapsed() < Duration::from_secs(3) {
        let hits = vectors(
            &nodes[1],
            &token,
            "/query",
            json!({"vector": [1.0, 0.0], "topK": 3}),
        )
        .await;
        if hit_ids(&hits) == ["v1"] {
            found_after = Some(written.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let found_after = found_after.expect("the other node's queries find the vector");
    assert!(
        found_after < Duration::from_secs(1),
        "found after {found_after:?}"
    );
    // And back: a delete on the second node is seen on the first.
    vectors(&nodes[1], &token, "/delete", json!({"ids": ["v1"]})).await;
    let fetched = vectors(&nodes[0], &token, "/fetch", json!({"ids": ["v1"]})).await;
    assert!(
        fetched[0].is_null(),
        "a delete on one node is seen on the other: {fetched}"
    );
    for node in nodes {
        terminate(node);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_started_late_serves_the_indexes_written_before_it_and_concurrent_writes_all_land() {
    let mut cluster = Cluster::new();
    let early = cluster.start();
    let token = create_index(&early).await;
    let records: Vec<Value> = (0..50)
        .map(|n| {
            let angle = f64::from(n) / 50.0;
            json!({"id": format!("r{n}"), "vector": [angle.cos(), angle.sin()]})
        })
        .collect();
    vectors(&early, &token, "/upsert", Value::Array(records)).await;
    let late = cluster.start();
    let info = vectors(&late, &token, "/info", json!({})).await;
    assert_eq!(info["vectorCount"], 50, "{info}");
    let hits = vectors(&late, &token, "/query", json!({"vector": [1.0, 0.0], "topK": 1})).await;
    assert_eq!(hit_ids(&hits), ["r0"]);
    // Both nodes write to the index at once: every write lands, on both nodes.
    let writers: Vec<_> = [&early, &late]
        .into_iter()
        .enumerate()
        .map(|(which, node)| {
            let (base, token) = (node.base.clone(), token.clone());
            tokio::spawn(async move {
                for n in 0..20 {
                    let body = json!([{"id": format!("w{which}-{n}"), "vector": [1.0, f64::from(n)]}]);
                    let response = client()
                        .post(format!("{base}/upsert"))
                        .bearer_auth(&token)
                        .json(&body)
                        .send()
                        .await
                        .expect("the node answers");
                    assert!(response.status().is_success(), "{}", response.status());
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("the writer finishes");
    }
    for node in [&early, &late] {
        let info = vectors(node, &token, "/info", json!({})).await;
        assert_eq!(info["vectorCount"], 90, "{info}");
    }
    terminate(early);
    terminate(late);
}

/// The states of a node's events log for the message `id`, newest first.
async fn logged(node: &Served, token: &str, id: &str) -> Vec<String> {
    let response = client()
        .get(format!("{}/v2/events?messageId={id}", node.base))
        .bearer_auth(token)
        .send()
        .await
        .expect("the node answers");
    assert!(
        response.status().is_success(),
        "the log answered {}",
        response.status()
    );
    let page: Value = response.json().await.expect("a JSON answer");
    page["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["state"].as_str().expect("a state").to_owned())
        .collect()
}

/// A publish whose message reaches its destination while the node's publish writer is held up is
/// answered then, not once its write commits; and a log read on that node after the answer waits for
/// the write, so it shows the message. The events table is locked from outside, as a long transaction
/// would hold it; a delayed publish's batch waits on that lock and holds the writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_delivered_while_its_write_waits_is_answered_and_its_log_read_waits_for_the_write() {
    let mut cluster = Cluster::new();
    let receiver = Receiver::start().await;
    let node = cluster.start();
    let token = printed_value(&node.printed, "token:");
    let warm = publish(&node, &token, &receiver.url("/warm"), "w".into(), &[]).await;
    assert!(
        eventually(Duration::from_secs(20), || deliveries(&receiver)
            .contains_key(&warm))
        .await,
        "the first message was delivered"
    );
    let (database, connection) = tokio_postgres::connect(&database_url(), tokio_postgres::NoTls)
        .await
        .expect("a connection");
    tokio::spawn(connection);
    let events = format!("{}.events", cluster.schema);
    let waiting_on_lock = || async {
        let row = database
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = $1::text::regclass",
                &[&events],
            )
            .await
            .expect("pg_locks");
        row.get::<_, i64>(0)
    };
    // Every write of the first message is done once its log shows it delivered.
    until(
        "the first message logged as delivered",
        Duration::from_secs(20),
        || async {
            let states = logged(&node, &token, &warm).await;
            states
                .first()
                .is_some_and(|state| state == "DELIVERED")
                .then_some(())
        },
    )
    .await;

    database
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE {}.events IN EXCLUSIVE MODE",
            cluster.schema
        ))
        .await
        .expect("the lock");
    let held = tokio::spawn(
        client()
            .post(format!("{}/v2/publish/{}", node.base, receiver.url("/later")))
            .bearer_auth(&token)
            .header("Svc-Delay", "1h")
            .body("held")
            .send(),
    );
    let blocked = until("a write waiting on the lock", Duration::from_secs(20), || async {
        let waiting = waiting_on_lock().await;
        (waiting > 0).then_some(waiting)
    })
    .await;
    assert_eq!(blocked, 1, "only the delayed publish's batch waits on the lock");

    // Were it answered only once written, it would wait for the lock this test holds.
    let id = tokio::time::timeout(
        Duration::from_secs(10),
        publish(&node, &token, &receiver.url("/early"), "e".into(), &[]),
    )
    .await
    .expect("answered while its write waits");
    assert_eq!(
        deliveries(&receiver).get(&id),
        Some(&1),
        "answered once delivered"
    );
    assert!(!held.is_finished(), "the writer is still held up");
    let unlock = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        database.batch_execute("COMMIT").await.expect("the lock let go");
    };
    let (states, ()) = tokio::join!(logged(&node, &token, &id), unlock);
    assert_eq!(
        states,
        ["DELIVERED", "ACTIVE", "CREATED"],
        "the read waited for the write"
    );
    let answer = held.await.expect("the task").expect("the node answers");
    assert!(
        answer.status().is_success(),
        "the delayed publish answered {}",
        answer.status()
    );
}
