//! The message queue's and workflow runs' operations (the account's queue token).

use serde_json::{Value, json};

use super::schemas::{any_object, array, boolean, integer, object, r, string};
use super::{Auth, Op};

fn op(method: &'static str, path: &'static str, summary: &'static str) -> Op {
    Op::new(method, path, "queue", Auth::Queue, summary)
}

/// The body of `/v2/batch` and `/v2/batch/trigger`: an array of messages.
fn batch_items() -> Value {
    array(object(
        &[
            ("destination", string()),
            ("queue", string()),
            ("headers", any_object()),
            ("body", string()),
        ],
        1,
    ))
}

fn run_op(method: &'static str, path: &'static str, summary: &'static str) -> Op {
    Op::new(method, path, "workflow", Auth::Queue, summary)
}

/// The headers that shape a published message (each also spelled `Upstash-*`; `Svc-Forward-*`
/// headers go to the destination).
fn with_publish_headers(mut op: Op) -> Op {
    for (name, description) in [
        ("Svc-Method", "The method deliveries use (POST)."),
        (
            "Svc-Delay",
            "Wait this long before the first delivery (`30s`, `1h`, `7d`).",
        ),
        (
            "Svc-Not-Before",
            "Deliver no sooner than this Unix time, in seconds.",
        ),
        ("Svc-Retries", "How many times a failed delivery is tried again."),
        (
            "Svc-Retry-Delay",
            "An expression for the wait before each retry (`1000 * (1 + retried)`).",
        ),
        ("Svc-Timeout", "How long a delivery may take."),
        (
            "Svc-Callback",
            "Where the answer of a successful delivery is posted.",
        ),
        (
            "Svc-Failure-Callback",
            "Where the last answer of a failed message is posted.",
        ),
        (
            "Svc-Deduplication-Id",
            "Messages with the same id within a while are published once.",
        ),
        (
            "Svc-Content-Based-Deduplication",
            "`true`: deduplicate by destination, body and headers.",
        ),
        (
            "Svc-Flow-Control-Key",
            "The key whose parallelism and rate limit deliveries.",
        ),
        (
            "Svc-Flow-Control-Value",
            "`parallelism=N, rate=N, period=1s` for the key.",
        ),
        ("Svc-Label", "A label to find the message by in logs."),
    ] {
        op = op.header(name, description);
    }
    op.raw_body()
}

fn published() -> Value {
    json!({"anyOf": [r("Published"), array(r("Published"))]})
}

fn paging(op: Op, filters: &[(&str, &str)]) -> Op {
    let mut op = op
        .query("cursor", string(), "Where the previous page ended.")
        .query("count", integer(), "How many to answer at most.");
    for (name, description) in filters {
        op = op.query(name, string(), description);
    }
    op
}

const MESSAGE_FILTERS: [(&str, &str); 9] = [
    ("messageId", "Only this message."),
    (
        "state",
        "Only events of this state (CREATED, ACTIVE, DELIVERED, ERROR, RETRY, FAILED, CANCELED...).",
    ),
    ("url", "Only messages to this URL."),
    ("topicName", "Only messages of this URL group."),
    ("scheduleId", "Only messages of this schedule."),
    ("queueName", "Only messages of this queue."),
    ("label", "Only messages with this label."),
    ("fromDate", "From this Unix time, in milliseconds."),
    ("toDate", "Until this Unix time, in milliseconds."),
];

const PENDING_FILTERS: [(&str, &str); 11] = [
    ("url", "Only messages to this URL."),
    ("host", "Only messages to this host."),
    ("path", "Only messages to this path."),
    ("topicName", "Only messages of this URL group."),
    ("queueName", "Only messages of this queue."),
    ("scheduleId", "Only messages of this schedule."),
    ("label", "Only messages with this label."),
    ("flowControlKey", "Only messages with this flow-control key."),
    ("callerIp", "Only messages published from this address."),
    ("fromDate", "Created from this Unix time, in milliseconds."),
    ("toDate", "Created until this Unix time, in milliseconds."),
];

