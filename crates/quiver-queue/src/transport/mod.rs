//! How deliveries reach their destinations. Plain HTTP goes through [`plain`], which makes the exchange
//! on the delivery's own task: most destinations are services on the same network, and a general client's
//! layers (reqwest's request builder and URL conversions, hyper's connection tasks and the channels
//! between them and the caller) cost as much CPU as the rest of a delivery's own work. HTTPS goes through
//! reqwest, for its TLS set-up. Both resolve names through the destination policy (see [`crate::ssrf`]),
//! keep as many idle connections per host as there are delivery slots, send the same default headers,
//! follow no redirects and give up at the message's timeout.

mod plain;

use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue, USER_AGENT};

use crate::ssrf::{DestinationPolicy, GuardedResolver};
use plain::{Answer, PlainClient};

/// How long an idle connection to a destination is kept (reqwest's default, which HTTPS keeps).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The HTTP clients deliveries use.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    plain: PlainClient,
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
        let plain = PlainClient::new(Arc::clone(policy), idle_per_host, IDLE_TIMEOUT);
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
        let exchange = self.plain.send(&method, &url, &headers, &body, limit);
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
