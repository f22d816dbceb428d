//! The HTTP listener: hyper's HTTP/1.1 server over the router, with what `axum::serve` leaves unset.
//!
//! - **Header read timeout.** A connection that sends no complete request head within
//!   `http.header_read_timeout_ms` (idle between keep-alive requests included) is closed, so clients
//!   that connect and say nothing, or drip a request line, cannot hold connections (and file
//!   descriptors) forever.
//! - **Body read timeout.** A request body that has not arrived whole within
//!   `http.body_read_timeout_ms` of its head ends in an error the handlers answer with 408, so a client
//!   that drips a body cannot hold a request (and the memory of what it sent) forever. The timer is
//!   armed only when a body has to be waited for: a body that came with its head costs nothing.
//! - Accept errors (out of file descriptors, say) are logged and retried after a pause instead of
//!   spinning.
//! - On shutdown, it stops accepting, lets every request in progress finish and closes idle
//!   connections.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use quiver_http::extract::BodyReadTimedOut;
use tokio::net::TcpListener;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tower_service::Service;
use tracing::{debug, warn};

/// How long the accept loop pauses after an accept error.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until `stop`, then finishes requests in progress.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    header_read_timeout: Duration,
    body_read_timeout: Duration,
    stop: CancellationToken,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, remote) = tokio::select! {
            biased;
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    warn!(%error, "accepting a connection failed; pausing before the next");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
        };
        // Answers are written whole; waiting to coalesce them only adds latency.
        if let Err(error) = stream.set_nodelay(true) {
            debug!(%error, "could not set TCP_NODELAY");
        }
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo::<SocketAddr>(remote));
            router
                .clone()
                .call(request.map(|body| BodyDeadline::new(body, body_read_timeout)))
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                debug!(%error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// A request body that fails with [`BodyReadTimedOut`] once `timeout` has passed since its head
/// arrived. The timer is made the first time the body has to be waited for.
struct BodyDeadline {
    body: Incoming,
    timeout: Duration,
    started: Instant,
    timer: Option<Pin<Box<Sleep>>>,
}

impl BodyDeadline {
    fn new(body: Incoming, timeout: Duration) -> BodyDeadline {
        BodyDeadline {
            body,
            timeout,
            started: Instant::now(),
            timer: None,
        }
    }
}

impl Body for BodyDeadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(context) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        let (started, timeout) = (this.started, this.timeout);
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(started + timeout)));
        match timer.as_mut().poll(context) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyReadTimedOut(timeout))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
