//! Messages claimed ahead of the free delivery slots, while a backlog is due: they wait in memory for a
//! slot, as long as their lease leaves room for their attempt, and never start where it does not.
//!
//! One slot and claims of four make every message after the first wait behind a slow destination.

use std::time::Duration;

use quiver_testkit::calls::publish;
use quiver_testkit::{Receiver, Reply, TestServer};
use reqwest::StatusCode;

const WAIT: Duration = Duration::from_secs(20);

/// How long the destination holds each request: longer than the one second a message may always wait.
const HOLD: Duration = Duration::from_millis(1_500);

/// A server with one delivery slot, claims of four, `max_timeout_ms` as given (a one-second margin,
/// attempts of two seconds), and a receiver that holds each request for [`HOLD`]; `count` messages to
/// it, all due at once.
async fn behind_a_slow_destination(max_timeout_ms: u64, count: usize) -> (TestServer, Receiver) {
    let server = TestServer::with_config(|config| {
        config.queue.delivery_concurrency = 1;
        config.queue.claim_batch = 4;
        config.queue.lease_margin_ms = 1_000;
        config.queue.max_timeout_ms = max_timeout_ms;
        config.queue.default_timeout_ms = 2_000;
    })
    .await;
    let receiver = Receiver::start().await;
    receiver.respond_with(Reply::status(200).after(HOLD));
    for n in 0..count {
        let (status, published) = publish(
            &server,
            &receiver.url("/slow"),
            &[("Svc-Delay", "10s"), ("Svc-Retries", "0")],
            &format!("m{n}"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{published}");
    }
    server.clock().advance(Duration::from_secs(10));
    (server, receiver)
}

/// Waits until the server has nothing left to start, and for as long as a second delivery of anything
/// would take to arrive.
async fn quiet(server: &TestServer) {
    server.settle().await;
    tokio::time::sleep(HOLD).await;
}

/// The bodies the receiver got, in order of arrival.
fn bodies(receiver: &Receiver) -> Vec<String> {
    receiver
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect()
}

#[tokio::test]
async fn messages_waiting_behind_a_slow_destination_start_as_slots_free_within_their_lease() {
    // The default longest timeout (two hours): a message of two seconds' timeout may wait for a slot
    // for nearly two hours of its lease.
    let (server, receiver) = behind_a_slow_destination(7_200_000, 3).await;
    // The clock does not move again: no message may be left to wait out its lease.
    let arrived = receiver.wait_for(3, WAIT).await;
    let mut got = bodies(&receiver);
    got.sort();
    assert_eq!(got, ["m0", "m1", "m2"], "each delivered once");
    for pair in arrived.windows(2) {
        assert!(
            pair[1].received_at.duration_since(pair[0].received_at) >= HOLD,
            "one slot: each waited for the one before it"
        );
    }
    quiet(&server).await;
    assert_eq!(receiver.requests().len(), 3, "and none a second time");
}

#[tokio::test]
async fn a_message_whose_lease_cannot_cover_its_attempt_after_its_wait_is_not_started_until_the_lease_ends() {
    // Leases of 2.5 s + 1 s: an attempt of two seconds' timeout may start at most a second after the
    // claim, and the second message waits 1.5 s for the slot.
    let (server, receiver) = behind_a_slow_destination(2_500, 2).await;
    receiver.wait_for(1, WAIT).await;
    // Past the first answer, the second message has had its slot for a while; it must not have started,
    // since its lease could end during its attempt and another claim deliver it again.
    tokio::time::sleep(HOLD * 2).await;
    assert_eq!(bodies(&receiver), ["m0"], "the second waits out its lease");
    // Its lease (3.5 s from the claim) ends: it is due again, and delivered once.
    server.clock().advance(Duration::from_secs(4));
    receiver.wait_for(2, WAIT).await;
    quiet(&server).await;
    assert_eq!(bodies(&receiver), ["m0", "m1"]);
}
