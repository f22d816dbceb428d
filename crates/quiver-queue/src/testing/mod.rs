//! The conformance suite of [`QueueStore`]: what every backend must do for messages, leases, attempt
//! records, dead letters, the events log, URL groups, schedules, FIFO queues, workflow runs, flow-control
//! keys and waiters, written against the traits alone.
//! A backend runs it with a store over empty storage:
//!
//! ```ignore
//! #[tokio::test]
//! async fn my_store_passes_the_conformance_suite() {
//!     quiver_queue::testing::conformance(Arc::new(my_store().await)).await;
//! }
//! ```
//!
//! Each check uses accounts of its own, so checks never see each other's data, and panics with what the
//! contract says when the store breaks it.
//!
//! [`conformance`] runs every check. A backend built a trait at a time runs the suite of each trait it
//! has so far ([`url_group_store`], [`schedule_store`], [`fifo_queue_store`], [`workflow_run_store`],
//! [`waiter_store`]); the traits that share the messages are checked together ([`message_stores`]).
//! [`restart_keeps_every_acknowledged_write`] checks what a restart keeps: it takes a function that opens
//! a store over the same storage each time it is called.

mod dead_letters;
mod early;
mod fixtures;
mod keys_and_waiters;
mod log;
mod nouns;
mod restart;

pub use restart::restart_keeps_every_acknowledged_write;

use std::sync::Arc;

use quiver_core::{AccountId, Timestamp};

use fixtures::{START, at, claim_one, enqueue, message, states};

use crate::message::{DeadLetter, EventDetail, MessageId, MessageState, NewEvent, NewMessage};
use crate::store::{
    AttemptRecord, AttemptResolution, CancelFilter, FifoQueueStore, Filter, QueueStore, ScheduleStore,
    UrlGroupStore, WaiterStore, WorkflowRunStore,
};

/// Runs every check against `store`, which must start empty: [`message_stores`], then each noun's
/// own suite.
///
/// # Panics
/// When the store breaks its contract.
pub async fn conformance(store: Arc<dyn QueueStore>) {
    let store = &*store;
    message_stores(store).await;
    url_group_store(store).await;
    schedule_store(store).await;
    fifo_queue_store(store).await;
    workflow_run_store(store).await;
    waiter_store(store).await;
}

/// The checks of messages, their delivery, dead letters, the events log, flow control and retention:
/// the traits that share the messages (a claim changes the log; an attempt, the dead letters), so they
/// are checked together.
///
/// # Panics
/// When the store breaks its contract.
pub async fn message_stores(store: &dyn QueueStore) {
    enqueued_messages_read_back_exactly_and_only_for_their_account(store).await;
    a_live_deduplication_key_returns_the_first_message(store).await;
    only_due_messages_are_claimed_and_a_lease_holds_until_it_expires(store).await;
    released_leases_make_messages_due_at_once(store).await;
    an_attempt_record_applies_its_resolution_events_and_follow_ups_together(store).await;
    an_attempt_for_a_message_that_is_gone_changes_nothing(store).await;
    a_message_stored_leased_waits_for_its_holder_and_logs_its_start_with_its_outcome(store).await;
    early::a_message_delivered_before_it_was_stored_is_logged_without_a_row(store).await;
    cancelling_takes_the_named_or_matching_messages_of_one_account(store).await;
    pending_messages_page_in_creation_order_by_filter_within_a_bounded_read(store).await;
    the_depth_counts_pending_and_due_messages(store).await;
    dead_letters::dead_letters_page_newest_first_and_are_retried_or_deleted_once(store).await;
    dead_letters::a_failure_callback_is_cancelled_only_while_in_progress(store).await;
    log::the_events_log_pages_newest_first(store).await;
    log::the_events_log_filters_by_host_and_path(store).await;
    log::an_attempts_events_list_in_the_order_written_under_every_filter_and_cursor(store).await;
    keys_and_waiters::flow_control_keys_hold_their_limits_across_claims(store).await;
    keys_and_waiters::pruning_takes_old_finished_history_and_keeps_the_rest(store).await;
    keys_and_waiters::a_retention_round_goes_to_one_caller_until_the_next(store).await;
}

