//! The queue's wire shapes (wire-format §3.4-§3.11) as serde types: messages, dead letters, events, URL
//! groups and publish answers. Optional fields are left out when absent, as the wire does.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use quiver_queue::message::{
    DeadLetter, Event, FailureCallbackInfo, FlowControl, Message, MessageSpec, Redact,
};
use quiver_queue::store::UrlGroup;
use quiver_queue::{PublishOutcome, Published, QueueConfig};
use serde::Serialize;

/// Header pairs as `{name: [values]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct HeaderArrays(BTreeMap<String, Vec<String>>);

impl HeaderArrays {
    /// The pairs grouped by name, values in their order.
    pub fn of(headers: &[(String, String)]) -> HeaderArrays {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in headers {
            map.entry(name.clone()).or_default().push(value.clone());
        }
        HeaderArrays(map)
    }
}

/// A message body: text when it is UTF-8, else base64 under `bodyBase64`.
#[derive(Debug, Serialize)]
enum MessageBody {
    #[serde(rename = "body")]
    Text(String),
    #[serde(rename = "bodyBase64")]
    Base64(String),
}

/// A response body: text when it is UTF-8, else base64 under `responseBodyBase64`.
#[derive(Debug, Serialize)]
enum ResponseBody {
    #[serde(rename = "responseBody")]
    Text(String),
    #[serde(rename = "responseBodyBase64")]
    Base64(String),
}

/// Text when `body` is UTF-8, else its base64.
fn text_or_base64(body: &[u8]) -> Result<String, String> {
    std::str::from_utf8(body)
        .map(str::to_owned)
        .map_err(|_| STANDARD.encode(body))
}

/// A flow-control key and its limits. A rate or parallelism without a period has the default period,
/// one second, and says so.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FlowOut {
    flow_control_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallelism: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    period: Option<u64>,
}

impl FlowOut {
    fn of(flow: &FlowControl) -> FlowOut {
        let has_limit = flow.parallelism.is_some() || flow.rate.is_some();
        FlowOut {
            flow_control_key: flow.key.clone(),
            parallelism: flow.parallelism,
            rate: flow.rate,
            period: flow.period.or(has_limit.then_some(1)),
        }
    }
}

/// The fields of a message's spec, shared by messages, dead letters and events.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SpecOut {
    url: String,
    method: &'static str,
    header: HeaderArrays,
    max_retries: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    topic_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    endpoint_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    queue_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule_id: Option<String>,
    /// The upstream spelling of `callerIp`, kept for clients that read it.
    #[serde(rename = "callerIP", skip_serializing_if = "Option::is_none")]
    caller_ip_upper: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    caller_ip: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_delay_expression: Option<String>,
    timeout: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    callback: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    callback_header: Option<HeaderArrays>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_callback: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_callback_header: Option<HeaderArrays>,
    #[serde(flatten)]
    flow: Option<FlowOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<Vec<String>>,
}

impl SpecOut {
    /// The spec as the API shows it: redacted headers masked.
    fn of(spec: &MessageSpec) -> SpecOut {
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
        SpecOut {
            url: spec.url.clone(),
            method: spec.method.as_str(),
            header: HeaderArrays::of(&headers),
            max_retries: spec.max_retries,
            topic_name: spec.topic_name.clone(),
            endpoint_name: spec.endpoint_name.clone(),
            queue_name: spec.queue_name.clone(),
            schedule_id: spec.schedule_id.clone(),
            caller_ip_upper: spec.caller_ip.clone(),
            caller_ip: spec.caller_ip.clone(),
            retry_delay_expression: spec.retry_delay.as_ref().map(|d| d.source().to_owned()),
            timeout: spec.timeout_ms,
            callback: spec.callback.as_ref().map(|c| c.url.clone()),
            callback_header: spec.callback.as_ref().map(|c| HeaderArrays::of(&c.headers)),
            failure_callback: spec.failure_callback.as_ref().map(|c| c.url.clone()),
            failure_callback_header: spec
                .failure_callback
                .as_ref()
                .map(|c| HeaderArrays::of(&c.headers)),
            flow: spec.flow_control.as_ref().map(FlowOut::of),
            label: spec.labels.first().cloned(),
            labels: (!spec.labels.is_empty()).then(|| spec.labels.clone()),
        }
    }
}

/// A pending message (`GET /v2/messages/{id}`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageOut {
    message_id: String,
    #[serde(flatten)]
    spec: SpecOut,
    #[serde(flatten)]
    body: MessageBody,
    not_before: i64,
    created_at: i64,
    retried: u32,
}

