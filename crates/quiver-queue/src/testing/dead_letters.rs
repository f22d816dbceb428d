//! Dead letters: pages newest first, retried or deleted once, and their failure callbacks' states.

use quiver_core::AccountId;

use super::fixtures::{at, claim_one, dead_letter, message};
use crate::message::{FailureCallbackInfo, FailureCallbackState};
use crate::store::{AttemptRecord, AttemptResolution, Filter, QueueStore};

pub(super) async fn dead_letters_page_newest_first_and_are_retried_or_deleted_once(store: &dyn QueueStore) {
    let account = AccountId::random();
    let mut dlq_ids = Vec::new();
    for n in 0..3 {
        let claimed = claim_one(store, account, &format!("https://example.com/dead/{n}")).await;
        let dlq_id = format!("{}-{n}", at(5_001).as_millis());
        let failed_at = at(5_001 + u64::from(n));
        dead_letter(store, claimed, &dlq_id, 500 + n, failed_at, Vec::new()).await;
        dlq_ids.push(dlq_id);
    }
    let first = store
        .dead_letters(account, &Filter::default(), None, 2)
        .await
        .expect("page");
    let listed: Vec<&str> = first.items.iter().map(|d| d.dlq_id.as_str()).collect();
    assert_eq!(listed, [dlq_ids[2].as_str(), dlq_ids[1].as_str()], "newest first");
    let cursor = first.cursor.expect("a cursor while more follow");
    let second = store
        .dead_letters(account, &Filter::default(), Some(&cursor), 2)
        .await
        .expect("page");
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.items[0].dlq_id, dlq_ids[0]);
    assert_eq!(second.cursor, None, "no cursor at the end");
    let filtered = Filter {
        response_statuses: vec![501, 404],
        ..Filter::default()
    };
    let page = store
        .dead_letters(account, &filtered, None, 10)
        .await
        .expect("page");
    assert_eq!(page.items.len(), 1, "filters select");

    let replacement = message(account, "https://example.com/again", at(0));
    let retried = store
        .retry_dead_letter(account, &dlq_ids[0], replacement.clone(), at(6_000))
        .await
        .expect("retry succeeds");
    assert_eq!(retried, Some(replacement.message.id.clone()));
    let stranger = message(account, "https://example.com/never", at(0));
    assert_eq!(
        store
            .retry_dead_letter(account, &dlq_ids[0], stranger.clone(), at(6_001))
            .await
            .expect("retry succeeds"),
        None,
        "a dead letter is retried once"
    );
    assert_eq!(
        store.message(account, &stranger.message.id).await.expect("read"),
        None,
        "a retry of nothing stores nothing"
    );
    let deleted = store
        .delete_dead_letters(account, &[dlq_ids[1].clone(), dlq_ids[0].clone(), "never".into()])
        .await
        .expect("delete succeeds");
    assert_eq!(deleted, 1, "only dead letters that existed count");
}

pub(super) async fn a_failure_callback_is_cancelled_only_while_in_progress(store: &dyn QueueStore) {
    let account = AccountId::random();
    let claimed = claim_one(store, account, "https://example.com/step").await;
    let dlq_id = format!("{}-callback", at(5_001).as_millis());
    let cancel = |account| {
        let dlq_id = dlq_id.clone();
        async move {
            store
                .cancel_failure_callback(account, &dlq_id)
                .await
                .expect("cancel succeeds")
        }
    };
    let callback = || async {
        let page = store
            .dead_letters(account, &Filter::default(), None, 10)
            .await
            .expect("page");
        page.items[0].failure_callback.clone()
    };
    dead_letter(store, claimed, &dlq_id, 500, at(5_001), Vec::new()).await;
    assert!(!cancel(account).await, "no failure callback: nothing to cancel");
    let sent = message(account, "https://example.com/failure", at(0));
    let retried = store
        .retry_failure_callback(account, &dlq_id, sent.clone(), at(6_000))
        .await
        .expect("retry succeeds");
    assert!(retried);
    assert_eq!(
        callback().await.and_then(|info| info.message_id),
        Some(sent.message.id.clone()),
        "an in-progress callback names its message"
    );
    assert!(cancel(account).await);
    assert_eq!(
        callback().await.map(|info| info.state),
        Some(FailureCallbackState::Canceled)
    );
    assert!(!cancel(account).await, "cancelled once");
    assert!(
        !cancel(AccountId::random()).await,
        "another account's dead letter"
    );
    // Delivered meanwhile: no longer in progress, and the delivery's state stands.
    let again = message(account, "https://example.com/failure-again", at(0));
    store
        .retry_failure_callback(account, &dlq_id, again, at(6_001))
        .await
        .expect("retry succeeds");
    let delivered = claim_one(store, account, "https://example.com/other").await;
    let success = FailureCallbackInfo {
        state: FailureCallbackState::Success,
        ..FailureCallbackInfo::cancelled()
    };
    store
        .record_attempt(AttemptRecord {
            message: delivered,
            resolution: AttemptResolution::Finished { dead_letter: None },
            events: Vec::new(),
            follow_ups: Vec::new(),
            failure_callback_report: Some((dlq_id.clone(), success)),
        })
        .await
        .expect("record succeeds");
    assert!(!cancel(account).await);
    assert_eq!(
        callback().await.map(|info| info.state),
        Some(FailureCallbackState::Success)
    );
}