/// The suite of [`UrlGroupStore`] alone, for a backend built a trait at a time.
///
/// # Panics
/// When the store breaks its contract.
pub async fn url_group_store(store: &dyn UrlGroupStore) {
    nouns::url_groups_are_put_listed_by_name_and_deleted(store).await;
}

/// The suite of [`ScheduleStore`] alone.
///
/// # Panics
/// When the store breaks its contract.
pub async fn schedule_store(store: &dyn ScheduleStore) {
    nouns::schedules_fall_due_in_order_unless_paused(store).await;
}

/// The suite of [`FifoQueueStore`] alone.
///
/// # Panics
/// When the store breaks its contract.
pub async fn fifo_queue_store(store: &dyn FifoQueueStore) {
    nouns::fifo_queues_are_created_once_changed_listed_and_deleted(store).await;
}

/// The suite of [`WorkflowRunStore`] alone.
///
/// # Panics
/// When the store breaks its contract.
pub async fn workflow_run_store(store: &dyn WorkflowRunStore) {
    nouns::workflow_runs_start_once_take_steps_while_running_and_end_once(store).await;
}

/// The suite of [`WaiterStore`] alone.
///
/// # Panics
/// When the store breaks its contract.
pub async fn waiter_store(store: &dyn WaiterStore) {
    keys_and_waiters::waiters_are_found_fall_due_and_are_removed_once(store).await;
    keys_and_waiters::early_events_are_kept_until_taken_once(store).await;
}

async fn enqueued_messages_read_back_exactly_and_only_for_their_account(store: &dyn QueueStore) {
    let (account, other) = (AccountId::random(), AccountId::random());
    let new = message(account, "https://example.com/a", at(0));
    let ids = enqueue(store, vec![new.clone()]).await;
    assert_eq!(ids, std::slice::from_ref(&new.message.id));
    let read = store.message(account, &ids[0]).await.expect("read succeeds");
    assert_eq!(read, Some(new.message), "a message reads back as it was stored");
    assert_eq!(
        store.message(other, &ids[0]).await.expect("read succeeds"),
        None,
        "another account does not see it"
    );
    assert_eq!(
        states(store, account, &ids[0]).await,
        [MessageState::Created],
        "a stored message has its CREATED event"
    );
}

async fn a_live_deduplication_key_returns_the_first_message(store: &dyn QueueStore) {
    let account = AccountId::random();
    let keyed = |until: Timestamp| NewMessage {
        dedup: Some(("key-1".into(), until)),
        leased_until: None,
        early: None,
        ..message(account, "https://example.com/d", at(0))
    };
    let first = store.enqueue(vec![keyed(at(60))], START).await.expect("enqueue");
    assert!(!first[0].deduplicated);
    let second = store.enqueue(vec![keyed(at(60))], at(30)).await.expect("enqueue");
    assert!(second[0].deduplicated, "a live key deduplicates");
    assert_eq!(
        second[0].message_id, first[0].message_id,
        "and answers the first message's id"
    );
    let third = store
        .enqueue(vec![keyed(at(200))], at(61))
        .await
        .expect("enqueue");
    assert!(!third[0].deduplicated, "an expired key no longer counts");
    assert_ne!(third[0].message_id, first[0].message_id);
}

