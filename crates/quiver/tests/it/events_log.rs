//! The events log of messages still waiting: their CREATED events sit in their place in the log, page by
//! page, under filters, and once the message is delivered or cancelled, across a restart.

use std::time::Duration;

use quiver_testkit::calls::{publish, send};
use quiver_testkit::{Receiver, TestServer};
use reqwest::{Method, StatusCode};

const WAIT: Duration = Duration::from_secs(20);

/// The whole log (or the part matching `query`), newest first, read `page` events at a time.
async fn log(server: &TestServer, query: &str, page: usize) -> Vec<(String, String)> {
    let mut events = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/v2/events?count={page}{query}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let (status, body) = send(server.queue(Method::GET, &path)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let items = body["events"].as_array().unwrap();
        assert!(items.len() <= page, "{body}");
        events.extend(items.iter().map(|e| {
            (
                e["messageId"].as_str().unwrap().to_owned(),
                e["state"].as_str().unwrap().to_owned(),
            )
        }));
        match body["cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return events,
        }
    }
}

fn expected(entries: &[(&str, &str)]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|(id, state)| ((*id).to_owned(), (*state).to_owned()))
        .collect()
}

async fn published(server: &TestServer, url: &str, headers: &[(&str, &str)]) -> String {
    let (status, body) = publish(server, url, headers, "x").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["messageId"].as_str().unwrap().to_owned()
}

/// Polls until the log holds `count` events.
async fn wait_for_log(server: &TestServer, count: usize) {
    quiver_testkit::poll::until(&format!("the log reaching {count} events"), WAIT, || async {
        (log(server, "", 1000).await.len() >= count).then_some(())
    })
    .await;
}

#[tokio::test]
async fn waiting_messages_are_created_in_their_place_in_the_log_until_they_change_and_after() {
    let mut server = TestServer::embedded().await;
    let receiver = Receiver::start().await;
    let a = published(
        &server,
        &receiver.url("/a"),
        &[("Svc-Delay", "1h"), ("Svc-Label", "first")],
    )
    .await;
    let c = published(
        &server,
        &receiver.url("/c"),
        &[("Svc-Delay", "2h"), ("Svc-Label", "third")],
    )
    .await;
    let d = published(&server, &receiver.url("/d"), &[("Svc-Delay", "1h")]).await;
    let b = published(&server, &receiver.url("/b"), &[]).await;
    receiver.wait_for(1, WAIT).await;
    wait_for_log(&server, 6).await;

    let (a, b, c, d) = (a.as_str(), b.as_str(), c.as_str(), d.as_str());
    let whole = expected(&[
        (b, "DELIVERED"),
        (b, "ACTIVE"),
        (b, "CREATED"),
        (d, "CREATED"),
        (c, "CREATED"),
        (a, "CREATED"),
    ]);
    for page in [1, 2, 4, 100] {
        assert_eq!(log(&server, "", page).await, whole, "pages of {page}");
    }
    assert_eq!(log(&server, "&label=third", 2).await, expected(&[(c, "CREATED")]));
    assert_eq!(
        log(&server, &format!("&messageId={a}&messageId={b}"), 2).await,
        expected(&[(b, "DELIVERED"), (b, "ACTIVE"), (b, "CREATED"), (a, "CREATED")])
    );
    assert_eq!(
        log(&server, "&state=CREATED", 3).await,
        expected(&[(b, "CREATED"), (d, "CREATED"), (c, "CREATED"), (a, "CREATED")])
    );
    assert_eq!(log(&server, "&state=ACTIVE", 3).await, expected(&[(b, "ACTIVE")]));
    let url_filter = format!("&url={}", receiver.url("/d"));
    assert_eq!(log(&server, &url_filter, 3).await, expected(&[(d, "CREATED")]));

    let (status, body) = send(server.queue(Method::DELETE, &format!("/v2/messages/{a}"))).await;
    assert!(status.is_success(), "{status} {body}");
    server.clock().advance(Duration::from_secs(3_600));
    receiver.wait_for(2, WAIT).await;
    wait_for_log(&server, 10).await;
    server.restart().await;

    let after = expected(&[
        (d, "DELIVERED"),
        (d, "ACTIVE"),
        (a, "CANCELED"),
        (a, "CANCEL_REQUESTED"),
        (b, "DELIVERED"),
        (b, "ACTIVE"),
        (b, "CREATED"),
        (d, "CREATED"),
        (c, "CREATED"),
        (a, "CREATED"),
    ]);
    for page in [1, 3, 100] {
        assert_eq!(
            log(&server, "", page).await,
            after,
            "pages of {page} after a restart"
        );
    }
}
