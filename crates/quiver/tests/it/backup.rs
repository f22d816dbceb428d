//! `quiver backup` while a server takes publishes and upserts, and `quiver restore` into a new data
//! directory that a server then serves: every write acknowledged before the backup began is there.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::cli::{create_dense_index, fails_saying, quiver, serve_with, terminate};

const QUEUE_TOKEN: &str = "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0=";

fn no_models(mut command: std::process::Command) -> std::process::Command {
    command.env_remove("QUIVER_MODELS_DIR");
    command
}

/// Acknowledged ids, and whether the backup had begun when each was acknowledged.
type Acknowledged = Arc<Mutex<Vec<(String, bool)>>>;

fn before_backup(acknowledged: &Acknowledged) -> HashSet<String> {
    acknowledged
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, after)| !after)
        .map(|(id, _)| id.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_load_restores_every_write_acknowledged_before_it_began() {
    let dir = tempfile::tempdir().unwrap();
    // The models stay out of this test: their directory is the (empty) one in the data directory.
    let served = serve_with(no_models(quiver(dir.path())), &["--dev"]);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let token = create_dense_index(&client, &served.base, "kept", 4).await;

    let began = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let messages: Acknowledged = Arc::default();
    let vectors: Acknowledged = Arc::default();
    let mut load = Vec::new();
    for writer in 0..2 {
        let (client, base, began, stop, messages) = (
            client.clone(),
            served.base.clone(),
            Arc::clone(&began),
            Arc::clone(&stop),
            Arc::clone(&messages),
        );
        load.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let response = client
                    .post(format!("{base}/v2/publish/https://example.com/hook"))
                    .bearer_auth(QUEUE_TOKEN)
                    .header("Svc-Delay", "7d")
                    .body(format!("from writer {writer}"))
                    .send()
                    .await
                    .unwrap();
                assert!(response.status().is_success());
                // Read once the answer came: the id counts as acknowledged before the backup only if
                // the backup had not begun by then.
                let after = began.load(Ordering::SeqCst);
                let body: Value = response.json().await.unwrap();
                let id = body["messageId"].as_str().unwrap().to_owned();
                messages.lock().unwrap().push((id, after));
            }
        }));
    }
    for writer in 0..2 {
        let (client, base, token, began, stop, vectors) = (
            client.clone(),
            served.base.clone(),
            token.clone(),
            Arc::clone(&began),
            Arc::clone(&stop),
            Arc::clone(&vectors),
        );
        load.push(tokio::spawn(async move {
            let mut batch = 0;
            while !stop.load(Ordering::SeqCst) {
                let ids: Vec<String> = (0..20).map(|i| format!("w{writer}-b{batch}-{i}")).collect();
                let body: Vec<Value> = ids
                    .iter()
                    .map(|id| json!({"id": id, "vector": [1.0, batch as f32, writer as f32, 0.5]}))
                    .collect();
                let response = client
                    .post(format!("{base}/upsert"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert!(response.status().is_success());
                let after = began.load(Ordering::SeqCst);
                vectors
                    .lock()
                    .unwrap()
                    .extend(ids.into_iter().map(|id| (id, after)));
                batch += 1;
            }
        }));
    }
    while messages.lock().unwrap().len() < 300 || vectors.lock().unwrap().len() < 2_000 {
        tokio::task::yield_now().await;
    }

    let backup = tempfile::tempdir().unwrap();
    let destination = backup.path().join("copy");
    began.store(true, Ordering::SeqCst);
    let mut command = no_models(quiver(dir.path()));
    command.arg("backup").arg(&destination);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    // The load went on through the backup.
    let during = messages
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, after)| *after)
        .count();
    stop.store(true, Ordering::SeqCst);
    for task in load {
        task.await.unwrap();
    }
    assert!(
        during > 0,
        "the backup must run under load for the test to mean anything"
    );
    // Never over the files of a running server, even when told to replace them.
    let mut forced = quiver(dir.path());
    forced.args(["restore", "--force"]).arg(&destination);
    fails_saying(forced, "stop the server before restoring");
    terminate(served);

    // A data directory that is not empty is refused, and nothing in it changes.
    let mut refused = quiver(dir.path());
    refused.arg("restore").arg(&destination);
    fails_saying(refused, "is not empty");

    let restored = tempfile::tempdir().unwrap();
    let target = restored.path().join("data");
    let output = quiver(&target).arg("restore").arg(&destination).output().unwrap();
    assert!(output.status.success(), "{output:?}");

    let served = serve_with(quiver(&target), &["--dev"]);
    for id in before_backup(&messages) {
        let found = client
            .get(format!("{}/v2/messages/{id}", served.base))
            .bearer_auth(QUEUE_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(found.status(), reqwest::StatusCode::OK, "message {id}");
    }
    let wanted: Vec<String> = before_backup(&vectors).into_iter().collect();
    for ids in wanted.chunks(500) {
        let fetched: Value = client
            .post(format!("{}/fetch", served.base))
            .bearer_auth(&token)
            .json(&json!({"ids": ids}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let missing = fetched["result"]
            .as_array()
            .unwrap()
            .iter()
            .zip(ids)
            .filter(|(record, _)| record.is_null())
            .count();
        assert_eq!(missing, 0, "{missing} acknowledged vectors are missing");
    }
    terminate(served);
}

#[test]
fn a_damaged_backup_is_refused_before_anything_is_restored() {
    let dir = tempfile::tempdir().unwrap();
    let created = quiver(dir.path())
        .args(["accounts", "create", "ops@example.com"])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let backup = tempfile::tempdir().unwrap();
    let destination = backup.path().join("copy");
    let output = quiver(dir.path())
        .args(["backup", "--skip-models"])
        .arg(&destination)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    // A second backup into the same, now full, directory is refused.
    let again = quiver(dir.path())
        .arg("backup")
        .arg(&destination)
        .output()
        .unwrap();
    assert!(!again.status.success());

    // One flipped byte in the catalogue.
    let catalog = destination.join("catalog.db");
    let mut bytes = std::fs::read(&catalog).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&catalog, bytes).unwrap();
    let restored = tempfile::tempdir().unwrap();
    let target = restored.path().join("data");
    let mut damaged = quiver(&target);
    damaged.arg("restore").arg(&destination);
    fails_saying(damaged, "catalog.db does not match the manifest");
    assert!(!target.exists(), "nothing was restored");
}