async fn only_due_messages_are_claimed_and_a_lease_holds_until_it_expires(store: &dyn QueueStore) {
    let account = AccountId::random();
    let now = message(account, "https://example.com/now", at(0));
    let later = message(account, "https://example.com/later", at(3_600));
    let ids = enqueue(store, vec![now, later]).await;
    let next = store.next_due().await.expect("next_due succeeds");
    assert!(
        next.is_some_and(|due| due <= at(0)),
        "a message is due now: {next:?}"
    );

    let claimed = store.claim_due(at(1), 100, at(31)).await.expect("claim succeeds");
    let mine: Vec<&MessageId> = claimed
        .iter()
        .filter(|m| m.account_id == account)
        .map(|m| &m.id)
        .collect();
    assert_eq!(mine, [&ids[0]], "only the due message is claimed");
    let again = store.claim_due(at(2), 100, at(32)).await.expect("claim succeeds");
    assert!(
        again.iter().all(|m| m.account_id != account),
        "a leased message is not claimed again while its lease holds"
    );
    let expired = store
        .claim_due(at(40), 100, at(70))
        .await
        .expect("claim succeeds");
    assert!(
        expired.iter().any(|m| m.id == ids[0]),
        "an expired lease makes the message due again"
    );
    assert_eq!(
        states(store, account, &ids[0]).await,
        [MessageState::Created],
        "a claim writes nothing to the log: the attempt's record logs ACTIVE"
    );
    let limited = store
        .claim_due(at(7_200), 1, at(7_300))
        .await
        .expect("claim succeeds");
    assert!(limited.len() <= 1, "a claim takes at most its limit");
}

async fn the_depth_counts_pending_and_due_messages(store: &dyn QueueStore) {
    // Other checks leave messages behind: count what this one adds and takes away.
    let before = store.depth(at(10)).await.expect("depth succeeds");
    let account = AccountId::random();
    let ids = enqueue(
        store,
        vec![
            message(account, "https://example.com/due", at(0)),
            message(account, "https://example.com/later", at(3_600)),
        ],
    )
    .await;
    let with = store.depth(at(10)).await.expect("depth succeeds");
    assert_eq!(with.pending, before.pending + 2, "both are pending");
    assert_eq!(with.due, before.due + 1, "only one is due");
    assert_eq!(with.dead_letters, before.dead_letters);
    let later = store.depth(at(3_600)).await.expect("depth succeeds");
    assert!(later.due >= before.due + 2, "an hour later both are due");
    store
        .cancel(account, Some(ids), CancelFilter::default(), None, at(11))
        .await
        .expect("cancel succeeds");
    assert_eq!(store.depth(at(10)).await.expect("depth succeeds"), before);
}

async fn released_leases_make_messages_due_at_once(store: &dyn QueueStore) {
    let account = AccountId::random();
    let ids = enqueue(store, vec![message(account, "https://example.com/r", at(0))]).await;
    let claimed = store
        .claim_due(at(1), 100, at(1_000))
        .await
        .expect("claim succeeds");
    assert!(claimed.iter().any(|m| m.id == ids[0]));
    assert!(store.release_leases(at(2)).await.expect("release succeeds") >= 1);
    let again = store
        .claim_due(at(3), 100, at(1_000))
        .await
        .expect("claim succeeds");
    assert!(
        again.iter().any(|m| m.id == ids[0]),
        "a released message is due at once"
    );
}

