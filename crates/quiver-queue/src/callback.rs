//! Callback and failure-callback messages: the body of SPEC 2.7 and the message that carries it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use quiver_core::Timestamp;
use serde_json::{Map, Value, json};

use crate::message::{CallbackConfig, Message, MessageId, MessageKind, MessageSpec, NewMessage};

/// A destination's response, as far as it came.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseRecord {
    /// Status, when a response came.
    pub status: Option<u16>,
    /// Headers.
    pub headers: Vec<(String, String)>,
    /// Body (already truncated to the maximum message size).
    pub body: Vec<u8>,
}

fn header_arrays(headers: &[(String, String)]) -> Value {
    let mut map: Map<String, Value> = Map::new();
    for (name, value) in headers {
        let entry = map
            .entry(name.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(values) = entry {
            values.push(Value::String(value.clone()));
        }
    }
    Value::Object(map)
}

/// The JSON body sent to a callback (`dlq_id` only for failure callbacks).
pub fn callback_body(
    source: &Message,
    response: &ResponseRecord,
    retried: u32,
    dlq_id: Option<&str>,
) -> Vec<u8> {
    let spec = &source.spec;
    let source_header: Map<String, Value> = spec
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), Value::String(value.clone())))
        .collect();
    let mut body = json!({
        "status": response.status.unwrap_or(0),
        "header": header_arrays(&response.headers),
        "body": STANDARD.encode(&response.body),
        "retried": retried,
        "maxRetries": spec.max_retries,
        "sourceMessageId": source.id.0,
        "url": spec.url,
        "method": spec.method,
        "sourceHeader": source_header,
        "sourceBody": STANDARD.encode(&source.body),
        "notBefore": source.not_before.as_millis().to_string(),
        "createdAt": source.created_at.as_millis().to_string(),
    });
    if let Value::Object(fields) = &mut body {
        let optional = [
            ("topicName", &spec.topic_name),
            ("endpointName", &spec.endpoint_name),
            ("scheduleId", &spec.schedule_id),
            ("callerIP", &spec.caller_ip),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                fields.insert(key.into(), Value::String(value.clone()));
            }
        }
        if let Some(dlq_id) = dlq_id {
            fields.insert("dlqId".into(), Value::String(dlq_id.to_owned()));
        }
    }
    body.to_string().into_bytes()
}

/// A new message delivering `body` to a callback configured by `config`.
pub fn callback_message(
    source: &Message,
    config: &CallbackConfig,
    kind: MessageKind,
    body: Vec<u8>,
    now: Timestamp,
    default_timeout_ms: u64,
) -> NewMessage {
    let mut headers = config.headers.clone();
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
    {
        headers.push(("Content-Type".into(), "application/json".into()));
    }
    let not_before = now.saturating_add(std::time::Duration::from_millis(config.delay_ms.unwrap_or(0)));
    NewMessage {
        message: Message {
            id: MessageId::generate(now),
            account_id: source.account_id,
            spec: MessageSpec {
                kind,
                url: config.url.clone(),
                method: config.method,
                headers,
                max_retries: config.retries.unwrap_or(source.spec.max_retries),
                retry_delay: config.retry_delay.clone(),
                timeout_ms: config.timeout_ms.unwrap_or(default_timeout_ms),
                callback: None,
                failure_callback: config.failure_callback.as_deref().cloned(),
                topic_name: None,
                endpoint_name: None,
                schedule_id: None,
                queue_name: None,
                caller_ip: None,
                labels: config.labels.clone(),
                flow_control: config.flow_control.clone(),
                source_message_id: Some(source.id.0.clone()),
                workflow_run_id: config.workflow_run_id.clone(),
                workflow_url: config.workflow_url.clone(),
                workflow_history: false,
                redact: crate::message::Redact::default(),
                reports_dead_letter: None,
            },
            body,
            retried: 0,
            not_before,
            created_at: now,
        },
        dedup: None,
        leased_until: None,
        early: None,
    }
}
