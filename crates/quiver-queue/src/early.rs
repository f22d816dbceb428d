//! A handed-over message whose delivery starts while its publish is still being stored.
//!
//! A plain message due at once (see `Publisher::store_messages`) goes to the delivery worker as soon as
//! its publish hands it to the store, not once the store has committed it: the answer to the publisher
//! still waits for the commit, so an acknowledged message is durable as before, and a crash before the
//! commit may deliver a message its publisher was never told was accepted (at least once, as ever).
//! When the delivery finishes before the store writes the message, the two are written as one: the
//! store logs the message's CREATED event with the attempt's events, and never writes its row, which
//! would only be deleted in the next commit. Otherwise the attempt's record is applied as usual once the
//! publish is committed.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::store::AttemptRecord;

/// Where a handed-over message and its early delivery meet; shared by its `NewMessage` (which the
/// store reads as it writes the message) and by its delivery.
#[derive(Debug, Default)]
pub struct Early {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
enum State {
    /// Neither the store nor the delivery has come by.
    #[default]
    Waiting,
    /// The store wrote the message as pending: the delivery applies its record once it is committed.
    Stored,
    /// The delivery finished first: the store writes this record in the message's place.
    Finished(Arc<AttemptRecord>),
}

impl Early {
    /// What the store writes for the message, called as it writes it: `Some(record)` when its delivery
    /// has already finished (the message's CREATED event and the record's events are logged, and no
    /// row is stored), `None` when the message is stored as pending. The answer never changes once
    /// given, so a write that is run again writes the same.
    pub fn settle(&self) -> Option<Arc<AttemptRecord>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match &*state {
            State::Waiting => {
                *state = State::Stored;
                None
            }
            State::Stored => None,
            State::Finished(record) => Some(Arc::clone(record)),
        }
    }

    /// Offers a finished attempt's record: `Ok` when the store has not written the message yet and will
    /// write the record in its place; the record back when the message is stored as pending.
    ///
    /// # Errors
    /// The record itself, which the caller applies once the publish is committed.
    pub(crate) fn offer(&self, record: Box<AttemptRecord>) -> Result<(), Box<AttemptRecord>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match &*state {
            State::Waiting => {
                *state = State::Finished(Arc::from(record));
                Ok(())
            }
            State::Stored | State::Finished(_) => Err(record),
        }
    }
}

/// The publish's side of an early delivery: tells it whether the message was committed.
#[derive(Debug)]
pub(crate) struct EarlyPublish(oneshot::Sender<bool>);

impl EarlyPublish {
    /// Tells the delivery whether the publish was committed.
    pub(crate) fn tell(self, committed: bool) {
        // A delivery that already ended (its record written with the publish) does not listen.
        let _ = self.0.send(committed);
    }
}

/// The delivery's side of an early delivery.
#[derive(Debug)]
pub(crate) struct EarlyDelivery {
    early: Arc<Early>,
    published: oneshot::Receiver<bool>,
}

/// A new early delivery: the cell for the `NewMessage`, the publish's side and the delivery's side.
pub(crate) fn early() -> (Arc<Early>, EarlyPublish, EarlyDelivery) {
    let early = Arc::new(Early::default());
    let (tell, published) = oneshot::channel();
    let delivery = EarlyDelivery {
        early: Arc::clone(&early),
        published,
    };
    (early, EarlyPublish(tell), delivery)
}

/// What becomes of an early delivery's record (see [`EarlyDelivery::finish`]).
#[derive(Debug)]
pub(crate) enum Finish {
    /// The store writes it with the publish.
    WithPublish,
    /// The publish failed: there is nothing to apply it to.
    PublishFailed,
    /// To apply now, the publish being committed.
    Apply(Box<AttemptRecord>),
}

impl EarlyDelivery {
    /// Hands the finished attempt's record over; a `plain` one (which only ends the message and logs
    /// its events) may be written with the publish. When the publish went without saying (its caller
    /// went away mid-write), the record is applied anyway: a store ignores a record for a message it
    /// does not hold.
    pub(crate) async fn finish(self, record: Box<AttemptRecord>, plain: bool) -> Finish {
        let record = if plain {
            match self.early.offer(record) {
                Ok(()) => return Finish::WithPublish,
                Err(record) => record,
            }
        } else {
            record
        };
        match self.published.await {
            Ok(false) => Finish::PublishFailed,
            Ok(true) | Err(_) => Finish::Apply(record),
        }
    }
}

#[cfg(test)]
mod tests {
    use quiver_core::{AccountId, Timestamp};

    use super::*;
    use crate::message::{Message, MessageId};
    use crate::store::AttemptResolution;

    fn record() -> Box<AttemptRecord> {
        let now = Timestamp::from_millis(1_767_225_600_000);
        let spec = serde_json::json!({
            "kind": "publish", "url": "http://127.0.0.1:9/", "method": "POST", "headers": [],
            "max_retries": 3, "timeout_ms": 1000, "labels": [],
        });
        Box::new(AttemptRecord {
            message: Message {
                id: MessageId::generate(now),
                account_id: AccountId::random(),
                spec: serde_json::from_value(spec).expect("a valid spec"),
                body: Vec::new(),
                retried: 0,
                not_before: now,
                created_at: now,
            },
            resolution: AttemptResolution::Finished { dead_letter: None },
            events: Vec::new(),
            follow_ups: Vec::new(),
            failure_callback_report: None,
        })
    }

    #[tokio::test]
    async fn a_record_offered_before_the_store_writes_is_written_in_the_message_place() {
        let (early, published, delivery) = early();
        let finishing = tokio::spawn(delivery.finish(record(), true));
        assert!(
            matches!(finishing.await.unwrap(), Finish::WithPublish),
            "the record is left to the store"
        );
        assert!(early.settle().is_some());
        assert!(early.settle().is_some(), "a write run again writes the same");
        published.tell(true);
    }

    #[tokio::test]
    async fn a_record_after_the_store_wrote_waits_for_the_commit() {
        let (early, published, delivery) = early();
        assert!(early.settle().is_none());
        let finishing = tokio::spawn(delivery.finish(record(), true));
        tokio::task::yield_now().await;
        assert!(!finishing.is_finished(), "the record waits for the commit");
        published.tell(true);
        assert!(matches!(finishing.await.unwrap(), Finish::Apply(_)));
        assert!(early.settle().is_none(), "the answer never changes");
    }

    #[tokio::test]
    async fn a_record_is_dropped_when_the_publish_failed_and_applied_when_it_went_unsaid() {
        let (early, published, delivery) = early();
        assert!(early.settle().is_none());
        published.tell(false);
        assert!(matches!(
            delivery.finish(record(), true).await,
            Finish::PublishFailed
        ));

        let (_early, published, delivery) = super::early();
        drop(published);
        assert!(matches!(delivery.finish(record(), false).await, Finish::Apply(_)));
    }
}
