//! Conformance checks of flow-control keys, waiters, kept events and retention.

use std::collections::BTreeMap;

use quiver_core::{AccountId, Timestamp};
use serde_json::json;

use super::fixtures::{at, claim_one, dead_letter, enqueue, message, states};
use crate::flow::FlowControlChange;
use crate::message::{EventDetail, FlowControl, MessageState, NewEvent};
use crate::store::{Filter, QueueStore, WaiterStore};
use crate::waiters::WaitSpec;

/// How many of `account`'s messages a claim at `now` leases (for a short lease).
async fn claimed_of(store: &dyn QueueStore, account: AccountId, now: Timestamp) -> usize {
    store
        .claim_due(now, 1_000, Timestamp::from_millis(now.as_millis() + 100_000))
        .await
        .expect("claim succeeds")
        .iter()
        .filter(|m| m.account_id == account)
        .count()
}

/// `claim_due` never leases more of a key's messages than its parallelism, a paused key starts nothing
/// until resumed, the key's state counts what waits and what is in flight, and keys belong to one
/// account.
pub(super) async fn flow_control_keys_hold_their_limits_across_claims(store: &dyn QueueStore) {
    let account = AccountId::random();
    let keyed = (0..3)
        .map(|n| {
            let mut keyed = message(account, &format!("https://example.com/keyed/{n}"), at(0));
            keyed.message.spec.flow_control = Some(FlowControl {
                key: "k".into(),
                parallelism: Some(1),
                rate: None,
                period: None,
            });
            keyed
        })
        .collect();
    enqueue(store, keyed).await;
    assert_eq!(
        claimed_of(store, account, at(10_000)).await,
        1,
        "parallelism 1: one at a time"
    );
    assert_eq!(
        claimed_of(store, account, at(10_001)).await,
        0,
        "the first is still in flight"
    );
    assert_eq!(store.in_flight(account, at(10_001)).await.expect("in flight"), 1);
    let state = store
        .flow_control(account, "k", at(10_001))
        .await
        .expect("read")
        .expect("the key exists once a message used it");
    assert_eq!(
        (
            state.key.as_str(),
            state.parallelism_max,
            state.parallelism_count,
            state.wait_list_size
        ),
        ("k", 1, 1, 2)
    );

    assert!(
        store
            .change_flow_control(account, "k", FlowControlChange::Pause, at(10_002))
            .await
            .expect("pause")
    );
    let after_lease = at(10_200);
    assert_eq!(
        claimed_of(store, account, after_lease).await,
        0,
        "a paused key starts nothing"
    );
    assert!(
        store
            .flow_control(account, "k", after_lease)
            .await
            .expect("read")
            .expect("exists")
            .paused
    );
    assert!(
        store
            .change_flow_control(account, "k", FlowControlChange::Resume, after_lease)
            .await
            .expect("resume")
    );
    assert_eq!(
        claimed_of(store, account, after_lease).await,
        1,
        "resumed: one again"
    );

    assert!(
        !store
            .change_flow_control(account, "missing", FlowControlChange::Pause, after_lease)
            .await
            .expect("change"),
        "a key nobody used does not exist"
    );
    let keys = store.flow_controls(account, after_lease).await.expect("list");
    assert_eq!(keys.iter().map(|k| k.key.as_str()).collect::<Vec<_>>(), ["k"]);
    let other = AccountId::random();
    assert!(
        store
            .flow_controls(other, after_lease)
            .await
            .expect("list")
            .is_empty()
    );
    assert_eq!(
        store.flow_control(other, "k", after_lease).await.expect("read"),
        None
    );
}

fn wait_spec(url: &str) -> WaitSpec {
    WaitSpec {
        url: url.to_owned(),
        timeout_url: None,
        timeout_body: None,
        timeout_headers: BTreeMap::new(),
        step: json!({"stepId": 2}),
    }
}

