//! The language-model routes, backed by an OpenAI-compatible API the operator names in
//! `queue.llm_url`: `/llm/v1/chat/completions` (what `@upstash/qstash`'s `chat()` calls) is proxied to
//! it, and publishes to `api/llm` are delivered to it (see `Publisher::publish`).

use serde_json::Value;

use crate::context::{Context, opaque_debug};
use crate::error::QueueError;

/// Fields the SDK puts in a chat request that only it reads, never the provider.
const SDK_ONLY_FIELDS: [&str; 2] = ["provider", "analytics"];

/// The operator's language-model API, as the queue's `/llm` routes reach it.
#[derive(Clone)]
pub struct LanguageModels {
    client: reqwest::Client,
    context: Context,
}

opaque_debug!(LanguageModels);

impl LanguageModels {
    pub(crate) fn new(context: Context) -> LanguageModels {
        LanguageModels {
            client: reqwest::Client::new(),
            context,
        }
    }

    /// Sends a chat-completions request (the JSON `body`) to the configured provider and returns its
    /// answer as it comes, streamed or not.
    ///
    /// # Errors
    /// [`QueueError::LlmNotConfigured`] without `queue.llm_url`; [`QueueError::InvalidRequest`] for a
    /// body that is not a JSON object; [`QueueError::LlmUnavailable`] when the provider cannot be reached.
    pub async fn chat_completions(&self, body: &[u8]) -> Result<reqwest::Response, QueueError> {
        let url = self
            .context
            .config
            .llm_chat_url()
            .ok_or(QueueError::LlmNotConfigured)?;
        let mut request: Value = serde_json::from_slice(body)
            .map_err(|e| QueueError::InvalidRequest(format!("request body is not valid JSON: {e}")))?;
        let Value::Object(fields) = &mut request else {
            return Err(QueueError::InvalidRequest(
                "request body must be a JSON object (a chat-completions request)".into(),
            ));
        };
        for field in SDK_ONLY_FIELDS {
            fields.remove(field);
        }
        let mut outgoing = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(request.to_string());
        if !self.context.config.llm_api_key.is_empty() {
            outgoing = outgoing.bearer_auth(&self.context.config.llm_api_key);
        }
        outgoing
            .send()
            .await
            .map_err(|e| QueueError::LlmUnavailable(e.to_string()))
    }
}
