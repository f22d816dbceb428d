//! What the conformance checks build on: a fixed "now", messages, and reading states back.

use std::time::Duration;

use quiver_core::{AccountId, Timestamp};
use serde_json::json;

use crate::message::{DeadLetter, Message, MessageId, MessageSpec, MessageState, NewEvent, NewMessage};
use crate::store::{AttemptRecord, AttemptResolution, Filter, QueueStore};

/// 2026-01-01T00:00:00Z: every check's "now".
pub(super) const START: Timestamp = Timestamp::from_millis(1_767_225_600_000);

pub(super) fn at(seconds: u64) -> Timestamp {
    START.saturating_add(Duration::from_secs(seconds))
}

pub(super) fn spec(url: &str) -> MessageSpec {
    serde_json::from_value(json!({
        "kind": "publish", "url": url, "method": "POST", "headers": [["X-A", "1"]],
        "max_retries": 3, "timeout_ms": 1000, "labels": ["l"],
    }))
    .expect("a valid spec")
}

pub(super) fn message(account: AccountId, url: &str, due: Timestamp) -> NewMessage {
    NewMessage {
        message: Message {
            id: MessageId::generate(START),
            account_id: account,
            spec: spec(url),
            body: b"body \x00 bytes".to_vec(),
            retried: 0,
            not_before: due,
            created_at: START,
        },
        dedup: None,
        leased_until: None,
        early: None,
    }
}

pub(super) async fn enqueue(store: &dyn QueueStore, messages: Vec<NewMessage>) -> Vec<MessageId> {
    store
        .enqueue(messages, START)
        .await
        .expect("enqueue succeeds")
        .into_iter()
        .map(|e| e.message_id)
        .collect()
}

pub(super) async fn states(store: &dyn QueueStore, account: AccountId, id: &MessageId) -> Vec<MessageState> {
    let filter = Filter {
        message_ids: vec![id.0.clone()],
        ..Filter::default()
    };
    let page = store
        .events(account, &filter, None, 100)
        .await
        .expect("events succeed");
    page.items.iter().rev().map(|e| e.state).collect()
}

/// Enqueues a message due now and claims it.
pub(super) async fn claim_one(store: &dyn QueueStore, account: AccountId, url: &str) -> Message {
    enqueue(store, vec![message(account, url, at(0))]).await;
    store
        .claim_due(at(5_000), 1_000, at(5_100))
        .await
        .expect("claim succeeds")
        .into_iter()
        .find(|m| m.account_id == account && m.spec.url == url)
        .expect("the message is claimed")
}

/// Records `claimed`'s last attempt, answered `status` at `failed_at`: it becomes dead letter `dlq_id`,
/// with `events` logged.
pub(super) async fn dead_letter(
    store: &dyn QueueStore,
    claimed: Message,
    dlq_id: &str,
    status: u16,
    failed_at: Timestamp,
    events: Vec<NewEvent>,
) {
    store
        .record_attempt(AttemptRecord {
            message: claimed.clone(),
            resolution: AttemptResolution::Finished {
                dead_letter: Some(Box::new(DeadLetter {
                    dlq_id: dlq_id.to_owned(),
                    message: claimed,
                    response_status: Some(status),
                    response_headers: Vec::new(),
                    response_body: Vec::new(),
                    failed_at,
                    failure_callback: None,
                })),
            },
            events,
            follow_ups: Vec::new(),
            failure_callback_report: None,
        })
        .await
        .expect("record succeeds");
}
