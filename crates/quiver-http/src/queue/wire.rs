//! The queue's wire shapes (wire-format §3.4-§3.11): messages, dead letters, events, URL groups.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use quiver_queue::message::{DeadLetter, Event, FlowControl, Message, MessageSpec, Redact};
use quiver_queue::store::UrlGroup;
use quiver_queue::{PublishOutcome, Published, QueueConfig};
use serde_json::{Map, Value, json};

/// `{name: [values]}` from header pairs.
pub fn header_arrays(headers: &[(String, String)]) -> Value {
    let mut map: Map<String, Value> = Map::new();
    for (name, value) in headers {
        if let Value::Array(values) = map
            .entry(name.clone())
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            values.push(Value::String(value.clone()));
        }
    }
    Value::Object(map)
}

fn put(fields: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        fields.insert(key.to_owned(), value);
    }
}

/// Puts `body` as text when it is UTF-8, else as `<base64_key>`.
fn put_body(fields: &mut Map<String, Value>, text_key: &str, base64_key: &str, body: &[u8]) {
    match std::str::from_utf8(body) {
        Ok(text) => fields.insert(text_key.to_owned(), Value::String(text.to_owned())),
        Err(_) => fields.insert(base64_key.to_owned(), Value::String(STANDARD.encode(body))),
    };
}

fn spec_fields(fields: &mut Map<String, Value>, spec: &MessageSpec) {
    let text = |value: &Option<String>| value.clone().map(Value::String);
    fields.insert("url".into(), Value::String(spec.url.clone()));
    fields.insert("method".into(), Value::from(spec.method.as_str()));
    let headers: Vec<(String, String)> = spec
        .headers
        .iter()
        .map(|(name, value)| {
            if spec.redact.covers_header(name) {
                (name.clone(), Redact::mask(value.as_bytes()))
            } else {
                (name.clone(), value.clone())
            }
        })
        .collect();
    fields.insert("header".into(), header_arrays(&headers));
    fields.insert("maxRetries".into(), json!(spec.max_retries));
    put(fields, "topicName", text(&spec.topic_name));
    put(fields, "endpointName", text(&spec.endpoint_name));
    put(fields, "queueName", text(&spec.queue_name));
    put(fields, "scheduleId", text(&spec.schedule_id));
    put(fields, "callerIP", text(&spec.caller_ip));
    put(fields, "callerIp", text(&spec.caller_ip));
    put(
        fields,
        "retryDelayExpression",
        spec.retry_delay.as_ref().map(|d| Value::from(d.source())),
    );
    put(fields, "timeout", Some(json!(spec.timeout_ms)));
    if let Some(callback) = &spec.callback {
        fields.insert("callback".into(), Value::String(callback.url.clone()));
        fields.insert("callbackHeader".into(), header_arrays(&callback.headers));
    }
    if let Some(callback) = &spec.failure_callback {
        fields.insert("failureCallback".into(), Value::String(callback.url.clone()));
        fields.insert("failureCallbackHeader".into(), header_arrays(&callback.headers));
    }
    if let Some(flow) = &spec.flow_control {
        flow_fields(fields, flow);
    }
    if let Some(first) = spec.labels.first() {
        fields.insert("label".into(), Value::String(first.clone()));
        fields.insert("labels".into(), json!(spec.labels));
    }
}

/// A flow-control key and its limits. A rate or parallelism without a period has the default period,
/// one second, and says so.
fn flow_fields(fields: &mut Map<String, Value>, flow: &FlowControl) {
    fields.insert("flowControlKey".into(), Value::String(flow.key.clone()));
    put(fields, "parallelism", flow.parallelism.map(|v| json!(v)));
    put(fields, "rate", flow.rate.map(|v| json!(v)));
    let has_limit = flow.parallelism.is_some() || flow.rate.is_some();
    let period = flow.period.or(has_limit.then_some(1));
    put(fields, "period", period.map(|v| json!(v)));
}

/// A pending message (`GET /v2/messages/{id}`).
pub fn message_json(message: &Message) -> Value {
    let mut fields = Map::new();
    fields.insert("messageId".into(), Value::String(message.id.0.clone()));
    spec_fields(&mut fields, &message.spec);
    if message.spec.redact.body {
        fields.insert("body".into(), Value::String(Redact::mask(&message.body)));
    } else {
        put_body(&mut fields, "body", "bodyBase64", &message.body);
    }
    fields.insert("notBefore".into(), json!(message.not_before.as_millis()));
    fields.insert("createdAt".into(), json!(message.created_at.as_millis()));
    fields.insert("retried".into(), json!(message.retried));
    Value::Object(fields)
}

/// A dead letter: the message plus the last response.
pub fn dead_letter_json(dead: &DeadLetter) -> Value {
    let mut value = message_json(&dead.message);
    if let Value::Object(fields) = &mut value {
        fields.insert("dlqId".into(), Value::String(dead.dlq_id.clone()));
        fields.insert("responseStatus".into(), json!(dead.response_status.unwrap_or(0)));
        fields.insert("responseHeader".into(), header_arrays(&dead.response_headers));
        fields.insert("responseHeaders".into(), header_arrays(&dead.response_headers));
        put_body(fields, "responseBody", "responseBodyBase64", &dead.response_body);
        fields.insert("failedAt".into(), json!(dead.failed_at.as_millis()));
        if let Some(info) = &dead.failure_callback {
            let mut callback = Map::new();
            callback.insert("state".into(), json!(info.state.as_str()));
            put(
                &mut callback,
                "responseStatus",
                info.response_status.map(|s| json!(s)),
            );
            put(
                &mut callback,
                "responseBody",
                info.response_body.clone().map(Value::String),
            );
            if !info.response_headers.is_empty() {
                callback.insert("responseHeaders".into(), header_arrays(&info.response_headers));
            }
            fields.insert("failureCallbackInfo".into(), Value::Object(callback));
        }
    }
    value
}

