//! What a delivery sends besides the message's own (its headers, under both prefixes) and what it
//! keeps of the answer.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::callback::ResponseRecord;
use crate::message::Message;
use crate::retry::AttemptReport;

/// Response headers whose value asks for a retry delay.
pub(super) const DELAY_HEADERS: [&str; 4] = [
    "retry-after",
    "x-ratelimit-reset",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
];

/// The headers Quiver adds to a delivery, each under the `Upstash-` and the `Svc-` prefix (names built once,
/// not formatted and parsed again for every delivery).
macro_rules! ours {
    ($($constant:ident = $name:literal),+ $(,)?) => {$(
        const $constant: [HeaderName; 2] = [
            HeaderName::from_static(concat!("upstash-", $name)),
            HeaderName::from_static(concat!("svc-", $name)),
        ];
    )+};
}
ours! {
    MESSAGE_ID = "message-id",
    RETRIED = "retried",
    SIGNATURE = "signature",
    TOPIC_NAME = "topic-name",
    ENDPOINT_NAME = "endpoint-name",
    SCHEDULE_ID = "schedule-id",
    CALLER_IP = "caller-ip",
    WORKFLOW_RUN_ID = "workflow-runid",
    WORKFLOW_URL = "workflow-url",
    WORKFLOW_CREATED_AT = "workflow-createdat",
}

/// A delivery's headers: the message's own (those that are valid header names and values), then each of
/// Quiver's that has a value (its id, retries, signature, URL group, schedule, workflow run) under both
/// prefixes.
pub(super) fn delivery_headers(
    message: &Message,
    signature: Option<String>,
    run_created_at: Option<&str>,
) -> HeaderMap {
    // The message's own headers, and each of ours under two prefixes.
    let mut headers = HeaderMap::with_capacity(message.spec.headers.len() + 20);
    for (name, value) in &message.spec.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    let spec = &message.spec;
    let retried = message.retried.to_string();
    let ours: [(&[HeaderName; 2], Option<&str>); 10] = [
        (&MESSAGE_ID, Some(&message.id.0)),
        (&RETRIED, Some(&retried)),
        (&SIGNATURE, signature.as_deref()),
        (&TOPIC_NAME, spec.topic_name.as_deref()),
        (&ENDPOINT_NAME, spec.endpoint_name.as_deref()),
        (&SCHEDULE_ID, spec.schedule_id.as_deref()),
        (&CALLER_IP, spec.caller_ip.as_deref()),
        (&WORKFLOW_RUN_ID, spec.workflow_run_id.as_deref()),
        (&WORKFLOW_URL, spec.workflow_url.as_deref()),
        (&WORKFLOW_CREATED_AT, run_created_at),
    ];
    for (names, value) in ours {
        if let Some(Ok(value)) = value.map(HeaderValue::from_str) {
            let [upstash, svc] = names;
            headers.append(upstash.clone(), value.clone());
            headers.append(svc.clone(), value);
        }
    }
    headers
}

/// What one attempt brought back (see `DeliveryWorker::attempt`).
pub(super) struct Attempted {
    pub(super) report: AttemptReport,
    /// The answer, without its headers.
    pub(super) response: ResponseRecord,
    /// The answer's headers.
    pub(super) headers: HeaderMap,
    /// Why no answer came, if none did.
    pub(super) error: Option<String>,
}

/// A destination's answer headers as reported: canonical names, values that are text.
pub(super) fn written_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            // A value that is not text cannot be reported as a JSON string: it is left out.
            value
                .to_str()
                .ok()
                .map(|v| (crate::headers::canonical(name.as_str()), v.to_owned()))
        })
        .collect()
}
