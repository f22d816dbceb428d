//! A served request's log line: what it says, and where it goes.
//!
//! Every request is logged at info as one event (see `router::observe_request`). Through `tracing`'s
//! formatter that line cost about a tenth of a publish's instructions (`bench/queue_instructions.py`),
//! so the server may hand the line to a [`RequestLines`] of its own instead, which writes the same
//! text faster. Without one, or for a format it does not write, the line is a `tracing` event.

use axum::http::Method;
use quiver_queue::message::MessageId;

/// The fields of a served request's line, in the order they are logged.
#[derive(Debug, Clone, Copy)]
pub struct Served<'a> {
    /// The request's id (`X-Request-Id`), as sent back.
    pub id: &'a [u8],
    pub method: &'a Method,
    /// The route template that matched, or `(no route)`.
    pub route: &'a str,
    pub status: u16,
    pub duration_us: u64,
    /// The messages the request made, since deliveries log by message id.
    pub messages: Option<&'a [MessageId]>,
    /// The error the request was answered with: a 5xx's error id leads to the line that logged its cause.
    pub error: Option<&'a str>,
}

impl Served<'_> {
    /// The request id as text (any byte that is not UTF-8 replaced).
    pub fn id_text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.id)
    }

    /// The ids of the messages made, joined by commas.
    pub fn message_ids(&self) -> Option<String> {
        self.messages
            .map(|made| made.iter().map(|id| id.0.as_str()).collect::<Vec<_>>().join(","))
    }
}

/// Writes served requests' lines; given to the router by the server (see `Services::request_lines`).
/// It is consulted only when `tracing` would log the line at all (the level filter enables info for
/// `quiver_http::router`), and must write what `tracing`'s formatter would, or the line as a
/// `tracing` event (`router::log_with_tracing`).
pub trait RequestLines: Send + Sync + std::fmt::Debug {
    fn served(&self, line: &Served<'_>);
}
