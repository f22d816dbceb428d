//! The events log's writes: events of many messages appended in one statement.

use std::sync::LazyLock;

use deadpool_postgres::Transaction;
use quiver_core::store::StoreResult;
use quiver_queue::message::{EventDetail, Message, MessageState, NewEvent};
use tokio_postgres::types::ToSql;

use crate::database::TxError;
use crate::queue::rows::{json, spec_json};

/// Appends events of messages to their accounts' logs in one statement; the spec goes with CREATED
/// events only (later events borrow it). An ACTIVE event with the default detail that is followed by
/// another event of its message goes in that event's row (`active_at`, at the row's seq - 1, see
/// migration 8): a first-try delivery is one row.
pub(crate) async fn append_events(
    transaction: &Transaction<'_>,
    events: &[(&Message, &NewEvent)],
) -> Result<(), TxError> {
    if events.is_empty() {
        return Ok(());
    }
    let columns = EventColumns::of(events)?;
    static INSERT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "INSERT INTO events ({EVENT_COLUMNS}) SELECT * FROM UNNEST({})",
            EventColumns::unnest(1)
        )
    });
    let statement = transaction.prepare_cached(&INSERT).await?;
    transaction.execute(&statement, &columns.params()).await?;
    Ok(())
}

/// The columns an events row is written with, in the order of [`EventColumns::params`].
pub(crate) const EVENT_COLUMNS: &str = "account_id, message_id, time, state, url, host, path, topic_name, \
     queue_name, schedule_id, labels, spec, detail, active_at, created_at";

/// The columns of events written together.
#[derive(Default)]
pub(crate) struct EventColumns {
    account: Vec<String>,
    message: Vec<String>,
    time: Vec<i64>,
    state: Vec<&'static str>,
    url: Vec<String>,
    host: Vec<Option<String>>,
    path: Vec<Option<String>>,
    topic: Vec<Option<String>>,
    queue: Vec<Option<String>>,
    schedule: Vec<Option<String>>,
    labels: Vec<String>,
    spec: Vec<Option<String>>,
    detail: Vec<String>,
    /// The time of the ACTIVE event the row also stands for, if any.
    active_at: Vec<Option<i64>>,
    /// The time of the CREATED event the row also stands for, if any.
    created_at: Vec<Option<i64>>,
    /// The last row's URL with its host and path: a batch's messages mostly share their destination,
    /// which is then parsed once.
    last_url: Option<(String, Option<String>, Option<String>)>,
}

impl EventColumns {
    /// The rows of `events`: an ACTIVE event with the default detail that is followed by another event
    /// of its message goes in that event's row, and so does a CREATED event followed by an ACTIVE one
    /// that goes there (a message delivered before its publish was written, see migration 9).
    pub(crate) fn of(events: &[(&Message, &NewEvent)]) -> StoreResult<EventColumns> {
        let mut columns = EventColumns::default();
        let (mut active_at, mut created_at) = (None, None);
        let carries = |i: usize, state: MessageState| {
            let (message, event) = events[i];
            event.state == state
                && event.detail == EventDetail::default()
                && events
                    .get(i + 1)
                    .is_some_and(|(next, _)| next.account_id == message.account_id && next.id == message.id)
        };
        for (i, (message, event)) in events.iter().enumerate() {
            if carries(i, MessageState::Created) && carries(i + 1, MessageState::Active) {
                created_at = Some(event.time.as_millis());
                continue;
            }
            if carries(i, MessageState::Active) {
                active_at = Some(event.time.as_millis());
                continue;
            }
            columns.push(message, event, (active_at.take(), created_at.take()))?;
        }
        Ok(columns)
    }

    /// `UNNEST`'s arguments for the columns, as parameters `$first` onwards.
    pub(crate) fn unnest(first: usize) -> String {
        const TYPES: [&str; 15] = [
            "TEXT", "TEXT", "BIGINT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT",
            "TEXT", "BIGINT", "BIGINT",
        ];
        let arguments: Vec<String> = TYPES
            .iter()
            .enumerate()
            .map(|(k, kind)| format!("${}::{kind}[]", first + k))
            .collect();
        arguments.join(", ")
    }

    /// The columns as parameters, in [`EVENT_COLUMNS`]' order.
    pub(crate) fn params(&self) -> [&(dyn ToSql + Sync); 15] {
        [
            &self.account,
            &self.message,
            &self.time,
            &self.state,
            &self.url,
            &self.host,
            &self.path,
            &self.topic,
            &self.queue,
            &self.schedule,
            &self.labels,
            &self.spec,
            &self.detail,
            &self.active_at,
            &self.created_at,
        ]
    }

    /// Adds a row for `event`, standing also for the ACTIVE and CREATED events at the times given.
    fn push(
        &mut self,
        message: &Message,
        event: &NewEvent,
        (active_at, created_at): (Option<i64>, Option<i64>),
    ) -> StoreResult<()> {
        let spec = &message.spec;
        let (host, path) = match &self.last_url {
            Some((url, host, path)) if *url == spec.url => (host.clone(), path.clone()),
            _ => {
                // A destination that does not parse as a URL has no host or path to filter the log by.
                let url = url::Url::parse(&spec.url).ok();
                let host = url.as_ref().and_then(|u| u.host_str().map(str::to_owned));
                let path = url.as_ref().map(|u| u.path().to_owned());
                self.last_url = Some((spec.url.clone(), host.clone(), path.clone()));
                (host, path)
            }
        };
        self.account.push(message.account_id.to_string());
        self.message.push(message.id.0.clone());
        self.time.push(event.time.as_millis());
        self.state.push(event.state.as_str());
        self.url.push(spec.url.clone());
        self.host.push(host);
        self.path.push(path);
        self.topic.push(spec.topic_name.clone());
        self.queue.push(spec.queue_name.clone());
        self.schedule.push(spec.schedule_id.clone());
        self.labels.push(json(&spec.labels)?);
        self.spec
            .push(if event.state == MessageState::Created || created_at.is_some() {
                Some(spec_json(spec)?)
            } else {
                None
            });
        self.detail.push(json(&event.detail)?);
        self.active_at.push(active_at);
        self.created_at.push(created_at);
        Ok(())
    }
}