fn queue_operations() -> Vec<Op> {
    let ids_body = |field: &str| object(&[(field, array(string()))], 0);
    vec![
        with_publish_headers(op(
            "POST",
            "/v2/publish/{destination}",
            "Publish a message to a URL or a URL group.",
        ))
        .ok(published())
        .answer(
            "202",
            "A message with the same deduplication id was published already.",
            Some(r("Published")),
        ),
        with_publish_headers(op(
            "POST",
            "/v2/enqueue/{queue}/{destination}",
            "Publish a message through a FIFO queue.",
        ))
        .ok(published())
        .answer(
            "202",
            "A message with the same deduplication id was published already.",
            Some(r("Published")),
        ),
        op(
            "POST",
            "/v2/batch",
            "Publish several messages, each with its destination and headers.",
        )
        .json(batch_items(), true)
        .ok(array(
            json!({"anyOf": [published(), object(&[("error", string())], 1)]}),
        )),
        paging(
            op(
                "GET",
                "/v2/messages",
                "A page of the messages waiting for delivery, oldest first (a Quiver addition). A page \
                 reads at most 2,000 messages: with a narrow filter it may hold fewer than `count` and \
                 still have a cursor.",
            ),
            &PENDING_FILTERS[..],
        )
        .ok(object(
            &[("messages", array(r("Message"))), ("cursor", string())],
            1,
        )),
        op("GET", "/v2/messages/{id}", "A message that waits for delivery.").ok(r("Message")),
        op("DELETE", "/v2/messages/{id}", "Cancel a message.").ok(r("Cancelled")),
        op(
            "DELETE",
            "/v2/messages",
            "Cancel messages by ids, or by filter (all when none is given).",
        )
        .json(
            object(
                &[
                    ("messageIds", array(string())),
                    ("url", string()),
                    ("topicName", string()),
                    ("queueName", string()),
                    ("scheduleId", string()),
                    ("label", string()),
                    ("fromDate", integer()),
                    ("toDate", integer()),
                ],
                0,
            ),
            false,
        )
        .ok(r("Cancelled")),
        paging(
            op("GET", "/v2/dlq", "A page of dead letters."),
            &MESSAGE_FILTERS[..],
        )
        .ok(r("DeadLetters")),
        op("DELETE", "/v2/dlq", "Delete dead letters by ids or by filter.")
            .json(ids_body("dlqIds"), false)
            .ok(r("Deleted")),
        op("GET", "/v2/dlq/{id}", "A dead letter.").ok(r("DeadLetter")),
        op("DELETE", "/v2/dlq/{id}", "Delete a dead letter.").ok(r("Deleted")),
        op(
            "POST",
            "/v2/dlq/retry",
            "Publish dead letters again, by ids or by filter.",
        )
        .json(ids_body("dlqIds"), false)
        .ok(object(
            &[
                ("cursor", string()),
                ("responses", array(object(&[("messageId", string())], 1))),
            ],
            2,
        )),
        op("POST", "/v2/dlq/retry/{id}", "Publish a dead letter again.").answer(
            "201",
            "Published again.",
            Some(object(&[("messageId", string())], 1)),
        ),
        paging(
            op("GET", "/v2/events", "A page of the events log, newest first."),
            &MESSAGE_FILTERS[..],
        )
        .ok(object(&[("events", array(r("Event"))), ("cursor", string())], 1)),
        paging(
            op(
                "GET",
                "/v2/logs",
                "The events log, as `/v2/events`, its page also named `logs`.",
            ),
            &MESSAGE_FILTERS[..],
        )
        .ok(object(
            &[
                ("logs", array(r("Event"))),
                ("events", array(r("Event"))),
                ("cursor", string()),
            ],
            2,
        )),
        op("GET", "/v2/topics", "The URL groups.").ok(array(r("UrlGroup"))),
        op("GET", "/v2/topics/{name}", "A URL group.").ok(r("UrlGroup")),
        op("DELETE", "/v2/topics/{name}", "Delete a URL group.").ok_empty(),
        op(
            "PATCH",
            "/v2/topics/{name}",
            "Set the headers every message to the group carries (SPEC C5).",
        )
        .json(object(&[("headers", any_object())], 1), true)
        .ok_empty(),
        op(
            "POST",
            "/v2/topics/{name}/endpoints",
            "Add endpoints to a URL group (made when it does not exist).",
        )
        .json(object(&[("endpoints", array(r("Endpoint")))], 1), true)
        .ok_empty(),
        op(
            "DELETE",
            "/v2/topics/{name}/endpoints",
            "Remove endpoints from a URL group, by URL or name (SPEC C2).",
        )
        .json(
            object(
                &[(
                    "endpoints",
                    array(object(&[("url", string()), ("name", string())], 0)),
                )],
                1,
            ),
            true,
        )
        .ok_empty(),
        op("GET", "/v2/queues", "The FIFO queues.").ok(array(r("Queue"))),
        op("POST", "/v2/queues", "Make or change a FIFO queue.")
            .json(
                object(
                    &[
                        ("queueName", string()),
                        ("parallelism", integer()),
                        ("paused", json!({"type": "boolean"})),
                    ],
                    1,
                ),
                true,
            )
            .ok_empty(),
        op("GET", "/v2/queues/{name}", "A FIFO queue.").ok(r("Queue")),
        op("DELETE", "/v2/queues/{name}", "Delete a FIFO queue.").ok_empty(),
        op(
            "POST",
            "/v2/queues/{name}/pause",
            "Pause a FIFO queue's deliveries.",
        )
        .ok_empty(),
        op(
            "POST",
            "/v2/queues/{name}/resume",
            "Resume a FIFO queue's deliveries.",
        )
        .ok_empty(),
        op("GET", "/v2/flowControl", "Every flow-control key with its state.").ok(array(r("FlowControl"))),
        op("GET", "/v2/flowControl/{key}", "A flow-control key's state.").ok(r("FlowControl")),
        op(
            "POST",
            "/v2/flowControl/{key}/{action}",
            "pause, resume, pin, unpin or resetRate a key.",
        )
        .query(
            "parallelism",
            string(),
            "pin: the parallelism to pin; unpin: `true` to unpin it.",
        )
        .query(
            "rate",
            string(),
            "pin: the rate to pin; unpin: `true` to unpin it.",
        )
        .query("period", integer(), "pin: the rate's period, in seconds.")
        .ok_empty(),
        op(
            "GET",
            "/v2/globalParallelism",
            "The account's deliveries in flight and their maximum.",
        )
        .ok(object(
            &[("parallelismMax", integer()), ("parallelismCount", integer())],
            2,
        )),
        op("GET", "/v2/schedules", "The schedules.").ok(array(r("Schedule"))),
        with_publish_headers(op(
            "POST",
            "/v2/schedules/{schedule}",
            "Create a schedule to the destination the path names (`Svc-Cron`, and a message's headers).",
        ))
        .header(
            "Svc-Cron",
            "The cron expression (`CRON_TZ=` prefix for a time zone).",
        )
        .header(
            "Svc-Schedule-Id",
            "The schedule's id: replaces the schedule with this id.",
        )
        .ok(object(&[("scheduleId", string())], 1)),
        op("GET", "/v2/schedules/{schedule}", "A schedule (SPEC C3).").ok(r("Schedule")),
        op("DELETE", "/v2/schedules/{schedule}", "Delete a schedule.").ok_empty(),
        op("POST", "/v2/schedules/{schedule}/pause", "Pause a schedule.")
            .also(&["PATCH"])
            .ok_empty(),
        op("POST", "/v2/schedules/{schedule}/resume", "Resume a schedule.")
            .also(&["PATCH"])
            .ok_empty(),
        op("GET", "/v2/keys", "The signing keys.")
            .ok(object(&[("current", string()), ("next", string())], 2)),
        op(
            "POST",
            "/v2/keys/rotate",
            "Rotate the signing keys: next becomes current, a new next is made.",
        )
        .ok(object(&[("current", string()), ("next", string())], 2)),
        op(
            "POST",
            "/llm/v1/chat/completions",
            "Chat completions through the configured provider (501 when none is).",
        )
        .json(any_object(), true)
        .ok(any_object()),
    ]
}

