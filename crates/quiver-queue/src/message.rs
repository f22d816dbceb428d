//! Messages, their states, dead letters and log events.

use std::fmt;

use quiver_core::secret::append_random_token;
use quiver_core::{AccountId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::method::HttpMethod;
use crate::retry_delay::RetryDelay;

/// Identifies a message: `msg_`, 8 characters of creation time and 20 random characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(pub String);

/// Base-62 digits in ASCII order, so that text order is numeric order.
const ORDERED_DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

impl MessageId {
    /// A new id for a message created at `now`: `msg_`, the millisecond as 8 base-62 digits, then 120
    /// random bits. Ids sort by creation time, so the store's indexes on them grow at one end instead of
    /// at random pages.
    pub fn generate(now: Timestamp) -> MessageId {
        let mut millis = u64::try_from(now.as_millis()).unwrap_or(0);
        let mut time = [b'0'; 8];
        for digit in time.iter_mut().rev() {
            *digit = ORDERED_DIGITS[usize::try_from(millis % 62).unwrap_or(0)];
            millis /= 62;
        }
        let mut id = String::with_capacity(32);
        id.push_str("msg_");
        id.extend(time.iter().map(|&b| char::from(b)));
        append_random_token(&mut id, 15);
        MessageId(id)
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a message came from; callbacks do not spawn callbacks of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// Published by a client (or fanned out from a URL group, or a DLQ retry).
    Publish,
    /// Reports an attempt's response to the publisher's callback URL.
    Callback,
    /// Reports exhausted retries to the publisher's failure callback URL.
    FailureCallback,
}

/// How to deliver a callback or failure callback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackConfig {
    /// Where to send it.
    pub url: String,
    /// HTTP method (default POST).
    pub method: HttpMethod,
    /// Delivery timeout, if set.
    pub timeout_ms: Option<u64>,
    /// Retries, if set (default: the original message's).
    pub retries: Option<u32>,
    /// Retry delay expression, if set.
    pub retry_delay: Option<RetryDelay>,
    /// Delay before the first attempt, if set.
    pub delay_ms: Option<u64>,
    /// Headers sent with it (`*-Callback-Forward-<H>`).
    pub headers: Vec<(String, String)>,
    /// The workflow run the callback continues (`Svc-Callback-Workflow-RunId`): the workflow SDK's
    /// `context.call` has the call's answer delivered to the run as a message of that run.
    #[serde(default)]
    pub workflow_run_id: Option<String>,
    /// The run's workflow URL (`Svc-Callback-Workflow-Url`).
    #[serde(default)]
    pub workflow_url: Option<String>,
    /// Flow control of the callback message (`Svc-Callback-Flow-Control-Key` and `-Value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_control: Option<FlowControl>,
    /// The callback message's own failure callback (`Svc-Callback-Failure-Callback` and its settings):
    /// the workflow SDK's `context.call` passes the run's failure function on this way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_callback: Option<Box<CallbackConfig>>,
    /// Labels of the callback message (`Svc-Callback-Label`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// Flow control settings carried by a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowControl {
    /// Messages sharing the key share the limits.
    pub key: String,
    /// Most deliveries in flight at once.
    pub parallelism: Option<u32>,
    /// Most deliveries started per period.
    pub rate: Option<u32>,
    /// The rate's period, in seconds.
    pub period: Option<u64>,
}

/// The immutable description of a message: what to deliver, where and how.
///
/// The store keeps it as JSON in the message row and in its CREATED event, so empty fields are
/// left out of the record and read back as their defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageSpec {
    /// Publish, callback or failure callback.
    pub kind: MessageKind,
    /// Destination URL.
    pub url: String,
    /// HTTP method.
    pub method: HttpMethod,
    /// Headers delivered with the body (forwarded headers and `Content-Type`), canonical case.
    pub headers: Vec<(String, String)>,
    /// Retries allowed after the first attempt.
    pub max_retries: u32,
    /// Retry delay expression, replacing the default backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_delay: Option<RetryDelay>,
    /// Delivery timeout.
    pub timeout_ms: u64,
    /// Callback after each attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback: Option<CallbackConfig>,
    /// Callback once retries are exhausted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_callback: Option<CallbackConfig>,
    /// URL group the message was published to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_name: Option<String>,
    /// Name of the group endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_name: Option<String>,
    /// Schedule that created the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<String>,
    /// Queue the message was enqueued into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_name: Option<String>,
    /// Address the message was published from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_ip: Option<String>,
    /// Labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Flow control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_control: Option<FlowControl>,
    /// For callbacks: the message whose attempt they report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_message_id: Option<String>,
    /// The workflow run this message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_run_id: Option<String>,
    /// The workflow's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_url: Option<String>,
    /// A step message of a run: delivered with the run's history as its body.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub workflow_history: bool,
    /// What the API shows redacted (`Svc-Redact-Fields`); deliveries are never redacted.
    #[serde(default, skip_serializing_if = "Redact::is_nothing")]
    pub redact: Redact,
    /// For the failure callback of a workflow run's step: the dead letter whose `failureCallbackInfo` its
    /// outcome goes to (instead of a dead letter of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reports_dead_letter: Option<String>,
}

