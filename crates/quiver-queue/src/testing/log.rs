//! The events log: pages newest first, and an attempt's events in the order written under every filter.

use std::sync::Arc;

use quiver_core::AccountId;

use super::fixtures::{at, enqueue, message};
use crate::early::Early;
use crate::message::{EventDetail, MessageState, NewEvent};
use crate::store::{AttemptRecord, AttemptResolution, CancelFilter, Filter, QueueStore};

pub(super) async fn the_events_log_pages_newest_first(store: &dyn QueueStore) {
    let account = AccountId::random();
    let ids = enqueue(
        store,
        (0..5)
            .map(|n| message(account, &format!("https://example.com/log/{n}"), at(3_600)))
            .collect(),
    )
    .await;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .events(account, &Filter::default(), cursor.as_deref(), 2)
            .await
            .expect("events succeed");
        assert!(page.items.len() <= 2);
        seen.extend(page.items.iter().map(|e| e.message_id.clone()));
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first, "every event once, newest first");
}

/// The log filters by the destination's host and path, for messages stored together whose
/// destinations repeat and change.
pub(super) async fn the_events_log_filters_by_host_and_path(store: &dyn QueueStore) {
    let account = AccountId::random();
    let urls = [
        "https://a.example.com/x",
        "https://a.example.com/x",
        "https://b.example.com/y",
        "https://a.example.com/x",
        "not a url",
    ];
    let ids = enqueue(
        store,
        urls.iter().map(|url| message(account, url, at(3_600))).collect(),
    )
    .await;
    let listed = |filter: Filter| async move {
        let page = store
            .events(account, &filter, None, 100)
            .await
            .expect("events succeed");
        let mut listed: Vec<String> = page.items.into_iter().map(|e| e.message_id.0).collect();
        listed.sort();
        listed
    };
    let of = |picked: &[usize]| {
        let mut picked: Vec<String> = picked.iter().map(|&i| ids[i].0.clone()).collect();
        picked.sort();
        picked
    };
    let by_host = Filter {
        hosts: vec!["b.example.com".into()],
        ..Filter::default()
    };
    assert_eq!(listed(by_host).await, of(&[2]), "by host");
    let by_path = Filter {
        paths: vec!["/x".into()],
        ..Filter::default()
    };
    assert_eq!(listed(by_path).await, of(&[0, 1, 3]), "by path");
    assert_eq!(
        listed(Filter::default()).await,
        of(&[0, 1, 2, 3, 4]),
        "a destination that is not a URL is listed without a filter"
    );
}

