//! Request extractors whose rejections use our envelopes, and typed field parsing that names the field.

use std::str::FromStr;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// A JSON body, parsed whatever the `Content-Type` (SDKs and curl differ). An empty body is `null`.
#[derive(Debug, Clone)]
pub struct JsonBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
            let status = rejection.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(status, "request body is larger than this route accepts")
            } else {
                ApiError::new(
                    status,
                    format!("could not read the request body: {}", rejection.body_text()),
                )
            }
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(JsonBody(Value::Null));
        }
        serde_json::from_slice(&bytes)
            .map(JsonBody)
            .map_err(|error| ApiError::bad_request(format!("request body is not valid JSON: {error}")))
    }
}

/// A raw body, whose size rejection (413) uses our envelope.
#[derive(Debug, Clone)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        Bytes::from_request(request, state)
            .await
            .map(RawBody)
            .map_err(|rejection| {
                let status = rejection.status();
                if status == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(status, "message body is larger than the maximum message size")
                } else {
                    ApiError::new(
                        status,
                        format!("could not read the request body: {}", rejection.body_text()),
                    )
                }
            })
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
