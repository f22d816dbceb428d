//! Workflow waits through HTTP on the manual clock: a waiter gets the notified data as its step, times
//! out at its deadline, and an event notified for a run before it waited is kept for that wait.

use std::time::Duration;

use base64::Engine as _;
use quiver_testkit::calls::send;
use quiver_testkit::{Receiver, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

async fn wait(server: &TestServer, receiver: &Receiver, event: &str, run: &str, timeout: &str) {
    let body = json!({
        "url": receiver.url("/notified"),
        "timeout": timeout,
        "timeoutUrl": receiver.url("/timed-out"),
        "timeoutHeaders": {"Upstash-Workflow-Runid": [run], "Upstash-Forward-X-Custom": ["kept"]},
        "step": {"stepId": 3, "stepType": "Wait", "stepName": "wait for it", "concurrent": 1, "targetStep": 0},
    });
    let (status, answer) = send(
        server
            .queue(Method::POST, &format!("/v2/wait/{event}"))
            .json(&body),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

fn step_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

#[tokio::test]
async fn a_notified_waiter_gets_the_data_as_its_step_and_is_gone() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    wait(&server, &receiver, "paid", "wfr_a", "1h").await;
    let (_, waiters) = send(server.queue(Method::GET, "/v2/waiters/paid")).await;
    assert_eq!(waiters[0]["url"], receiver.url("/notified"));
    assert_eq!(
        waiters[0]["timeoutHeaders"]["Upstash-Forward-X-Custom"],
        json!(["kept"])
    );
    let deadline = waiters[0]["deadline"].as_i64().unwrap();
    assert!(deadline > 0);

    let (status, notified) = send(
        server
            .queue(Method::POST, "/v2/notify/paid")
            .body("{\"amount\":42}"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(notified.as_array().unwrap().len(), 1);
    assert!(!notified[0]["messageId"].as_str().unwrap().is_empty());
    assert_eq!(notified[0]["waiter"]["deadline"], deadline);

    let delivered = receiver.wait_for(1, WAIT).await.remove(0);
    assert_eq!(delivered.uri.path(), "/notified");
    let step = step_of(&delivered.body);
    assert_eq!(step["stepId"], 3);
    assert_eq!(step["waitEventId"], "paid");
    assert_eq!(step["waitTimeout"], false);
    let out = base64::engine::general_purpose::STANDARD
        .decode(step["out"].as_str().unwrap())
        .unwrap();
    assert_eq!(out, b"{\"amount\":42}");

    let (_, waiters) = send(server.queue(Method::GET, "/v2/waiters/paid")).await;
    assert_eq!(waiters, json!([]));
    let (_, again) = send(server.queue(Method::POST, "/v2/notify/paid").body("x")).await;
    assert_eq!(again, json!([]), "nobody waits any more");
}

#[tokio::test]
async fn a_waiter_times_out_at_its_deadline_on_the_manual_clock() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    wait(&server, &receiver, "never", "wfr_b", "10m").await;
    server.clock().advance(Duration::from_secs(599));
    server.settle().await;
    assert!(receiver.requests().is_empty(), "not yet");
    server.clock().advance(Duration::from_secs(1));
    let delivered = receiver.wait_for(1, WAIT).await.remove(0);
    assert_eq!(delivered.uri.path(), "/timed-out");
    let step = step_of(&delivered.body);
    assert_eq!(step["waitTimeout"], true);
    assert!(step.get("out").is_none());
    assert_eq!(delivered.header("X-Custom"), Some("kept"));
    let (_, waiters) = send(server.queue(Method::GET, "/v2/waiters/never")).await;
    assert_eq!(waiters, json!([]));
}

#[tokio::test]
async fn an_event_notified_for_a_run_before_it_waits_is_kept_for_the_wait() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let (status, kept) = send(server.queue(Method::POST, "/v2/notify/wfr_c/early").body("soon")).await;
    assert_eq!(status, StatusCode::CREATED, "{kept}");
    wait(&server, &receiver, "early", "wfr_c", "1h").await;
    let step = step_of(&receiver.wait_for(1, WAIT).await[0].body);
    assert_eq!(step["waitTimeout"], false);
    assert_eq!(
        step["out"],
        base64::engine::general_purpose::STANDARD.encode("soon")
    );
    let (_, waiters) = send(server.queue(Method::GET, "/v2/waiters/early")).await;
    assert_eq!(waiters, json!([]), "answered at once, never stored");

    let (status, bad) = send(server.queue(Method::POST, "/v2/wait/x").body("not json")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    let (status, _) = send(
        server
            .queue(Method::POST, "/v2/wait/x")
            .json(&json!({"url": receiver.url("/n"), "timeout": "soonish"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_webhook_call_reaches_the_run_waiting_for_it_even_when_it_comes_first() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let user = quiver_admin::account::queue_token_user(&server.account().queue_token)
        .expect("generated queue tokens carry a UserID, as the workflow SDK expects");
    let (status, _) = send(server.queue(Method::POST, "/v2/batch").json(&json!([{
        "destination": receiver.url("/workflow"),
        "headers": {
            "Upstash-Workflow-RunId": "wfr_hook",
            "Upstash-Workflow-Init": "true",
            "Upstash-Delay": "1h",
        },
        "body": "{}",
    }])))
    .await;
    assert_eq!(status, StatusCode::OK);

    let hook = server.url(&format!(
        "/v2/workflows/hooks/{user}/wfr_hook/evt_paid?source=stripe"
    ));
    let called = server
        .client()
        .post(&hook)
        .header("X-Signature", "abc")
        .body("payment done")
        .send()
        .await
        .unwrap();
    assert_eq!(
        called.status(),
        StatusCode::OK,
        "a third party calls it without a token"
    );
    // `waitForWebhook` registers like `waitForEvent`, with the run's headers as the SDK sends them.
    let (status, answer) = send(server.queue(Method::POST, "/v2/wait/evt_paid").json(&json!({
        "url": receiver.url("/notified"),
        "timeout": "1h",
        "timeoutUrl": receiver.url("/timed-out"),
        "timeoutHeaders": {
            "Upstash-Workflow-Runid": ["wfr_hook"],
            "Upstash-Workflow-Init": ["false"],
            "Upstash-Forward-Upstash-Workflow-Sdk-Version": ["1"],
        },
        "step": {"stepId": 2, "stepType": "WaitForWebhook", "stepName": "hook", "concurrent": 1, "targetStep": 0},
    })))
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let delivered = receiver.wait_for(1, WAIT).await.remove(0);
    let history = step_of(&delivered.body);
    let step: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(history[1]["body"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(step["waitTimeout"], false);
    assert_eq!(step["stepType"], "WaitForWebhook");
    let data: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(step["out"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(data["method"], "POST");
    assert_eq!(data["proto"], "http");
    assert_eq!(
        data["url"],
        format!("/v2/workflows/hooks/{user}/wfr_hook/evt_paid?source=stripe")
    );
    assert_eq!(data["header"]["x-signature"], json!(["abc"]));
    assert_eq!(
        data["body"],
        base64::engine::general_purpose::STANDARD.encode("payment done")
    );

    for (path, what) in [
        (
            "/v2/workflows/hooks/nobody/wfr_hook/evt_x".to_owned(),
            "an unknown user",
        ),
        (
            format!("/v2/workflows/hooks/{user}/wfr_none/evt_x"),
            "an unknown run",
        ),
    ] {
        let status = server
            .client()
            .post(server.url(&path))
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, StatusCode::NOT_FOUND, "{what}");
    }
}
