//! What a queue request says beyond its body: [`PublishForm`], the one reading of a publish shared by
//! publish, enqueue, trigger and schedule creation; headers as pairs; query pairs.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequest, Request};
use axum::http::{HeaderMap, Uri};
use quiver_queue::PublishRequest;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;
use crate::extract::RawBody;

/// A publish as its request states it: the destination is the path after `/v2/<route>/` with the query
/// parameters that belong to it; the headers, the configuration query parameters (`Svc-*`, `Upstash-*`),
/// the raw body and the caller's address come along.
#[derive(Debug)]
pub(crate) struct PublishForm(pub(crate) PublishRequest);

impl<S: Send + Sync> FromRequest<S> for PublishForm {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let caller_ip = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(peer)| peer.ip().to_string());
        let (destination, query) = split_publish_uri(request.uri());
        let headers = header_pairs(request.headers());
        let RawBody(body) = RawBody::from_request(request, state).await?;
        Ok(PublishForm(PublishRequest {
            destination,
            headers,
            query,
            body: body.to_vec(),
            caller_ip,
            schedule_id: None,
        }))
    }
}

/// Request headers as (name, value) pairs, repeated names joined with `", "`.
pub(crate) fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in headers {
        let Ok(value) = value.to_str() else { continue };
        match pairs.iter_mut().find(|(existing, _)| existing == name.as_str()) {
            Some((_, joined)) => {
                joined.push_str(", ");
                joined.push_str(value);
            }
            None => pairs.push((name.as_str().to_owned(), value.to_owned())),
        }
    }
    pairs
}

fn is_config_query_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    lower.starts_with("svc-")
        || lower.starts_with("upstash-")
        || lower == "svc_token"
        || lower == "qstash_token"
}

/// Splits a publish URI into the destination (the path after `/v2/<route>/`, with the query parameters
/// that belong to it) and the configuration query parameters.
fn split_publish_uri(uri: &Uri) -> (String, Vec<(String, String)>) {
    let path = uri.path();
    let destination = path
        .strip_prefix("/v2/")
        .and_then(|rest| rest.split_once('/'))
        .map_or(path, |(_, destination)| destination)
        .to_owned();
    let Some(query) = uri.query() else {
        return (destination, Vec::new());
    };
    let mut kept = Vec::new();
    let mut config = Vec::new();
    for segment in query.split('&').filter(|s| !s.is_empty()) {
        let (key, value) = url::form_urlencoded::parse(segment.as_bytes())
            .next()
            .unwrap_or_default();
        if is_config_query_key(&key) {
            config.push((key.into_owned(), value.into_owned()));
        } else {
            kept.push(segment);
        }
    }
    let destination = if kept.is_empty() {
        destination
    } else {
        format!("{destination}?{}", kept.join("&"))
    };
    (destination, config)
}