/// A publish that hands its message straight to the delivery worker stores it leased: no claim takes it
/// while the lease holds, and the holder's outcome logs ACTIVE (and CREATED, where the store kept it
/// back) before its own events.
async fn a_message_stored_leased_waits_for_its_holder_and_logs_its_start_with_its_outcome(
    store: &dyn QueueStore,
) {
    let account = AccountId::random();
    let leased = |url: &str, until: u64| {
        let mut new = message(account, url, at(0));
        new.leased_until = Some(at(until));
        new
    };
    let delivered = leased("https://example.com/held/delivered", 50_000);
    let retried = leased("https://example.com/held/retried", 50_000);
    let lapsed = leased("https://example.com/held/lapsed", 10);
    enqueue(store, vec![delivered.clone(), retried.clone(), lapsed.clone()]).await;
    assert_eq!(
        states(store, account, &delivered.message.id).await,
        [MessageState::Created],
        "a message stored leased has its CREATED event"
    );
    let claimed: Vec<String> = store
        .claim_due(at(20), 1_000, at(1_000))
        .await
        .expect("claim succeeds")
        .into_iter()
        .filter(|m| m.account_id == account)
        .map(|m| m.spec.url)
        .collect();
    assert_eq!(
        claimed,
        ["https://example.com/held/lapsed"],
        "only the message whose lease ended is claimed"
    );
    let started = |state| NewEvent {
        time: at(0),
        state,
        detail: EventDetail::default(),
    };
    let finish = |message: &NewMessage, events: Vec<NewEvent>| AttemptRecord {
        message: message.message.clone(),
        resolution: AttemptResolution::Finished { dead_letter: None },
        events,
        follow_ups: Vec::new(),
        failure_callback_report: None,
    };
    store
        .record_attempt(finish(
            &delivered,
            vec![started(MessageState::Active), event(MessageState::Delivered)],
        ))
        .await
        .expect("the outcome is applied");
    assert_eq!(
        store
            .message(account, &delivered.message.id)
            .await
            .expect("read succeeds"),
        None,
        "a delivered message leaves the queue"
    );
    assert_eq!(
        states(store, account, &delivered.message.id).await,
        [
            MessageState::Created,
            MessageState::Active,
            MessageState::Delivered
        ]
    );
    store
        .record_attempt(AttemptRecord {
            message: retried.message.clone(),
            resolution: AttemptResolution::Retry {
                retried: 1,
                at: at(60),
            },
            events: vec![
                started(MessageState::Active),
                event(MessageState::Error),
                event(MessageState::Retry),
            ],
            follow_ups: Vec::new(),
            failure_callback_report: None,
        })
        .await
        .expect("the outcome is applied");
    assert_eq!(
        states(store, account, &retried.message.id).await,
        [
            MessageState::Created,
            MessageState::Active,
            MessageState::Error,
            MessageState::Retry
        ]
    );
    let again = store
        .claim_due(at(70), 1_000, at(80))
        .await
        .expect("claim succeeds")
        .into_iter()
        .find(|m| m.account_id == account)
        .expect("the retried message is due again after its retry delay");
    assert_eq!((again.id.clone(), again.retried), (retried.message.id.clone(), 1));
    for (new, claimed) in [(&retried, again), (&lapsed, lapsed.message.clone())] {
        let mut record = finish(
            new,
            vec![started(MessageState::Active), event(MessageState::Delivered)],
        );
        record.message = claimed;
        store
            .record_attempt(record)
            .await
            .expect("the outcome is applied");
    }
    assert_eq!(
        states(store, account, &lapsed.message.id).await,
        [
            MessageState::Created,
            MessageState::Active,
            MessageState::Delivered
        ],
        "a lapsed lease is claimed like any due message"
    );
}

fn event(state: MessageState) -> NewEvent {
    NewEvent {
        time: at(5_001),
        state,
        detail: EventDetail::default(),
    }
}

