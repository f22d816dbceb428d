//! The parameters of the queue's list and bulk routes. The SDKs send filters as query keys (the current
//! JavaScript SDKs, repeating a key for several values) or as fields of a JSON body (Python, and older
//! JavaScript SDKs: a text, a number or an array of them). A route takes the keys it knows and then calls
//! [`Params::finish`], which answers 400 naming any key left over: a misspelt or unsupported filter must
//! never widen a bulk operation to everything.

use axum::http::Uri;
use quiver_core::Timestamp;
use quiver_queue::message::MessageState;
use quiver_queue::store::{CancelFilter, Filter};
use quiver_queue::workflows::RunSelection;
use serde_json::Value;

use crate::auth::QUEUE_TOKEN_KEYS;
use crate::error::ApiError;

/// The keys and values of one request, taken one key at a time.
#[derive(Debug, Default)]
pub(crate) struct Params {
    /// Each key with its values in the order given (query first, then body).
    entries: Vec<(String, Vec<String>)>,
}

impl Params {
    /// The query pairs of `uri` and the fields of `body` (`null` for no body).
    ///
    /// # Errors
    /// A body that is not a JSON object, or a field that is not a text, number, boolean or an array of them.
    pub(crate) fn new(uri: &Uri, body: &Value) -> Result<Params, ApiError> {
        let mut params = Params::default();
        if let Some(query) = uri.query() {
            for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
                if !QUEUE_TOKEN_KEYS.contains(&key.as_ref()) {
                    params.push(&key, value.into_owned());
                }
            }
        }
        match body {
            Value::Null => {}
            Value::Object(fields) => {
                for (key, value) in fields {
                    match value {
                        Value::Null => {}
                        Value::Array(items) => {
                            for item in items {
                                let text = scalar_text(item).ok_or_else(|| {
                                    ApiError::bad_request(format!(
                                        "{key}: must be a text, a number or an array of them"
                                    ))
                                })?;
                                params.push(key, text);
                            }
                            // An empty array still names the key, so it is not mistaken for "no filter".
                            if items.is_empty() {
                                params.push_key(key);
                            }
                        }
                        other @ (Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Object(_)) => {
                            let text = scalar_text(other).ok_or_else(|| {
                                ApiError::bad_request(format!(
                                    "{key}: must be a text, a number or an array of them"
                                ))
                            })?;
                            params.push(key, text);
                        }
                    }
                }
            }
            Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_) => {
                return Err(ApiError::bad_request(
                    "request body must be a JSON object of filters",
                ));
            }
        }
        Ok(params)
    }

    fn push_key(&mut self, key: &str) -> &mut Vec<String> {
        let at = match self.entries.iter().position(|(k, _)| k == key) {
            Some(at) => at,
            None => {
                self.entries.push((key.to_owned(), Vec::new()));
                self.entries.len() - 1
            }
        };
        &mut self.entries[at].1
    }

    fn push(&mut self, key: &str, value: String) {
        self.push_key(key).push(value);
    }

    /// Whether `key` was given, even with no value (an empty array).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| k == key)
    }

    fn take(&mut self, key: &str) -> Option<Vec<String>> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// Every value of `key`, a comma-joined value counting as several; empty values dropped.
    pub(crate) fn list(&mut self, key: &str) -> Vec<String> {
        self.take(key)
            .unwrap_or_default()
            .iter()
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Every value of `key` as given (URLs and paths may hold commas); empty values dropped.
    pub(crate) fn whole_list(&mut self, key: &str) -> Vec<String> {
        self.take(key)
            .unwrap_or_default()
            .into_iter()
            .filter(|value| !value.is_empty())
            .collect()
    }

    /// The one value of `key`, if given and not empty.
    ///
    /// # Errors
    /// Two different values.
    pub(crate) fn one(&mut self, key: &str) -> Result<Option<String>, ApiError> {
        let mut values = self.whole_list(key);
        values.dedup();
        match values.len() {
            0 | 1 => Ok(values.pop()),
            _ => Err(ApiError::bad_request(format!("{key}: takes one value"))),
        }
    }

    /// The cursor of a page of the event log or the DLQ: a position these stores gave out, which the
    /// client passes back as it was. Anything else is refused rather than read from the newest, which
    /// would page the same items again.
    ///
    /// # Errors
    /// A value that is not a whole number.
    pub(crate) fn position_cursor(&mut self) -> Result<Option<String>, ApiError> {
        let cursor = self.one("cursor")?;
        match &cursor {
            Some(value) if value.parse::<u64>().is_err() => Err(ApiError::bad_request(format!(
                "cursor: `{value}` is not a cursor this route returned"
            ))),
            _ => Ok(cursor),
        }
    }

    /// A time in unix milliseconds.
    ///
    /// # Errors
    /// A value that is not a whole number.
    pub(crate) fn time(&mut self, key: &str) -> Result<Option<Timestamp>, ApiError> {
        self.one(key)?
            .map(|value| {
                value
                    .parse::<i64>()
                    .map(Timestamp::from_millis)
                    .map_err(|_| ApiError::bad_request(format!("{key}: must be unix milliseconds")))
            })
            .transpose()
    }

    /// A positive count, if given.
    ///
    /// # Errors
    /// A value that is not a positive whole number.
    pub(crate) fn count(&mut self) -> Result<Option<usize>, ApiError> {
        self.one("count")?
            .map(|value| match value.parse::<usize>() {
                Ok(count) if count > 0 => Ok(count),
                Ok(_) | Err(_) => Err(ApiError::bad_request("count: must be a positive whole number")),
            })
            .transpose()
    }

    /// A flag: `true` or `false`; absent is `false`.
    ///
    /// # Errors
    /// Any other value.
    pub(crate) fn flag(&mut self, key: &str) -> Result<bool, ApiError> {
        match self.one(key)?.as_deref() {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "{key}: must be true or false, not `{other}`"
            ))),
        }
    }

    /// Drops `key`: a field the SDKs still send that no longer filters anything (`api`).
    pub(crate) fn ignore(&mut self, key: &str) {
        self.take(key);
    }

    /// Succeeds when every key was taken.
    ///
    /// # Errors
    /// 400 naming the keys left over.
    pub(crate) fn finish(self) -> Result<(), ApiError> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = self.entries.iter().map(|(key, _)| format!("`{key}`")).collect();
        Err(ApiError::bad_request(format!(
            "{}: not a parameter of this route",
            names.join(", ")
        )))
    }

    /// The filters shared by the event log and the DLQ (`dead_letters` leaves out what only the log has:
    /// states and destination hosts and paths; the DLQ has its ids, response statuses and workflow fields).
    ///
    /// # Errors
    /// Values that do not parse.
    pub(crate) fn message_filter(&mut self, dead_letters: bool) -> Result<Filter, ApiError> {
        let mut filter = Filter {
            message_ids: self.list("messageId"),
            urls: self.whole_list("url"),
            topic_names: self.list("topicName"),
            queue_names: self.list("queueName"),
            schedule_ids: self.list("scheduleId"),
            labels: self.list("label"),
            flow_control_keys: self.list("flowControlKey"),
            caller_ips: self.list("callerIp"),
            from: self.time("fromDate")?,
            to: self.time("toDate")?,
            ..Filter::default()
        };
        filter.message_ids.extend(self.list("messageIds"));
        filter.caller_ips.extend(self.list("callerIP"));
        filter.topic_names.extend(self.list("urlGroup"));
        self.ignore("api");
        if dead_letters {
            filter.dlq_ids = self.list("dlqIds");
            filter.response_statuses = self
                .list("responseStatus")
                .iter()
                .map(|status| {
                    status
                        .parse()
                        .map_err(|_| ApiError::bad_request("responseStatus: must be an HTTP status"))
                })
                .collect::<Result<_, _>>()?;
            filter.workflow_only = match self.one("source")?.as_deref() {
                None => false,
                Some(source) if source.eq_ignore_ascii_case("workflow") => true,
                Some(other) => {
                    return Err(ApiError::bad_request(format!(
                        "source: `{other}` is not a source; the one known is `workflow`"
                    )));
                }
            };
            filter.workflow_run_ids = self.list("workflowRunId");
            filter.workflow_urls = self.whole_list("workflowUrl");
            filter.workflow_created_at = self.time("workflowCreatedAt")?;
            filter.failure_callback_states = self
                .list("failureFunctionState")
                .iter()
                .map(|state| {
                    serde_json::from_value(Value::String(state.clone())).map_err(|_| {
                        ApiError::bad_request(format!(
                            "failureFunctionState: `{state}` is not one of CALLBACK_INPROGRESS, \
                             CALLBACK_SUCCESS, CALLBACK_FAIL, CALLBACK_CANCELED"
                        ))
                    })
                })
                .collect::<Result<_, _>>()?;
        } else {
            for state in self.list("state") {
                if state.eq_ignore_ascii_case("IN_PROGRESS") {
                    filter
                        .states
                        .extend([MessageState::Active, MessageState::Retry, MessageState::Error]);
                } else {
                    filter.states.push(MessageState::parse(&state).ok_or_else(|| {
                        ApiError::bad_request(format!("state: `{state}` is not a message state"))
                    })?);
                }
            }
            filter.hosts = self.list("host");
            filter.paths = self.whole_list("path");
        }
        Ok(filter)
    }

    /// The filters of workflow runs shared by the bulk cancel and the run listing: `host`, `path`,
    /// `label`, `flowControlKey`, `callerIp`, `fromDate`, `toDate`.
    ///
    /// # Errors
    /// Values that do not parse.
    pub(crate) fn run_selection(&mut self) -> Result<RunSelection, ApiError> {
        let mut selection = RunSelection {
            hosts: self.list("host"),
            paths: self.whole_list("path"),
            labels: self.list("label"),
            flow_control_keys: self.list("flowControlKey"),
            caller_ips: self.list("callerIp"),
            from: self.time("fromDate")?,
            to: self.time("toDate")?,
            ..RunSelection::default()
        };
        selection.caller_ips.extend(self.list("callerIP"));
        Ok(selection)
    }

    /// The filters of a bulk cancel of pending messages.
    ///
    /// # Errors
    /// Values that do not parse.
    pub(crate) fn cancel_filter(&mut self) -> Result<CancelFilter, ApiError> {
        let mut filter = CancelFilter {
            urls: self.whole_list("url"),
            hosts: self.list("host"),
            paths: self.whole_list("path"),
            topic_names: self.list("topicName"),
            queue_names: self.list("queueName"),
            labels: self.list("label"),
            flow_control_keys: self.list("flowControlKey"),
            schedule_ids: self.list("scheduleId"),
            caller_ips: self.list("callerIp"),
            from: self.time("fromDate")?,
            to: self.time("toDate")?,
        };
        filter.caller_ips.extend(self.list("callerIP"));
        filter.topic_names.extend(self.list("urlGroup"));
        self.ignore("api");
        Ok(filter)
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn params(uri: &str, body: Value) -> Params {
        Params::new(&uri.parse().unwrap(), &body).unwrap()
    }

    #[test]
    fn repeated_keys_comma_joined_values_and_body_arrays_are_all_alternatives() {
        let mut p = params(
            "/v2/events?label=a&label=b,c&svc_token=secret",
            json!({"label": ["d"], "fromDate": 5}),
        );
        assert_eq!(p.list("label"), ["a", "b", "c", "d"]);
        assert_eq!(p.time("fromDate").unwrap(), Some(Timestamp::from_millis(5)));
        p.finish().unwrap();
    }

    #[test]
    fn a_key_no_route_takes_is_named_in_the_error() {
        let mut p = params("/v2/messages?lable=x&url=https://a.example/b,c", Value::Null);
        assert_eq!(p.whole_list("url"), ["https://a.example/b,c"]);
        let error = p.finish().unwrap_err();
        assert_eq!(error.status(), 400);
        assert!(error.message().contains("`lable`"), "{}", error.message());
    }

    #[test]
    fn an_empty_body_array_still_names_its_key() {
        let p = params("/v2/workflows/runs", json!({"workflowRunIds": []}));
        assert!(p.has("workflowRunIds"));
    }

    #[test]
    fn a_body_that_is_not_an_object_is_refused() {
        let uri: Uri = "/v2/dlq".parse().unwrap();
        assert!(Params::new(&uri, &json!(["a"])).is_err());
    }
}
