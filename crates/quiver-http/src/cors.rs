//! Cross-origin requests, for the SDKs running in browsers and edge runtimes. Every API authenticates by
//! an `Authorization` header (a bearer token or HTTP Basic), never by cookie, so answering any origin
//! lends a page nothing it did not already hold; `http.cors_allowed_origins` narrows it.
//!
//! - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an allowed origin is
//!   answered 204 by the router's outermost layer, before authentication, allowing the method and headers it asks
//!   for; from another origin it gets a 403 that names the origin.
//! - Any other answer to an allowed origin carries `Access-Control-Allow-Origin` and exposes every
//!   header (the `Svc-`/`Upstash-` answer headers, `Retry-After`, rate-limit headers).

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, envelope_for};

/// Which origins may call: every one, or those listed.
#[derive(Debug, Clone)]
pub(crate) enum AllowedOrigins {
    /// `*`.
    Any,
    /// Exact origins (`scheme://host[:port]`).
    Listed(Vec<HeaderValue>),
}

/// How long a browser may cache a preflight's answer, in seconds.
const PREFLIGHT_MAX_AGE: &str = "86400";
const METHODS: &str = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS";

impl AllowedOrigins {
    /// From the configured list: `*` anywhere in it allows every origin.
    pub(crate) fn from_config(origins: &[String]) -> AllowedOrigins {
        if origins.iter().any(|o| o == "*") {
            return AllowedOrigins::Any;
        }
        AllowedOrigins::Listed(
            origins
                .iter()
                // `HttpConfig::check` let only bare origins through at start, and those are valid values.
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect(),
        )
    }

    /// The `Access-Control-Allow-Origin` value for `origin`, if it may call.
    fn allow(&self, origin: &HeaderValue) -> Option<HeaderValue> {
        match self {
            AllowedOrigins::Any => Some(HeaderValue::from_static("*")),
            AllowedOrigins::Listed(listed) => listed.iter().any(|o| o == origin).then(|| origin.clone()),
        }
    }

    fn vary(&self, headers: &mut HeaderMap) {
        if matches!(self, AllowedOrigins::Listed(_)) {
            headers.append(header::VARY, HeaderValue::from_static("Origin"));
        }
    }
}

impl AllowedOrigins {
    /// The answer to `request` when it is a preflight (before routing and authentication): 204
    /// allowing what it asks for, or 403 naming an origin that is not allowed. `None` for any other
    /// request.
    pub(crate) fn preflight(&self, request: &Request) -> Option<Response> {
        let origin = request.headers().get(header::ORIGIN)?;
        let is_preflight = request.method() == Method::OPTIONS
            && request
                .headers()
                .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
        if !is_preflight {
            return None;
        }
        let Some(allowed) = self.allow(origin) else {
            let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            return Some(
                ApiError::new(
                    StatusCode::FORBIDDEN,
                    format!("origin `{shown}` is not allowed (http.cors_allowed_origins)"),
                )
                .in_envelope(envelope_for(request.uri().path()))
                .into_response(),
            );
        };
        let mut answer = StatusCode::NO_CONTENT.into_response();
        let headers = answer.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static(METHODS),
        );
        // `*` would not cover `Authorization`, which every API needs: allow what the browser asks for.
        if let Some(asked) = request.headers().get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
            headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(PREFLIGHT_MAX_AGE),
        );
        Some(answer)
    }

    /// Marks the answer to a request from `origin` (its `Origin` header, if any).
    pub(crate) fn mark(&self, origin: Option<&HeaderValue>, answer: &mut Response) {
        let headers = answer.headers_mut();
        if let Some(allowed) = origin.and_then(|origin| self.allow(origin)) {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
            headers.insert(
                header::ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static("*"),
            );
        }
        // Caches must not hand an answer made for one origin to another.
        self.vary(headers);
    }
}
