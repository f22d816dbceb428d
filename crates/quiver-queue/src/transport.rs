//! How deliveries reach their destinations. Plain HTTP goes through hyper's pooled client directly: most
//! destinations are services on the same network, and reqwest's layers around the same client (its
//! request builder, the URL turned into a URI and the answer's URI back into a URL, redirect and retry
//! wrappers) cost about as much CPU as the rest of a delivery's own work. HTTPS goes through reqwest, for
//! its TLS set-up. Both resolve names through the destination policy (see [`crate::ssrf`]), keep as many
//! idle connections per host as there are delivery slots, send the same default headers, follow no
//! redirects and give up at the message's timeout.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue, USER_AGENT};
use reqwest::{Method, StatusCode};

use crate::ssrf::{DestinationPolicy, GuardedResolver, guarded_lookup};

/// How long an idle connection to a destination is kept (reqwest's default, which HTTPS keeps).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// A destination's answer, its body cut at the size limit.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

/// The HTTP clients deliveries use.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    plain: Client<HttpConnector<GuardedNames>, Full<Bytes>>,
    tls: reqwest::Client,
    user_agent: HeaderValue,
}

/// Why a [`Transport`] could not be made.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct TransportError(String);

impl Transport {
    /// Clients that resolve names under `policy`, announce themselves as `user_agent`, and keep up to
    /// `idle_per_host` idle connections to each host.
    ///
    /// # Errors
    /// A user agent that is not a valid header value, or a TLS set-up that fails.
    pub(crate) fn new(
        policy: &Arc<DestinationPolicy>,
        user_agent: &str,
        idle_per_host: usize,
    ) -> Result<Transport, TransportError> {
        let user_agent = HeaderValue::from_str(user_agent)
            .map_err(|e| TransportError(format!("user agent `{user_agent}`: {e}")))?;
        let tls = reqwest::Client::builder()
            .no_proxy()
            .user_agent(user_agent.clone())
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(GuardedResolver::new(Arc::clone(policy))))
            .pool_max_idle_per_host(idle_per_host)
            .pool_idle_timeout(IDLE_TIMEOUT)
            .build()
            .map_err(|e| TransportError(e.to_string()))?;
        let mut connector = HttpConnector::new_with_resolver(GuardedNames(Arc::clone(policy)));
        connector.set_nodelay(true);
        let plain = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .pool_max_idle_per_host(idle_per_host)
            .build(connector);
        Ok(Transport {
            plain,
            tls,
            user_agent,
        })
    }

    /// Sends `body` to `url` with `headers` (the default `Accept` and `User-Agent` where they do not
    /// name their own), and reads the answer, its body up to `limit` bytes, all within `timeout`.
    ///
    /// # Errors
    /// A description of what failed: the connection, the exchange, or the time.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: url::Url,
        mut headers: HeaderMap,
        body: Vec<u8>,
        timeout: Duration,
        limit: usize,
    ) -> Result<Answer, String> {
        if url.scheme() != "http" {
            let request = self
                .tls
                .request(method, url)
                .headers(headers)
                .timeout(timeout)
                .body(body);
            return tls_exchange(request, limit).await;
        }
        if !headers.contains_key(ACCEPT) {
            headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
        }
        if !headers.contains_key(USER_AGENT) {
            headers.insert(USER_AGENT, self.user_agent.clone());
        }
        let uri: http::Uri = url
            .as_str()
            .parse()
            .map_err(|e| format!("`{url}` cannot be requested: {e}"))?;
        let mut request = http::Request::new(Full::new(Bytes::from(body)));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        let exchange = async {
            let response = self.plain.request(request).await.map_err(|e| describe(&e))?;
            let (parts, mut incoming) = response.into_parts();
            let mut body = Vec::new();
            while body.len() < limit {
                let Some(frame) = incoming.frame().await else {
                    break;
                };
                let frame = frame.map_err(|e| describe(&e))?;
                if let Ok(data) = frame.into_data() {
                    keep_up_to(&mut body, &data, limit);
                }
            }
            Ok(Answer {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or_else(|_| Err(TIMED_OUT.to_owned()))
    }
}

/// What an attempt whose destination did not answer in time reports.
const TIMED_OUT: &str = "the destination did not answer in time";

async fn tls_exchange(request: reqwest::RequestBuilder, limit: usize) -> Result<Answer, String> {
    let described = |error: reqwest::Error| {
        if error.is_timeout() {
            TIMED_OUT.to_owned()
        } else {
            describe(&error)
        }
    };
    let mut response = request.send().await.map_err(described)?;
    let status = response.status();
    let headers = std::mem::take(response.headers_mut());
    let mut body = Vec::new();
    while body.len() < limit {
        let Some(chunk) = response.chunk().await.map_err(described)? else {
            break;
        };
        keep_up_to(&mut body, &chunk, limit);
    }
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// Appends as much of `data` to `body` as keeps it within `limit` bytes.
fn keep_up_to(body: &mut Vec<u8>, data: &[u8], limit: usize) {
    let room = limit.saturating_sub(body.len());
    body.extend_from_slice(&data[..data.len().min(room)]);
}

/// An error with each of its causes, `: `-separated.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// Resolves names for the plain HTTP client under the destination policy.
#[derive(Debug, Clone)]
struct GuardedNames(Arc<DestinationPolicy>);

impl tower_service::Service<Name> for GuardedNames {
    type Response = std::vec::IntoIter<std::net::SocketAddr>;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let policy = Arc::clone(&self.0);
        Box::pin(async move { guarded_lookup(&policy, name.as_str()).await.map(Vec::into_iter) })
    }
}
