//! The checks of the nouns that stand alone: URL groups, schedules, FIFO queues and workflow runs, each
//! written against its own trait; and the names they use.

use quiver_core::AccountId;

use super::fixtures::{START, at};
use crate::names::{QueueName, RunId, ScheduleId, UrlGroupName};
use crate::schedule::{CronSchedule, Schedule};
use crate::store::{Endpoint, FifoQueueStore, ScheduleStore, UrlGroup, UrlGroupStore, WorkflowRunStore};
use crate::workflow::{RunState, RunStep, WorkflowRun};

pub(super) async fn url_groups_are_put_listed_by_name_and_deleted(store: &dyn UrlGroupStore) {
    let account = AccountId::random();
    let group = |name: &str| UrlGroup {
        name: UrlGroupName::parse(name).expect("a valid name"),
        created_at: START,
        updated_at: START,
        endpoints: vec![Endpoint {
            name: Some("e".into()),
            url: "https://example.com/e".into(),
        }],
        default_headers: vec![("X-Default".into(), "1".into())],
    };
    for name in ["b", "a"] {
        store
            .put_url_group(account, &group(name))
            .await
            .expect("put succeeds");
    }
    let mut changed = group("a");
    changed.endpoints.clear();
    store
        .put_url_group(account, &changed)
        .await
        .expect("put succeeds");
    assert_eq!(
        store.url_group(account, &group_name("a")).await.expect("read"),
        Some(changed),
        "a put replaces"
    );
    let names: Vec<String> = store
        .url_groups(account)
        .await
        .expect("list")
        .into_iter()
        .map(|g| g.name.to_string())
        .collect();
    assert_eq!(names, ["a", "b"], "listed by name");
    assert!(
        store
            .delete_url_group(account, &group_name("b"))
            .await
            .expect("delete")
    );
    assert!(
        !store
            .delete_url_group(account, &group_name("b"))
            .await
            .expect("delete"),
        "deleted once"
    );
    assert!(
        store
            .url_groups(AccountId::random())
            .await
            .expect("list")
            .is_empty()
    );
}

pub(super) async fn schedules_fall_due_in_order_unless_paused(store: &dyn ScheduleStore) {
    let account = AccountId::random();
    let schedule = |id: &str, next: u64, paused: bool| Schedule {
        id: schedule_id(id),
        account_id: account,
        cron: CronSchedule::parse("* * * * *").expect("a valid cron"),
        destination: "https://example.com/cron".into(),
        headers: vec![("Upstash-Retries".into(), "1".into())],
        body: b"tick".to_vec(),
        paused,
        created_at: START,
        last_fired: None,
        next_fire: (!paused).then(|| at(next)),
        last_states: Vec::new(),
        caller_ip: None,
    };
    // Far in the future, so other checks' schedules (none) and this one's never mix.
    let base = 10_000_000;
    for (id, next, paused) in [
        ("late", base + 120, false),
        ("early", base + 60, false),
        ("off", base, true),
    ] {
        store
            .put_schedule(&schedule(id, next, paused))
            .await
            .expect("put succeeds");
    }
    let listed = store.schedules(account).await.expect("list");
    assert_eq!(listed.len(), 3);
    assert_eq!(
        store
            .schedule(account, &schedule_id("early"))
            .await
            .expect("read"),
        Some(schedule("early", base + 60, false))
    );
    assert!(
        store
            .next_schedule_due()
            .await
            .expect("next")
            .is_some_and(|next| next <= at(base + 60)),
        "the earliest unpaused schedule is the next due"
    );
    let hold = at(base + 1_000);
    let claim = |now| async move {
        let due = store.claim_due_schedules(now, 10, hold).await.expect("claim");
        due.into_iter()
            .filter(|s| s.account_id == account)
            .map(|s| s.id.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        claim(at(base + 120)).await,
        ["early", "late"],
        "due schedules come earliest first, paused ones never"
    );
    assert!(
        claim(at(base + 120)).await.is_empty(),
        "a claimed schedule is nobody else's until its hold ends"
    );
    assert_eq!(
        store.next_schedule_due().await.expect("next"),
        Some(hold),
        "a held schedule is due again when its hold ends"
    );
    assert_eq!(
        claim(hold).await,
        ["early", "late"],
        "a firing that never finished fires again after the hold"
    );
    assert!(
        store
            .delete_schedule(account, &schedule_id("late"))
            .await
            .expect("delete")
    );
    assert!(
        !store
            .delete_schedule(account, &schedule_id("late"))
            .await
            .expect("delete")
    );
}

pub(super) async fn fifo_queues_are_created_once_changed_listed_and_deleted(store: &dyn FifoQueueStore) {
    let account = AccountId::random();
    store
        .ensure_fifo_queue(account, &queue_name("b"), 1, START)
        .await
        .expect("ensure succeeds");
    store
        .ensure_fifo_queue(account, &queue_name("b"), 9, at(1))
        .await
        .expect("ensure succeeds");
    let b = store
        .fifo_queue(account, &queue_name("b"))
        .await
        .expect("read")
        .expect("created");
    assert_eq!(
        (b.parallelism, b.paused),
        (1, false),
        "ensure never changes an existing queue"
    );
    store
        .put_fifo_queue(account, &queue_name("b"), 3, true, at(2))
        .await
        .expect("put succeeds");
    store
        .put_fifo_queue(account, &queue_name("a"), 1, false, at(2))
        .await
        .expect("put succeeds");
    let b = store
        .fifo_queue(account, &queue_name("b"))
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        (b.parallelism, b.paused),
        (3, true),
        "put changes parallelism and pause"
    );
    let names: Vec<String> = store
        .fifo_queues(account)
        .await
        .expect("list")
        .into_iter()
        .map(|q| q.name.to_string())
        .collect();
    assert_eq!(names, ["a", "b"], "listed by name");
    assert!(
        store
            .delete_fifo_queue(account, &queue_name("a"))
            .await
            .expect("delete")
    );
    assert!(
        !store
            .delete_fifo_queue(account, &queue_name("a"))
            .await
            .expect("delete"),
        "deleted once"
    );
    assert_eq!(
        store
            .fifo_queue(AccountId::random(), &queue_name("b"))
            .await
            .expect("read"),
        None,
        "per account"
    );
}