/// The version of [`MessageSpec`]'s stored form that this build writes. Version 1 is the form written
/// before specs were tagged; each later version says, in [`MessageSpec::decode`], how it differs.
pub const SPEC_VERSION: u32 = 2;

/// A stored spec could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SpecDecodeError {
    /// Written by a newer build, in a form this build does not know.
    #[error("the message spec is of version {0}, newer than this build reads ({SPEC_VERSION})")]
    Newer(u32),
    /// Not a spec of any version.
    #[error("the message spec is malformed: {0}")]
    Malformed(#[from] serde_json::Error),
}

impl MessageSpec {
    /// The stored form: the spec's JSON, tagged with its version first (`{"v":2,"kind":...}`), so a
    /// reader learns the version from the first bytes without parsing the rest twice.
    ///
    /// # Errors
    /// The spec cannot be written as JSON (a header that is not text, say).
    pub fn encode(&self) -> Result<String, serde_json::Error> {
        let json = serde_json::to_string(self)?;
        let fields = json.strip_prefix('{').unwrap_or(&json);
        let separator = if fields.starts_with('}') { "" } else { "," };
        Ok(format!("{{\"v\":{SPEC_VERSION}{separator}{fields}"))
    }

    /// Reads a stored spec of any version this build knows. Version 1 (no tag) and version 2 have the
    /// same fields; version 2 only adds the tag.
    ///
    /// # Errors
    /// A spec of a newer version, or malformed text.
    pub fn decode(text: &str) -> Result<MessageSpec, SpecDecodeError> {
        let version = match text.strip_prefix("{\"v\":") {
            None => 1,
            Some(rest) => {
                let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
                rest[..digits].parse::<u32>().map_err(|_| {
                    SpecDecodeError::Malformed(serde::de::Error::custom("a version that is not a number"))
                })?
            }
        };
        if version > SPEC_VERSION {
            return Err(SpecDecodeError::Newer(version));
        }
        // Every version so far reads with today's fields; the tag is an unknown field, and ignored.
        Ok(serde_json::from_str(text)?)
    }
}

/// Fields shown as `REDACTED:<sha256 hex of the value>` when a message is read back through the API.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redact {
    /// The body.
    #[serde(default)]
    pub body: bool,
    /// Every forwarded header.
    #[serde(default)]
    pub all_headers: bool,
    /// These headers (lowercase names).
    #[serde(default)]
    pub headers: Vec<String>,
}

