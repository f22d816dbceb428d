//! Errors as the wire shows them. Management and queue routes answer `{"error": "<message>"}`; vector
//! routes add `"status"`. A 5xx hides its cause behind an error id, and the cause is logged once here.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use quiver_admin::AdminError;
use quiver_core::StoreError;
use quiver_queue::QueueError;
use serde_json::json;

/// Which envelope an error is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// `{"error": message}` (management and queue routes).
    Plain,
    /// `{"error": message, "status": code}` (vector routes).
    WithStatus,
}

/// An error response.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    envelope: Envelope,
    challenge: bool,
}

/// The result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// An error with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            envelope: Envelope::Plain,
            challenge: false,
        }
    }

    /// 400: the request is malformed or breaks a rule.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 401 asking for HTTP Basic credentials.
    pub fn basic_challenge(message: impl Into<String>) -> ApiError {
        ApiError {
            challenge: true,
            ..ApiError::new(StatusCode::UNAUTHORIZED, message)
        }
    }

    /// 404: nothing by that name or id.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    /// 500 with a fresh error id; `cause` is logged, never sent.
    pub fn internal(cause: &dyn std::fmt::Display) -> ApiError {
        let error_id = uuid::Uuid::new_v4();
        tracing::error!(%error_id, %cause, "request failed with an internal error");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal error; quote error id {error_id} when reporting it"),
        )
    }

    /// The same error in another envelope.
    pub fn in_envelope(self, envelope: Envelope) -> ApiError {
        ApiError { envelope, ..self }
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message sent to the client.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = match self.envelope {
            Envelope::Plain => json!({ "error": self.message }),
            Envelope::WithStatus => json!({ "error": self.message, "status": self.status.as_u16() }),
        };
        let mut response = (self.status, Json(body)).into_response();
        if self.challenge {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"quiver\", charset=\"UTF-8\""),
            );
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        match error {
            StoreError::Closed => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down")
            }
            StoreError::Conflict(_) | StoreError::Corrupt(_) | StoreError::Backend(_) => {
                ApiError::internal(&error)
            }
        }
    }
}

impl From<AdminError> for ApiError {
    fn from(error: AdminError) -> ApiError {
        match error {
            AdminError::Unauthorized => ApiError::basic_challenge(format!("Unauthorized: {error}")),
            AdminError::IndexNotFound(_) | AdminError::AccountNotFound(_) => {
                ApiError::not_found(error.to_string())
            }
            AdminError::AccountExists(_) => ApiError::new(StatusCode::CONFLICT, error.to_string()),
            AdminError::InvalidField { .. } | AdminError::Unsupported(_) => {
                ApiError::bad_request(error.to_string())
            }
            AdminError::Store(inner) => inner.into(),
        }
    }
}

impl From<QueueError> for ApiError {
    fn from(error: QueueError) -> ApiError {
        match error {
            QueueError::InvalidHeader { .. }
            | QueueError::InvalidDestination(_)
            | QueueError::DestinationForbidden(_)
            | QueueError::InvalidRequest(_)
            | QueueError::WorkflowRunNotRunning(_) => ApiError::bad_request(error.to_string()),
            QueueError::UrlGroupNotFound(_)
            | QueueError::MessageNotFound(_)
            | QueueError::DeadLetterNotFound(_)
            | QueueError::ScheduleNotFound(_)
            | QueueError::FlowControlNotFound(_)
            | QueueError::QueueNotFound(_)
            | QueueError::WorkflowRunNotFound(_) => ApiError::not_found(error.to_string()),
            QueueError::WorkflowRunExists { .. } => ApiError::new(StatusCode::CONFLICT, error.to_string()),
            QueueError::PayloadTooLarge { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, error.to_string())
            }
            QueueError::ReadOnly => ApiError::new(StatusCode::FORBIDDEN, error.to_string()),
            QueueError::LlmNotConfigured => ApiError::new(StatusCode::NOT_IMPLEMENTED, error.to_string()),
            QueueError::LlmUnavailable(_) => ApiError::new(StatusCode::BAD_GATEWAY, error.to_string()),
            QueueError::Store(inner) => inner.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(error: ApiError) -> (StatusCode, serde_json::Value) {
        let response = error.into_response();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn envelopes_carry_the_status_only_on_vector_routes() {
        let (status, plain) = body_of(ApiError::not_found("gone")).await;
        assert_eq!((status, plain), (StatusCode::NOT_FOUND, json!({"error": "gone"})));
        let (_, with_status) = body_of(ApiError::not_found("gone").in_envelope(Envelope::WithStatus)).await;
        assert_eq!(with_status, json!({"error": "gone", "status": 404}));
    }

    #[tokio::test]
    async fn internal_errors_hide_their_cause() {
        let (status, body) = body_of(StoreError::Backend("disk on fire at /secret/path".into()).into()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!body["error"].as_str().unwrap().contains("/secret/path"));
    }
}