fn workflow_operations() -> Vec<Op> {
    let notified = array(r("Notified"));
    let runs_body = object(
        &[
            ("workflowRunIds", array(string())),
            ("workflowUrl", string()),
            ("fromDate", integer()),
            ("toDate", integer()),
        ],
        0,
    );
    vec![
        with_publish_headers(run_op(
            "POST",
            "/v2/trigger/{url}",
            "Start a workflow run at a URL.",
        ))
        .header("Svc-Workflow-RunId", "The run's id (made when absent).")
        .ok(r("RunStarted")),
        run_op(
            "POST",
            "/v2/batch/trigger",
            "Start several workflow runs, each as `/v2/trigger/{url}` would, from its destination, \
             headers (`Svc-Workflow-RunId` among them) and body; an item that cannot start answers \
             with its error in its place.",
        )
        .json(batch_items(), true)
        .answer(
            "201",
            "Each item's run (`deduplicated` when its id had been started before), or its error.",
            Some(array(json!({"anyOf": [
                object(
                    &[
                        ("workflowRunId", string()),
                        ("workflowCreatedAt", integer()),
                        ("deduplicated", boolean()),
                    ],
                    3,
                ),
                object(&[("error", string())], 1),
            ]}))),
        ),
        run_op(
            "POST",
            "/v2/wait/{event}",
            "A run waits for an event (used by the workflow SDK).",
        )
        .json(any_object(), true)
        .ok_empty(),
        run_op("POST", "/v2/notify/{event}", "Notify every waiter of an event.")
            .raw_body()
            .answer("201", "The waiters notified.", Some(notified.clone())),
        run_op(
            "POST",
            "/v2/notify/{run}/{event}",
            "Notify one run's waiter of an event.",
        )
        .raw_body()
        .answer("201", "The waiters notified.", Some(notified.clone())),
        run_op("GET", "/v2/waiters/{event}", "The runs that wait for an event.").ok(array(r("Waiter"))),
        Op::new(
            "POST",
            "/v2/workflows/hooks/{user}/{run}/{event}",
            "workflow",
            Auth::Open,
            "A webhook a third party calls (no token: the user, run and random event ids in the path \
             address the waiting run).",
        )
        .also(&["GET", "PUT", "PATCH", "DELETE"])
        .raw_body()
        .ok(notified),
        run_op(
            "DELETE",
            "/v2/workflows/runs",
            "Cancel runs by ids, URL or date (SPEC C1).",
        )
        .json(runs_body, false)
        .ok(object(
            &[("cancelled", integer()), ("errors", array(any_object()))],
            1,
        )),
        run_op("GET", "/v2/workflows/runs/{id}", "A running run's steps so far.").ok(json!({})),
        run_op("DELETE", "/v2/workflows/runs/{id}", "Cancel a run.").ok_empty(),
        paging(
            run_op(
                "GET",
                "/v2/workflows/logs",
                "A page of workflow runs, newest first.",
            ),
            &[
                ("workflowRunId", "Only this run."),
                ("workflowUrl", "Only runs at this URL."),
                (
                    "state",
                    "Only runs in this state (RUN_STARTED, RUN_SUCCESS, RUN_FAILED, RUN_CANCELED).",
                ),
                ("fromDate", "From this Unix time, in milliseconds."),
                ("toDate", "Until this Unix time, in milliseconds."),
            ],
        )
        .ok(object(
            &[("runs", array(r("WorkflowRun"))), ("cursor", string())],
            1,
        )),
        paging(
            run_op(
                "GET",
                "/v2/workflows/events",
                "The workflow runs, as `/v2/workflows/logs`.",
            ),
            &[],
        )
        .ok(object(
            &[("runs", array(r("WorkflowRun"))), ("cursor", string())],
            1,
        )),
        paging(
            run_op(
                "GET",
                "/v2/workflows/dlq",
                "A page of failed workflow runs' dead letters.",
            ),
            &[],
        )
        .ok(r("DeadLetters")),
        run_op(
            "DELETE",
            "/v2/workflows/dlq",
            "Delete workflow dead letters by ids.",
        )
        .json(object(&[("dlqIds", array(string()))], 0), false)
        .ok(r("Deleted")),
        run_op(
            "DELETE",
            "/v2/workflows/dlq/{dlq}",
            "Delete a workflow dead letter.",
        )
        .ok(r("Deleted")),
        run_op(
            "POST",
            "/v2/workflows/dlq/{dlq}",
            "`restart` or `resume` failed runs, by dead letter ids.",
        )
        .json(object(&[("dlqIds", array(string()))], 0), false)
        .ok(object(
            &[("workflowRuns", array(r("RunStarted"))), ("cursor", string())],
            2,
        )),
        run_op(
            "POST",
            "/v2/workflows/dlq/{action}/{dlqId}",
            "`restart` or `resume` one failed run, or (`callback`) send its failure callback again.",
        )
        .ok(r("RunStarted")),
        run_op(
            "DELETE",
            "/v2/workflows/dlq/{action}/{dlqId}",
            "Cancel a failed run's failure callback while it is in progress (`callback` only).",
        )
        .ok(r("RunStarted")),
    ]
}

pub(super) fn operations() -> Vec<Op> {
    let mut ops = queue_operations();
    ops.extend(workflow_operations());
    ops
}
