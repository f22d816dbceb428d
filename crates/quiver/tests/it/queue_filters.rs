//! Filters of the queue's list and bulk routes as the SDKs send them: several values per filter, host
//! and path of the log, DLQ paging by count and cursor, the list of waiting messages, and a 400 for any
//! key a route does not know and for a cursor it did not give.

use std::time::Duration;

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
        ("/v2/events?cursor=abc", "cursor"),
        ("/v2/dlq?cursor=-1", "cursor"),
    ] {
        let (status, answer) = send(server.queue(Method::GET, path)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert!(answer["error"].as_str().unwrap().contains(field), "{answer}");
    }

    for path in ["/v2/dlq?lable=x", "/v2/dlq?cursor=next"] {
        let (status, answer) = send(server.queue(Method::DELETE, path)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    }
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

#[tokio::test]
async fn waiting_messages_are_listed_oldest_first_by_filter_and_page_by_cursor() {
    let server = TestServer::embedded().await;
    let mut ids = Vec::new();
    for path in ["a", "b", "a"] {
        let (_, published) = publish(
            &server,
            &format!("http://127.0.0.1:9/{path}"),
            &[("Svc-Delay", "1d")],
            "waiting",
        )
        .await;
        ids.push(published["messageId"].as_str().unwrap().to_owned());
        // Ids carry their creation millisecond, which orders them; the manual clock must move for that.
        server.clock().advance(Duration::from_millis(1));
    }
    let listed = |page: &serde_json::Value| -> Vec<String> {
        page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["messageId"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, first) = send(server.queue(Method::GET, "/v2/messages?count=2")).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(listed(&first), ids[..2]);
    assert_eq!(first["messages"][0]["body"], "waiting");
    assert_eq!(first["messages"][0]["url"], "http://127.0.0.1:9/a");
    let cursor = first["cursor"].as_str().expect("a full page has a cursor");
    let (_, second) = send(server.queue(Method::GET, &format!("/v2/messages?count=2&cursor={cursor}"))).await;
    assert_eq!(listed(&second), ids[2..]);
    assert!(
        second.get("cursor").is_none(),
        "the last page has no cursor: {second}"
    );

    let (_, on_a) = send(server.queue(Method::GET, "/v2/messages?path=/a")).await;
    assert_eq!(listed(&on_a), [ids[0].clone(), ids[2].clone()]);
    send(server.queue(Method::DELETE, &format!("/v2/messages/{}", ids[0]))).await;
    let (_, after_cancel) = send(server.queue(Method::GET, "/v2/messages")).await;
    assert_eq!(
        listed(&after_cancel),
        ids[1..],
        "a cancelled message no longer waits"
    );

    for bad in ["count=0", "count=1001", "colour=red"] {
        let (status, error) = send(server.queue(Method::GET, &format!("/v2/messages?{bad}"))).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {error}");
    }
}