pub(super) async fn workflow_runs_start_once_take_steps_while_running_and_end_once(
    store: &dyn WorkflowRunStore,
) {
    let account = AccountId::random();
    let step = |id: &str| RunStep {
        message_id: id.to_owned(),
        body: id.as_bytes().to_vec(),
        call_type: "step".into(),
        created_at: START,
        headers: vec![("X-Step".into(), id.to_owned())],
        retries: 3,
    };
    let run = |id: &str, created: u64| WorkflowRun {
        id: run_id(id),
        account_id: account,
        url: "https://example.com/workflow".into(),
        state: RunState::Started,
        created_at: at(created),
        completed_at: None,
        caller_ip: Some("127.0.0.1".into()),
        steps: vec![step("init")],
        response: None,
        labels: vec!["l".into()],
        flow_control_key: Some("k".into()),
        invoker: None,
    };
    assert!(store.start_run(&run("wfr_old", 1)).await.expect("start"));
    assert!(store.start_run(&run("wfr_new", 2)).await.expect("start"));
    assert!(
        !store.start_run(&run("wfr_old", 3)).await.expect("start"),
        "a run starts once"
    );
    assert!(
        store
            .append_step(account, &run_id("wfr_old"), &step("second"))
            .await
            .expect("append")
    );
    let stored = store
        .run(account, &run_id("wfr_old"))
        .await
        .expect("read")
        .expect("exists");
    let mut expected = run("wfr_old", 1);
    expected.steps.push(step("second"));
    assert_eq!(stored, expected, "a run reads back with its steps in order");
    let ids: Vec<String> = store
        .runs(account)
        .await
        .expect("list")
        .into_iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(ids, ["wfr_new", "wfr_old"], "newest first");

    // A step whose message was not stored is taken back; a run whose start it was goes with it.
    assert!(store.start_run(&run("wfr_unstored", 4)).await.expect("start"));
    assert!(
        store
            .take_back_step(account, &run_id("wfr_unstored"), "init")
            .await
            .expect("take back")
    );
    assert_eq!(
        store.run(account, &run_id("wfr_unstored")).await.expect("read"),
        None,
        "a run without steps is gone"
    );
    assert!(
        store
            .append_step(account, &run_id("wfr_new"), &step("unstored"))
            .await
            .expect("append")
    );
    assert!(
        store
            .take_back_step(account, &run_id("wfr_new"), "unstored")
            .await
            .expect("take back")
    );
    assert_eq!(
        store.run(account, &run_id("wfr_new")).await.expect("read"),
        Some(run("wfr_new", 2)),
        "only that step is taken back"
    );
    for (id, message) in [("wfr_new", "unstored"), ("wfr_none", "init")] {
        assert!(
            !store
                .take_back_step(account, &run_id(id), message)
                .await
                .expect("take back"),
            "nothing to take back from {id} for {message}"
        );
    }

    assert!(
        store
            .finish_run(
                account,
                &run_id("wfr_old"),
                RunState::Success,
                at(10),
                Some("\"done\"".into())
            )
            .await
            .expect("finish")
    );
    assert!(
        !store
            .finish_run(account, &run_id("wfr_old"), RunState::Canceled, at(11), None)
            .await
            .expect("finish"),
        "a run ends once"
    );
    let ended = store
        .run(account, &run_id("wfr_old"))
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(
        (ended.state, ended.completed_at, ended.response.as_deref()),
        (RunState::Success, Some(at(10)), Some("\"done\""))
    );
    assert!(
        !store
            .append_step(account, &run_id("wfr_old"), &step("late"))
            .await
            .expect("append"),
        "an ended run takes no steps"
    );
    assert!(
        !store
            .append_step(account, &run_id("wfr_none"), &step("x"))
            .await
            .expect("append")
    );
    assert_eq!(
        store
            .run(AccountId::random(), &run_id("wfr_new"))
            .await
            .expect("read"),
        None,
        "per account"
    );
}

pub(super) fn group_name(name: &str) -> UrlGroupName {
    UrlGroupName::parse(name).expect("a valid name")
}

pub(super) fn schedule_id(id: &str) -> ScheduleId {
    ScheduleId::parse(id).expect("a valid id")
}

pub(super) fn queue_name(name: &str) -> QueueName {
    QueueName::parse(name).expect("a valid name")
}

pub(super) fn run_id(id: &str) -> RunId {
    RunId::parse(id).expect("a valid id")
}
