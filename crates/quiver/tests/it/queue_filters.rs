//! Filters of the queue's list and bulk routes as the SDKs send them: several values per filter, host
//! and path of the log, DLQ paging by count and cursor, and a 400 for any key a route does not know.

use quiver_testkit::calls::{publish, send};
use quiver_testkit::{Receiver, Reply, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::queue::wait_for_dead_letter;

#[tokio::test]
async fn a_bulk_cancel_with_a_filter_it_does_not_know_cancels_nothing() {
    let server = TestServer::embedded().await;
    publish(&server, "http://127.0.0.1:9/a", &[("Svc-Delay", "1d")], "").await;
    for request in [
        server.queue(Method::DELETE, "/v2/messages?lable=nightly"),
        server
            .queue(Method::DELETE, "/v2/messages")
            .json(&json!({"topic": "x"})),
        server
            .queue(Method::DELETE, "/v2/messages")
            .json(&json!(["not", "an", "object"])),
    ] {
        let (status, answer) = send(request).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    }
    let (_, all) = send(server.queue(Method::DELETE, "/v2/messages?count=100")).await;
    assert_eq!(all, json!({"cancelled": 1}), "the message was still there");
}

#[tokio::test]
async fn log_and_dlq_filters_take_several_values_and_dlq_bulk_actions_page_by_count() {
    let server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    receiver.respond_with(Reply::status(500));
    let mut ids = Vec::new();
    for (path, label) in [("/down/a", "x"), ("/down/b", "y"), ("/down/c", "z")] {
        let headers = [("Svc-Retries", "0"), ("Svc-Label", label)];
        let (_, published) = publish(&server, &receiver.url(path), &headers, "").await;
        ids.push(published["messageId"].as_str().unwrap().to_owned());
    }
    for id in &ids {
        wait_for_dead_letter(&server, id).await;
    }
    let count = |page: &Value, key: &str| page[key].as_array().unwrap().len();

    let (_, page) = send(server.queue(Method::GET, "/v2/dlq?label=x&label=y")).await;
    assert_eq!(count(&page, "messages"), 2, "{page}");
    let (_, page) = send(server.queue(
        Method::GET,
        "/v2/dlq?label=x,z&responseStatus=500&responseStatus=404",
    ))
    .await;
    assert_eq!(count(&page, "messages"), 2, "{page}");
    let (_, page) = send(server.queue(
        Method::GET,
        "/v2/events?host=127.0.0.1&path=/down/a&path=/down/c&state=FAILED&state=DELIVERED",
    ))
    .await;
    assert_eq!(count(&page, "events"), 2, "{page}");
    let (_, page) = send(server.queue(Method::GET, "/v2/events?host=localhost")).await;
    assert_eq!(count(&page, "events"), 0, "{page}");
    for (path, field) in [
        ("/v2/events?lable=x", "lable"),
        ("/v2/dlq?host=127.0.0.1", "host"),
    ] {
        let (status, answer) = send(server.queue(Method::GET, path)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(answer["error"].as_str().unwrap().contains(field), "{answer}");
    }

    let (status, answer) = send(server.queue(Method::DELETE, "/v2/dlq?lable=x")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    let (_, first) = send(server.queue(Method::DELETE, "/v2/dlq?count=1")).await;
    assert_eq!(first["deleted"], 1, "{first}");
    let cursor = first["cursor"].as_str().expect("more follow").to_owned();
    let (_, second) = send(server.queue(Method::DELETE, &format!("/v2/dlq?count=1&cursor={cursor}"))).await;
    assert_eq!(second["deleted"], 1, "{second}");
    receiver.respond_with(Reply::status(200));
    let (status, retried) = send(server.queue(Method::POST, "/v2/dlq/retry?count=5")).await;
    assert_eq!(status, StatusCode::OK, "{retried}");
    assert_eq!(count(&retried, "responses"), 1, "{retried}");
    assert_eq!(retried["cursor"], "", "nothing follows");
    let (_, page) = send(server.queue(Method::GET, "/v2/dlq")).await;
    assert_eq!(count(&page, "messages"), 0, "{page}");
}