impl MessageOut {
    /// The message as the API shows it; a redacted body is masked.
    pub fn of(message: &Message) -> MessageOut {
        let body = if message.spec.redact.body {
            MessageBody::Text(Redact::mask(&message.body))
        } else {
            match text_or_base64(&message.body) {
                Ok(text) => MessageBody::Text(text),
                Err(encoded) => MessageBody::Base64(encoded),
            }
        };
        MessageOut {
            message_id: message.id.0.clone(),
            spec: SpecOut::of(&message.spec),
            body,
            not_before: message.not_before.as_millis(),
            created_at: message.created_at.as_millis(),
            retried: message.retried,
        }
    }
}

/// How a workflow step's failure callback went (`failureCallbackInfo`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FailureCallbackOut {
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_body: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_headers: Option<HeaderArrays>,
}

impl FailureCallbackOut {
    fn of(info: &FailureCallbackInfo) -> FailureCallbackOut {
        FailureCallbackOut {
            state: info.state.as_str(),
            response_status: info.response_status,
            response_body: info.response_body.clone(),
            response_headers: (!info.response_headers.is_empty())
                .then(|| HeaderArrays::of(&info.response_headers)),
        }
    }
}

/// A dead letter: the message plus the last response; those of workflow runs also name their run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetterOut {
    #[serde(flatten)]
    message: MessageOut,
    dlq_id: String,
    response_status: u16,
    response_header: HeaderArrays,
    response_headers: HeaderArrays,
    #[serde(flatten)]
    response_body: ResponseBody,
    failed_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_callback_info: Option<FailureCallbackOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workflow_run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workflow_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workflow_created_at: Option<i64>,
}

impl DeadLetterOut {
    /// The dead letter as the API shows it. A workflow run's dead letter carries its run id and URL;
    /// `run_created_at` is the run's creation time when the run is still stored.
    pub fn of(dead: &DeadLetter, run_created_at: Option<i64>) -> DeadLetterOut {
        let spec = &dead.message.spec;
        let headers = HeaderArrays::of(&dead.response_headers);
        DeadLetterOut {
            message: MessageOut::of(&dead.message),
            dlq_id: dead.dlq_id.clone(),
            response_status: dead.response_status.unwrap_or(0),
            response_header: headers.clone(),
            response_headers: headers,
            response_body: match text_or_base64(&dead.response_body) {
                Ok(text) => ResponseBody::Text(text),
                Err(encoded) => ResponseBody::Base64(encoded),
            },
            failed_at: dead.failed_at.as_millis(),
            failure_callback_info: dead.failure_callback.as_ref().map(FailureCallbackOut::of),
            workflow_run_id: spec.workflow_run_id.clone(),
            workflow_url: spec
                .workflow_run_id
                .as_ref()
                .map(|_| spec.workflow_url.clone().unwrap_or_else(|| spec.url.clone())),
            workflow_created_at: spec.workflow_run_id.as_ref().and(run_created_at),
        }
    }
}

/// A log event.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventOut {
    time: i64,
    message_id: String,
    state: &'static str,
    #[serde(flatten)]
    spec: SpecOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_delay_expr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_delivery_time: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_body: Option<String>,
}

impl EventOut {
    /// The event as the log shows it.
    pub fn of(event: &Event) -> EventOut {
        let detail = &event.detail;
        EventOut {
            time: event.time.as_millis(),
            message_id: event.message_id.0.clone(),
            state: event.state.as_str(),
            spec: SpecOut::of(&event.spec),
            retry_delay_expr: event.spec.retry_delay.as_ref().map(|d| d.source().to_owned()),
            error: detail.error.clone(),
            next_delivery_time: detail.next_delivery_time,
            response_status: detail.response_status,
            response_body: detail.response_body.clone(),
        }
    }
}

/// An endpoint of a URL group.
#[derive(Debug, Serialize)]
struct EndpointOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    url: String,
}

/// A URL group.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlGroupOut {
    name: String,
    created_at: i64,
    updated_at: i64,
    endpoints: Vec<EndpointOut>,
}

impl UrlGroupOut {
    /// The group as the API shows it.
    pub fn of(group: &UrlGroup) -> UrlGroupOut {
        UrlGroupOut {
            name: group.name.to_string(),
            created_at: group.created_at.as_millis(),
            updated_at: group.updated_at.as_millis(),
            endpoints: group
                .endpoints
                .iter()
                .map(|e| EndpointOut {
                    name: e.name.clone(),
                    url: e.url.clone(),
                })
                .collect(),
        }
    }
}

/// One published message.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedOut {
    message_id: String,
    url: String,
    deduplicated: bool,
}

