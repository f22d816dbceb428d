//! Publish configuration: the `Svc-*` headers (and their `Upstash-*` aliases and lowercase query-parameter
//! forms) parsed into typed options, with errors that name the header.

use std::time::Duration;

use quiver_core::Timestamp;

use crate::duration::parse_duration;
use crate::error::QueueError;
use crate::headers::{canonical, config_key, is_private_header};
use crate::message::{CallbackConfig, FlowControl};
use crate::method::HttpMethod;
use crate::retry_delay::RetryDelay;

/// Everything a publish request configures, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PublishOptions {
    /// HTTP method for the destination (default POST).
    pub method: Option<HttpMethod>,
    /// Relative delay.
    pub delay: Option<Duration>,
    /// Absolute earliest delivery time (wins over `delay`).
    pub not_before: Option<Timestamp>,
    /// Retries after the first attempt.
    pub retries: Option<u32>,
    /// Retry delay expression (validated).
    pub retry_delay: Option<RetryDelay>,
    /// Delivery timeout.
    pub timeout: Option<Duration>,
    /// Callback after each attempt.
    pub callback: Option<CallbackConfig>,
    /// Callback when retries are exhausted.
    pub failure_callback: Option<CallbackConfig>,
    /// Headers delivered to the destination, canonical case, `Content-Type` included.
    pub forward_headers: Vec<(String, String)>,
    /// Explicit deduplication id.
    pub deduplication_id: Option<String>,
    /// Derive the deduplication id from the content.
    pub content_based_deduplication: bool,
    /// Labels.
    pub labels: Vec<String>,
    /// Flow control.
    pub flow_control: Option<FlowControl>,
    /// Queue to enqueue into (schedules).
    pub queue_name: Option<String>,
    /// Workflow run the message belongs to (`Svc-Workflow-RunId`).
    pub workflow_run_id: Option<String>,
    /// Whether it starts the run (`Svc-Workflow-Init: true`) or carries a step (`false`).
    pub workflow_init: Option<bool>,
    /// The workflow's URL (`Svc-Workflow-Url`).
    pub workflow_url: Option<String>,
    /// Whether the run is started by another run's `context.invoke` (`Svc-Workflow-Invoke: true`).
    pub workflow_invoke: bool,
    /// What the API shows redacted (`Svc-Redact-Fields`).
    pub redact: crate::message::Redact,
}

fn invalid(key: &str, message: impl std::fmt::Display) -> QueueError {
    QueueError::InvalidHeader {
        header: format!("Svc-{}", canonical(key)),
        message: message.to_string(),
    }
}

fn parse_retries(key: &str, value: &str) -> Result<u32, QueueError> {
    value
        .trim()
        .parse()
        .map_err(|_| invalid(key, format!("`{value}` is not a whole number of retries")))
}

fn parse_method(key: &str, value: &str) -> Result<HttpMethod, QueueError> {
    value.parse().map_err(|e| invalid(key, e))
}

fn parse_url(key: &str, value: &str) -> Result<String, QueueError> {
    let parsed = url::Url::parse(value.trim())
        .map_err(|e| invalid(key, format!("`{value}` is not a valid URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(invalid(key, format!("`{value}` must be an http or https URL")));
    }
    Ok(value.trim().to_owned())
}

fn parse_retry_delay(key: &str, value: &str) -> Result<RetryDelay, QueueError> {
    RetryDelay::parse(value).map_err(|e| invalid(key, e))
}

fn parse_bool(value: &str) -> bool {
    value.trim().eq_ignore_ascii_case("true")
}

fn parse_flow_control_value(key: &str, value: &str) -> Result<FlowControl, QueueError> {
    let mut flow = FlowControl {
        key: String::new(),
        parallelism: None,
        rate: None,
        period: None,
    };
    for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, amount)) = part.split_once('=') else {
            return Err(invalid(key, format!("`{part}` is not name=value")));
        };
        let (name, amount) = (name.trim().to_ascii_lowercase(), amount.trim());
        let number = || {
            amount
                .parse::<u32>()
                .map_err(|_| invalid(key, format!("{name} must be a whole number, not `{amount}`")))
        };
        match name.as_str() {
            "parallelism" => flow.parallelism = Some(number()?),
            "rate" => flow.rate = Some(number()?),
            "period" => {
                let period = parse_duration(amount).map_err(|e| invalid(key, format!("period {e}")))?;
                if period > Duration::from_secs(7 * 86_400) || period.is_zero() {
                    return Err(invalid(key, "period must be between 1s and one week"));
                }
                flow.period = Some(period.as_secs().max(1));
            }
            other => {
                return Err(invalid(
                    key,
                    format!("unknown setting `{other}`; use parallelism, rate, period"),
                ));
            }
        }
    }
    Ok(flow)
}