async fn an_attempt_record_applies_its_resolution_events_and_follow_ups_together(store: &dyn QueueStore) {
    let account = AccountId::random();
    let claimed = claim_one(store, account, "https://example.com/attempt").await;
    store
        .record_attempt(AttemptRecord {
            message: claimed.clone(),
            resolution: AttemptResolution::Retry {
                retried: 1,
                at: at(6_000),
            },
            events: vec![
                event(MessageState::Active),
                event(MessageState::Error),
                event(MessageState::Retry),
            ],
            follow_ups: vec![message(account, "https://example.com/callback", at(0))],
            failure_callback_report: None,
        })
        .await
        .expect("record succeeds");
    let retried = store
        .message(account, &claimed.id)
        .await
        .expect("read")
        .expect("still pending");
    assert_eq!(
        (retried.retried, retried.not_before),
        (1, at(6_000)),
        "a retry moves the message"
    );
    let early = store
        .claim_due(at(5_500), 1_000, at(5_600))
        .await
        .expect("claim succeeds");
    assert!(
        !early.iter().any(|m| m.id == claimed.id),
        "not due before its retry time"
    );
    assert!(
        early.iter().any(|m| m.spec.url == "https://example.com/callback"),
        "the follow-up was stored with the attempt"
    );
    assert_eq!(
        states(store, account, &claimed.id).await,
        [
            MessageState::Created,
            MessageState::Active,
            MessageState::Error,
            MessageState::Retry
        ]
    );

    let again = store
        .claim_due(at(6_000), 1_000, at(6_100))
        .await
        .expect("claim succeeds")
        .into_iter()
        .find(|m| m.id == claimed.id)
        .expect("due at its retry time");
    let dead = DeadLetter {
        dlq_id: format!("{}-0", at(6_001).as_millis()),
        message: again.clone(),
        response_status: Some(500),
        response_headers: vec![("Retry-After".into(), "1".into())],
        response_body: b"down".to_vec(),
        failed_at: at(6_001),
        failure_callback: None,
    };
    store
        .record_attempt(AttemptRecord {
            message: again.clone(),
            resolution: AttemptResolution::Finished {
                dead_letter: Some(Box::new(dead.clone())),
            },
            events: vec![
                event(MessageState::Active),
                event(MessageState::Error),
                event(MessageState::Failed),
            ],
            follow_ups: Vec::new(),
            failure_callback_report: None,
        })
        .await
        .expect("record succeeds");
    assert_eq!(
        store.message(account, &again.id).await.expect("read"),
        None,
        "a finished message leaves"
    );
    let page = store
        .dead_letters(account, &Filter::default(), None, 10)
        .await
        .expect("dead letters");
    assert_eq!(page.items, [dead], "and its dead letter is kept as given");
}

async fn an_attempt_for_a_message_that_is_gone_changes_nothing(store: &dyn QueueStore) {
    let account = AccountId::random();
    let claimed = claim_one(store, account, "https://example.com/gone").await;
    let cancelled = store
        .cancel(
            account,
            Some(vec![claimed.id.clone()]),
            CancelFilter::default(),
            None,
            at(5_001),
        )
        .await
        .expect("cancel succeeds");
    assert_eq!(cancelled, 1);
    let logged = states(store, account, &claimed.id).await;
    // A delivery's record alone (some stores write it alone), then one with a dead letter and follow-ups.
    store
        .record_attempt(AttemptRecord {
            message: claimed.clone(),
            resolution: AttemptResolution::Finished { dead_letter: None },
            events: vec![event(MessageState::Active), event(MessageState::Delivered)],
            follow_ups: Vec::new(),
            failure_callback_report: None,
        })
        .await
        .expect("record succeeds");
    assert_eq!(
        states(store, account, &claimed.id).await,
        logged,
        "no events for a message that was gone"
    );
    store
        .record_attempt(AttemptRecord {
            message: claimed.clone(),
            resolution: AttemptResolution::Finished {
                dead_letter: Some(Box::new(DeadLetter {
                    dlq_id: "x-0".into(),
                    message: claimed.clone(),
                    response_status: None,
                    response_headers: Vec::new(),
                    response_body: Vec::new(),
                    failed_at: at(5_002),
                    failure_callback: None,
                })),
            },
            events: vec![event(MessageState::Failed)],
            follow_ups: vec![message(account, "https://example.com/orphan", at(0))],
            failure_callback_report: None,
        })
        .await
        .expect("record succeeds");
    let page = store
        .dead_letters(account, &Filter::default(), None, 10)
        .await
        .expect("dead letters");
    assert!(
        page.items.is_empty(),
        "no dead letter for a message that was gone"
    );
    let claimable = store
        .claim_due(at(9_000), 1_000, at(9_100))
        .await
        .expect("claim succeeds");
    assert!(
        !claimable
            .iter()
            .any(|m| m.spec.url == "https://example.com/orphan"),
        "nor its follow-ups"
    );
}