/// A log event.
pub fn event_json(event: &Event) -> Value {
    let mut fields = Map::new();
    fields.insert("time".into(), json!(event.time.as_millis()));
    fields.insert("messageId".into(), Value::String(event.message_id.0.clone()));
    fields.insert("state".into(), Value::String(event.state.as_str().to_owned()));
    spec_fields(&mut fields, &event.spec);
    if let Some(expression) = &event.spec.retry_delay {
        fields.insert("retryDelayExpr".into(), Value::from(expression.source()));
    }
    let detail = &event.detail;
    put(&mut fields, "error", detail.error.clone().map(Value::String));
    put(
        &mut fields,
        "nextDeliveryTime",
        detail.next_delivery_time.map(|t| json!(t)),
    );
    put(
        &mut fields,
        "responseStatus",
        detail.response_status.map(|s| json!(s)),
    );
    put(
        &mut fields,
        "responseBody",
        detail.response_body.clone().map(Value::String),
    );
    Value::Object(fields)
}

/// A URL group.
pub fn url_group_json(group: &UrlGroup) -> Value {
    let endpoints: Vec<Value> = group
        .endpoints
        .iter()
        .map(|endpoint| {
            let mut fields = Map::new();
            if let Some(name) = &endpoint.name {
                fields.insert("name".into(), Value::String(name.clone()));
            }
            fields.insert("url".into(), Value::String(endpoint.url.clone()));
            Value::Object(fields)
        })
        .collect();
    json!({
        "name": group.name,
        "createdAt": group.created_at.as_millis(),
        "updatedAt": group.updated_at.as_millis(),
        "endpoints": endpoints,
    })
}

/// One published message.
pub fn published_json(published: &Published) -> Value {
    json!({"messageId": published.message_id.0, "url": published.url, "deduplicated": published.deduplicated})
}

/// A publish's answer: an object for a URL, a bare array for a URL group.
pub fn publish_outcome_json(outcome: &PublishOutcome) -> Value {
    match outcome {
        PublishOutcome::Url(published) => published_json(published),
        PublishOutcome::Group(all) => Value::Array(all.iter().map(published_json).collect()),
    }
}

/// A schedule record (SPEC 2.5). `retries` is always present (the official Python SDK requires it):
/// what the schedule's messages get, under `config`'s default and cap.
pub fn schedule_json(schedule: &quiver_queue::schedule::Schedule, config: &QueueConfig) -> Value {
    let options = schedule.options();
    let mut fields = Map::new();
    fields.insert("scheduleId".into(), Value::String(schedule.id.clone()));
    fields.insert("cron".into(), Value::String(schedule.cron.clone()));
    fields.insert("destination".into(), Value::String(schedule.destination.clone()));
    fields.insert("createdAt".into(), json!(schedule.created_at.as_millis()));
    fields.insert(
        "method".into(),
        Value::from(options.method.unwrap_or_default().as_str()),
    );
    fields.insert("isPaused".into(), Value::Bool(schedule.paused));
    fields.insert("header".into(), header_arrays(&options.forward_headers));
    // A schedule without a body (created or re-created so) has no `body` field.
    if !schedule.body.is_empty() {
        put_body(&mut fields, "body", "bodyBase64", &schedule.body);
    }
    fields.insert("retries".into(), json!(config.effective_retries(options.retries)));
    put(&mut fields, "delay", options.delay.map(|d| json!(d.as_secs())));
    put(
        &mut fields,
        "timeout",
        options.timeout.map(|d| json!(d.as_secs())),
    );
    put(
        &mut fields,
        "callback",
        options.callback.as_ref().map(|c| Value::String(c.url.clone())),
    );
    put(
        &mut fields,
        "failureCallback",
        options
            .failure_callback
            .as_ref()
            .map(|c| Value::String(c.url.clone())),
    );
    for (key, callback) in [
        ("callbackHeader", &options.callback),
        ("failureCallbackHeader", &options.failure_callback),
    ] {
        if let Some(callback) = callback.as_ref().filter(|c| !c.headers.is_empty()) {
            fields.insert(key.into(), header_arrays(&callback.headers));
        }
    }
    put(
        &mut fields,
        "callerIp",
        schedule.caller_ip.clone().map(Value::String),
    );
    put(
        &mut fields,
        "callerIP",
        schedule.caller_ip.clone().map(Value::String),
    );
    if let Some(flow) = &options.flow_control {
        flow_fields(&mut fields, flow);
    }
    put(
        &mut fields,
        "retryDelayExpression",
        options.retry_delay.as_ref().map(|d| Value::from(d.source())),
    );
    put(
        &mut fields,
        "queueName",
        options.queue_name.clone().map(Value::String),
    );
    if let Some(first) = options.labels.first() {
        fields.insert("label".into(), Value::String(first.clone()));
        fields.insert("labels".into(), json!(options.labels));
    }
    put(
        &mut fields,
        "lastScheduleTime",
        schedule.last_fired.map(|t| json!(t.as_millis())),
    );
    put(
        &mut fields,
        "nextScheduleTime",
        schedule.next_fire.map(|t| json!(t.as_millis())),
    );
    let states: Map<String, Value> = schedule
        .last_states
        .iter()
        .map(|(message, state)| (message.clone(), Value::String(state.clone())))
        .collect();
    fields.insert("lastScheduleStates".into(), Value::Object(states));
    Value::Object(fields)
}
