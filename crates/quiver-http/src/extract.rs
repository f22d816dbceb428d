//! Request extractors whose rejections use our envelopes: [`Typed`] reads a body into a wire type,
//! [`typed_value`] reads a part of a body the same way, [`text_parsed`] reads lenient text fields, and
//! [`JsonBody`] reads JSON left untyped (the queue's filters, read by `queue::params`).

use std::str::FromStr;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

/// A JSON body, parsed whatever the `Content-Type` (SDKs and curl differ). An empty body is `null`.
#[derive(Debug, Clone)]
pub struct JsonBody(pub Value);

/// What a 413 says for a JSON body.
const JSON_TOO_LARGE: &str = "request body is larger than this route accepts";

/// Reads a whole body; a body larger than the route accepts is a 413 saying `too_large`, in our
/// envelope.
async fn body_bytes<S: Send + Sync>(
    request: Request,
    state: &S,
    too_large: &'static str,
) -> Result<Bytes, ApiError> {
    Bytes::from_request(request, state).await.map_err(|rejection| {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(status, too_large)
        } else if let Some(timed_out) = find_cause::<BodyReadTimedOut>(&rejection) {
            ApiError::new(StatusCode::REQUEST_TIMEOUT, timed_out.to_string())
        } else {
            ApiError::new(
                status,
                format!("could not read the request body: {}", rejection.body_text()),
            )
        }
    })
}

/// The error a request body gives when it does not arrive in time (the listener sets the deadline,
/// `http.body_read_timeout_ms`): answered 408.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyReadTimedOut(pub std::time::Duration);

impl std::fmt::Display for BodyReadTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body did not arrive within {} ms",
            self.0.as_millis()
        )
    }
}

impl std::error::Error for BodyReadTimedOut {}

/// The first error of type `T` in `error`'s chain of causes.
fn find_cause<'a, T: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut cause = Some(error);
    while let Some(current) = cause {
        if let Some(found) = current.downcast_ref::<T>() {
            return Some(found);
        }
        cause = current.source();
    }
    None
}

/// A body's JSON text: a blank body (SDKs send none where nothing is needed) reads as `null`.
fn json_text(bytes: &[u8]) -> &[u8] {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        b"null"
    } else {
        bytes
    }
}

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = body_bytes(request, state, JSON_TOO_LARGE).await?;
        serde_json::from_slice(json_text(&bytes))
            .map(JsonBody)
            .map_err(|error| ApiError::bad_request(format!("request body is not valid JSON: {error}")))
    }
}

/// A JSON body read into the wire type `T`, whatever the content type; an empty body reads as `null`
/// where `T` takes it, and is a 400 saying it is empty otherwise.
/// A value that does not fit is a 400 that names where it is (`endpoints[1].url: invalid type: ...`).
#[derive(Debug, Clone)]
pub struct Typed<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Typed<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = body_bytes(request, state, JSON_TOO_LARGE).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            // A blank body may still fit a type that takes `null` (an optional body).
            if let Ok(value) = serde_json::from_slice(b"null") {
                return Ok(Typed(value));
            }
            return Err(ApiError::bad_request("request body is empty; it must be JSON"));
        }
        let mut deserializer = serde_json::Deserializer::from_slice(&bytes);
        let value = serde_path_to_error::deserialize(&mut deserializer).map_err(field_path_error)?;
        deserializer
            .end()
            .map_err(|error| ApiError::bad_request(format!("request body is not valid JSON: {error}")))?;
        Ok(Typed(value))
    }
}

/// A 400 that names where in the body a value did not fit (`endpoints[1].url: invalid type: ...`).
fn field_path_error(error: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = error.path().to_string();
    let cause = error.into_inner();
    if cause.is_syntax() || cause.is_eof() {
        ApiError::bad_request(format!("request body is not valid JSON: {cause}"))
    } else if path == "." {
        ApiError::bad_request(format!("request body: {cause}"))
    } else {
        ApiError::bad_request(format!("{path}: {cause}"))
    }
}

/// A JSON value read into the wire type `T`, for a part of a body read on its own (one item of a batch,
/// say); a value that does not fit is a 400 that names where it is, as [`Typed`]'s.
///
/// # Errors
/// The value does not fit `T`.
pub fn typed_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(field_path_error)
}

/// A raw body, whose size rejection (413) uses our envelope.
#[derive(Debug, Clone)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        body_bytes(
            request,
            state,
            "message body is larger than the maximum message size",
        )
        .await
        .map(RawBody)
    }
}

/// For `#[serde(default, deserialize_with = "extract::text_parsed")]`: a string field parsed from its
/// text (`FromStr`, for closed vocabularies, or `TryFrom<String>`, for names); absent, `null` and `""`
/// read as `None`, and a text that does not parse is an error that says why.
///
/// # Errors
/// The value is not a string, or its text does not parse.
pub fn text_parsed<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<String>,
    T::Error: std::fmt::Display,
{
    let text: Option<String> = serde::Deserialize::deserialize(deserializer)?;
    text.filter(|text| !text.is_empty())
        .map(|text| T::try_from(text).map_err(serde::de::Error::custom))
        .transpose()
}

/// A closed vocabulary read from its text with [`text_parsed`]: `FromStr`'s parse as `TryFrom<String>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vocabulary<T>(pub T);

impl<T: FromStr> TryFrom<String> for Vocabulary<T> {
    type Error = T::Err;
    fn try_from(text: String) -> Result<Self, T::Err> {
        text.parse().map(Vocabulary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Endpoints {
        endpoints: Vec<Endpoint>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Endpoint {
        url: Option<String>,
    }

    async fn typed(body: &str) -> Result<Endpoints, String> {
        let request = Request::builder()
            .header("content-type", "text/plain")
            .body(axum::body::Body::from(body.to_owned()))
            .unwrap();
        Typed::<Endpoints>::from_request(request, &())
            .await
            .map(|Typed(value)| value)
            .map_err(|error| error.message().to_owned())
    }

    #[tokio::test]
    async fn typed_bodies_name_where_a_value_does_not_fit() {
        let read = typed(r#"{"endpoints": [{"url": "https://a"}, {}]}"#)
            .await
            .unwrap();
        let urls: Vec<Option<&str>> = read.endpoints.iter().map(|e| e.url.as_deref()).collect();
        assert_eq!(urls, [Some("https://a"), None]);
        let wrong = typed(r#"{"endpoints": [{"url": "https://a"}, {"url": 7}]}"#)
            .await
            .unwrap_err();
        assert!(
            wrong.starts_with("endpoints[1].url: invalid type: integer `7`"),
            "{wrong}"
        );
        let unknown = typed(r#"{"endpoints": [], "extra": 1}"#).await.unwrap_err();
        assert!(unknown.contains("unknown field `extra`"), "{unknown}");
        let empty = typed("  ").await.unwrap_err();
        assert_eq!(empty, "request body is empty; it must be JSON");
        let trailing = typed(r#"{"endpoints": []} x"#).await.unwrap_err();
        assert!(
            trailing.starts_with("request body is not valid JSON:"),
            "{trailing}"
        );
        let broken = typed(r#"{"endpoints": [{"url": "#).await.unwrap_err();
        assert!(broken.starts_with("request body is not valid JSON:"), "{broken}");
    }
}
