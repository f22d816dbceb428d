//! Flow control through HTTP: keyed messages never exceed their key's parallelism or rate, pause and
//! resume, pins that outlast later publishes, and the flow-control API's answers.

use std::time::Duration;

use quiver_testkit::calls::send;
use quiver_testkit::receiver::Reply;
use quiver_testkit::{Receiver, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(20);

async fn publish(server: &TestServer, receiver: &Receiver, key: &str, value: &str, body: &str) {
    let (status, answer) = send(
        server
            .queue(Method::POST, &format!("/v2/publish/{}", receiver.url("/flow")))
            .header("Svc-Flow-Control-Key", key)
            .header("Svc-Flow-Control-Value", value)
            .body(body.to_owned()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

async fn info(server: &TestServer, key: &str) -> Value {
    let (status, info) = send(server.queue(Method::GET, &format!("/v2/flowControl/{key}"))).await;
    assert_eq!(status, StatusCode::OK, "{info}");
    info
}

#[tokio::test]
async fn at_most_parallelism_deliveries_of_a_key_are_in_flight() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.respond_with(Reply::status(200).held());
    for i in 0..5 {
        publish(&server, &receiver, "pdf", "parallelism=2", &format!("m{i}")).await;
    }
    receiver.wait_for(2, WAIT).await;
    server.settle().await;
    assert_eq!(receiver.requests().len(), 2, "two in flight, three waiting");
    let state = info(&server, "pdf").await;
    assert_eq!(state["flowControlKey"], "pdf");
    assert_eq!(state["parallelismMax"], 2);
    assert_eq!(state["parallelismCount"], 2);
    assert_eq!(state["waitListSize"], 3);
    assert_eq!(state["isPaused"], false);
    // As deliveries finish, the waiting three go too.
    receiver.respond_with(Reply::status(200));
    receiver.release(2);
    let all = receiver.wait_for(5, WAIT).await;
    let bodies: Vec<String> = all
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(bodies.len(), 5);
    let (_, global) = send(server.queue(Method::GET, "/v2/globalParallelism")).await;
    assert!(global["parallelismMax"].as_u64().unwrap() >= 1);
}

#[tokio::test]
async fn at_most_rate_deliveries_start_per_period_on_the_manual_clock() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    for i in 0..5 {
        publish(&server, &receiver, "mail", "rate=2,period=60s", &format!("m{i}")).await;
    }
    receiver.wait_for(2, WAIT).await;
    server.settle().await;
    assert_eq!(receiver.requests().len(), 2, "the rate allows two per minute");
    let state = info(&server, "mail").await;
    assert_eq!(
        (
            state["rateMax"].clone(),
            state["rateCount"].clone(),
            state["ratePeriod"].clone()
        ),
        (2.into(), 2.into(), 60.into())
    );
    assert_eq!(state["waitListSize"], 3);

    server.clock().advance(Duration::from_secs(59));
    server.settle().await;
    assert_eq!(receiver.requests().len(), 2, "still inside the period");
    server.clock().advance(Duration::from_secs(1));
    receiver.wait_for(4, WAIT).await;
    server.settle().await;
    assert_eq!(receiver.requests().len(), 4);

    // resetRate starts a new period at once.
    let (status, _) = send(server.queue(Method::POST, "/v2/flowControl/mail/resetRate")).await;
    assert_eq!(status, StatusCode::OK);
    receiver.wait_for(5, WAIT).await;
}

#[tokio::test]
async fn a_paused_key_starts_nothing_and_a_pin_outlasts_later_publishes() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    publish(&server, &receiver, "k", "parallelism=5", "first").await;
    receiver.wait_for(1, WAIT).await;

    let (status, _) = send(server.queue(Method::POST, "/v2/flowControl/k/pause")).await;
    assert_eq!(status, StatusCode::OK);
    publish(&server, &receiver, "k", "parallelism=5", "second").await;
    server.settle().await;
    assert_eq!(receiver.requests().len(), 1, "paused");
    assert_eq!(info(&server, "k").await["isPaused"], true);
    let (status, _) = send(server.queue(Method::POST, "/v2/flowControl/k/resume")).await;
    assert_eq!(status, StatusCode::OK);
    receiver.wait_for(2, WAIT).await;

    let (status, _) = send(server.queue(
        Method::POST,
        "/v2/flowControl/k/pin?parallelism=1&rate=3&period=10",
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    publish(&server, &receiver, "k", "parallelism=9,rate=50", "third").await;
    let state = info(&server, "k").await;
    assert_eq!(
        (
            state["parallelismMax"].clone(),
            state["rateMax"].clone(),
            state["ratePeriod"].clone()
        ),
        (1.into(), 3.into(), 10.into())
    );
    assert_eq!(
        (
            state["isPinnedParallelism"].clone(),
            state["isPinnedRate"].clone()
        ),
        (true.into(), true.into())
    );
    let (status, _) =
        send(server.queue(Method::POST, "/v2/flowControl/k/unpin?parallelism=true&rate=true")).await;
    assert_eq!(status, StatusCode::OK);
    publish(&server, &receiver, "k", "parallelism=9,rate=50", "fourth").await;
    assert_eq!(
        info(&server, "k").await["parallelismMax"],
        9,
        "publishes set the limits again"
    );

    let (_, all) = send(server.queue(Method::GET, "/v2/flowControl")).await;
    assert_eq!(all.as_array().unwrap().len(), 1);
    let (status, missing) = send(server.queue(Method::GET, "/v2/flowControl/nope")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    let (status, _) = send(server.queue(Method::POST, "/v2/flowControl/nope/pause")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = send(server.queue(Method::POST, "/v2/flowControl/k/pin")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a pin needs a limit");
    let (status, refused) =
        send(server.queue(Method::POST, "/v2/flowControl/k/pin?parallelism=1&speed=3")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("`speed`"),
        "{refused}"
    );
    let (status, _) = send(server.queue(Method::POST, "/v2/flowControl/k/unpin?rate=maybe")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "an unpin flag is true or false");
    let (status, _) = send(
        server
            .queue(Method::POST, &format!("/v2/publish/{}", receiver.url("/flow")))
            .header("Svc-Flow-Control-Key", "k")
            .header("Svc-Flow-Control-Value", "parallelism=lots"),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a malformed value stores nothing"
    );
}
