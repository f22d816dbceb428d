//! Deliveries run on a thread of their own (`queue.delivery_threads`, one by default), beside the HTTP
//! workers: an attempt goes on, and its outcome is stored, while every HTTP worker is busy.

use std::time::{Duration, Instant};

use quiver_testkit::calls::publish;
use quiver_testkit::{Receiver, Reply, TestServer};
use reqwest::StatusCode;

const WAIT: Duration = Duration::from_secs(20);

/// A runtime that shuts down without waiting when dropped, which a runtime dropped on another one's
/// thread (the test's, even while a failed assertion unwinds) must do.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// A receiver served by a runtime of its own, so that it goes on answering while the test's runtime is
/// blocked; it stops when the runtime is dropped.
fn receiver_on_its_own_runtime() -> (Receiver, OwnRuntime) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime");
    let receiver = std::thread::scope(|scope| {
        scope
            .spawn(|| runtime.block_on(Receiver::start()))
            .join()
            .expect("the receiver started")
    });
    (receiver, OwnRuntime(Some(runtime)))
}

/// Messages stored and not yet delivered, read from the queue's file as an operator's tool would.
fn stored_messages(server: &TestServer) -> i64 {
    let connection =
        rusqlite::Connection::open(server.data_dir().join("queue.db")).expect("the queue's file");
    connection
        .busy_timeout(Duration::from_secs(5))
        .expect("a busy timeout");
    connection
        .query_row("SELECT COUNT(*) FROM messages", [], |row| row.get(0))
        .expect("a count")
}

/// `#[tokio::test]` runs on one thread, and the test server's HTTP workers and background loops are
/// tasks on it: while the test blocks that thread, only threads of the server's own keep working.
#[tokio::test]
async fn a_delivery_finishes_and_is_stored_while_every_http_worker_is_blocked() {
    let server = TestServer::embedded().await;
    let (receiver, _runtime) = receiver_on_its_own_runtime();
    receiver.respond_with(Reply::status(200).held());
    let (status, published) = publish(&server, &receiver.url("/busy"), &[], "payload").await;
    assert_eq!(status, StatusCode::OK, "{published}");
    receiver.wait_for(1, WAIT).await;
    assert_eq!(stored_messages(&server), 1, "stored while its answer is held");

    // Block the server's only HTTP worker, let the answer go, and wait for the message to leave the
    // store: the attempt reads its answer and records its outcome without that worker.
    receiver.release(1);
    let deadline = Instant::now() + WAIT;
    while stored_messages(&server) > 0 {
        assert!(
            Instant::now() < deadline,
            "the delivery did not finish while the HTTP workers were blocked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.stop().await;
}
