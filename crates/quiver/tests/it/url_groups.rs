//! URL groups through real HTTP: fan-out with default headers, and removing endpoints.

use std::time::Duration;

use quiver_testkit::calls::{publish, send};
use quiver_testkit::{Receiver, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_url_group_fans_out_to_every_endpoint_with_its_default_headers() {
    let server = TestServer::embedded().await;
    let first = Receiver::start().await;
    let second = Receiver::start().await;
    let body = json!({"endpoints": [{"name": "one", "url": first.url("/1")}, {"url": second.url("/2")}]});
    let (status, _) = send(
        server
            .queue(Method::POST, "/v2/topics/orders/endpoints")
            .json(&body),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let headers = json!({"headers": {"Svc-Header-Forward": ["true"], "Svc-Forward-X-Default": "from-group", "Svc-Retries": "2"}});
    let (status, _) = send(server.queue(Method::PATCH, "/v2/topics/orders").json(&headers)).await;
    assert_eq!(status, StatusCode::OK);

    let (status, group) = send(server.queue(Method::GET, "/v2/topics/orders")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(group["name"], "orders");
    assert_eq!(
        group["endpoints"],
        json!([{"name": "one", "url": first.url("/1")}, {"url": second.url("/2")}])
    );
    assert!(group["createdAt"].is_i64() && group["updatedAt"].is_i64());

    let (status, published) = publish(
        &server,
        "orders",
        &[("X-Custom", "passed"), ("Svc-Forward-X-Default", "own")],
        "order 1",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    let published = published.as_array().expect("a bare array for a group");
    assert_eq!(published.len(), 2);
    assert_eq!(published[0]["url"], first.url("/1"));

    for receiver in [&first, &second] {
        let delivered = receiver.wait_for(1, WAIT).await.remove(0);
        assert_eq!(&delivered.body[..], b"order 1");
        assert_eq!(delivered.header("upstash-topic-name"), Some("orders"));
        assert_eq!(
            delivered.header("x-custom"),
            Some("passed"),
            "header forwarding came from the group"
        );
        assert_eq!(
            delivered.header("x-default"),
            Some("own"),
            "the publish's own header wins"
        );
    }
    // A delivery is acknowledged to the receiver before its events reach the log: wait for them.
    let events_url = format!(
        "/v2/events?messageId={}",
        published[0]["messageId"].as_str().unwrap()
    );
    let message = quiver_testkit::poll::until("the message's events", WAIT, || async {
        let (_, message) = send(server.queue(Method::GET, &events_url)).await;
        message["events"]
            .as_array()
            .is_some_and(|e| !e.is_empty())
            .then_some(message)
    })
    .await;
    assert_eq!(
        message["events"][0]["maxRetries"], 2,
        "retries came from the group defaults"
    );
    assert_eq!(message["events"][0]["topicName"], "orders");
    assert_eq!(message["events"][0]["endpointName"], "one");
}

#[tokio::test]
async fn removing_endpoints_by_name_or_url_deletes_the_group_with_its_last_endpoint() {
    let server = TestServer::embedded().await;
    let body = json!({"endpoints": [{"name": "a", "url": "http://127.0.0.1:9/a"}, {"url": "http://127.0.0.1:9/b"}, {"name": "c", "url": "http://127.0.0.1:9/c"}]});
    send(server.queue(Method::POST, "/v2/topics/g/endpoints").json(&body)).await;

    let (status, error) = send(
        server
            .queue(Method::DELETE, "/v2/topics/g/endpoints")
            .json(&json!({"endpoints": [{}]})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    let (status, _) = send(
        server
            .queue(Method::DELETE, "/v2/topics/g/endpoints")
            .json(&json!({"endpoints": [{"name": "a"}, {"url": "http://127.0.0.1:9/b"}]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, group) = send(server.queue(Method::GET, "/v2/topics/g")).await;
    assert_eq!(
        group["endpoints"],
        json!([{"name": "c", "url": "http://127.0.0.1:9/c"}])
    );
    let (status, _) = send(
        server
            .queue(Method::DELETE, "/v2/topics/g/endpoints")
            .json(&json!({"endpoints": [{"name": "c"}]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = send(server.queue(Method::GET, "/v2/topics/g")).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "the group went with its last endpoint"
    );
    let (_, groups) = send(server.queue(Method::GET, "/v2/topics")).await;
    assert_eq!(groups, json!([]));
    let (status, _) = send(
        server
            .queue(Method::DELETE, "/v2/topics/missing/endpoints")
            .json(&json!({"endpoints": [{"name": "x"}]})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
