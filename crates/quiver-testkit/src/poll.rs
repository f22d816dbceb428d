//! Waiting for what a server does in the background (deliveries, logged events, retention rounds):
//! one polling loop for every test, instead of one per test file.

use std::future::Future;
use std::time::{Duration, Instant};

/// How long a poll sleeps between looks.
const PAUSE: Duration = Duration::from_millis(10);

/// Asks `probe` until it answers `Some`, for at most `limit`, and returns the answer.
///
/// # Panics
/// When `probe` never answers within `limit`; the message names `what` was awaited.
pub async fn until<T, F: Future<Output = Option<T>>>(
    what: &str,
    limit: Duration,
    mut probe: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(answer) = probe().await {
            return answer;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(PAUSE).await;
    }
}

/// Whether `done` holds within `limit`, looking again every few milliseconds (for tests that report
/// what they saw when it does not).
pub async fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(PAUSE).await;
    }
    done()
}
