//! Request extractors whose rejections use our envelopes: [`Typed`] reads a body into a wire type,
//! [`JsonBody`] and [`Fields`] read untyped JSON with errors that name the field.

use std::str::FromStr;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

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
        } else {
            ApiError::new(
                status,
                format!("could not read the request body: {}", rejection.body_text()),
            )
        }
    })
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

/// A JSON body read into the wire type `T`, whatever the content type; an empty body reads as `null`.
/// A value that does not fit is a 400 that names where it is (`endpoints[1].url: invalid type: ...`).
#[derive(Debug, Clone)]
pub struct Typed<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Typed<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = body_bytes(request, state, JSON_TOO_LARGE).await?;
        let mut deserializer = serde_json::Deserializer::from_slice(json_text(&bytes));
        let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
            let path = error.path().to_string();
            let cause = error.into_inner();
            if path == "." {
                ApiError::bad_request(format!("request body: {cause}"))
            } else {
                ApiError::bad_request(format!("{path}: {cause}"))
            }
        })?;
        deserializer
            .end()
            .map_err(|error| ApiError::bad_request(format!("request body: {error}")))?;
        Ok(Typed(value))
    }
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

/// The fields of a JSON object, read one by one with errors that name the field.
#[derive(Debug)]
pub struct Fields<'a> {
    object: &'a Map<String, Value>,
}

fn field_error(name: &str, message: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("{name}: {message}"))
}

impl<'a> Fields<'a> {
    /// The body as an object; anything else is a 400.
    pub fn of(body: &'a Value) -> Result<Fields<'a>, ApiError> {
        match body {
            Value::Object(object) => Ok(Fields { object }),
            Value::Null => Err(ApiError::bad_request(
                "request body must be a JSON object; it is empty",
            )),
            other @ (Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_)) => {
                Err(ApiError::bad_request(format!(
                    "request body must be a JSON object, not {}",
                    kind_of(other)
                )))
            }
        }
    }

    /// A string field; absent, `null` and `""` read as `None`.
    pub fn optional_str(&self, name: &str) -> Result<Option<&'a str>, ApiError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.is_empty() => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(field_error(
                name,
                format!("must be a string, not {}", kind_of(other)),
            )),
        }
    }

    /// A string field that must be present and not empty.
    pub fn required_str(&self, name: &str) -> Result<&'a str, ApiError> {
        self.optional_str(name)?
            .ok_or_else(|| field_error(name, "is required"))
    }

    /// A field parsed from its text (names, enums); absent, `null` and `""` read as `None`.
    pub fn optional_parsed<T>(&self, name: &str) -> Result<Option<T>, ApiError>
    where
        T: TryFrom<String> + 'static,
        T::Error: std::fmt::Display,
    {
        self.optional_str(name)?
            .map(|text| T::try_from(text.to_owned()).map_err(|e| field_error(name, e)))
            .transpose()
    }

    /// A field from a closed vocabulary; absent, `null` and `""` read as `None`.
    pub fn optional_enum<T>(&self, name: &str) -> Result<Option<T>, ApiError>
    where
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        self.optional_str(name)?
            .map(|text| text.parse().map_err(|e| field_error(name, e)))
            .transpose()
    }

    /// A required field from a closed vocabulary.
    pub fn required_enum<T>(&self, name: &str) -> Result<T, ApiError>
    where
        T: FromStr,
        T::Err: std::fmt::Display,
    {
        self.optional_enum(name)?
            .ok_or_else(|| field_error(name, "is required"))
    }

    /// A non-negative whole number that fits in `u32`; absent and `null` read as `None`.
    pub fn optional_u32(&self, name: &str) -> Result<Option<u32>, ApiError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(number)) => number
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| field_error(name, format!("must be a whole number from 0 to {}", u32::MAX))),
            Some(other) => Err(field_error(
                name,
                format!("must be a number, not {}", kind_of(other)),
            )),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use quiver_core::index::VectorRegion;
    use serde_json::json;

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
        assert!(empty.starts_with("request body: invalid type: null"), "{empty}");
        let trailing = typed(r#"{"endpoints": []} x"#).await.unwrap_err();
        assert!(trailing.starts_with("request body:"), "{trailing}");
    }

    #[test]
    fn field_errors_name_the_field_and_what_is_allowed() {
        let body = json!({"region": "mars-1", "dimension_count": -3, "name": 7});
        let fields = Fields::of(&body).unwrap();
        let region = fields.required_enum::<VectorRegion>("region").unwrap_err();
        assert!(
            region
                .message()
                .starts_with("region: `mars-1` is not allowed; expected one of: eu-west-1")
        );
        assert!(
            fields
                .optional_u32("dimension_count")
                .unwrap_err()
                .message()
                .starts_with("dimension_count:")
        );
        assert_eq!(
            fields.required_str("name").unwrap_err().message(),
            "name: must be a string, not a number"
        );
        assert_eq!(
            fields.required_str("missing").unwrap_err().message(),
            "missing: is required"
        );
    }

    #[test]
    fn empty_strings_and_nulls_read_as_absent() {
        let body = json!({"embedding_model": "", "sparse_embedding_model": null});
        let fields = Fields::of(&body).unwrap();
        assert_eq!(fields.optional_str("embedding_model").unwrap(), None);
        assert_eq!(fields.optional_str("sparse_embedding_model").unwrap(), None);
    }

    #[test]
    fn a_body_that_is_not_an_object_is_refused() {
        assert!(
            Fields::of(&json!([1]))
                .unwrap_err()
                .message()
                .contains("not an array")
        );
        assert!(Fields::of(&Value::Null).unwrap_err().message().contains("empty"));
    }
}
