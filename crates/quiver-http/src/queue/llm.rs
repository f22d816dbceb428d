//! `/llm/v1/chat/completions`: chat completions with the queue token, proxied to the language-model API
//! the operator configured (`queue.llm_url`); a streamed answer (server-sent events) streams through.

use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::Response;

use crate::auth::QueueWriter;
use crate::error::ApiResult;
use crate::extract::RawBody;
use crate::state::AppState;

pub(crate) async fn chat_completions(
    State(state): State<AppState>,
    QueueWriter(_caller): QueueWriter,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    let answer = state.queue.language_models.chat_completions(&body).await?;
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let content_type = answer.headers().get(header::CONTENT_TYPE).cloned();
    let mut response = Response::new(Body::from_stream(answer.bytes_stream()));
    *response.status_mut() = status;
    if let Some(content_type) = content_type {
        response.headers_mut().insert(header::CONTENT_TYPE, content_type);
    }
    Ok(response)
}