impl PublishedOut {
    fn of(published: &Published) -> PublishedOut {
        PublishedOut {
            message_id: published.message_id.0.clone(),
            url: published.url.clone(),
            deduplicated: published.deduplicated,
        }
    }
}

/// A publish's answer: an object for a URL, a bare array for a URL group.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum PublishOutcomeOut {
    /// Published to a URL.
    Url(PublishedOut),
    /// Published to each endpoint of a URL group.
    Group(Vec<PublishedOut>),
}

impl PublishOutcomeOut {
    /// The outcome as the API shows it.
    pub fn of(outcome: &PublishOutcome) -> PublishOutcomeOut {
        match outcome {
            PublishOutcome::Url(published) => PublishOutcomeOut::Url(PublishedOut::of(published)),
            PublishOutcome::Group(all) => {
                PublishOutcomeOut::Group(all.iter().map(PublishedOut::of).collect())
            }
        }
    }
}

/// A schedule record (SPEC 2.5). `retries` is always present (the official Python SDK requires it):
/// what the schedule's messages get, under the configuration's default and cap. A schedule without a
/// body (created or re-created so) has no `body` field.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleOut {
    schedule_id: String,
    cron: String,
    destination: String,
    created_at: i64,
    method: &'static str,
    is_paused: bool,
    header: HeaderArrays,
    #[serde(flatten)]
    body: Option<MessageBody>,
    retries: u32,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    delay: Option<u64>,
    /// Seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    callback: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    callback_header: Option<HeaderArrays>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_callback: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure_callback_header: Option<HeaderArrays>,
    #[serde(skip_serializing_if = "Option::is_none")]
    caller_ip: Option<String>,
    /// The upstream spelling of `callerIp`, kept for clients that read it.
    #[serde(rename = "callerIP", skip_serializing_if = "Option::is_none")]
    caller_ip_upper: Option<String>,
    #[serde(flatten)]
    flow: Option<FlowOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_delay_expression: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    queue_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_schedule_time: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_schedule_time: Option<i64>,
    last_schedule_states: BTreeMap<String, String>,
}

impl ScheduleOut {
    /// The schedule as the API shows it, its messages' retries under `config`.
    pub fn of(schedule: &quiver_queue::schedule::Schedule, config: &QueueConfig) -> ScheduleOut {
        let options = schedule.options();
        let callback_header = |callback: &Option<quiver_queue::message::CallbackConfig>| {
            callback
                .as_ref()
                .filter(|c| !c.headers.is_empty())
                .map(|c| HeaderArrays::of(&c.headers))
        };
        ScheduleOut {
            schedule_id: schedule.id.to_string(),
            cron: schedule.cron.source().to_owned(),
            destination: schedule.destination.clone(),
            created_at: schedule.created_at.as_millis(),
            method: options.method.unwrap_or_default().as_str(),
            is_paused: schedule.paused,
            header: HeaderArrays::of(&options.forward_headers),
            body: (!schedule.body.is_empty()).then(|| match text_or_base64(&schedule.body) {
                Ok(text) => MessageBody::Text(text),
                Err(encoded) => MessageBody::Base64(encoded),
            }),
            retries: config.effective_retries(options.retries),
            delay: options.delay.map(|d| d.as_secs()),
            timeout: options.timeout.map(|d| d.as_secs()),
            callback: options.callback.as_ref().map(|c| c.url.clone()),
            callback_header: callback_header(&options.callback),
            failure_callback: options.failure_callback.as_ref().map(|c| c.url.clone()),
            failure_callback_header: callback_header(&options.failure_callback),
            caller_ip: schedule.caller_ip.clone(),
            caller_ip_upper: schedule.caller_ip.clone(),
            flow: options.flow_control.as_ref().map(FlowOut::of),
            retry_delay_expression: options.retry_delay.as_ref().map(|d| d.source().to_owned()),
            queue_name: options.queue_name.clone(),
            label: options.labels.first().cloned(),
            labels: (!options.labels.is_empty()).then(|| options.labels.clone()),
            last_schedule_time: schedule.last_fired.map(quiver_core::Timestamp::as_millis),
            next_schedule_time: schedule.next_fire.map(quiver_core::Timestamp::as_millis),
            last_schedule_states: schedule.last_states.iter().cloned().collect(),
        }
    }
}

/// A FIFO queue (`/v2/queues`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FifoQueueOut {
    name: String,
    created_at: i64,
    updated_at: i64,
    parallelism: u32,
    lag: u64,
    paused: bool,
}