/// A callback's settings, read from keys under `prefix` (`callback-` or `failure-callback-`).
fn callback_config(
    url: String,
    prefix: &str,
    entries: &[(String, String)],
) -> Result<CallbackConfig, QueueError> {
    let mut config = CallbackConfig {
        url,
        method: HttpMethod::Post,
        timeout_ms: None,
        retries: None,
        retry_delay: None,
        delay_ms: None,
        headers: Vec::new(),
        workflow_run_id: None,
        workflow_url: None,
        flow_control: None,
        failure_callback: None,
        labels: Vec::new(),
    };
    let (mut flow_control_key, mut flow_control_value) = (None, None);
    for (key, value) in entries {
        let Some(setting) = key.strip_prefix(prefix) else {
            continue;
        };
        match setting {
            "flow-control-key" => flow_control_key = non_empty(value),
            "flow-control-value" => flow_control_value = Some(value.as_str()),
            "label" => config.labels = labels_of(value),
            "failure-callback" => {
                config.failure_callback = Some(Box::new(callback_config(
                    parse_url(key, value)?,
                    &format!("{prefix}failure-callback-"),
                    entries,
                )?));
            }
            "method" => config.method = parse_method(key, value)?,
            "timeout" => {
                config.timeout_ms = Some(millis(parse_duration(value).map_err(|e| invalid(key, e))?))
            }
            "retries" => config.retries = Some(parse_retries(key, value)?),
            "retry-delay" => config.retry_delay = Some(parse_retry_delay(key, value)?),
            "delay" => config.delay_ms = Some(millis(parse_duration(value).map_err(|e| invalid(key, e))?)),
            "workflow-runid" => config.workflow_run_id = non_empty(value),
            "workflow-url" => config.workflow_url = non_empty(value),
            other => {
                if let Some(name) = other.strip_prefix("forward-") {
                    config.headers.push((canonical(name), value.clone()));
                } else if !other.starts_with("failure-callback-")
                    && !other.starts_with("workflow-")
                    && other != "feature-set"
                {
                    // The Python SDK sends `callback_headers` as `Upstash-Callback-<Name>`.
                    config.headers.push((canonical(other), value.clone()));
                }
            }
        }
    }
    config.flow_control = flow_control_of(
        flow_control_key,
        flow_control_value,
        &format!("{prefix}flow-control-value"),
    )?;
    Ok(config)
}

