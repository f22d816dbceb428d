//! The HTTP listener: hyper's HTTP/1.1 server over the router, with what `axum::serve` leaves unset.
//!
//! - **Header read timeout.** A connection that sends no complete request head within
//!   `http.header_read_timeout_ms` (idle between keep-alive requests included) is closed, so clients
//!   that connect and say nothing, or drip a request line, cannot hold connections (and file
//!   descriptors) forever.
//! - Accept errors (out of file descriptors, say) are logged and retried after a pause instead of
//!   spinning.
//! - On shutdown, it stops accepting, lets every request in progress finish and closes idle
//!   connections.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
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
            router.clone().call(request)
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
