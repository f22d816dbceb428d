//! What a restart keeps: every write a store acknowledged, and the lease of a message that was being
//! delivered (until `release_leases`, which the delivery worker calls at start).

use std::future::Future;
use std::sync::Arc;

use quiver_core::AccountId;

use super::fixtures::{START, at, enqueue, message};
use super::nouns::{queue_name, run_id, schedule_id};
use crate::message::{MessageId, MessageState};
use crate::names::UrlGroupName;
use crate::schedule::{CronSchedule, Schedule};
use crate::store::{CancelFilter, Endpoint, Filter, QueueStore, UrlGroup};
use crate::workflow::{RunState, RunStep, WorkflowRun};

/// Opens a store over some storage with `open`, writes to it, drops it, opens the same storage again
/// with `open` and checks that everything acknowledged is there. `open` must reach the same storage
/// each time, which starts empty.
///
/// # Panics
/// When the second store misses something the first acknowledged.
pub async fn restart_keeps_every_acknowledged_write<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn QueueStore>>,
{
    let account = AccountId::random();
    let mut keyed = message(account, "https://example.com/keyed", at(3_600));
    keyed.dedup = Some(("restart-key".into(), at(7_200)));
    let group = UrlGroup {
        name: UrlGroupName::parse("kept").expect("a valid name"),
        created_at: START,
        updated_at: START,
        endpoints: vec![Endpoint {
            name: None,
            url: "https://example.com/group".into(),
        }],
        default_headers: Vec::new(),
    };
    let schedule = Schedule {
        id: schedule_id("kept"),
        account_id: account,
        cron: CronSchedule::parse("*/5 * * * *").expect("a valid cron"),
        destination: "https://example.com/cron".into(),
        headers: Vec::new(),
        body: b"tick".to_vec(),
        paused: false,
        created_at: START,
        last_fired: None,
        next_fire: Some(at(300)),
        last_states: Vec::new(),
        caller_ip: None,
    };
    let run = WorkflowRun {
        id: run_id("wfr_kept"),
        account_id: account,
        url: "https://example.com/workflow".into(),
        state: RunState::Started,
        created_at: START,
        completed_at: None,
        caller_ip: None,
        steps: vec![RunStep {
            message_id: "msg_init".into(),
            body: b"{}".to_vec(),
            call_type: "step".into(),
            created_at: START,
            headers: Vec::new(),
            retries: 0,
        }],
        response: None,
        labels: Vec::new(),
        flow_control_key: None,
        invoker: None,
    };

    let first = open().await;
    let ids = enqueue(
        &*first,
        vec![
            message(account, "https://example.com/leased", at(0)),
            keyed.clone(),
        ],
    )
    .await;
    let claimed = first
        .claim_due(at(1), 1_000, at(600))
        .await
        .expect("claim succeeds");
    assert!(
        claimed.iter().any(|m| m.id == ids[0]),
        "the due message is claimed"
    );
    first.put_url_group(account, &group).await.expect("put succeeds");
    first
        .put_fifo_queue(account, &queue_name("kept"), 2, true, START)
        .await
        .expect("put succeeds");
    first.put_schedule(&schedule).await.expect("put succeeds");
    assert!(first.start_run(&run).await.expect("start succeeds"));
    drop(first);

    let second = open().await;
    assert_eq!(
        second.message(account, &ids[1]).await.expect("read succeeds"),
        Some(keyed.message.clone()),
        "a pending message survives a restart"
    );
    let early = second
        .claim_due(at(2), 1_000, at(602))
        .await
        .expect("claim succeeds");
    assert!(
        early.iter().all(|m| m.id != ids[0]),
        "a lease taken before the restart still holds after it"
    );
    assert!(second.release_leases(at(3)).await.expect("release succeeds") >= 1);
    let released = second
        .claim_due(at(3), 1_000, at(603))
        .await
        .expect("claim succeeds");
    assert!(
        released.iter().any(|m| m.id == ids[0]),
        "a released lease makes its message due at once"
    );
    let mut again = keyed.clone();
    again.message.id = MessageId::generate(at(10));
    let deduplicated = second
        .enqueue(vec![again], at(10))
        .await
        .expect("enqueue succeeds");
    assert_eq!(
        (&deduplicated[0].message_id, deduplicated[0].deduplicated),
        (&ids[1], true),
        "a deduplication key survives a restart"
    );
    assert_eq!(
        second
            .url_group(account, &group.name)
            .await
            .expect("read succeeds"),
        Some(group),
        "a URL group survives a restart"
    );
    let queue = second
        .fifo_queue(account, &queue_name("kept"))
        .await
        .expect("read succeeds")
        .expect("a FIFO queue survives a restart");
    assert_eq!((queue.parallelism, queue.paused), (2, true));
    assert_eq!(
        second
            .schedule(account, &schedule.id)
            .await
            .expect("read succeeds"),
        Some(schedule),
        "a schedule survives a restart"
    );
    assert_eq!(
        second.run(account, &run.id).await.expect("read succeeds"),
        Some(run),
        "a workflow run survives a restart"
    );
    // The log goes on where it ended: a store may remember the end, and must find it after a restart.
    // A message enqueued first takes the next place; the CREATED event of one from before the restart
    // is written where its row kept it.
    let later = enqueue(
        &*second,
        vec![message(account, "https://example.com/later", at(3_600))],
    )
    .await;
    for (id, now) in [(&ids[1], at(20)), (&later[0], at(21))] {
        let cancelled = second
            .cancel(
                account,
                Some(vec![id.clone()]),
                CancelFilter::default(),
                None,
                now,
            )
            .await
            .expect("cancel succeeds");
        assert_eq!(cancelled, 1);
    }
    let log = second
        .events(account, &Filter::default(), None, 100)
        .await
        .expect("read succeeds")
        .items;
    let sequences: Vec<i64> = log.iter().map(|event| event.sequence).collect();
    assert!(
        sequences.windows(2).all(|pair| pair[0] > pair[1]),
        "the log, newest first, holds each place once: {sequences:?}"
    );
    let states = |id: &MessageId| {
        let mut states: Vec<_> = log
            .iter()
            .filter(|event| &event.message_id == id)
            .map(|event| event.state)
            .collect();
        states.reverse();
        states
    };
    assert_eq!(
        states(&ids[1]),
        [
            MessageState::Created,
            MessageState::CancelRequested,
            MessageState::Canceled
        ]
    );
    assert_eq!(
        states(&later[0]),
        [
            MessageState::Created,
            MessageState::CancelRequested,
            MessageState::Canceled
        ]
    );
}
