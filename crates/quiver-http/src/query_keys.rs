//! Query parameters a route does not take are an error that names them, never ignored: a misspelt
//! option must not look as if it had been applied. Routes that read their own query keys (publish, the
//! queue's filters through `queue::params`, statistics' `period`) check them where they read them; the
//! rest declare the keys they take with [`takes`], usually none ([`takes_none`]).

use std::pin::Pin;

use axum::extract::{Request, State};
use axum::http::Uri;
use axum::middleware::{FromFnLayer, Next};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Query keys any route accepts: the queue's token (`?svc_token=`) is authentication, not an option.
const AUTHENTICATION_KEYS: [&str; 2] = ["svc_token", "qstash_token"];

/// The first key of `query` that is neither one of `keys` nor an authentication key.
fn unknown_key(query: &str, keys: &[&str]) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(key, _)| key)
        .find(|key| !keys.contains(&key.as_ref()) && !AUTHENTICATION_KEYS.contains(&key.as_ref()))
        .map(std::borrow::Cow::into_owned)
}

/// What a 400 says of a key the route does not take.
fn rejection(key: &str, keys: &[&str]) -> ApiError {
    let takes = match keys {
        [] => "this route takes no query parameters".to_owned(),
        keys => format!("this route takes only `{}`", keys.join("`, `")),
    };
    ApiError::bad_request(format!("unknown query parameter `{key}`: {takes}"))
}

/// The query keys a route takes, besides the token's.
pub(crate) type Keys = &'static [&'static str];

/// The check as a function pointer, so that the layer's type can be named. Its future is boxed: one
/// small allocation per request, next to a vector query's tens of microseconds.
type Check = fn(State<Keys>, Request, Next) -> Pin<Box<dyn Future<Output = Response> + Send>>;

/// The route layer of a route that takes only `keys` (and the token keys) in its query: any other key is
/// a 400 that names it.
pub(crate) fn takes(keys: Keys) -> FromFnLayer<Check, Keys, (State<Keys>, Request)> {
    axum::middleware::from_fn_with_state(keys, check as Check)
}

/// The route layer of a route that takes no query keys but the token's.
pub(crate) fn takes_none() -> FromFnLayer<Check, Keys, (State<Keys>, Request)> {
    takes(&[])
}

/// A 400 naming the first key of `uri`'s query that is not one of `keys` (nor the token's), for a
/// handler whose route takes query keys on some of its paths only.
///
/// # Errors
/// Such a key is there.
pub(crate) fn only(uri: &Uri, keys: Keys) -> Result<(), ApiError> {
    match uri.query().and_then(|query| unknown_key(query, keys)) {
        Some(key) => Err(rejection(&key, keys)),
        None => Ok(()),
    }
}

fn check(
    State(keys): State<Keys>,
    request: Request,
    next: Next,
) -> Pin<Box<dyn Future<Output = Response> + Send>> {
    match only(request.uri(), keys) {
        Err(error) => Box::pin(std::future::ready(error.into_response())),
        Ok(()) => Box::pin(next.run(request)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_keys_a_route_does_not_take_are_named() {
        assert_eq!(unknown_key("", &[]), None);
        assert_eq!(unknown_key("svc_token=t&qstash_token=u", &[]), None);
        assert_eq!(unknown_key("all", &["all"]), None);
        assert_eq!(unknown_key("all=1&limit=3", &["all"]).as_deref(), Some("limit"));
        assert_eq!(unknown_key("cursor%5B%5D=2", &[]).as_deref(), Some("cursor[]"));
        let said = rejection("limit", &[]).message().to_owned();
        assert_eq!(
            said,
            "unknown query parameter `limit`: this route takes no query parameters"
        );
        let said = rejection("x", &["all"]).message().to_owned();
        assert_eq!(said, "unknown query parameter `x`: this route takes only `all`");
    }
}
