//! Checks of messages delivered while their publish is stored (see [`crate::early`]).

use std::sync::Arc;

use quiver_core::AccountId;

use super::fixtures::{START, at, enqueue, message, states};
use crate::early::Early;
use crate::message::{Event, EventDetail, MessageState, NewEvent, NewMessage};
use crate::store::{AttemptRecord, AttemptResolution, Filter, QueueStore};

/// A plain first-try delivery of `new`: ACTIVE at the publish, then DELIVERED with the answer.
fn delivered(new: &NewMessage) -> AttemptRecord {
    AttemptRecord {
        message: new.message.clone(),
        resolution: AttemptResolution::Finished { dead_letter: None },
        events: vec![
            NewEvent {
                time: START,
                state: MessageState::Active,
                detail: EventDetail::default(),
            },
            NewEvent {
                time: at(1),
                state: MessageState::Delivered,
                detail: EventDetail {
                    response_status: Some(202),
                    response_body: Some("accepted".into()),
                    ..EventDetail::default()
                },
            },
        ],
        follow_ups: Vec::new(),
        failure_callback_report: None,
    }
}

/// The account's events, oldest first.
async fn log(store: &dyn QueueStore, account: AccountId) -> Vec<Event> {
    let page = store
        .events(account, &Filter::default(), None, 100)
        .await
        .expect("events succeed");
    page.items.into_iter().rev().collect()
}

/// A message whose delivery finished before the store wrote it is logged (CREATED, then the attempt's
/// events, details kept) and never stored: nothing is pending, due or claimable. One the store wrote
/// first is stored leased, turns the late record away, and takes it through `record_attempt` as usual.
/// Messages stored together keep their order in the log.
pub(super) async fn a_message_delivered_before_it_was_stored_is_logged_without_a_row(store: &dyn QueueStore) {
    let account = AccountId::random();
    let early = |url: &str| {
        let mut new = message(account, url, at(0));
        new.leased_until = Some(at(50_000));
        new.early = Some(Arc::new(Early::default()));
        new
    };
    let first = early("https://example.com/early/first");
    let second = early("https://example.com/early/second");
    let plain = message(account, "https://example.com/early/plain", at(100_000));
    let cell = |new: &NewMessage| Arc::clone(new.early.as_ref().expect("an early message"));
    cell(&first)
        .offer(Box::new(delivered(&first)))
        .expect("the store has not written the message");
    enqueue(store, vec![first.clone(), second.clone(), plain.clone()]).await;

    assert_eq!(
        store
            .message(account, &first.message.id)
            .await
            .expect("read succeeds"),
        None,
        "a message delivered before it was stored is not pending"
    );
    let logged = log(store, account).await;
    let of_first: Vec<&Event> = logged
        .iter()
        .filter(|e| e.message_id == first.message.id)
        .collect();
    assert_eq!(
        of_first.iter().map(|e| e.state).collect::<Vec<_>>(),
        [
            MessageState::Created,
            MessageState::Active,
            MessageState::Delivered
        ]
    );
    assert_eq!(
        (of_first[0].time, of_first[1].time, of_first[2].time),
        (START, START, at(1))
    );
    assert_eq!(
        (
            of_first[2].detail.response_status,
            of_first[2].detail.response_body.as_deref()
        ),
        (Some(202), Some("accepted")),
        "the answer is logged"
    );
    assert_eq!(of_first[0].spec.url, "https://example.com/early/first");
    assert_eq!(
        logged
            .iter()
            .filter(|e| e.state == MessageState::Created)
            .map(|e| e.message_id.clone())
            .collect::<Vec<_>>(),
        [
            first.message.id.clone(),
            second.message.id.clone(),
            plain.message.id.clone()
        ],
        "messages stored together are created in order"
    );
    assert!(
        logged.windows(2).all(|w| w[0].sequence < w[1].sequence),
        "the log's positions increase"
    );

    let late = cell(&second)
        .offer(Box::new(delivered(&second)))
        .expect_err("a message the store wrote turns a late record away");
    let claimed = store
        .claim_due(at(20_000), 1_000, at(30_000))
        .await
        .expect("claim succeeds");
    assert!(
        claimed.iter().all(|m| m.account_id != account),
        "neither the logged message nor the leased one is claimed before its lease ends"
    );
    store.record_attempt(*late).await.expect("the outcome is applied");
    assert_eq!(
        states(store, account, &second.message.id).await,
        [
            MessageState::Created,
            MessageState::Active,
            MessageState::Delivered
        ]
    );
    assert_eq!(
        store
            .message(account, &second.message.id)
            .await
            .expect("read succeeds"),
        None
    );
    assert!(
        store
            .message(account, &plain.message.id)
            .await
            .expect("read succeeds")
            .is_some(),
        "the other message stays pending"
    );
}
