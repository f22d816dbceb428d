//! The official SDKs (npm) drive a real test server. `scripts/test` installs them into `sdk-tests/`;
//! a missing install is a failure, never a skip.

use std::path::PathBuf;
use std::process::Command;

use quiver_testkit::TestServer;

fn sdk_tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk-tests")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_qstash_client_publishes_manages_groups_and_reads_the_dlq() {
    let dir = sdk_tests_dir();
    assert!(
        dir.join("node_modules/@upstash/qstash").exists(),
        "the SDKs are not installed: run `npm ci --prefix sdk-tests` (scripts/test does)"
    );
    let server = TestServer::embedded().await;
    let account = server.account().clone();
    let url = server.url("");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg("--test")
            .arg("--test-reporter=spec")
            .arg("qstash.test.mjs")
            .current_dir(dir)
            .env("QSTASH_URL", url)
            .env("QSTASH_TOKEN", &account.queue_token)
            .env("QSTASH_CURRENT_SIGNING_KEY", &account.current_signing_key)
            .env("QSTASH_NEXT_SIGNING_KEY", &account.next_signing_key)
            .output()
            .expect("node runs")
    })
    .await
    .unwrap();
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "the SDK tests failed:\n{report}");
    server.stop().await;
}
