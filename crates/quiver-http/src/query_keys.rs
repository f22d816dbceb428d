//! Query parameters a route does not take are an error that names them, never ignored: a misspelt
//! option must not look as if it had been applied. Routes whose query holds filters, publish settings or
//! a destination's own keys read and check it themselves (`queue::params`, publish and schedule
//! creation); every other route declares the keys it takes with [`takes`] or, on the queue,
//! [`queue_takes`], which also accepts the token's keys (`?svc_token=`).

use std::pin::Pin;

use axum::extract::{Request, State};
use axum::http::Uri;
use axum::middleware::{FromFnLayer, Next};
use axum::response::{IntoResponse, Response};

use crate::auth::QUEUE_TOKEN_KEYS;
use crate::error::ApiError;

/// The query keys a route takes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Accepted {
    /// Its options.
    keys: &'static [&'static str],
    /// Whether the queue's token keys are accepted too (the queue's routes).
    token: bool,
}

/// The first key of `query` that `accepted` does not hold.
fn unknown_key(query: &str, accepted: Accepted) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .map(|(key, _)| key)
        .find(|key| {
            let key = key.as_ref();
            let taken = accepted.keys.contains(&key) || (accepted.token && QUEUE_TOKEN_KEYS.contains(&key));
            !taken
        })
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

/// The check as a function pointer, so that the layer's type can be named. Its future is boxed: one
/// small allocation per request, next to a vector query's tens of microseconds.
type Check = fn(State<Accepted>, Request, Next) -> Pin<Box<dyn Future<Output = Response> + Send>>;

/// A route layer that answers 400 naming any query key but `accepted`'s.
pub(crate) type TakesQuery = FromFnLayer<Check, Accepted, (State<Accepted>, Request)>;

/// The route layer of a vector or management route that takes only `keys` in its query.
pub(crate) fn takes(keys: &'static [&'static str]) -> TakesQuery {
    axum::middleware::from_fn_with_state(Accepted { keys, token: false }, check as Check)
}

/// The route layer of a vector or management route that takes no query keys.
pub(crate) fn takes_none() -> TakesQuery {
    takes(&[])
}

/// The keys a queue route takes: `keys` and the token's.
pub(crate) const fn queue(keys: &'static [&'static str]) -> Accepted {
    Accepted { keys, token: true }
}

/// The route layer of a queue route that takes only `keys` (and the token's) in its query.
pub(crate) fn queue_takes(keys: &'static [&'static str]) -> TakesQuery {
    axum::middleware::from_fn_with_state(queue(keys), check as Check)
}

/// A 400 naming the first key of `uri`'s query that `accepted` does not hold, for a handler whose route
/// takes query keys on some of its paths only.
///
/// # Errors
/// Such a key is there.
pub(crate) fn only(uri: &Uri, accepted: Accepted) -> Result<(), ApiError> {
    match uri.query().and_then(|query| unknown_key(query, accepted)) {
        Some(key) => Err(rejection(&key, accepted.keys)),
        None => Ok(()),
    }
}

fn check(
    State(accepted): State<Accepted>,
    request: Request,
    next: Next,
) -> Pin<Box<dyn Future<Output = Response> + Send>> {
    match only(request.uri(), accepted) {
        Err(error) => Box::pin(std::future::ready(error.into_response())),
        Ok(()) => Box::pin(next.run(request)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_keys_a_route_does_not_take_are_named() {
        assert_eq!(unknown_key("", queue(&[])), None);
        assert_eq!(unknown_key("svc_token=t&qstash_token=u", queue(&[])), None);
        let vector = Accepted {
            keys: &["all"],
            token: false,
        };
        assert_eq!(unknown_key("all", vector), None);
        assert_eq!(unknown_key("all=1&limit=3", vector).as_deref(), Some("limit"));
        assert_eq!(
            unknown_key("all&svc_token=t", vector).as_deref(),
            Some("svc_token"),
            "not a vector credential"
        );
        assert_eq!(
            unknown_key("cursor%5B%5D=2", queue(&[])).as_deref(),
            Some("cursor[]")
        );
        let said = rejection("limit", &[]).message().to_owned();
        assert_eq!(
            said,
            "unknown query parameter `limit`: this route takes no query parameters"
        );
        let said = rejection("x", &["all"]).message().to_owned();
        assert_eq!(said, "unknown query parameter `x`: this route takes only `all`");
    }
}
