//! Workflow runs through HTTP, with the headers the official workflow SDK sends: start, step history,
//! duplicate start, end, single and bulk cancel (SPEC C1), a run whose step is in flight.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use quiver_testkit::calls::send;
use quiver_testkit::poll::until;
use quiver_testkit::{Receiver, Reply, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

pub(crate) fn workflow_headers(run: &str, init: bool, url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("Upstash-Workflow-RunId", run.to_owned()),
        ("Upstash-Workflow-Init", init.to_string()),
        ("Upstash-Workflow-Url", url.to_owned()),
        ("Upstash-Forward-Upstash-Workflow-Sdk-Version", "1".to_owned()),
        ("Content-Type", "application/json".to_owned()),
    ]
}

pub(crate) async fn trigger_by_batch(
    server: &TestServer,
    run: &str,
    url: &str,
    extra: &[(&str, &str)],
) -> Value {
    let mut headers: serde_json::Map<String, Value> = workflow_headers(run, true, url)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v)))
        .collect();
    for (name, value) in extra {
        headers.insert((*name).to_owned(), Value::String((*value).to_owned()));
    }
    let (status, answers) = send(
        server
            .queue(Method::POST, "/v2/batch")
            .json(&json!([{"destination": url, "headers": headers, "body": "{\"order\":1}"}])),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answers}");
    answers[0].clone()
}

async fn publish_step(server: &TestServer, run: &str, url: &str, body: &str) -> StatusCode {
    let mut request = server
        .queue(Method::POST, &format!("/v2/publish/{url}"))
        .body(body.to_owned());
    for (name, value) in workflow_headers(run, false, url) {
        request = request.header(name, value);
    }
    request.send().await.unwrap().status()
}

