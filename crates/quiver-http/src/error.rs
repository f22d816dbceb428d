//! Errors as the wire shows them. Management and queue routes answer `{"error": "<message>"}`; vector
//! routes add `"status"`: each area router picks its envelope once, with [`with_status_envelope`]. A 5xx
//! hides its cause behind an error id, and the cause is logged once, when the response is rendered.

use axum::Json;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use quiver_admin::AdminError;
use quiver_core::StoreError;
use quiver_embed::EmbedError;
use quiver_queue::QueueError;
use quiver_vector::VectorError;
use serde_json::json;

/// Which envelope an error is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// `{"error": message}` (management and queue routes).
    Plain,
    /// `{"error": message, "status": code}` (vector routes).
    WithStatus,
}

/// The envelope for a path: management and queue paths start with `/v2/`, vector paths never do.
pub(crate) fn envelope_for(path: &str) -> Envelope {
    if path == "/v2" || path.starts_with("/v2/") {
        Envelope::Plain
    } else {
        Envelope::WithStatus
    }
}

/// An error response.
#[derive(Debug, Clone)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    envelope: Envelope,
    challenge: bool,
    /// What went wrong inside, for the log; never sent.
    cause: Option<String>,
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
            cause: None,
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

    /// 500 with a fresh error id; `cause` is logged when the error is rendered, never sent.
    pub fn internal(cause: &dyn std::fmt::Display) -> ApiError {
        let error_id = uuid::Uuid::new_v4();
        ApiError {
            cause: Some(format!("error id {error_id}: {cause}")),
            ..ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal error; quote error id {error_id} when reporting it"),
            )
        }
    }

    /// The message for a client that reads it inside another answer (a batch item, say); a server
    /// error's cause is logged here, as rendering would.
    pub fn into_reported_message(self) -> String {
        self.log_server_error();
        self.message
    }

    fn log_server_error(&self) {
        if self.status.is_server_error() {
            let cause = self.cause.as_deref().unwrap_or(&self.message);
            tracing::error!(status = self.status.as_u16(), %cause, "request failed with a server error");
        }
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

impl ApiError {
    fn render(&self, envelope: Envelope) -> Response {
        let body = match envelope {
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

/// What a rendered error leaves on its response, so that an area's envelope layer can write it again
/// without parsing the body.
#[derive(Debug, Clone)]
struct RenderedError(ApiError);

/// The message of the error `response` answers, if it is one.
pub(crate) fn answered_message(response: &Response) -> Option<&str> {
    response
        .extensions()
        .get::<RenderedError>()
        .map(|RenderedError(error)| error.message.as_str())
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.log_server_error();
        let mut response = self.render(self.envelope);
        response.extensions_mut().insert(RenderedError(self));
        response
    }
}

/// The vector area's envelope: every error its routes (and their middleware) answer carries `"status"`.
/// Headers set on the error response (`Retry-After`, say) are kept.
pub async fn with_status_envelope(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let Some(RenderedError(error)) = response.extensions().get::<RenderedError>().cloned() else {
        return response;
    };
    let (mut parts, _) = response.into_parts();
    let rendered = error.render(Envelope::WithStatus);
    parts.headers.remove(header::CONTENT_LENGTH);
    for (name, value) in rendered.headers() {
        parts.headers.insert(name.clone(), value.clone());
    }
    Response::from_parts(parts, rendered.into_body())
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

impl From<quiver_queue::names::InvalidName> for ApiError {
    fn from(error: quiver_queue::names::InvalidName) -> ApiError {
        ApiError::bad_request(error.to_string())
    }
}

impl From<QueueError> for ApiError {
    fn from(error: QueueError) -> ApiError {
        match error {
            QueueError::InvalidHeader { .. }
            | QueueError::InvalidDestination(_)
            | QueueError::DestinationForbidden(_)
            | QueueError::InvalidRequest(_)
            | QueueError::InvalidName(_)
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

impl From<VectorError> for ApiError {
    fn from(error: VectorError) -> ApiError {
        match error {
            VectorError::DimensionMismatch { .. }
            | VectorError::WrongParts(_)
            | VectorError::NoEmbeddingModel => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, error.to_string())
            }
            VectorError::InvalidRequest(_) | VectorError::Filter(_) | VectorError::LimitExceeded(_) => {
                ApiError::bad_request(error.to_string())
            }
            VectorError::NamespaceNotFound { .. } | VectorError::ResumableQueryNotFound(_) => {
                ApiError::not_found(error.to_string())
            }
            VectorError::Unsupported(_) => ApiError::new(StatusCode::NOT_IMPLEMENTED, error.to_string()),
            VectorError::Embedding(ref inner) => match inner {
                EmbedError::NotInstalled { .. } | EmbedError::Unsupported(_) => {
                    ApiError::bad_request(error.to_string())
                }
                EmbedError::Stopped => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, error.to_string()),
                EmbedError::BadModel(_)
                | EmbedError::Checksum { .. }
                | EmbedError::Io(_)
                | EmbedError::Tokenizer(_) => ApiError::internal(&error),
            },
            VectorError::Store(inner) => inner.into(),
            VectorError::Internal(cause) => ApiError::internal(&cause),
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