/// Query pairs of a request.
pub(crate) fn query_pairs(uri: &Uri) -> Vec<(String, String)> {
    uri.query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn query_one<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(json: &str) -> Result<PublishRequest, ApiError> {
        let value: Value = serde_json::from_str(json).unwrap();
        crate::extract::typed_value::<BatchItem>(value)?.into_request("127.0.0.1")
    }

    #[test]
    fn a_batch_item_reads_what_the_sdks_send_and_refuses_the_rest_by_name() {
        let read = item(
            r#"{"destination": "https://example.com", "headers": {"A": "1", "B": ["x", "y"]},
                "body": {"k": 1}, "queue": "orders"}"#,
        )
        .unwrap();
        assert_eq!(
            read.headers,
            [
                ("A".to_owned(), "1".to_owned()),
                ("B".to_owned(), "x, y".to_owned()),
                ("Svc-Queue-Name".to_owned(), "orders".to_owned())
            ]
        );
        assert_eq!(
            read.body, br#"{"k":1}"#,
            "a JSON body that is not a string is its JSON text"
        );
        let python = item(r#"{"destination": "q", "headers": null, "body": "text", "queue": null}"#).unwrap();
        assert_eq!((python.headers.len(), python.body.as_slice()), (0, &b"text"[..]));
        let unknown = item(r#"{"destination": "q", "method": "PUT"}"#).unwrap_err();
        assert!(
            unknown.message().contains("unknown field `method`"),
            "{}",
            unknown.message()
        );
        let missing = item(r#"{"destination": ""}"#).unwrap_err();
        assert_eq!(missing.message(), "destination: is required");
        let number = item(r#"{"destination": "q", "headers": {"A": 1}}"#).unwrap_err();
        assert!(number.message().starts_with("headers.A:"), "{}", number.message());
    }

    #[test]
    fn the_destination_keeps_its_own_query_and_loses_the_configuration() {
        let uri: Uri =
            "/v2/publish/https://example.com/api?x=1&svc-retries=2&svc_token=t&y=a%20b&Upstash-Delay=5s"
                .parse()
                .unwrap();
        let (destination, config) = split_publish_uri(&uri);
        assert_eq!(destination, "https://example.com/api?x=1&y=a%20b");
        assert_eq!(
            config,
            vec![
                ("svc-retries".into(), "2".into()),
                ("svc_token".into(), "t".into()),
                ("Upstash-Delay".into(), "5s".into())
            ]
        );
    }

    #[test]
    fn repeated_headers_are_joined() {
        let mut headers = HeaderMap::new();
        headers.append("x-a", "one".parse().unwrap());
        headers.append("x-a", "two".parse().unwrap());
        assert_eq!(
            header_pairs(&headers),
            vec![("x-a".to_owned(), "one, two".to_owned())]
        );
    }
}

/// Headers as JSON bodies send them: `{name: value or [values]}`, several values joined with `", "`.
#[derive(Debug, Default, Deserialize)]
#[serde(transparent)]
pub(crate) struct HeadersIn(BTreeMap<String, HeaderValues>);

/// A header's value, or its values.
#[derive(Debug, Deserialize)]
#[serde(untagged, expecting = "a string or an array of strings")]
enum HeaderValues {
    One(String),
    Many(Vec<String>),
}

impl HeadersIn {
    /// The headers as (name, value) pairs.
    pub(crate) fn into_pairs(self) -> Vec<(String, String)> {
        self.0
            .into_iter()
            .map(|(name, values)| match values {
                HeaderValues::One(value) => (name, value),
                HeaderValues::Many(values) => (name, values.join(", ")),
            })
            .collect()
    }
}

/// One message of `POST /v2/batch`: what the SDKs send for each (`destination`, `headers`, `body`,
/// `queue`). A field it does not know is refused by name.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchItem {
    destination: String,
    #[serde(default)]
    headers: Option<HeadersIn>,
    #[serde(default)]
    queue: Option<String>,
    #[serde(default)]
    body: Option<BatchBody>,
}

/// The items of a batch (`/v2/batch`, `/v2/batch/trigger`) from `caller_ip`, each read on its own so
/// that one that does not fit is answered with its error, in its place: the requests of the items that
/// fit, in order, and each item's place (`Ok` where the next of those requests stands).
pub(crate) fn batch_requests(
    items: Vec<Value>,
    caller_ip: &str,
) -> (Vec<PublishRequest>, Vec<Result<(), ApiError>>) {
    let mut requests = Vec::with_capacity(items.len());
    let places = items
        .into_iter()
        .map(|item| {
            let request = crate::extract::typed_value::<BatchItem>(item)?.into_request(caller_ip)?;
            requests.push(request);
            Ok(())
        })
        .collect();
    (requests, places)
}

/// A batch item's body. A string is the body itself; the workflow SDK's `context.call` sends any other
/// JSON value (an object, say) as is, and that value's JSON text is the body.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum BatchBody {
    Text(String),
    Json(Value),
}

impl BatchItem {
    /// The publish this item asks for, from `caller_ip`.
    ///
    /// # Errors
    /// A missing destination (400).
    fn into_request(self, caller_ip: &str) -> Result<PublishRequest, ApiError> {
        if self.destination.is_empty() {
            return Err(ApiError::bad_request("destination: is required"));
        }
        // `headers` absent or `null`: the item has none of its own.
        let mut headers = self.headers.map(HeadersIn::into_pairs).unwrap_or_default();
        if let Some(queue) = self.queue.filter(|queue| !queue.is_empty()) {
            headers.push(("Svc-Queue-Name".into(), queue));
        }
        let body = match self.body {
            None => Vec::new(),
            Some(BatchBody::Text(text)) => text.into_bytes(),
            Some(BatchBody::Json(value)) => value.to_string().into_bytes(),
        };
        Ok(PublishRequest {
            destination: self.destination,
            headers,
            query: Vec::new(),
            body,
            caller_ip: Some(caller_ip.to_owned()),
            schedule_id: None,
        })
    }
}
