//! FIFO queues through HTTP: order across retries, parallelism, pause and resume, the queue API.

use std::time::Duration;

use quiver_testkit::calls::send;
use quiver_testkit::poll::until;
use quiver_testkit::{Receiver, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

async fn enqueue(server: &TestServer, queue: &str, destination: &str, body: &str) -> String {
    let (status, published) = send(
        server
            .queue(Method::POST, &format!("/v2/enqueue/{queue}/{destination}"))
            .header("Svc-Retries", "1")
            .body(body.to_owned()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    published["messageId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_next_message_waits_for_the_current_ones_retries() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.fail_next(1, 500);
    let first = enqueue(&server, "orders", &receiver.url("/o"), "first").await;
    enqueue(&server, "orders", &receiver.url("/o"), "second").await;

    receiver.wait_for(1, WAIT).await;
    until("the first message's retry scheduled", WAIT, || async {
        let (_, message) = send(server.queue(Method::GET, &format!("/v2/messages/{first}"))).await;
        (message["retried"] == 1).then_some(())
    })
    .await;
    let (_, queue) = send(server.queue(Method::GET, "/v2/queues/orders")).await;
    assert_eq!(
        queue["lag"], 2,
        "both wait: the first for its retry, the second behind it"
    );
    server.clock().advance(Duration::from_secs(13));
    let bodies: Vec<String> = receiver
        .wait_for(3, WAIT)
        .await
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert_eq!(
        bodies,
        ["first", "first", "second"],
        "the second went only after the first's retry"
    );
}

#[tokio::test]
async fn queues_are_created_listed_paused_resumed_and_deleted() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let (status, _) = send(
        server
            .queue(Method::POST, "/v2/queues")
            .json(&json!({"queueName": "jobs", "parallelism": 2, "paused": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, queue) = send(server.queue(Method::GET, "/v2/queues/jobs")).await;
    assert_eq!(
        (
            queue["name"].clone(),
            queue["parallelism"].clone(),
            queue["paused"].clone(),
            queue["lag"].clone()
        ),
        (json!("jobs"), json!(2), json!(true), json!(0))
    );
    assert!(queue["createdAt"].is_i64() && queue["updatedAt"].is_i64());

    enqueue(&server, "jobs", &receiver.url("/j"), "held").await;
    let (_, queue) = send(server.queue(Method::GET, "/v2/queues/jobs")).await;
    assert_eq!(queue["lag"], 1, "a paused queue holds its messages");
    assert!(receiver.requests().is_empty());
    let (status, _) = send(server.queue(Method::POST, "/v2/queues/jobs/resume")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(&receiver.wait_for(1, WAIT).await[0].body[..], b"held");

    enqueue(&server, "auto-made", &receiver.url("/a"), "x").await;
    let (_, queues) = send(server.queue(Method::GET, "/v2/queues")).await;
    let names: Vec<&str> = queues
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["auto-made", "jobs"], "enqueue creates its queue");
    let (_, made) = send(server.queue(Method::GET, "/v2/queues/auto-made")).await;
    assert_eq!(made["parallelism"], 1);

    let (status, _) = send(server.queue(Method::POST, "/v2/queues/jobs/pause")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(server.queue(Method::DELETE, "/v2/queues/jobs")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(server.queue(Method::GET, "/v2/queues/jobs")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = send(server.queue(Method::DELETE, "/v2/queues/jobs")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for body in [
        json!({"queueName": "bad name"}),
        json!({"queueName": "q", "parallelism": 0}),
        json!({"parallelism": 2}),
    ] {
        let (status, _) = send(server.queue(Method::POST, "/v2/queues").json(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    }
    let (status, _) = send(server.queue(
        Method::POST,
        &format!("/v2/enqueue/bad%20name/{}", receiver.url("/x")),
    ))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