async fn cancelling_takes_the_named_or_matching_messages_of_one_account(store: &dyn QueueStore) {
    let (account, other) = (AccountId::random(), AccountId::random());
    let ids = enqueue(
        store,
        vec![
            message(account, "https://a.example.com/x", at(3_600)),
            message(account, "https://b.example.com/x", at(3_600)),
            message(account, "https://b.example.com/y", at(3_600)),
            message(other, "https://b.example.com/x", at(3_600)),
        ],
    )
    .await;
    let by_id = store
        .cancel(
            account,
            Some(vec![ids[0].clone()]),
            CancelFilter::default(),
            None,
            at(1),
        )
        .await
        .expect("cancel succeeds");
    assert_eq!(by_id, 1);
    assert_eq!(
        states(store, account, &ids[0]).await,
        [
            MessageState::Created,
            MessageState::CancelRequested,
            MessageState::Canceled
        ]
    );
    let by_filter = CancelFilter {
        hosts: vec!["b.example.com".into()],
        paths: vec!["/x".into()],
        ..CancelFilter::default()
    };
    assert_eq!(
        store
            .cancel(account, None, by_filter, None, at(2))
            .await
            .expect("cancel"),
        1
    );
    assert_eq!(
        store
            .cancel(account, None, CancelFilter::default(), None, at(3))
            .await
            .expect("cancel"),
        1,
        "no ids and no filter take the rest of the account's messages"
    );
    assert!(
        store.message(other, &ids[3]).await.expect("read").is_some(),
        "another account's messages are never cancelled"
    );
}

async fn pending_messages_page_in_creation_order_by_filter_within_a_bounded_read(store: &dyn QueueStore) {
    let (account, other) = (AccountId::random(), AccountId::random());
    let urls = [
        "https://a.example.com/1",
        "https://b.example.com/2",
        "https://a.example.com/3",
    ];
    let mut ids = Vec::new();
    for (second, url) in (1..).zip(urls) {
        // Ids carry their creation time: these sort in the order written, whatever their random part.
        let mut new = message(account, url, at(3_600));
        new.message.id = MessageId::generate(at(second));
        ids.extend(enqueue(store, vec![new]).await);
    }
    enqueue(store, vec![message(other, urls[0], at(3_600))]).await;
    let page = |filter: CancelFilter, after: Option<&MessageId>, count, scan| {
        store.pending(account, filter, after.cloned(), count, scan)
    };
    let first = page(CancelFilter::default(), None, 2, 100).await.expect("page");
    let first_ids: Vec<_> = first.items.iter().map(|m| m.id.clone()).collect();
    assert_eq!(first_ids, ids[..2], "the oldest first, only the account's own");
    let cursor = first.cursor.expect("a full page has a cursor");
    let second = page(CancelFilter::default(), Some(&MessageId(cursor)), 2, 100)
        .await
        .expect("page");
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.items[0].id, ids[2]);
    assert_eq!(second.cursor, None, "the last page says so");
    assert_eq!(
        second.items[0].spec.url, urls[2],
        "a page holds the whole message"
    );

    let on_a = || CancelFilter {
        hosts: vec!["a.example.com".into()],
        ..CancelFilter::default()
    };
    let matched = page(on_a(), None, 10, 100).await.expect("page");
    let matched_ids: Vec<_> = matched.items.iter().map(|m| m.id.clone()).collect();
    assert_eq!(matched_ids, [ids[0].clone(), ids[2].clone()]);
    assert_eq!(matched.cursor, None);

    let bounded = page(on_a(), None, 10, 2).await.expect("page");
    assert_eq!(bounded.items.len(), 1, "the read stops after `scan` messages");
    assert_eq!(
        bounded.cursor.as_deref(),
        Some(ids[1].0.as_str()),
        "and goes on from the last one read"
    );
    let rest = page(on_a(), Some(&ids[1]), 10, 2).await.expect("page");
    assert_eq!(rest.items.len(), 1);
    assert_eq!(rest.items[0].id, ids[2]);
    assert_eq!(rest.cursor, None);
    store
        .cancel(account, None, CancelFilter::default(), None, at(10))
        .await
        .expect("cancel");
    store
        .cancel(other, None, CancelFilter::default(), None, at(10))
        .await
        .expect("cancel");
}