#[tokio::test]
async fn a_run_starts_carries_its_history_to_each_step_and_ends() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let url = receiver.url("/workflow");
    let started = trigger_by_batch(&server, "wfr_one", &url, &[]).await;
    assert_eq!(started["deduplicated"], false);
    let first = receiver.wait_for(1, WAIT).await.remove(0);
    let initial: Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(
        initial.as_array().unwrap().len(),
        1,
        "the first call carries the history: the payload alone"
    );
    assert_eq!(initial[0]["body"], STANDARD.encode(r#"{"order":1}"#));
    assert_eq!(first.header("upstash-workflow-runid"), Some("wfr_one"));
    assert_eq!(first.header("upstash-workflow-url"), Some(url.as_str()));
    assert_eq!(first.header("upstash-workflow-sdk-version"), Some("1"));

    let step = r#"{"stepId":1,"stepName":"charge","stepType":"Run","out":"\"ok\"","concurrent":1}"#;
    assert_eq!(publish_step(&server, "wfr_one", &url, step).await, StatusCode::OK);
    let second = receiver.wait_for(2, WAIT).await.remove(1);
    let history: Value = serde_json::from_slice(&second.body).unwrap();
    assert_eq!(history[0]["body"], STANDARD.encode(r#"{"order":1}"#));
    assert_eq!(
        history[0]["messageId"],
        first.header("upstash-message-id").unwrap()
    );
    assert_eq!(history[1]["body"], STANDARD.encode(step));
    assert_eq!(history[1]["callType"], "step");
    let (status, steps) = send(server.queue(Method::GET, "/v2/workflows/runs/wfr_one")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(steps, history);

    let duplicate = trigger_by_batch(&server, "wfr_one", &url, &[]).await;
    assert_eq!(duplicate["deduplicated"], true);
    assert_eq!(
        duplicate["messageId"],
        first.header("upstash-message-id").unwrap()
    );

    let (status, _) = send(
        server
            .queue(Method::DELETE, "/v2/workflows/runs/wfr_one?cancel=false")
            .body("\"done\""),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        publish_step(&server, "wfr_one", &url, step).await,
        StatusCode::BAD_REQUEST,
        "a finished run takes no steps"
    );
    let (status, _) = send(server.queue(Method::GET, "/v2/workflows/runs/wfr_one")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, logs) = send(server.queue(Method::GET, "/v2/workflows/events?workflowRunId=wfr_one")).await;
    assert_eq!(logs["runs"][0]["workflowState"], "RUN_SUCCESS");
    assert_eq!(logs["runs"][0]["workflowRunResponse"], "\"done\"");
    let logged = &logs["runs"][0]["steps"];
    assert_eq!(logged[0]["steps"][0]["stepType"], "Initial");
    assert_eq!(logged[0]["steps"][0]["out"], r#"{"order":1}"#);
    let charge = &logged[1]["steps"][0];
    assert_eq!(
        (
            &charge["stepId"],
            &charge["stepName"],
            &charge["stepType"],
            &charge["out"]
        ),
        (&json!(1), &json!("charge"), &json!("Run"), &json!("\"ok\""))
    );
    assert_eq!(charge["state"], "STEP_SUCCESS");
    assert!(charge["createdAt"].is_i64(), "{charge}");
    assert_eq!(
        charge["headers"]["Upstash-Workflow-Sdk-Version"],
        json!(["1"]),
        "{charge}"
    );

    let (status, triggered) = send(
        server
            .queue(Method::POST, &format!("/v2/trigger/{url}"))
            .body("{}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{triggered}");
    assert!(triggered["workflowRunId"].as_str().unwrap().starts_with("wfr_"));
    assert!(triggered["workflowCreatedAt"].is_i64());
}

#[tokio::test]
async fn bulk_cancel_by_ids_by_url_prefix_or_everything() {
    let server = TestServer::embedded().await;
    let delayed = [("Upstash-Delay", "1h")];
    for (run, url) in [
        ("wfr_a", "https://shop.example.com/a"),
        ("wfr_b", "https://shop.example.com/b/flow"),
        ("wfr_c", "https://other.example.com/c"),
        ("wfr_d", "https://other.example.com/d"),
    ] {
        trigger_by_batch(&server, run, url, &delayed).await;
    }
    let (_, by_body) = send(
        server
            .queue(Method::DELETE, "/v2/workflows/runs")
            .json(&json!({"workflowRunIds": ["wfr_a"]})),
    )
    .await;
    assert_eq!(by_body, json!({"cancelled": 1}));
    let (_, by_prefix) = send(server.queue(
        Method::DELETE,
        "/v2/workflows/runs?workflowUrl=https://shop.example.com/b",
    ))
    .await;
    assert_eq!(by_prefix, json!({"cancelled": 1}));
    let (_, by_query_ids) =
        send(server.queue(Method::DELETE, "/v2/workflows/runs?workflowRunIds=wfr_c")).await;
    assert_eq!(by_query_ids, json!({"cancelled": 1}));
    let (_, everything) = send(server.queue(Method::DELETE, "/v2/workflows/runs").body("{}")).await;
    assert_eq!(everything, json!({"cancelled": 1}));
    let (_, again) = send(server.queue(Method::DELETE, "/v2/workflows/runs")).await;
    assert_eq!(again, json!({"cancelled": 0}), "nothing is left to cancel");

    let (_, logs) = send(server.queue(Method::GET, "/v2/workflows/events?count=10")).await;
    let states: Vec<&str> = logs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workflowState"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["RUN_CANCELED"; 4]);
    let (_, pending) = send(server.queue(Method::GET, "/v2/events?state=CANCELED")).await;
    assert_eq!(
        pending["events"].as_array().unwrap().len(),
        4,
        "each run's pending message was cancelled"
    );
    let (status, _) = send(server.queue(Method::DELETE, "/v2/workflows/runs/wfr_zzz")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

pub(crate) async fn running_runs(server: &TestServer) -> Vec<String> {
    let (_, logs) = send(server.queue(Method::GET, "/v2/workflows/events?state=RUN_STARTED&count=100")).await;
    let mut ids: Vec<String> = logs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["workflowRunId"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn bulk_cancel_takes_every_filter_the_workflow_sdk_sends_and_never_widens_an_unknown_one() {
    let server = TestServer::embedded().await;
    for (run, url, label, key) in [
        ("wfr_1", "https://shop.example.com/orders/a", "gold", "tenant-1"),
        ("wfr_2", "https://shop.example.com/refunds", "silver", "tenant-1"),
        ("wfr_3", "https://other.example.com/orders/b", "gold", "tenant-2"),
        (
            "wfr_4",
            "https://other.example.com/orders/b",
            "bronze",
            "tenant-3",
        ),
        ("wfr_5", "https://third.example.com/x", "bronze", "tenant-3"),
        ("wfr_6", "https://third.example.com/y", "bronze", "tenant-3"),
    ] {
        trigger_by_batch(
            &server,
            run,
            url,
            &[
                ("Upstash-Delay", "1h"),
                ("Upstash-Label", label),
                ("Upstash-Flow-Control-Key", key),
                ("Upstash-Flow-Control-Value", "parallelism=1"),
            ],
        )
        .await;
    }
    let cancel =
        async |query: &str| send(server.queue(Method::DELETE, &format!("/v2/workflows/runs?{query}"))).await;

    // A filter Quiver does not know, or a misspelt one, cancels nothing.
    for query in [
        "lable=gold&count=100",
        "workflowUrlStartsWith=https://&count=100",
        "state=RUN_STARTED",
    ] {
        let (status, answer) = cancel(query).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {answer}");
        assert!(answer["error"].as_str().unwrap().contains('`'), "{answer}");
    }
    let (status, answer) = send(
        server
            .queue(Method::DELETE, "/v2/workflows/runs")
            .json(&json!({"workflowRunIdz": ["wfr_1"]})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(running_runs(&server).await.len(), 6, "nothing was cancelled");

    // Values of one filter are alternatives; filters together must all match.
    let (_, answer) = cancel("label=gold&flowControlKey=tenant-2&count=100").await;
    assert_eq!(answer, json!({"cancelled": 1}), "only wfr_3 is gold and tenant-2");
    let (_, answer) =
        cancel("workflowUrl=https://shop.example.com/refunds&workflowUrlExactMatch=true&count=100").await;
    assert_eq!(answer, json!({"cancelled": 1}));
    let (_, answer) = cancel("workflowUrl=https://shop.example.com/orders&workflowUrlExactMatch=true").await;
    assert_eq!(answer, json!({"cancelled": 0}), "an exact URL is not a prefix");
    let (_, answer) = cancel("host=other.example.com&path=/orders/b&label=bronze&label=silver").await;
    assert_eq!(answer, json!({"cancelled": 1}), "wfr_4");
    assert_eq!(running_runs(&server).await, ["wfr_1", "wfr_5", "wfr_6"]);

    // A window of time that holds no run cancels none; `count` caps the rest.
    let (_, answer) = cancel("fromDate=1&toDate=2&count=100").await;
    assert_eq!(answer, json!({"cancelled": 0}));
    let (_, answer) = cancel("callerIp=127.0.0.1&flowControlKey=tenant-3&count=1").await;
    assert_eq!(answer, json!({"cancelled": 1}));
    assert_eq!(running_runs(&server).await.len(), 2);
    // `{ all: true }` from the SDK is a bare `count`.
    let (_, answer) = cancel("count=100").await;
    assert_eq!(answer, json!({"cancelled": 2}));
}

#[tokio::test]
async fn a_step_published_in_a_batch_for_a_cancelled_run_is_a_400() {
    let server = TestServer::embedded().await;
    let url = "https://shop.example.com/flow";
    trigger_by_batch(&server, "wfr_gone", url, &[("Upstash-Delay", "1h")]).await;
    let (status, _) = send(server.queue(Method::DELETE, "/v2/workflows/runs/wfr_gone")).await;
    assert_eq!(status, StatusCode::OK);
    let headers: serde_json::Map<String, Value> = workflow_headers("wfr_gone", false, url)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v)))
        .collect();
    let (status, answer) = send(
        server
            .queue(Method::POST, "/v2/batch")
            .json(&json!([{"destination": url, "headers": headers, "body": "{}"}])),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("wfr_gone"), "{answer}");
}

#[tokio::test]
async fn a_run_whose_step_is_in_flight_is_reported_and_kept_then_cancelled_on_repeat() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.reply_next(Reply::status(200).after(Duration::from_millis(800)));
    let url = receiver.url("/slow");
    trigger_by_batch(&server, "wfr_busy", &url, &[]).await;
    trigger_by_batch(
        &server,
        "wfr_idle",
        "https://example.com/idle",
        &[("Upstash-Delay", "1h")],
    )
    .await;
    receiver.wait_for(1, WAIT).await;

    let (status, answer) = send(server.queue(Method::DELETE, "/v2/workflows/runs")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["cancelled"], 1, "{answer}");
    assert_eq!(answer["errors"][0]["workflowRunId"], "wfr_busy");
    let (_, logs) = send(server.queue(Method::GET, "/v2/workflows/events?workflowRunId=wfr_busy")).await;
    assert_eq!(
        logs["runs"][0]["workflowState"], "RUN_STARTED",
        "the busy run kept its state"
    );

    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        let (_, retry) = send(server.queue(Method::DELETE, "/v2/workflows/runs")).await;
        if retry["cancelled"] == 1 {
            let (_, logs) =
                send(server.queue(Method::GET, "/v2/workflows/events?workflowRunId=wfr_busy")).await;
            assert_eq!(logs["runs"][0]["workflowState"], "RUN_CANCELED");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("repeating the bulk cancel never cancelled the busy run");
}

#[tokio::test]
async fn a_run_and_its_history_survive_a_restart() {
    let mut server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let url = receiver.url("/workflow");
    trigger_by_batch(&server, "wfr_durable", &url, &[]).await;
    receiver.wait_for(1, WAIT).await;
    assert_eq!(
        publish_step(&server, "wfr_durable", &url, "{\"stepId\":1,\"out\":\"1\"}").await,
        StatusCode::OK
    );
    receiver.wait_for(2, WAIT).await;

    server.restart().await;
    let (_, logs) = send(server.queue(Method::GET, "/v2/workflows/events?workflowRunId=wfr_durable")).await;
    assert_eq!(logs["runs"][0]["workflowState"], "RUN_STARTED", "{logs}");
    let (status, steps) = send(server.queue(Method::GET, "/v2/workflows/runs/wfr_durable")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        steps.as_array().unwrap().len(),
        2,
        "the initial body and the first step: {steps}"
    );
    // The run goes on after the restart.
    assert_eq!(
        publish_step(&server, "wfr_durable", &url, "{\"stepId\":2,\"out\":\"2\"}").await,
        StatusCode::OK
    );
    let delivered = receiver.wait_for(3, WAIT).await;
    let history: Value = serde_json::from_slice(&delivered[2].body).unwrap();
    assert_eq!(history.as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn the_dlq_lists_only_workflow_messages_with_source_workflow() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.respond_with(Reply::status(500));
    let url = receiver.url("/workflow");
    trigger_by_batch(&server, "wfr_failing", &url, &[("Upstash-Retries", "0")]).await;
    let (status, _) = send(
        server
            .queue(Method::POST, &format!("/v2/publish/{}", receiver.url("/plain")))
            .header("Upstash-Retries", "0")
            .header("Upstash-Flow-Control-Key", "plain-key")
            .header("Upstash-Flow-Control-Value", "parallelism=1"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    receiver.wait_for(2, WAIT).await;
    let mut all = Value::Null;
    for _ in 0..200 {
        all = send(server.queue(Method::GET, "/v2/dlq")).await.1;
        if all["messages"].as_array().is_some_and(|m| m.len() == 2) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(all["messages"].as_array().unwrap().len(), 2, "{all}");
    let (_, workflow) = send(server.queue(Method::GET, "/v2/dlq?source=workflow")).await;
    let messages = workflow["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{workflow}");
    assert_eq!(messages[0]["url"], url);
    let (_, keyed) = send(server.queue(Method::GET, "/v2/dlq?flowControlKey=plain-key")).await;
    assert_eq!(keyed["messages"][0]["url"], receiver.url("/plain"));
    assert_eq!(keyed["messages"].as_array().unwrap().len(), 1);
}

async fn workflow_dead_letters(server: &TestServer, expected: usize) -> Vec<Value> {
    until(
        &format!("the workflow DLQ holding {expected} dead letters"),
        WAIT,
        || async {
            let (_, page) = send(server.queue(Method::GET, "/v2/dlq?source=workflow")).await;
            let messages = page["messages"].as_array().unwrap().clone();
            (messages.len() == expected).then_some(messages)
        },
    )
    .await
}

async fn run_state(server: &TestServer, run: &str) -> Value {
    let (_, logs) =
        send(server.queue(Method::GET, &format!("/v2/workflows/events?workflowRunId={run}"))).await;
    logs["runs"][0]["workflowState"].clone()
}

#[tokio::test]
async fn a_dead_lettered_step_fails_its_run_which_can_be_restarted_resumed_or_deleted_from_the_dlq() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.respond_with(Reply::status(500));
    let url = receiver.url("/workflow");
    trigger_by_batch(&server, "wfr_broken", &url, &[("Upstash-Retries", "0")]).await;
    let dead = workflow_dead_letters(&server, 1).await.remove(0);
    assert_eq!(dead["workflowRunId"], "wfr_broken");
    assert_eq!(dead["workflowUrl"], url);
    let created_at = dead["workflowCreatedAt"]
        .as_i64()
        .expect("the run's creation time");
    until("the run failed", WAIT, || async {
        (run_state(&server, "wfr_broken").await == "RUN_FAILED").then_some(())
    })
    .await;
    let (_, by_time) = send(server.queue(
        Method::GET,
        &format!("/v2/workflows/dlq?workflowCreatedAt={created_at}&workflowRunId=wfr_broken"),
    ))
    .await;
    assert_eq!(by_time["messages"].as_array().unwrap().len(), 1, "{by_time}");
    let (_, none) = send(server.queue(Method::GET, "/v2/dlq?source=workflow&workflowCreatedAt=1")).await;
    assert_eq!(none["messages"].as_array().unwrap().len(), 0, "{none}");

    // Restart: a new run from the beginning, with the initial payload as its history.
    receiver.respond_with(Reply::status(200));
    let dlq_id = dead["dlqId"].as_str().unwrap();
    let (status, restarted) = send(
        server
            .queue(Method::POST, &format!("/v2/workflows/dlq/restart/{dlq_id}"))
            .header("Upstash-Retries", "2"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{restarted}");
    let new_run = restarted["workflowRunId"].as_str().unwrap().to_owned();
    assert_ne!(new_run, "wfr_broken");
    assert!(restarted["workflowCreatedAt"].is_i64());
    let delivered = receiver.wait_for(2, WAIT).await.remove(1);
    assert_eq!(delivered.header("upstash-workflow-runid"), Some(new_run.as_str()));
    assert!(delivered.header("upstash-workflow-createdat").is_some());
    let history: Value = serde_json::from_slice(&delivered.body).unwrap();
    assert_eq!(history[0]["body"], STANDARD.encode("{\"order\":1}"));
    assert_eq!(run_state(&server, &new_run).await, "RUN_STARTED");
    workflow_dead_letters(&server, 0).await;

    // Resume in bulk by filter, and delete: both act on workflow dead letters only.
    receiver.respond_with(Reply::status(500));
    trigger_by_batch(
        &server,
        "wfr_again",
        &url,
        &[("Upstash-Retries", "0"), ("Upstash-Label", "retry-me")],
    )
    .await;
    trigger_by_batch(&server, "wfr_other", &url, &[("Upstash-Retries", "0")]).await;
    workflow_dead_letters(&server, 2).await;
    receiver.respond_with(Reply::status(200));
    let (status, resumed) =
        send(server.queue(Method::POST, "/v2/workflows/dlq/resume?label=retry-me&count=100")).await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    assert_eq!(resumed["workflowRuns"].as_array().unwrap().len(), 1, "{resumed}");
    let (status, typo) = send(server.queue(Method::DELETE, "/v2/workflows/dlq?lable=x")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{typo}");
    let (_, deleted) = send(server.queue(Method::DELETE, "/v2/workflows/dlq?count=100")).await;
    assert_eq!(deleted["deleted"], 1, "{deleted}");
    workflow_dead_letters(&server, 0).await;
}

#[tokio::test]
async fn an_invoked_run_starts_with_the_invoke_payload_and_its_result_is_the_invokers_next_step() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let parent = receiver.url("/parent");
    let child = receiver.url("/child");
    trigger_by_batch(&server, "wfr_parent", &parent, &[("Upstash-Delay", "1h")]).await;
    let invoke = json!({
        "body": "{\"n\":1}",
        "headers": {
            "Upstash-Workflow-Runid": ["wfr_parent"],
            "Upstash-Workflow-Init": ["false"],
            "Upstash-Workflow-Url": [parent],
            "Upstash-Forward-Upstash-Workflow-Sdk-Version": ["1"],
        },
        "workflowRunId": "wfr_parent",
        "workflowRunCreatedAt": 1_700_000_000_000_i64,
        "workflowUrl": parent,
        "step": {"stepId": 2, "stepName": "ask the child", "stepType": "Invoke", "concurrent": 1},
    });
    let mut request = server
        .queue(Method::POST, &format!("/v2/publish/{child}"))
        .header("Upstash-Workflow-Invoke", "true")
        .body(invoke.to_string());
    for (name, value) in workflow_headers("wfr_child", true, &child) {
        request = request.header(name, value);
    }
    let (status, answer) = send(request).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let first = receiver.wait_for(1, WAIT).await.remove(0);
    assert_eq!(first.uri.path(), "/child");
    let history: Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(
        history[0]["body"],
        STANDARD.encode("{\"n\":1}"),
        "the invoke payload is the run's own"
    );
    let (_, logs) = send(server.queue(Method::GET, "/v2/workflows/events?workflowRunId=wfr_child")).await;
    assert_eq!(logs["runs"][0]["invoker"]["workflowRunId"], "wfr_parent");

    let (status, _) = send(
        server
            .queue(Method::DELETE, "/v2/workflows/runs/wfr_child?cancel=false")
            .body("\"done\""),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let result = receiver.wait_for(2, WAIT).await.remove(1);
    assert_eq!(result.uri.path(), "/parent");
    assert_eq!(result.header("upstash-workflow-runid"), Some("wfr_parent"));
    let history: Value = serde_json::from_slice(&result.body).unwrap();
    let last = history.as_array().unwrap().last().unwrap();
    let step: Value =
        serde_json::from_slice(&STANDARD.decode(last["body"].as_str().unwrap()).unwrap()).unwrap();
    assert_eq!(
        (&step["stepId"], &step["stepType"]),
        (&json!(2), &json!("Invoke"))
    );
    let out: Value = serde_json::from_str(step["out"].as_str().unwrap()).unwrap();
    assert_eq!(
        out,
        json!({"body": "\"done\"", "isFailed": false, "isCanceled": false})
    );
}

#[tokio::test]
async fn a_failed_failure_callback_is_reported_on_its_steps_dead_letter_and_can_be_sent_again() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.respond_with(Reply::status(500).with_body("still down"));
    let url = receiver.url("/workflow");
    let failure = receiver.url("/failure");
    trigger_by_batch(
        &server,
        "wfr_doomed",
        &url,
        &[
            ("Upstash-Retries", "0"),
            ("Upstash-Failure-Callback", failure.as_str()),
            ("Upstash-Failure-Callback-Retries", "0"),
        ],
    )
    .await;
    let dead = until("the failure callback failed", WAIT, || async {
        let dead = workflow_dead_letters(&server, 1).await.remove(0);
        (dead["failureCallbackInfo"]["state"] == "CALLBACK_FAIL").then_some(dead)
    })
    .await;
    assert_eq!(dead["failureCallbackInfo"]["responseStatus"], 500);
    assert_eq!(dead["failureCallbackInfo"]["responseBody"], "still down");
    let (_, all) = send(server.queue(Method::GET, "/v2/dlq")).await;
    assert_eq!(
        all["messages"].as_array().unwrap().len(),
        1,
        "the failed callback has no dead letter of its own"
    );
    let (_, failed) = send(server.queue(
        Method::GET,
        "/v2/dlq?source=workflow&failureFunctionState=CALLBACK_FAIL",
    ))
    .await;
    assert_eq!(failed["messages"].as_array().unwrap().len(), 1);
    let (_, succeeded) = send(server.queue(
        Method::GET,
        "/v2/dlq?source=workflow&failureFunctionState=CALLBACK_SUCCESS",
    ))
    .await;
    assert_eq!(succeeded["messages"].as_array().unwrap().len(), 0);
    let (status, _) = send(server.queue(Method::GET, "/v2/dlq?failureFunctionState=SOMETIMES")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    receiver.respond_with(Reply::status(200));
    let dlq_id = dead["dlqId"].as_str().unwrap();
    let (status, retried) =
        send(server.queue(Method::POST, &format!("/v2/workflows/dlq/callback/{dlq_id}"))).await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(retried["workflowRunId"], "wfr_doomed");
    until("the failure callback sent again succeeded", WAIT, || async {
        let state = workflow_dead_letters(&server, 1).await[0]["failureCallbackInfo"]["state"].clone();
        (state == "CALLBACK_SUCCESS").then_some(())
    })
    .await;
    let callback = receiver
        .requests()
        .into_iter()
        .rfind(|r| r.uri.path() == "/failure")
        .unwrap();
    assert_eq!(callback.json()["dlqId"], dlq_id);
}

#[tokio::test]
async fn a_failure_callback_in_progress_can_be_cancelled_and_its_late_answer_changes_nothing() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.reply_next(Reply::status(500));
    // The failure callback's answer waits until the test lets it go: it is being delivered meanwhile.
    receiver.respond_with(Reply::status(200).held());
    let failure = receiver.url("/failure");
    trigger_by_batch(
        &server,
        "wfr_called_off",
        &receiver.url("/workflow"),
        &[
            ("Upstash-Retries", "0"),
            ("Upstash-Failure-Callback", failure.as_str()),
        ],
    )
    .await;
    receiver.wait_for(2, WAIT).await;
    let dead = workflow_dead_letters(&server, 1).await.remove(0);
    assert_eq!(
        dead["failureCallbackInfo"]["state"], "CALLBACK_INPROGRESS",
        "{dead}"
    );
    let dlq_id = dead["dlqId"].as_str().unwrap();
    let path = format!("/v2/workflows/dlq/callback/{dlq_id}");

    let (status, cancelled) = send(server.queue(Method::DELETE, &path)).await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    assert_eq!(cancelled["workflowRunId"], "wfr_called_off");
    let state =
        || async { workflow_dead_letters(&server, 1).await[0]["failureCallbackInfo"]["state"].clone() };
    assert_eq!(state().await, "CALLBACK_CANCELED");
    receiver.release(1);
    for _ in 0..50 {
        assert_eq!(
            state().await,
            "CALLBACK_CANCELED",
            "the late answer is not recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let (status, again) = send(server.queue(Method::DELETE, &path)).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "nothing in progress any more: {again}"
    );
    assert!(again["error"].as_str().unwrap().contains(dlq_id), "{again}");
    let (status, _) = send(server.queue(Method::DELETE, "/v2/workflows/dlq/callback/no-such-dlq")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = send(server.queue(Method::DELETE, &format!("/v2/workflows/dlq/resume/{dlq_id}"))).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "only a callback is cancelled this way"
    );
    // Sent again, it is in progress again and delivered.
    receiver.respond_with(Reply::status(200));
    let (status, _) = send(server.queue(Method::POST, &path)).await;
    assert_eq!(status, StatusCode::OK);
    until("the callback sent again succeeded", WAIT, || async {
        (state().await == "CALLBACK_SUCCESS").then_some(())
    })
    .await;
}