impl Redact {
    /// Parses `Svc-Redact-Fields`: a comma list of `body`, `header` / `headers` (all), and
    /// `header[Name]` / `headers[Name]`.
    ///
    /// # Errors
    /// An entry that is none of those.
    pub fn parse(text: &str) -> Result<Redact, String> {
        let mut redact = Redact::default();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let lower = entry.to_ascii_lowercase();
            if lower == "body" {
                redact.body = true;
            } else if lower == "header" || lower == "headers" {
                redact.all_headers = true;
            } else if let Some(name) = lower
                .strip_prefix("headers[")
                .or_else(|| lower.strip_prefix("header["))
                .and_then(|rest| rest.strip_suffix(']'))
                .filter(|name| !name.trim().is_empty())
            {
                redact.headers.push(name.trim().to_owned());
            } else {
                return Err(format!(
                    "`{entry}` is not a redactable field; expected body, header or header[Name]"
                ));
            }
        }
        Ok(redact)
    }

    /// Whether nothing is redacted.
    pub fn is_nothing(&self) -> bool {
        !self.body && !self.all_headers && self.headers.is_empty()
    }

    /// Whether the header `name` is shown redacted.
    pub fn covers_header(&self, name: &str) -> bool {
        self.all_headers || self.headers.iter().any(|h| h.eq_ignore_ascii_case(name))
    }

    /// `REDACTED:<sha256 hex>` of `value`.
    pub fn mask(value: &[u8]) -> String {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(value);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("REDACTED:{hex}")
    }
}

/// A message's place in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MessageState {
    /// Accepted, waiting for its first attempt.
    #[serde(rename = "CREATED")]
    Created,
    /// An attempt is under way.
    #[serde(rename = "ACTIVE")]
    Active,
    /// Waiting for a retry.
    #[serde(rename = "RETRY")]
    Retry,
    /// An attempt failed.
    #[serde(rename = "ERROR")]
    Error,
    /// Delivered (a 2xx).
    #[serde(rename = "DELIVERED")]
    Delivered,
    /// Retries exhausted; moved to the dead letter queue.
    #[serde(rename = "FAILED")]
    Failed,
    /// Cancellation was asked for.
    #[serde(rename = "CANCEL_REQUESTED")]
    CancelRequested,
    /// Cancelled.
    #[serde(rename = "CANCELED", alias = "CANCELLED")]
    Canceled,
}

impl MessageState {
    /// The SDKs' spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            MessageState::Created => "CREATED",
            MessageState::Active => "ACTIVE",
            MessageState::Retry => "RETRY",
            MessageState::Error => "ERROR",
            MessageState::Delivered => "DELIVERED",
            MessageState::Failed => "FAILED",
            MessageState::CancelRequested => "CANCEL_REQUESTED",
            MessageState::Canceled => "CANCELED",
        }
    }

    /// Parses a state, accepting the docs' `CANCELLED` too.
    pub fn parse(text: &str) -> Option<MessageState> {
        Some(match text.to_ascii_uppercase().as_str() {
            "CREATED" => MessageState::Created,
            "ACTIVE" => MessageState::Active,
            "RETRY" => MessageState::Retry,
            "ERROR" => MessageState::Error,
            "DELIVERED" => MessageState::Delivered,
            "FAILED" => MessageState::Failed,
            "CANCEL_REQUESTED" => MessageState::CancelRequested,
            "CANCELED" | "CANCELLED" => MessageState::Canceled,
            _ => return None,
        })
    }
}

/// A message waiting for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Identifier.
    pub id: MessageId,
    /// Owner.
    pub account_id: AccountId,
    /// What to deliver and how.
    pub spec: MessageSpec,
    /// The body, byte for byte.
    pub body: Vec<u8>,
    /// Retries made so far.
    pub retried: u32,
    /// When the next attempt may start.
    pub not_before: Timestamp,
    /// When it was accepted.
    pub created_at: Timestamp,
}

/// A message to store, with its deduplication key if any.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// The message.
    pub message: Message,
    /// Deduplication key and when it stops counting.
    pub dedup: Option<(String, Timestamp)>,
    /// Stored already leased to this node until then, instead of waiting to be claimed: the publisher
    /// hands the message straight to the running delivery worker, which logs its ACTIVE event with the
    /// attempt's outcome. A crash leaves the lease to expire or be released like a claim's.
    pub leased_until: Option<Timestamp>,
    /// Handed to the delivery worker before it is stored (see [`crate::early`]): the store asks it, as
    /// it writes the message, whether the delivery already finished.
    pub early: Option<std::sync::Arc<crate::early::Early>>,
}

/// The result of storing one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueued {
    /// The stored message's id, or the earlier duplicate's.
    pub message_id: MessageId,
    /// Whether an earlier message with the same key was found instead.
    pub deduplicated: bool,
}