/// Labels from a comma-separated header value.
fn labels_of(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Flow control from a key and an optional `parallelism=..,rate=..,period=..` value (read from
/// `value_key`); a value without a key is an error.
fn flow_control_of(
    key: Option<String>,
    value: Option<&str>,
    value_key: &str,
) -> Result<Option<FlowControl>, QueueError> {
    match (key, value) {
        (Some(key), Some(value)) => {
            let mut flow = parse_flow_control_value(value_key, value)?;
            flow.key = key;
            Ok(Some(flow))
        }
        (Some(key), None) => Ok(Some(FlowControl {
            key,
            parallelism: None,
            rate: None,
            period: None,
        })),
        (None, Some(_)) => Err(invalid(
            &value_key.replace("-value", "-key"),
            "is required with a flow-control value",
        )),
        (None, None) => Ok(None),
    }
}

/// `value` trimmed, or `None` when nothing is left.
fn non_empty(value: &str) -> Option<String> {
    Some(value.trim().to_owned()).filter(|v| !v.is_empty())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Parses publish options from the request's headers (name, value; repeated names already joined with
/// `", "`) and its configuration query parameters (which win over headers).
///
/// # Errors
/// [`QueueError::InvalidHeader`] naming the first malformed setting.
pub fn parse_publish_options(
    headers: &[(String, String)],
    query: &[(String, String)],
) -> Result<PublishOptions, QueueError> {
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut plain_headers: Vec<(String, String)> = Vec::new();
    let mut content_type = None;
    for (name, value) in headers {
        match config_key(name) {
            Some(key) => entries.push((key, value.clone())),
            None if name.eq_ignore_ascii_case("content-type") => content_type = Some(value.clone()),
            None => plain_headers.push((name.to_ascii_lowercase(), value.clone())),
        }
    }
    for (name, value) in query {
        if let Some(key) = config_key(name) {
            entries.retain(|(existing, _)| *existing != key);
            entries.push((key, value.clone()));
        }
    }

    let mut options = PublishOptions::default();
    let mut header_forward = false;
    let mut flow_control_key = None;
    let mut flow_control_value = None;
    for (key, value) in &entries {
        match key.as_str() {
            "method" => options.method = Some(parse_method(key, value)?),
            "delay" => options.delay = Some(parse_duration(value).map_err(|e| invalid(key, e))?),
            "not-before" => {
                let seconds: i64 = value
                    .trim()
                    .parse()
                    .map_err(|_| invalid(key, format!("`{value}` is not unix seconds")))?;
                options.not_before = Some(Timestamp::from_millis(seconds.saturating_mul(1000)));
            }
            "retries" => options.retries = Some(parse_retries(key, value)?),
            "retry-delay" => options.retry_delay = Some(parse_retry_delay(key, value)?),
            "timeout" => options.timeout = Some(parse_duration(value).map_err(|e| invalid(key, e))?),
            "callback" => {
                options.callback = Some(callback_config(parse_url(key, value)?, "callback-", &entries)?)
            }
            "failure-callback" => {
                options.failure_callback = Some(callback_config(
                    parse_url(key, value)?,
                    "failure-callback-",
                    &entries,
                )?);
            }
            "header-forward" => header_forward = parse_bool(value),
            "deduplication-id" => options.deduplication_id = Some(value.clone()).filter(|v| !v.is_empty()),
            "content-based-deduplication" => options.content_based_deduplication = parse_bool(value),
            "label" => options.labels = labels_of(value),
            "flow-control-key" => flow_control_key = non_empty(value),
            "flow-control-value" => flow_control_value = Some(value.clone()),
            "queue-name" => options.queue_name = non_empty(value),
            "workflow-runid" => options.workflow_run_id = non_empty(value),
            "workflow-init" => options.workflow_init = Some(parse_bool(value)),
            "redact-fields" => {
                options.redact = crate::message::Redact::parse(value).map_err(|e| invalid(key, e))?;
            }
            "workflow-url" => options.workflow_url = non_empty(value),
            "workflow-invoke" => options.workflow_invoke = parse_bool(value),
            other => {
                if let Some(name) = other.strip_prefix("forward-") {
                    options.forward_headers.push((canonical(name), value.clone()));
                }
            }
        }
    }
    options.flow_control = flow_control_of(
        flow_control_key,
        flow_control_value.as_deref(),
        "flow-control-value",
    )?;
    if header_forward {
        for (name, value) in plain_headers {
            if !is_private_header(&name)
                && !options
                    .forward_headers
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case(&name))
            {
                options.forward_headers.push((canonical(&name), value));
            }
        }
    }
    if let Some(content_type) = content_type {
        options
            .forward_headers
            .push(("Content-Type".into(), content_type));
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn both_prefixes_configure_the_message_and_forward_headers_lose_their_prefix() {
        let headers = pairs(&[
            ("Svc-Retries", "5"),
            ("Upstash-Delay", "1m30s"),
            ("Svc-Method", "put"),
            ("Svc-Forward-test-header", "x"),
            ("Content-Type", "application/json"),
            ("X-Not-Forwarded", "y"),
            ("Upstash-Label", "a, b"),
        ]);
        let options = parse_publish_options(&headers, &[]).unwrap();
        assert_eq!(options.retries, Some(5));
        assert_eq!(options.delay, Some(Duration::from_secs(90)));
        assert_eq!(options.method, Some(HttpMethod::Put));
        assert_eq!(options.labels, ["a", "b"]);
        assert_eq!(
            options.forward_headers,
            pairs(&[("Test-Header", "x"), ("Content-Type", "application/json")])
        );
    }

    #[test]
    fn query_parameters_configure_like_headers_and_win() {
        let headers = pairs(&[("Svc-Retries", "5")]);
        let query = pairs(&[
            ("svc-retries", "1"),
            ("upstash-header-forward", "true"),
            ("other", "kept"),
        ]);
        let options = parse_publish_options(
            &[headers, pairs(&[("X-Custom", "v"), ("Authorization", "secret")])].concat(),
            &query,
        )
        .unwrap();
        assert_eq!(options.retries, Some(1));
        assert_eq!(
            options.forward_headers,
            pairs(&[("X-Custom", "v")]),
            "auth is never forwarded"
        );
    }

    #[test]
    fn callbacks_carry_their_own_settings_and_forwarded_headers() {
        let headers = pairs(&[
            ("Svc-Callback", "https://example.com?foo=bar"),
            ("Svc-Callback-Retries", "2"),
            ("Svc-Callback-Method", "PUT"),
            ("Svc-Callback-Forward-X-Token", "t"),
            ("Svc-Failure-Callback", "http://127.0.0.1:9/failed"),
            ("Svc-Failure-Callback-Timeout", "10s"),
        ]);
        let options = parse_publish_options(&headers, &[]).unwrap();
        let callback = options.callback.unwrap();
        assert_eq!(callback.url, "https://example.com?foo=bar");
        assert_eq!((callback.retries, callback.method), (Some(2), HttpMethod::Put));
        assert_eq!(callback.headers, pairs(&[("X-Token", "t")]));
        let failure = options.failure_callback.unwrap();
        assert_eq!((failure.timeout_ms, failure.retries), (Some(10_000), None));
    }

    #[test]
    fn callback_flow_control_nested_failure_callbacks_and_plain_callback_headers_are_kept() {
        let headers = pairs(&[
            ("Upstash-Callback", "https://example.com/workflow"),
            ("Upstash-Callback-Flow-Control-Key", "calls"),
            ("Upstash-Callback-Flow-Control-Value", "parallelism=2"),
            ("Upstash-Callback-Workflow-RunId", "wfr_1"),
            ("Upstash-Callback-Workflow-Init", "false"),
            ("Upstash-Callback-Failure-Callback", "https://example.com/failed"),
            ("Upstash-Callback-Failure-Callback-Retries", "1"),
            ("Upstash-Callback-Failure-Callback-Forward-X-Why", "call"),
            ("Upstash-Callback-X-Tenant", "acme"),
            ("Upstash-Failure-Callback", "https://example.com/failure"),
            ("Upstash-Failure-Callback-Flow-Control-Key", "failures"),
        ]);
        let options = parse_publish_options(&headers, &[]).unwrap();
        let callback = options.callback.unwrap();
        let flow = callback.flow_control.unwrap();
        assert_eq!((flow.key.as_str(), flow.parallelism), ("calls", Some(2)));
        assert_eq!(callback.workflow_run_id.as_deref(), Some("wfr_1"));
        assert_eq!(callback.headers, pairs(&[("X-Tenant", "acme")]));
        let nested = callback.failure_callback.unwrap();
        assert_eq!(nested.url, "https://example.com/failed");
        assert_eq!(nested.retries, Some(1));
        assert_eq!(nested.headers, pairs(&[("X-Why", "call")]));
        let failure = options.failure_callback.unwrap();
        assert_eq!(failure.flow_control.unwrap().key, "failures");
    }

    #[test]
    fn malformed_settings_are_refused_naming_the_header() {
        for (name, value, header) in [
            ("Svc-Retries", "many", "Svc-Retries"),
            ("Svc-Delay", "soon", "Svc-Delay"),
            ("Svc-Callback", "not a url", "Svc-Callback"),
            ("Svc-Callback", "ftp://example.com", "Svc-Callback"),
            ("Svc-Method", "FETCH", "Svc-Method"),
            ("Svc-Retry-Delay", "1000 *", "Svc-Retry-Delay"),
            ("Svc-Not-Before", "tomorrow", "Svc-Not-Before"),
            ("Svc-Timeout", "1x", "Svc-Timeout"),
        ] {
            let error = parse_publish_options(&pairs(&[(name, value)]), &[]).unwrap_err();
            assert!(
                error.to_string().starts_with(header),
                "{name}: {value} -> {error}"
            );
        }
    }

    #[test]
    fn flow_control_values_parse_and_need_a_key() {
        let headers = pairs(&[
            ("Svc-Flow-Control-Key", "k"),
            ("Svc-Flow-Control-Value", "parallelism=2, rate=10, period=1d"),
        ]);
        let flow = parse_publish_options(&headers, &[])
            .unwrap()
            .flow_control
            .unwrap();
        assert_eq!(
            (flow.key.as_str(), flow.parallelism, flow.rate, flow.period),
            ("k", Some(2), Some(10), Some(86_400))
        );
        assert!(parse_publish_options(&pairs(&[("Svc-Flow-Control-Value", "rate=1")]), &[]).is_err());
        let bad = pairs(&[
            ("Svc-Flow-Control-Key", "k"),
            ("Svc-Flow-Control-Value", "speed=9"),
        ]);
        assert!(parse_publish_options(&bad, &[]).is_err());
    }
}
