//! The events log's writes: events of many messages appended in one statement.

use deadpool_postgres::Transaction;
use quiver_core::store::StoreResult;
use quiver_queue::message::{EventDetail, Message, MessageState, NewEvent};

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
    let mut columns = EventColumns::default();
    let mut active_at = None;
    for (i, (message, event)) in events.iter().enumerate() {
        let carried = events
            .get(i + 1)
            .is_some_and(|(next, _)| next.account_id == message.account_id && next.id == message.id);
        if carried && event.state == MessageState::Active && event.detail == EventDetail::default() {
            active_at = Some(event.time.as_millis());
            continue;
        }
        columns.push(message, event, active_at.take())?;
    }
    let statement = transaction
        .prepare_cached(
            "INSERT INTO events (account_id, message_id, time, state, url, host, path, topic_name, queue_name,
                 schedule_id, labels, spec, detail, active_at)
             SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::BIGINT[], $4::TEXT[], $5::TEXT[], $6::TEXT[],
                 $7::TEXT[], $8::TEXT[], $9::TEXT[], $10::TEXT[], $11::TEXT[], $12::TEXT[], $13::TEXT[],
                 $14::BIGINT[])",
        )
        .await?;
    let c = &columns;
    transaction
        .execute(
            &statement,
            &[
                &c.account,
                &c.message,
                &c.time,
                &c.state,
                &c.url,
                &c.host,
                &c.path,
                &c.topic,
                &c.queue,
                &c.schedule,
                &c.labels,
                &c.spec,
                &c.detail,
                &c.active_at,
            ],
        )
        .await?;
    Ok(())
}

/// The columns of events written together.
#[derive(Default)]
struct EventColumns {
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
}

impl EventColumns {
    fn push(&mut self, message: &Message, event: &NewEvent, active_at: Option<i64>) -> StoreResult<()> {
        let spec = &message.spec;
        // A destination that does not parse as a URL has no host or path to filter the log by.
        let url = url::Url::parse(&spec.url).ok();
        self.account.push(message.account_id.to_string());
        self.message.push(message.id.0.clone());
        self.time.push(event.time.as_millis());
        self.state.push(event.state.as_str());
        self.url.push(spec.url.clone());
        self.host
            .push(url.as_ref().and_then(|u| u.host_str().map(str::to_owned)));
        self.path.push(url.as_ref().map(|u| u.path().to_owned()));
        self.topic.push(spec.topic_name.clone());
        self.queue.push(spec.queue_name.clone());
        self.schedule.push(spec.schedule_id.clone());
        self.labels.push(json(&spec.labels)?);
        self.spec.push(if event.state == MessageState::Created {
            Some(spec_json(spec)?)
        } else {
            None
        });
        self.detail.push(json(&event.detail)?);
        self.active_at.push(active_at);
        Ok(())
    }
}
