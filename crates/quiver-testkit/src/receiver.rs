//! A local HTTP endpoint that records what it receives and answers as told.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

/// One request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: Method,
    /// Path and query.
    pub uri: Uri,
    /// Every header.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
    /// When it arrived (before any delay of its answer).
    pub received_at: std::time::Instant,
}

impl RecordedRequest {
    /// A header's value as text, if present and readable.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body parsed as JSON.
    ///
    /// # Panics
    /// When the body is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the body is JSON")
    }
}

/// How the receiver answers one request.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status code.
    pub status: StatusCode,
    /// Extra response headers.
    pub headers: Vec<(String, String)>,
    /// Response body.
    pub body: String,
    /// Wait this long before answering.
    pub delay: Duration,
    /// Answer only once the test lets it go ([`Receiver::release`]), after any delay.
    pub held: bool,
}

impl Reply {
    /// An answer with this status and an empty body.
    pub fn status(status: u16) -> Reply {
        Reply {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            headers: Vec::new(),
            body: String::new(),
            delay: Duration::ZERO,
            held: false,
        }
    }

    /// The same answer with this body.
    pub fn with_body(self, body: impl Into<String>) -> Reply {
        Reply {
            body: body.into(),
            ..self
        }
    }

    /// The same answer with an extra header.
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The same answer, sent after `delay`.
    pub fn after(self, delay: Duration) -> Reply {
        Reply { delay, ..self }
    }

    /// The same answer, sent once the test releases it with [`Receiver::release`]: a destination as
    /// slow as the test needs, without waiting on real time.
    pub fn held(self) -> Reply {
        Reply { held: true, ..self }
    }
}

#[derive(Debug)]
struct Shared {
    requests: Mutex<Vec<RecordedRequest>>,
    planned: Mutex<VecDeque<Reply>>,
    default: Mutex<Reply>,
    arrived: Notify,
    /// Requests being answered now, and the most there ever were at once.
    answering: AtomicUsize,
    most_at_once: AtomicUsize,
    /// Permits for held answers: one per answer released.
    releases: Semaphore,
}

/// A recording HTTP server on `127.0.0.1`, port 0. It stops when dropped.
#[derive(Debug)]
pub struct Receiver {
    address: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

async fn record(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let reply = {
        let planned = shared
            .planned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        planned.unwrap_or_else(|| shared.default.lock().unwrap_or_else(|p| p.into_inner()).clone())
    };
    shared
        .requests
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(RecordedRequest {
            method,
            uri,
            headers,
            body,
            received_at: std::time::Instant::now(),
        });
    let answering = shared.answering.fetch_add(1, Ordering::SeqCst) + 1;
    shared.most_at_once.fetch_max(answering, Ordering::SeqCst);
    shared.arrived.notify_waiters();
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if reply.held {
        // The semaphore is never closed.
        if let Ok(permit) = shared.releases.acquire().await {
            permit.forget();
        }
    }
    shared.answering.fetch_sub(1, Ordering::SeqCst);
    let mut response = (reply.status, reply.body).into_response();
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (name.parse::<axum::http::HeaderName>(), value.parse()) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

impl Receiver {
    /// Starts a receiver that answers 200 with an empty body until told otherwise.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("a bound address");
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            planned: Mutex::new(VecDeque::new()),
            default: Mutex::new(Reply::status(200)),
            arrived: Notify::new(),
            answering: AtomicUsize::new(0),
            most_at_once: AtomicUsize::new(0),
            releases: Semaphore::new(0),
        });
        let app = Router::new().fallback(record).with_state(Arc::clone(&shared));
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stopped.cancelled_owned())
                .await;
        });
        Receiver {
            address,
            shared,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Answer every later request (after planned ones) with `reply`.
    pub fn respond_with(&self, reply: Reply) {
        *self.shared.default.lock().unwrap_or_else(|p| p.into_inner()) = reply;
    }

    /// Answer the next request with `reply`, before any default.
    pub fn reply_next(&self, reply: Reply) {
        self.shared
            .planned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(reply);
    }

    /// Answer the next `count` requests with `status`.
    pub fn fail_next(&self, count: usize, status: u16) {
        for _ in 0..count {
            self.reply_next(Reply::status(status));
        }
    }

    /// Lets `count` held answers go (see [`Reply::held`]), the longest held first; answers held later
    /// use up releases left over.
    pub fn release(&self, count: usize) {
        self.shared.releases.add_permits(count);
    }

    /// The most requests this receiver was answering at one moment (each counts from its arrival
    /// until its answer, delay included).
    pub fn most_at_once(&self) -> usize {
        self.shared.most_at_once.load(Ordering::SeqCst)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits until at least `count` requests have arrived, and returns them all.
    ///
    /// # Panics
    /// When they have not arrived within `limit` (a bound on a hung test, not a timing assertion).
    pub async fn wait_for(&self, count: usize, limit: Duration) -> Vec<RecordedRequest> {
        match self.try_wait_for(count, limit).await {
            Some(requests) => requests,
            None => panic!(
                "expected {count} requests within {limit:?}, got {}",
                self.requests().len()
            ),
        }
    }

    /// Waits until at least `count` requests have arrived; `None` if they have not within `limit`.
    pub async fn try_wait_for(&self, count: usize, limit: Duration) -> Option<Vec<RecordedRequest>> {
        let waiting = async {
            loop {
                let arrived = self.shared.arrived.notified();
                tokio::pin!(arrived);
                arrived.as_mut().enable();
                let requests = self.requests();
                if requests.len() >= count {
                    return requests;
                }
                arrived.await;
            }
        };
        tokio::time::timeout(limit, waiting).await.ok()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_receiver_records_requests_and_answers_as_planned() {
        let receiver = Receiver::start().await;
        receiver.fail_next(1, 503);
        receiver.respond_with(
            Reply::status(201)
                .with_body("made")
                .with_header("retry-after", "7"),
        );
        let client = reqwest::Client::builder().no_proxy().build().unwrap();

        let first = client
            .post(receiver.url("/hook?x=1"))
            .header("x-test", "yes")
            .body("one")
            .send()
            .await
            .unwrap();
        assert_eq!(first.status().as_u16(), 503);
        let second = client
            .put(receiver.url("/other"))
            .body("two")
            .send()
            .await
            .unwrap();
        assert_eq!(second.status().as_u16(), 201);
        assert_eq!(second.headers()["retry-after"], "7");
        assert_eq!(second.text().await.unwrap(), "made");

        let requests = receiver.wait_for(2, Duration::from_secs(5)).await;
        assert_eq!(requests[0].uri.to_string(), "/hook?x=1");
        assert_eq!(requests[0].header("x-test"), Some("yes"));
        assert_eq!(&requests[0].body[..], b"one");
        assert_eq!(requests[1].method, Method::PUT);
    }
}