/// However a store keeps an attempt's events (a backend may keep several in one row), they list as
/// written: newest first, each once across pages of any size, under state and time filters.
pub(super) async fn an_attempts_events_list_in_the_order_written_under_every_filter_and_cursor(
    store: &dyn QueueStore,
) {
    let account = AccountId::random();
    let urls = [
        "https://example.com/a/delivered",
        "https://example.com/a/retried",
        "https://example.com/a/failed",
        "https://example.com/a/cancelled",
        "https://example.com/a/early",
    ];
    let due = [at(0), at(0), at(0), at(3_600)];
    let mut ids = enqueue(
        store,
        urls.iter()
            .zip(due)
            .map(|(url, due)| message(account, url, due))
            .collect(),
    )
    .await;
    let claimed = store
        .claim_due(at(10), 1_000, at(100))
        .await
        .expect("claim succeeds");
    let claimed = |url: &str| {
        claimed
            .iter()
            .find(|m| m.spec.url == url)
            .expect("each message is claimed")
            .clone()
    };
    let logged = |state, seconds| NewEvent {
        time: at(seconds),
        state,
        detail: EventDetail::default(),
    };
    let failed = |seconds| NewEvent {
        time: at(seconds),
        state: MessageState::Error,
        detail: EventDetail {
            error: Some("destination answered 500".into()),
            response_status: Some(500),
            ..EventDetail::default()
        },
    };
    let records = [
        (
            claimed(urls[0]),
            AttemptResolution::Finished { dead_letter: None },
            vec![
                logged(MessageState::Active, 10),
                logged(MessageState::Delivered, 11),
            ],
        ),
        (
            claimed(urls[1]),
            AttemptResolution::Retry {
                retried: 1,
                at: at(3_600),
            },
            vec![
                logged(MessageState::Active, 10),
                failed(12),
                logged(MessageState::Retry, 12),
            ],
        ),
        (
            claimed(urls[2]),
            AttemptResolution::Finished { dead_letter: None },
            vec![
                logged(MessageState::Active, 10),
                failed(13),
                logged(MessageState::Failed, 13),
            ],
        ),
    ];
    for (message, resolution, events) in records {
        store
            .record_attempt(AttemptRecord {
                message,
                resolution,
                events,
                follow_ups: Vec::new(),
                failure_callback_report: None,
            })
            .await
            .expect("the outcome is applied");
    }
    let cancelled = store
        .cancel(
            account,
            Some(vec![ids[3].clone()]),
            CancelFilter::default(),
            None,
            at(14),
        )
        .await
        .expect("cancel succeeds");
    assert_eq!(cancelled, 1);
    // Last, a message whose delivery finished before its publish was written (see `crate::early`): a
    // store may keep its three events in one row.
    let mut early = message(account, urls[4], at(0));
    let cell = Arc::new(Early::default());
    cell.offer(Box::new(AttemptRecord {
        message: early.message.clone(),
        resolution: AttemptResolution::Finished { dead_letter: None },
        events: vec![
            logged(MessageState::Active, 15),
            logged(MessageState::Delivered, 16),
        ],
        follow_ups: Vec::new(),
        failure_callback_report: None,
    }))
    .expect("the store has not written the message");
    early.early = Some(cell);
    ids.extend(enqueue(store, vec![early]).await);
    use MessageState::{Active, CancelRequested, Canceled, Created, Delivered, Error, Failed, Retry};
    let expected = [
        (4, Delivered, 16),
        (4, Active, 15),
        (4, Created, 0),
        (3, Canceled, 14),
        (3, CancelRequested, 14),
        (2, Failed, 13),
        (2, Error, 13),
        (2, Active, 10),
        (1, Retry, 12),
        (1, Error, 12),
        (1, Active, 10),
        (0, Delivered, 11),
        (0, Active, 10),
        (3, Created, 0),
        (2, Created, 0),
        (1, Created, 0),
        (0, Created, 0),
    ];
    let list = |filter: Filter, size: usize| async move {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = store
                .events(account, &filter, cursor.as_deref(), size)
                .await
                .expect("events succeed");
            assert!(page.items.len() <= size, "a page holds at most its count");
            seen.extend(page.items);
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => break seen,
            }
        }
    };
    let wanted = |keep: &dyn Fn(usize, MessageState, u64) -> bool| {
        expected
            .iter()
            .filter(|(n, state, seconds)| keep(*n, *state, *seconds))
            .map(|(n, state, seconds)| (ids[*n].clone(), *state, at(*seconds), urls[*n].to_owned()))
            .collect::<Vec<_>>()
    };
    let read = |events: Vec<crate::message::Event>| {
        events
            .into_iter()
            .map(|e| (e.message_id, e.state, e.time, e.spec.url))
            .collect::<Vec<_>>()
    };
    for size in [1, 2, 3, 100] {
        assert_eq!(
            read(list(Filter::default(), size).await),
            wanted(&|_, _, _| true),
            "every event once, newest first, in pages of {size}"
        );
    }
    let error = list(
        Filter {
            states: vec![Error],
            ..Filter::default()
        },
        100,
    )
    .await;
    assert_eq!(
        error.iter().map(|e| e.detail.response_status).collect::<Vec<_>>(),
        [Some(500), Some(500)],
        "an event keeps its detail"
    );
    for states in [
        vec![Active],
        vec![Created],
        vec![Active, Delivered],
        vec![Created, Failed],
        vec![Canceled, Retry],
    ] {
        let filter = Filter {
            states: states.clone(),
            ..Filter::default()
        };
        assert_eq!(
            read(list(filter, 2).await),
            wanted(&|_, state, _| states.contains(&state)),
            "the events in states {states:?}"
        );
    }
    let window = Filter {
        from: Some(at(10)),
        to: Some(at(11)),
        ..Filter::default()
    };
    assert_eq!(
        read(list(window, 2).await),
        wanted(&|_, _, seconds| (10..=11).contains(&seconds)),
        "the events within a time range"
    );
    let one = Filter {
        message_ids: vec![ids[0].0.clone()],
        ..Filter::default()
    };
    assert_eq!(
        read(list(one, 1).await),
        wanted(&|n, _, _| n == 0),
        "the events of one message"
    );
}