/// Waiters are found by event (and run), fall due by deadline earliest first, and are removed once.
pub(super) async fn waiters_are_found_fall_due_and_are_removed_once(store: &dyn WaiterStore) {
    let (account, other) = (AccountId::random(), AccountId::random());
    store
        .add_waiter(
            account,
            "paid",
            Some("run-1"),
            at(100),
            &wait_spec("https://example.com/a"),
        )
        .await
        .expect("add");
    store
        .add_waiter(account, "paid", None, at(50), &wait_spec("https://example.com/b"))
        .await
        .expect("add");
    store
        .add_waiter(other, "paid", None, at(60), &wait_spec("https://example.com/c"))
        .await
        .expect("add");

    let all = store.waiters(account, "paid", None).await.expect("list");
    let urls: Vec<&str> = all.iter().map(|w| w.spec.url.as_str()).collect();
    assert_eq!(
        urls,
        ["https://example.com/a", "https://example.com/b"],
        "oldest first, one account"
    );
    assert_eq!(
        all[0].spec,
        wait_spec("https://example.com/a"),
        "the spec reads back whole"
    );
    let of_run = store.waiters(account, "paid", Some("run-1")).await.expect("list");
    assert_eq!(of_run.len(), 1);
    assert_eq!(
        (of_run[0].deadline, of_run[0].event_id.as_str()),
        (at(100), "paid")
    );
    assert!(
        store
            .waiters(account, "other", None)
            .await
            .expect("list")
            .is_empty()
    );

    assert_eq!(store.next_waiter_deadline().await.expect("next"), Some(at(50)));
    let due = store.due_waiters(at(60), 10).await.expect("due");
    let due: Vec<Timestamp> = due.iter().map(|w| w.deadline).collect();
    assert_eq!(due, [at(50), at(60)], "due at or before now, earliest first");

    for waiter in all
        .iter()
        .chain(&store.waiters(other, "paid", None).await.expect("list"))
    {
        assert!(store.remove_waiter(waiter.seq).await.expect("remove"));
        assert!(
            !store.remove_waiter(waiter.seq).await.expect("remove"),
            "removed once"
        );
    }
    assert_eq!(store.next_waiter_deadline().await.expect("next"), None);
}

/// An event notified before its run waits is kept (the latest replacing an earlier one) and taken once,
/// by its own account.
pub(super) async fn early_events_are_kept_until_taken_once(store: &dyn WaiterStore) {
    let (account, other) = (AccountId::random(), AccountId::random());
    store
        .keep_early_event(account, "run", "paid", b"one", at(0))
        .await
        .expect("keep");
    store
        .keep_early_event(account, "run", "paid", b"two", at(1))
        .await
        .expect("keep");
    assert_eq!(
        store.take_early_event(other, "run", "paid").await.expect("take"),
        None
    );
    assert_eq!(
        store
            .take_early_event(account, "run", "paid")
            .await
            .expect("take"),
        Some(b"two".to_vec())
    );
    assert_eq!(
        store
            .take_early_event(account, "run", "paid")
            .await
            .expect("take"),
        None
    );
}

/// Pruning deletes dead letters that failed before the cut and the log of messages finished before it,
/// and keeps newer dead letters and the events of messages still pending.
pub(super) async fn a_retention_round_goes_to_one_caller_until_the_next(store: &dyn QueueStore) {
    assert!(
        store
            .claim_retention_round(at(1_000), at(2_000))
            .await
            .expect("claim succeeds"),
        "the first round is the first caller's"
    );
    assert!(
        !store
            .claim_retention_round(at(1_500), at(2_500))
            .await
            .expect("claim succeeds"),
        "nobody else runs a round before the next is due"
    );
    assert!(
        store
            .claim_retention_round(at(2_000), at(3_000))
            .await
            .expect("claim succeeds"),
        "the next round is due when the last one said"
    );
}

pub(super) async fn pruning_takes_old_finished_history_and_keeps_the_rest(store: &dyn QueueStore) {
    let account = AccountId::random();
    let mut dead = Vec::new();
    for (n, failed_at) in [(0, at(20_000)), (1, at(40_000))] {
        let claimed = claim_one(store, account, &format!("https://example.com/prune/{n}")).await;
        let dlq_id = format!("prune-{n}-{}", failed_at.as_millis());
        let failed = vec![NewEvent {
            time: failed_at,
            state: MessageState::Failed,
            detail: EventDetail::default(),
        }];
        dead_letter(store, claimed.clone(), &dlq_id, 500, failed_at, failed).await;
        dead.push((dlq_id, claimed.id));
    }
    let pending = enqueue(
        store,
        vec![message(account, "https://example.com/prune/later", at(90_000))],
    )
    .await;

    let cut = at(30_000);
    while store.prune_dead_letters(cut, 1).await.expect("prune") > 0 {}
    let left = store
        .dead_letters(account, &Filter::default(), None, 10)
        .await
        .expect("list");
    let left: Vec<&str> = left.items.iter().map(|d| d.dlq_id.as_str()).collect();
    assert_eq!(
        left,
        [dead[1].0.as_str()],
        "only the dead letter from before the cut goes"
    );

    let mut from = None;
    loop {
        let (_, next) = store.prune_log(cut, 2, from).await.expect("prune");
        match next {
            Some(next) => from = Some(next),
            None => break,
        }
    }
    assert!(
        states(store, account, &dead[0].1).await.is_empty(),
        "a message finished before the cut leaves the log"
    );
    assert!(
        !states(store, account, &dead[1].1).await.is_empty(),
        "one finished after the cut stays"
    );
    assert_eq!(
        states(store, account, &pending[0]).await,
        [MessageState::Created],
        "a pending message keeps its events"
    );
}
