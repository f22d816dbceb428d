//! The official SDKs (npm and PyPI) drive a real test server. `scripts/test` installs them into
//! `sdk-tests/` (node_modules and .venv); a missing install is a failure, never a skip.

use std::path::PathBuf;
use std::process::Command;

use quiver_testkit::TestServer;
use serde_json::json;

fn sdk_tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk-tests")
}

/// Runs `program args` in `sdk-tests/` with `env` and fails the test with its output if it fails.
async fn run_sdk_suite(program: &str, args: &[&str], env: Vec<(&'static str, String)>) {
    run_suite_in(sdk_tests_dir(), program, args, env).await;
}

/// Runs `program args` in `dir` with `env` and fails the test with its output if it fails.
pub(crate) async fn run_suite_in(
    dir: PathBuf,
    program: &str,
    args: &[&str],
    env: Vec<(&'static str, String)>,
) {
    let (program, args) = (
        program.to_owned(),
        args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>(),
    );
    let output = tokio::task::spawn_blocking(move || {
        // A program inside sdk-tests/ (the venv's python) is run by its path there, not resolved: the
        // venv's python is a symlink whose target would not find the venv's packages.
        let local = dir.join(&program);
        let mut command = Command::new(if local.exists() {
            local
        } else {
            PathBuf::from(&program)
        });
        command.args(&args).current_dir(&dir);
        for (name, value) in env {
            command.env(name, value);
        }
        command
            .output()
            .unwrap_or_else(|e| panic!("{program} runs (is scripts/test's install done?): {e}"))
    })
    .await
    .unwrap();
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "the suite failed:\n{report}");
}

fn assert_installed(path: &str) {
    assert!(
        sdk_tests_dir().join(path).exists(),
        "sdk-tests/{path} is missing: run scripts/test, which installs the SDKs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_qstash_clients_publish_manage_groups_and_schedules_and_read_the_dlq() {
    assert_installed("node_modules/@upstash/qstash");
    assert_installed(".venv/bin/python");
    let server = TestServer::embedded().await;
    let account = server.account().clone();
    let env = vec![
        ("QSTASH_URL", server.url("")),
        ("QSTASH_TOKEN", account.queue_token.clone()),
        ("QSTASH_CURRENT_SIGNING_KEY", account.current_signing_key.clone()),
        ("QSTASH_NEXT_SIGNING_KEY", account.next_signing_key.clone()),
    ];
    run_sdk_suite(
        "node",
        &["--test", "--test-reporter=spec", "qstash.test.mjs"],
        env.clone(),
    )
    .await;
    run_sdk_suite(".venv/bin/python", &["qstash_sdk_test.py"], env).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_vector_clients_for_javascript_and_python_drive_the_main_flows() {
    assert_installed("node_modules/@upstash/vector");
    assert_installed(".venv/bin/python");
    let server = TestServer::embedded().await;
    let dense = server
        .create_vector_index(json!({"name": "sdk", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 3}))
        .await;
    let sparse = server
        .create_vector_index(json!({"name": "sdk-sparse", "region": "us-east-1", "index_type": "SPARSE", "sparse_embedding_model": "BM25"}))
        .await;
    let hybrid = server
        .create_vector_index(json!({"name": "sdk-hybrid", "region": "us-east-1", "index_type": "HYBRID", "similarity_function": "COSINE", "dimension_count": 2}))
        .await;
    let text = server
        .create_vector_index(json!({"name": "sdk-text", "region": "us-east-1", "similarity_function": "COSINE", "embedding_model": "ALL_MINILM_L6_V2"}))
        .await;
    let text_hybrid = server
        .create_vector_index(json!({"name": "sdk-text-hybrid", "region": "us-east-1", "index_type": "HYBRID", "similarity_function": "COSINE", "embedding_model": "ALL_MINILM_L6_V2", "sparse_embedding_model": "BM25"}))
        .await;
    let token = |record: &serde_json::Value, field: &str| record[field].as_str().unwrap().to_owned();
    let env = vec![
        ("TEXT_TOKEN", token(&text, "token")),
        ("TEXT_HYBRID_TOKEN", token(&text_hybrid, "token")),
        ("VECTOR_URL", server.url("")),
        ("VECTOR_TOKEN", token(&dense, "token")),
        ("VECTOR_READ_ONLY_TOKEN", token(&dense, "read_only_token")),
        ("SPARSE_TOKEN", token(&sparse, "token")),
        ("HYBRID_TOKEN", token(&hybrid, "token")),
    ];
    run_sdk_suite(
        "node",
        &["--test", "--test-reporter=spec", "vector.test.mjs"],
        env.clone(),
    )
    .await;
    run_sdk_suite(".venv/bin/python", &["vector_sdk_test.py"], env).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_search_client_upserts_searches_and_manages_documents_of_a_search_index() {
    assert_installed("node_modules/@upstash/search");
    assert_installed(".venv/bin/python");
    let server = TestServer::embedded().await;
    let index = quiver_testkit::calls::search_index(
        &server,
        json!({"name": "sdk-search", "region": "us-central1", "type": "payg"}),
    )
    .await;
    let env = vec![
        ("UPSTASH_SEARCH_REST_URL", server.url("")),
        ("UPSTASH_SEARCH_REST_TOKEN", index.token),
    ];
    run_sdk_suite(
        "node",
        &["--test", "--test-reporter=spec", "search.test.mjs"],
        env.clone(),
    )
    .await;
    run_sdk_suite(".venv/bin/python", &["search_sdk_test.py"], env).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_written_with_the_official_sdk_run_to_completion_and_are_bulk_cancelled() {
    assert_installed("node_modules/@upstash/workflow");
    let server = TestServer::embedded().await;
    let account = server.account().clone();
    let env = vec![
        ("QSTASH_URL", server.url("")),
        ("QSTASH_TOKEN", account.queue_token.clone()),
        ("QSTASH_CURRENT_SIGNING_KEY", account.current_signing_key.clone()),
        ("QSTASH_NEXT_SIGNING_KEY", account.next_signing_key.clone()),
    ];
    run_sdk_suite(
        "node",
        &["--test", "--test-reporter=spec", "workflow.test.mjs"],
        env,
    )
    .await;
    server.stop().await;
}
