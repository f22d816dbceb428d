//! Messages claimed ahead of the free delivery slots, while a backlog is due: they wait in memory for a
//! slot, as long as their lease leaves room for their attempt, and never start where it does not.
//!
//! One slot and claims of four make every message after the first wait behind a destination that holds
//! its answers until the test lets them go; the waits are measured on the server's manual clock, which
//! the leases are measured on too.

use std::time::Duration;

use quiver_testkit::calls::publish;
use quiver_testkit::poll::until;
use quiver_testkit::{Receiver, Reply, TestServer};
use reqwest::StatusCode;

use crate::operations::{metrics_page, sample};

const WAIT: Duration = Duration::from_secs(20);

/// A server with one delivery slot, claims of four, `max_timeout_ms` as given (a one-second margin,
/// attempts of two seconds), and a receiver that holds each answer until released; `count` messages to
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
    receiver.respond_with(Reply::status(200).held());
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

/// This node's count of deliveries with `outcome`, from `/metrics`.
async fn deliveries(server: &TestServer, outcome: &str) -> f64 {
    let series = format!("quiver_deliveries_total{{outcome=\"{outcome}\"}}");
    let page = metrics_page(server).await;
    sample(&page, &series).unwrap_or_else(|| panic!("no {series} in /metrics:\n{page}"))
}

/// Waits until this node has counted `count` deliveries with `outcome`.
async fn counted(server: &TestServer, outcome: &str, count: u32) {
    until(&format!("{count} {outcome}"), WAIT, || async {
        (deliveries(server, outcome).await >= f64::from(count)).then_some(())
    })
    .await;
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
    for n in 1..=3 {
        receiver.wait_for(n, WAIT).await;
        assert_eq!(bodies(&receiver).len(), n, "one slot: one request at a time");
        // The ones still waiting have waited ten minutes more when the slot frees.
        server.clock().advance(Duration::from_secs(600));
        receiver.release(1);
    }
    counted(&server, "delivered", 3).await;
    server.settle().await;
    let mut got = bodies(&receiver);
    got.sort();
    assert_eq!(got, ["m0", "m1", "m2"], "each delivered once");
    assert_eq!(deliveries(&server, "waited_too_long").await, 0.0);
}

#[tokio::test]
async fn a_message_whose_lease_cannot_cover_its_attempt_after_its_wait_is_not_started_until_the_lease_ends() {
    // Leases of 2.5 s + 1 s: an attempt of two seconds' timeout may start at most a second after the
    // claim.
    let (server, receiver) = behind_a_slow_destination(2_500, 2).await;
    receiver.wait_for(1, WAIT).await;
    // Both are claimed (none waits unclaimed) before the clock moves, so the second's wait starts before.
    until("both messages claimed", WAIT, || async {
        let page = metrics_page(&server).await;
        (sample(&page, "quiver_queue_messages{state=\"waiting\"}") == Some(0.0)).then_some(())
    })
    .await;
    // The second message waits 1.5 s for the slot: its lease could end during its attempt, and another
    // claim deliver it again, so it must not start.
    server.clock().advance(Duration::from_millis(1_500));
    receiver.release(1);
    counted(&server, "waited_too_long", 1).await;
    counted(&server, "delivered", 1).await;
    assert_eq!(bodies(&receiver), ["m0"], "the second waits out its lease");
    // The first's outcome is written (deliveries run on a thread of their own, so it may still be on
    // its way when the count moves) before the clock passes its lease too.
    until("the first message's outcome written", WAIT, || async {
        let page = metrics_page(&server).await;
        let held: f64 = ["waiting", "delayed", "in_flight"]
            .iter()
            .filter_map(|state| sample(&page, &format!("quiver_queue_messages{{state=\"{state}\"}}")))
            .sum();
        // Only the second is left in the store.
        (held == 1.0).then_some(())
    })
    .await;
    // Its lease (3.5 s from the claim) ends: it is due again, and delivered once.
    receiver.release(1);
    server.clock().advance(Duration::from_secs(4));
    counted(&server, "delivered", 2).await;
    server.settle().await;
    assert_eq!(bodies(&receiver), ["m0", "m1"]);
}