/// A message whose retries ran out, kept for inspection and retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Identifier (`<ms>-<n>`).
    pub dlq_id: String,
    /// The message as it was at its last attempt.
    pub message: Message,
    /// The last response's status, if a response came.
    pub response_status: Option<u16>,
    /// The last response's headers.
    pub response_headers: Vec<(String, String)>,
    /// The last response's body.
    pub response_body: Vec<u8>,
    /// When it was moved here.
    pub failed_at: Timestamp,
    /// How its failure callback went (workflow runs' dead letters with a failure function).
    pub failure_callback: Option<FailureCallbackInfo>,
}

/// Where a dead letter's failure callback stands (`failureCallbackInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FailureCallbackState {
    /// Being delivered, or waiting to be.
    #[serde(rename = "CALLBACK_INPROGRESS")]
    InProgress,
    /// Delivered.
    #[serde(rename = "CALLBACK_SUCCESS")]
    Success,
    /// Its retries ran out.
    #[serde(rename = "CALLBACK_FAIL")]
    Fail,
    /// Cancelled.
    #[serde(rename = "CALLBACK_CANCELED")]
    Canceled,
}

impl FailureCallbackState {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailureCallbackState::InProgress => "CALLBACK_INPROGRESS",
            FailureCallbackState::Success => "CALLBACK_SUCCESS",
            FailureCallbackState::Fail => "CALLBACK_FAIL",
            FailureCallbackState::Canceled => "CALLBACK_CANCELED",
        }
    }
}

/// A dead letter's failure callback: its state and, once it has one, its last response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureCallbackInfo {
    /// Where it stands.
    pub state: FailureCallbackState,
    /// The last response's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_status: Option<u16>,
    /// The last response's body, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_body: Option<String>,
    /// The last response's headers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub response_headers: Vec<(String, String)>,
    /// While in progress: the callback's message, which cancelling it cancels (absent in dead letters
    /// written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageId>,
}

impl FailureCallbackInfo {
    /// A callback cancelled while it was in progress (it has no response).
    pub fn cancelled() -> FailureCallbackInfo {
        FailureCallbackInfo {
            state: FailureCallbackState::Canceled,
            response_status: None,
            response_body: None,
            response_headers: Vec::new(),
            message_id: None,
        }
    }
}

/// One line of a message's history.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventDetail {
    /// Why an attempt failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the next attempt is due (RETRY).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_delivery_time: Option<i64>,
    /// The response's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<u16>,
    /// The response's body (text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_body: Option<String>,
}

/// A recorded state change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Position in the log (increasing).
    pub sequence: i64,
    /// When it happened.
    pub time: Timestamp,
    /// Which message.
    pub message_id: MessageId,
    /// The new state.
    pub state: MessageState,
    /// The message (as it was then).
    pub spec: MessageSpec,
    /// State-specific details.
    pub detail: EventDetail,
}

