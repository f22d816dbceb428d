//! The SSRF guard, systematically, with internal destinations not allowed (the default outside
//! `--dev`): every spelling of an internal address is refused wherever a URL enters (destination,
//! callback, failure callback, URL group endpoint, schedule), and names that resolve to internal
//! addresses, or redirects that point at them, reach nothing.

use quiver_testkit::TestServer;
use quiver_testkit::calls::{publish, send};
use quiver_testkit::receiver::{Receiver, Reply};
use reqwest::{Method, StatusCode};
use serde_json::json;

/// Hosts that are, or spell, loopback, RFC 1918, shared, link-local (cloud metadata), unspecified, IPv6
/// loopback, unique-local and link-local, and IPv4 inside IPv6 (mapped, compatible, NAT64, 6to4).
const INTERNAL_HOSTS: [&str; 27] = [
    "127.0.0.1",
    "127.1",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "0",
    "0.0.0.0",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.0.1",
    "100.64.0.1",
    "169.254.169.254",
    "localhost",
    "LOCALHOST",
    "metadata.localhost",
    "[::1]",
    "[::]",
    "[fd00::1]",
    "[fe80::1]",
    "[fec0::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::ffff:169.254.169.254]",
    "[::127.0.0.1]",
    "[64:ff9b::7f00:1]",
    "[64:ff9b::a9fe:a9fe]",
    "[2002:7f00:1::]",
];

/// The dead letters once there are `count` (deliveries may still be on their way when the worker
/// settles).
async fn dead_letters(server: &TestServer, count: usize) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        server.settle().await;
        let (_, dead) = send(server.queue(Method::GET, "/v2/dlq")).await;
        if dead["messages"].as_array().is_some_and(|m| m.len() >= count) {
            return dead;
        }
        assert!(std::time::Instant::now() < deadline, "no dead letter: {dead}");
        tokio::task::yield_now().await;
    }
}

fn strict() -> impl FnOnce(&mut quiver_server::Config) {
    |config| {
        config.queue.allow_private_destinations = false;
        config.queue.allowed_hosts = Vec::new();
    }
}

#[tokio::test]
async fn every_spelling_of_an_internal_address_is_refused_wherever_a_url_enters() {
    let server = TestServer::with_config(strict()).await;
    let group = send(
        server
            .queue(Method::POST, "/v2/topics/hooks/endpoints")
            .json(&json!({"endpoints": [{"url": "https://example.com/ok"}]})),
    )
    .await;
    assert!(group.0.is_success(), "{group:?}");
    for host in INTERNAL_HOSTS {
        let url = format!("http://{host}/latest/meta-data");
        let refused = |(status, body): (StatusCode, serde_json::Value), place: &str| {
            assert_eq!(status, StatusCode::BAD_REQUEST, "{place} {url}: {body}");
            assert!(
                body["error"].as_str().is_some_and(|e| e.contains("not allowed")),
                "{place} {url}: {body}"
            );
        };
        refused(publish(&server, &url, &[], "x").await, "destination");
        refused(
            publish(&server, "https://example.com/x", &[("Svc-Callback", &url)], "x").await,
            "callback",
        );
        refused(
            publish(
                &server,
                "https://example.com/x",
                &[("Svc-Failure-Callback", &url)],
                "x",
            )
            .await,
            "failure callback",
        );
        refused(
            send(
                server
                    .queue(Method::POST, "/v2/topics/hooks/endpoints")
                    .json(&json!({"endpoints": [{"url": url}]})),
            )
            .await,
            "endpoint",
        );
        refused(
            send(
                server
                    .queue(Method::POST, &format!("/v2/schedules/{url}"))
                    .header("Svc-Cron", "* * * * *"),
            )
            .await,
            "schedule",
        );
    }
    // Nothing was stored along the way.
    let (_, messages) = send(server.queue(Method::GET, "/v2/events")).await;
    assert_eq!(messages["events"], json!([]));
}

#[tokio::test]
async fn names_that_resolve_inside_and_redirects_that_point_inside_reach_nothing() {
    let inside = Receiver::start().await;
    let port = inside.url("").rsplit(':').next().unwrap().to_owned();
    // `localhost.` is a name (the trailing dot), not the literal the publish check knows: only the
    // check at connection time stands between it and the receiver on 127.0.0.1.
    let server = TestServer::with_config(strict()).await;
    let (status, published) = publish(
        &server,
        &format!("http://localhost.:{port}/hook"),
        &[("Svc-Retries", "0")],
        "x",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    let dead = dead_letters(&server, 1).await;
    assert_eq!(dead["messages"].as_array().unwrap().len(), 1, "{dead}");
    assert!(
        inside.requests().is_empty(),
        "nothing reached the internal receiver"
    );

    // An allowed destination that redirects inside: redirects are never followed.
    let outside = Receiver::start().await;
    outside.respond_with(
        Reply::status(307).with_header("Location", &format!("http://localhost.:{port}/redirected")),
    );
    let outside_port = outside.url("").rsplit(':').next().unwrap().to_owned();
    let server = TestServer::with_config(|config| {
        config.queue.allow_private_destinations = false;
        // Stands for a public destination: the one host this test may reach.
        config.queue.allowed_hosts = vec!["127.0.0.1".to_owned()];
    })
    .await;
    let (status, published) = publish(
        &server,
        &format!("http://127.0.0.1:{outside_port}/hook"),
        &[("Svc-Retries", "0")],
        "x",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{published}");
    outside.wait_for(1, std::time::Duration::from_secs(10)).await;
    let dead = dead_letters(&server, 1).await;
    assert_eq!(
        dead["messages"][0]["responseStatus"], 307,
        "the redirect is the answer: {dead}"
    );
    assert!(inside.requests().is_empty(), "the redirect was not followed");
}
