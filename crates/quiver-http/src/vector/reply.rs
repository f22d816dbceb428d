//! Shared pieces of the vector handlers: the `{"result": ...}` answer and reading the namespace and body.

use std::collections::HashMap;

use axum::Json;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// `{"result": ...}`, serialised without passing floats through `serde_json::Value`.
#[derive(Debug, Serialize)]
pub(crate) struct Success<T> {
    result: T,
}

pub(crate) fn success<T: Serialize>(result: T) -> Response {
    Json(Success { result }).into_response()
}

pub(crate) type Handled = Result<Response, ApiError>;

pub(crate) fn namespace_of(params: &Option<Path<HashMap<String, String>>>) -> String {
    params
        .as_ref()
        .and_then(|Path(map)| map.get("namespace").cloned())
        .unwrap_or_default()
}

/// The body as an object; `None` for "no input" (`null`, `[]`, `{}` count as none only where allowed).
pub(crate) fn object_of(body: &Value) -> Result<&Map<String, Value>, ApiError> {
    match body {
        Value::Object(object) => Ok(object),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_) => {
            Err(ApiError::bad_request("request body must be a JSON object"))
        }
    }
}