/// An event to record.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// When.
    pub time: Timestamp,
    /// The new state.
    pub state: MessageState,
    /// Details.
    pub detail: EventDetail,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_specs_carry_their_version_and_older_untagged_ones_still_read() {
        let spec: MessageSpec = serde_json::from_str(
            r#"{"kind":"publish","url":"https://example.com","method":"PUT","headers":[["A","1"]],
                "max_retries":2,"timeout_ms":1000}"#,
        )
        .unwrap();
        let stored = spec.encode().unwrap();
        assert!(stored.starts_with(r#"{"v":2,"kind":"publish""#), "{stored}");
        assert_eq!(MessageSpec::decode(&stored).unwrap(), spec);
        let untagged = serde_json::to_string(&spec).unwrap();
        assert_eq!(
            MessageSpec::decode(&untagged).unwrap(),
            spec,
            "version 1 rows read"
        );
        let newer = stored.replacen("\"v\":2", "\"v\":3", 1);
        assert!(matches!(
            MessageSpec::decode(&newer),
            Err(SpecDecodeError::Newer(3))
        ));
        assert!(matches!(
            MessageSpec::decode(r#"{"v":x}"#),
            Err(SpecDecodeError::Malformed(_))
        ));
    }

    #[test]
    fn the_cancelled_state_is_spelled_as_the_sdks_expect_and_both_spellings_parse() {
        assert_eq!(MessageState::Canceled.as_str(), "CANCELED");
        assert_eq!(MessageState::parse("cancelled"), Some(MessageState::Canceled));
        assert_eq!(MessageState::parse("CANCELED"), Some(MessageState::Canceled));
        assert_eq!(MessageState::parse("LOST"), None);
    }

    #[test]
    fn message_ids_are_unique_and_sort_by_creation_time() {
        let now = Timestamp::from_millis(1_790_000_000_000);
        // 200 consecutive milliseconds carry the last base-62 digit into the next three times.
        let ids: Vec<MessageId> = (0..200)
            .map(|ms| MessageId::generate(now.saturating_add(std::time::Duration::from_millis(ms))))
            .collect();
        for pair in ids.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} sorts before {}", pair[0], pair[1]);
        }
        let same_millisecond = MessageId::generate(now);
        assert_ne!(ids[0], same_millisecond);
        for id in &ids {
            assert_eq!(id.0.len(), 32, "{id}");
            assert!(id.0.starts_with("msg_"));
            assert!(
                id.0[4..]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            );
        }
    }

    #[test]
    fn a_stored_method_and_retry_delay_read_back_parsed_and_a_bad_one_is_an_error() {
        let row = r#"{"kind":"publish","url":"https://example.com","method":"PUT","headers":[],
            "max_retries":3,"retry_delay":"pow(2, retried) * 1000","timeout_ms":1000}"#;
        let spec: MessageSpec = serde_json::from_str(row).expect("a row of the text layout reads");
        assert_eq!(spec.method, HttpMethod::Put);
        let delay = spec.retry_delay.as_ref().expect("parsed");
        assert_eq!((delay.millis(0), delay.millis(3)), (1_000, 8_000));
        let written = serde_json::to_value(&spec).unwrap();
        assert_eq!(
            (&written["method"], &written["retry_delay"]),
            (
                &serde_json::json!("PUT"),
                &serde_json::json!("pow(2, retried) * 1000")
            )
        );
        let corrupt = row.replace("pow(2, retried) * 1000", "pow(2,");
        assert!(serde_json::from_str::<MessageSpec>(&corrupt).is_err());
        assert!(serde_json::from_str::<MessageSpec>(&row.replace("PUT", "TRACE")).is_err());
    }

    #[test]
    fn a_stored_spec_leaves_empty_fields_out_and_records_with_them_spelled_out_still_read() {
        let spelled_out = r#"{"kind":"publish","url":"http://127.0.0.1:9/bench","method":"POST",
            "headers":[["Content-Type","text/plain"]],"max_retries":3,"retry_delay":null,"timeout_ms":60000,
            "callback":null,"failure_callback":null,"topic_name":null,"endpoint_name":null,"schedule_id":null,
            "queue_name":null,"caller_ip":"127.0.0.1","labels":[],"flow_control":null,"source_message_id":null,
            "workflow_history":false}"#;
        let spec: MessageSpec = serde_json::from_str(spelled_out).expect("the earlier layout reads");
        assert_eq!(spec.caller_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(spec.callback, None);

        let compact = serde_json::to_string(&spec).expect("serializes");
        assert_eq!(
            compact,
            r#"{"kind":"publish","url":"http://127.0.0.1:9/bench","method":"POST","headers":[["Content-Type","text/plain"]],"max_retries":3,"timeout_ms":60000,"caller_ip":"127.0.0.1"}"#
        );
        let again: MessageSpec = serde_json::from_str(&compact).expect("the compact layout reads");
        assert_eq!(again, spec);

        let full = MessageSpec {
            labels: vec!["a".into()],
            workflow_history: true,
            queue_name: Some("q".into()),
            ..spec
        };
        let round_trip: MessageSpec =
            serde_json::from_str(&serde_json::to_string(&full).expect("serializes")).expect("reads");
        assert_eq!(round_trip, full);
    }
}
