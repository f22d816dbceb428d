//! A handed-over message whose delivery starts while its publish is still being stored.
//!
//! A plain message due at once (see `Publisher::store_messages`) goes to the delivery worker as soon as
//! its publish hands it to the store, not once the store has committed it: the answer to the publisher
//! waits for the commit, or for every message of the publish to be delivered first (see
//! `crate::answered`), so an acknowledged message is durable or already at its destination, and a crash
//! before the commit may deliver a message its publisher was never told was accepted (at least once, as
//! ever).
//! When the delivery finishes before the store writes the message, the two are written as one: the
//! store logs the message's CREATED event with the attempt's events, and never writes its row, which
//! would only be deleted in the next commit. Otherwise the attempt's record is applied as usual once the
//! publish is committed.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Notify, oneshot};
use tokio::time::{Duration, Instant};

use crate::store::AttemptRecord;

/// Where a handed-over message and its early delivery meet; shared by its `NewMessage` (which the
/// store reads as it writes the message) and by its delivery.
#[derive(Debug, Default)]
pub struct Early {
    state: Mutex<State>,
    /// Told when the delivery ends (see [`Early::delivered`]).
    ended: Notify,
}

#[derive(Debug, Default)]
enum State {
    /// Neither the store nor the delivery has come by.
    #[default]
    Waiting,
    /// The store wrote the message as pending, or the delivery ended with a record that is not written
    /// in the message's place: the store writes the message as pending, and the delivery applies its
    /// record once it is committed.
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

    /// Whether neither the delivery nor the store has come by.
    fn is_waiting(&self) -> bool {
        matches!(
            *self.state.lock().unwrap_or_else(PoisonError::into_inner),
            State::Waiting
        )
    }

    /// Waits until the store may no longer write the delivery's record in the message's place: the
    /// delivery ended (its record offered, or one that is not written with the publish kept), or the
    /// store already wrote the message as pending. A store may wait for this, for as long as it
    /// chooses, before it writes the message: a message written with its attempt's record is one events
    /// row, instead of a row, its deletion and the record's own commit.
    pub async fn delivered(&self) {
        loop {
            // Made before the state is read, so that an end in between still wakes it.
            let ended = self.ended.notified();
            if !self.is_waiting() {
                return;
            }
            ended.await;
        }
    }

    /// Waits as [`Early::delivered`] does; true when the delivery finished first, so that the store
    /// writes its record in the message's place and nothing about the message is left to keep.
    pub(crate) async fn finished_first(&self) -> bool {
        self.delivered().await;
        matches!(
            *self.state.lock().unwrap_or_else(PoisonError::into_inner),
            State::Finished(_)
        )
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
                drop(state);
                self.ended.notify_waiters();
                Ok(())
            }
            State::Stored | State::Finished(_) => Err(record),
        }
    }

    /// The delivery ended with a record that the store may not write in the message's place: the
    /// message is written as pending, and nobody waits for the delivery any longer.
    fn decline(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if matches!(*state, State::Waiting) {
            *state = State::Stored;
            drop(state);
            self.ended.notify_waiters();
        }
    }
}

/// A store's wait, before it writes a batch of handed-over messages, for their deliveries to finish: a
/// message whose delivery finished is written with its attempt's record (see [`Early::settle`]), and
/// under load most deliveries to a nearby destination finish within a millisecond. The wait ends when
/// every delivery has finished, or after `longest`. While waits keep running out with most of their
/// deliveries still going (slow destinations), it pauses waiting for `pause` at a time, so that
/// publishes are not made to wait for nothing; a few stragglers now and then do not pause it. After a
/// pause it starts afresh, as if no wait had run out.
#[derive(Debug)]
pub struct DeliveriesHold {
    longest: Duration,
    pause: Duration,
    state: Mutex<HoldState>,
}

#[derive(Debug)]
struct HoldState {
    /// The share of deliveries that finished within the recent waits, each wait weighing [`RECENT`] of
    /// it; waiting pauses while it is below one half.
    finished: f64,
    paused_until: Option<Instant>,
}

/// How much the last wait weighs in [`HoldState::finished`].
const RECENT: f64 = 0.125;

impl DeliveriesHold {
    /// A hold of at most `longest`, which pauses for `pause` at a time.
    pub fn new(longest: Duration, pause: Duration) -> DeliveriesHold {
        DeliveriesHold {
            longest,
            pause,
            state: Mutex::new(HoldState {
                finished: 1.0,
                paused_until: None,
            }),
        }
    }

