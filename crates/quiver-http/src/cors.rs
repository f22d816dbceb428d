//! Cross-origin requests, for the SDKs running in browsers and edge runtimes. Every API authenticates by
//! an `Authorization` header (a bearer token or HTTP Basic), never by cookie, so answering any origin
//! lends a page nothing it did not already hold; `http.cors_allowed_origins` narrows it.
//!
//! - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an allowed origin is
//!   answered 204 here, before routing and authentication, allowing the method and headers it asks
//!   for; from another origin it gets a 403 that names the origin.
//! - Any other answer to an allowed origin carries `Access-Control-Allow-Origin` and exposes every
//!   header (the `Svc-`/`Upstash-` answer headers, `Retry-After`, rate-limit headers).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use crate::router::envelope_for;

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

/// The middleware: answers preflights, and marks answers to allowed origins.
pub(crate) async fn cors(State(origins): State<AllowedOrigins>, request: Request, next: Next) -> Response {
    let Some(origin) = request.headers().get(header::ORIGIN).cloned() else {
        // Caches must not hand this answer to a request from an origin.
        let mut answer = next.run(request).await;
        origins.vary(answer.headers_mut());
        return answer;
    };
    let is_preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let allowed = origins.allow(&origin);
    if is_preflight {
        let Some(allowed) = allowed else {
            let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            return ApiError::new(
                StatusCode::FORBIDDEN,
                format!("origin `{shown}` is not allowed (http.cors_allowed_origins)"),
            )
            .in_envelope(envelope_for(request.uri().path()))
            .into_response();
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
        origins.vary(headers);
        return answer;
    }
    let mut answer = next.run(request).await;
    if let Some(allowed) = allowed {
        let headers = answer.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("*"),
        );
    }
    origins.vary(answer.headers_mut());
    answer
}
