//! The `[queue]` configuration section.

use serde::{Deserialize, Serialize};

/// Settings of the message queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// Largest message body; larger publishes are 413, larger callback bodies are truncated.
    pub max_message_bytes: usize,
    /// Retries when a publish does not say.
    pub default_retries: u32,
    /// Most retries a publish may ask for (larger values are capped).
    pub max_retries: u32,
    /// Delivery timeout when a publish does not say, in milliseconds.
    pub default_timeout_ms: u64,
    /// Longest delivery timeout a publish may ask for, in milliseconds.
    pub max_timeout_ms: u64,
    /// Longest delay a publish may ask for, in milliseconds.
    pub max_delay_ms: u64,
    /// Delivery attempts (requests to destinations) in flight at once in the process. An attempt's slot
    /// is free again once its answer is read, while its outcome is being written.
    pub delivery_concurrency: usize,
    /// Threads that run deliveries, beside the HTTP workers (see `delivery::DeliveryRuntime`); 0 runs
    /// them on the HTTP workers.
    pub delivery_threads: usize,
    /// Messages claimed per database round trip.
    pub claim_batch: usize,
    /// How long a claimed message stays leased beyond its timeout before another claim may take it.
    pub lease_margin_ms: u64,
    /// Deliver to loopback, private, link-local and metadata addresses (on with `--dev`).
    pub allow_private_destinations: bool,
    /// Hosts (names or addresses) allowed even when they resolve to private addresses.
    pub allowed_hosts: Vec<String>,
    /// How long a deduplication id counts, in milliseconds.
    pub deduplication_window_ms: u64,
    /// Days a finished message's events stay in the log after its last one; 0 keeps them forever.
    pub log_retention_days: u32,
    /// Days a message stays in the dead letter queue after it failed; 0 keeps it until it is retried or
    /// deleted.
    pub dlq_retention_days: u32,
    /// `iss` claim of delivery signatures (the official receivers require "Upstash").
    pub signature_issuer: String,
    /// `User-Agent` of deliveries.
    pub user_agent: String,
    /// Base URL of an OpenAI-compatible language-model API (a local vLLM or Ollama server, say): publishes
    /// to `api/llm` are delivered to its `/v1/chat/completions`, and `/llm/v1/chat/completions` is proxied
    /// to it. Empty: both answer 501.
    pub llm_url: String,
    /// Bearer token sent to `llm_url` (empty sends none). Printed redacted by `quiver check-config`.
    #[serde(serialize_with = "redacted")]
    pub llm_api_key: String,
}

/// Serializes a secret as `"<redacted>"` when it is set: the configuration is printed, never its secrets.
fn redacted<S: serde::Serializer>(secret: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(if secret.is_empty() { "" } else { "<redacted>" })
}

impl QueueConfig {
    /// The retries a message or schedule gets when it asked for `requested`: the default when it did
    /// not say, capped at the most allowed.
    pub fn effective_retries(&self, requested: Option<u32>) -> u32 {
        requested.unwrap_or(self.default_retries).min(self.max_retries)
    }

    /// The chat-completions URL of the configured language-model API, if one is configured.
    pub fn llm_chat_url(&self) -> Option<String> {
        let base = self.llm_url.trim().trim_end_matches('/');
        (!base.is_empty()).then(|| format!("{base}/v1/chat/completions"))
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            max_message_bytes: 10 << 20,
            default_retries: 3,
            max_retries: 20,
            default_timeout_ms: 60_000,
            max_timeout_ms: 7_200_000,
            max_delay_ms: 365 * 86_400_000,
            delivery_concurrency: 128,
            delivery_threads: 1,
            claim_batch: 256,
            lease_margin_ms: 30_000,
            allow_private_destinations: false,
            allowed_hosts: Vec::new(),
            deduplication_window_ms: 600_000,
            log_retention_days: 30,
            dlq_retention_days: 30,
            signature_issuer: "Upstash".into(),
            user_agent: "Upstash-QStash".into(),
            llm_url: String::new(),
            llm_api_key: String::new(),
        }
    }
}