    /// Waits until every one of `earlies` is delivered (see [`Early::delivered`]), at most the hold's
    /// longest; not at all while paused.
    pub async fn wait<'a>(&self, earlies: impl IntoIterator<Item = &'a Early>) {
        let earlies: Vec<&Early> = earlies.into_iter().collect();
        if earlies.is_empty() {
            return;
        }
        let now = Instant::now();
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            match state.paused_until {
                Some(until) if now < until => return,
                // A pause that ended starts afresh: the waits before it do not count, or a share far
                // below one half would pause again after each wait until several in a row succeeded.
                Some(_) => {
                    state.paused_until = None;
                    state.finished = 1.0;
                }
                None => {}
            }
        }
        let until = now + self.longest;
        let mut ran_out = false;
        for early in &earlies {
            if tokio::time::timeout_at(until, early.delivered()).await.is_err() {
                ran_out = true;
                break;
            }
        }
        let going = if ran_out {
            earlies.iter().filter(|early| early.is_waiting()).count()
        } else {
            0
        };
        let finished = 1.0 - going as f64 / earlies.len() as f64;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.finished = (1.0 - RECENT) * state.finished + RECENT * finished;
        if state.finished < 0.5 {
            state.paused_until = Some(Instant::now() + self.pause);
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
            self.early.decline();
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

    #[tokio::test(start_paused = true)]
    async fn a_hold_ends_when_every_delivery_finished() {
        let hold = DeliveriesHold::new(Duration::from_millis(10), Duration::from_secs(1));
        let (first, _, first_delivery) = early();
        let (second, _, second_delivery) = early();
        let (written, _, _delivery) = early();
        assert!(
            written.settle().is_none(),
            "written as pending: nothing to wait for"
        );
        let started = Instant::now();
        let delivering = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            first_delivery.finish(record(), true).await;
            tokio::time::sleep(Duration::from_millis(3)).await;
            second_delivery.finish(record(), true).await;
        });
        hold.wait([&*first, &*written, &*second]).await;
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(5),
            "held until the second delivery ended"
        );
        assert!(
            first.settle().is_some() && second.settle().is_some(),
            "both written with the publish"
        );
        delivering.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_delivery_whose_record_is_not_written_with_the_publish_ends_the_hold() {
        let hold = DeliveriesHold::new(Duration::from_millis(10), Duration::from_secs(1));
        let (retried, published, delivery) = early();
        let started = Instant::now();
        let delivering = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            delivery.finish(record(), false).await
        });
        hold.wait([&*retried]).await;
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(2),
            "held until the delivery ended"
        );
        assert!(retried.settle().is_none(), "written as pending");
        published.tell(true);
        assert!(matches!(delivering.await.unwrap(), Finish::Apply(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hold_that_a_straggler_outlasted_goes_on_holding() {
        let hold = DeliveriesHold::new(Duration::from_millis(10), Duration::from_secs(1));
        let (straggler, _, _delivery) = early();
        let (quick, _, quick_delivery) = early();
        let (also_quick, _, also_quick_delivery) = early();
        quick_delivery.finish(record(), true).await;
        also_quick_delivery.finish(record(), true).await;
        let started = Instant::now();
        hold.wait([&*straggler, &*quick, &*also_quick]).await;
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(10),
            "held for the straggler"
        );
        let again = Instant::now();
        hold.wait([&*straggler]).await;
        assert_eq!(again.elapsed(), Duration::from_millis(10), "not paused");
    }

    #[tokio::test(start_paused = true)]
    async fn holds_that_keep_running_out_pause_holding() {
        let hold = DeliveriesHold::new(Duration::from_millis(10), Duration::from_secs(1));
        let (slow, _, _delivery) = early();
        // How long each of eight waits for the slow delivery held, in ms.
        let waits = || async {
            let mut held = Vec::new();
            for _ in 0..8 {
                let started = Instant::now();
                hold.wait([&*slow]).await;
                held.push(started.elapsed().as_millis());
            }
            held
        };
        let held = waits().await;
        assert_eq!(
            held,
            [10, 10, 10, 10, 10, 10, 0, 0],
            "paused once most recent waits ran out"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            waits().await,
            held,
            "after the pause, holding starts afresh: the waits before it do not count"
        );
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