impl FifoQueueOut {
    /// The queue as the API shows it.
    pub fn of(queue: &quiver_queue::store::FifoQueue) -> FifoQueueOut {
        FifoQueueOut {
            name: queue.name.to_string(),
            created_at: queue.created_at.as_millis(),
            updated_at: queue.updated_at.as_millis(),
            parallelism: queue.parallelism,
            lag: queue.lag,
            paused: queue.paused,
        }
    }
}

/// How many messages or runs a cancel took.
#[derive(Debug, Serialize)]
pub struct CancelledOut {
    /// The count.
    pub cancelled: u64,
}

/// How many dead letters a delete removed, and where the next page of those the filters match starts
/// (absent when the delete named its dead letters).
#[derive(Debug, Serialize)]
pub struct DeletedOut {
    /// The count.
    pub deleted: u64,
    /// The next page; empty at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// A message published again.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageIdOut {
    /// Its id.
    pub message_id: String,
}

/// Dead letters published again: each new message, and where the next page starts (empty at the end,
/// which the SDKs read as the end).
#[derive(Debug, Serialize)]
pub struct RetriedOut {
    /// The next page.
    pub cursor: String,
    /// The new messages.
    pub responses: Vec<MessageIdOut>,
}

/// A schedule created or replaced.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleIdOut {
    /// Its id.
    pub schedule_id: String,
}

/// An account's signing keys (`/v2/keys`).
#[derive(Debug, Serialize)]
pub struct SigningKeysOut {
    /// The key deliveries are signed with.
    pub current: String,
    /// The key that replaces it at the next rotation.
    pub next: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use quiver_core::{AccountId, Timestamp};
    use quiver_queue::message::MessageId;

    use super::*;

    fn message(spec: serde_json::Value, body: &[u8]) -> Message {
        Message {
            id: MessageId("msg_1".into()),
            account_id: AccountId::random(),
            spec: serde_json::from_value(spec).unwrap(),
            body: body.to_vec(),
            retried: 2,
            not_before: Timestamp::from_millis(10),
            created_at: Timestamp::from_millis(5),
        }
    }

    #[test]
    fn a_message_shows_its_spec_with_absent_fields_left_out() {
        let shown = serde_json::to_value(MessageOut::of(&message(
            json!({"kind": "publish", "url": "https://example.com", "method": "PUT",
                   "headers": [["X-A", "1"], ["X-A", "2"]], "max_retries": 3, "timeout_ms": 1000,
                   "labels": ["a", "b"], "flow_control": {"key": "k", "parallelism": 2}}),
            b"hello",
        )))
        .unwrap();
        assert_eq!(
            shown,
            json!({"messageId": "msg_1", "url": "https://example.com", "method": "PUT",
                   "header": {"X-A": ["1", "2"]}, "maxRetries": 3, "timeout": 1000,
                   "flowControlKey": "k", "parallelism": 2, "period": 1,
                   "label": "a", "labels": ["a", "b"], "body": "hello",
                   "notBefore": 10, "createdAt": 5, "retried": 2})
        );
    }

    #[test]
    fn a_workflow_dead_letter_names_its_run_and_a_binary_response_goes_as_base64() {
        let dead = DeadLetter {
            dlq_id: "d1".into(),
            message: message(
                json!({"kind": "publish", "url": "https://example.com/step", "method": "POST",
                       "headers": [], "max_retries": 0, "timeout_ms": 1000,
                       "workflow_run_id": "wfr_1", "workflow_url": "https://example.com/wf"}),
                &[0xff, 0xfe],
            ),
            response_status: Some(500),
            response_headers: vec![("Server".into(), "x".into())],
            response_body: vec![0xff],
            failed_at: Timestamp::from_millis(20),
            failure_callback: None,
        };
        let shown = serde_json::to_value(DeadLetterOut::of(&dead, None)).unwrap();
        assert_eq!(shown["bodyBase64"], "//4=");
        assert_eq!(shown["responseBodyBase64"], "/w==");
        assert_eq!(
            (&shown["workflowRunId"], &shown["workflowUrl"]),
            (&json!("wfr_1"), &json!("https://example.com/wf"))
        );
        assert!(
            shown.get("workflowCreatedAt").is_none(),
            "a run no longer stored leaves it out"
        );
        assert_eq!(shown["responseHeader"], json!({"Server": ["x"]}));
        assert_eq!(shown["responseHeaders"], shown["responseHeader"]);
        let with_run = serde_json::to_value(DeadLetterOut::of(&dead, Some(7))).unwrap();
        assert_eq!(with_run["workflowCreatedAt"], 7);
    }
}

/// The messages a request made, left on its answer for its log line (`message.id`).
#[derive(Debug, Clone)]
pub(crate) struct MessagesMade(pub(crate) Vec<quiver_queue::message::MessageId>);
