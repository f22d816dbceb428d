//! The message queue API (`/v2/publish`, `/v2/batch`, `/v2/messages`, `/v2/dlq`, `/v2/events`,
//! `/v2/topics`, `/v2/keys`), authenticated by the account's queue token.
//!
//! Each noun has its module of handlers; `request`, `params` and `wire` are their shared leaves.

mod dead_letters;
mod events;
mod flow;
mod keys;
mod llm;
mod messages;
pub(crate) mod params;
mod queues;
pub(crate) mod request;
pub mod run_wire;
mod schedules;
mod url_groups;
mod waiters;
pub mod wire;
mod workflow_dlq;
mod workflows;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

use crate::query_keys::queue_takes;
use crate::state::AppState;

/// The queue routes. Publish bodies may be as large as the maximum message size; batches four times that.
pub fn routes(max_message_bytes: usize) -> Router<AppState> {
    let publish = Router::new()
        .route("/v2/publish/{*destination}", post(messages::publish))
        .route("/v2/enqueue/{queue}/{*destination}", post(messages::enqueue))
        .route("/v2/trigger/{*url}", post(workflows::trigger))
        .layer(DefaultBodyLimit::max(max_message_bytes));
    let batch = Router::new()
        .route("/v2/batch", post(messages::batch))
        .route("/v2/batch/trigger", post(workflows::batch_trigger))
        .layer(DefaultBodyLimit::max(max_message_bytes.saturating_mul(4)));
    Router::new()
        .merge(publish)
        .merge(batch)
        .merge(reading_their_query())
        .merge(taking_no_query())
}

/// Routes that read their own query keys: filters and pages (`params`, which refuses a key it does not
/// know), a run's end (`cancel`), a schedule's creation (its settings and its destination's keys), and
/// routes whose callers are not ours (webhooks, the language-model proxy).
fn reading_their_query() -> Router<AppState> {
    Router::new()
        .route(
            "/v2/messages",
            get(messages::list_messages).delete(messages::cancel_messages),
        )
        .route(
            "/v2/dlq",
            get(dead_letters::list_dead_letters).delete(dead_letters::delete_dead_letters),
        )
        .route("/v2/dlq/retry", post(dead_letters::retry_dead_letters))
        .route("/v2/events", get(events::list_events))
        .route("/v2/logs", get(events::list_logs))
        .route("/v2/flowControl/{key}/{action}", post(flow::change_flow_control))
        .route(
            "/v2/workflows/hooks/{user}/{run}/{event}",
            axum::routing::any(waiters::call_webhook),
        )
        .route(
            "/v2/workflows/runs",
            axum::routing::delete(workflows::cancel_runs),
        )
        .route(
            "/v2/workflows/runs/{id}",
            axum::routing::delete(workflows::end_run).route_layer(queue_takes(&["cancel"])),
        )
        .route("/v2/workflows/events", get(workflows::list_runs))
        .route("/v2/workflows/logs", get(workflows::list_runs))
        .route(
            "/v2/workflows/dlq",
            get(workflow_dlq::list).delete(workflow_dlq::delete_many),
        )
        .route("/v2/workflows/dlq/{segment}", post(workflow_dlq::recover_many))
        .route("/v2/schedules/{*rest}", axum::routing::any(schedules::schedules))
        .route("/llm/v1/chat/completions", post(llm::chat_completions))
}

/// Routes that take no query keys but the token's: any other is a 400 that names it.
fn taking_no_query() -> Router<AppState> {
    Router::new()
        .route(
            "/v2/messages/{id}",
            get(messages::get_message).delete(messages::cancel_message),
        )
        .route(
            "/v2/dlq/{id}",
            get(dead_letters::get_dead_letter).delete(dead_letters::delete_dead_letter),
        )
        .route("/v2/dlq/retry/{id}", post(dead_letters::retry_dead_letter))
        .route("/v2/topics", get(url_groups::list_url_groups))
        .route(
            "/v2/topics/{name}",
            get(url_groups::get_url_group)
                .delete(url_groups::delete_url_group)
                .patch(url_groups::set_default_headers),
        )
        .route(
            "/v2/topics/{name}/endpoints",
            post(url_groups::add_endpoints).delete(url_groups::remove_endpoints),
        )
        .route("/v2/queues", get(queues::list_queues).post(queues::upsert_queue))
        .route(
            "/v2/queues/{name}",
            get(queues::get_queue).delete(queues::delete_fifo_queue),
        )
        .route("/v2/queues/{name}/pause", post(queues::pause_queue))
        .route("/v2/queues/{name}/resume", post(queues::resume_queue))
        .route("/v2/flowControl", get(flow::list_flow_controls))
        .route("/v2/flowControl/{key}", get(flow::get_flow_control))
        .route("/v2/globalParallelism", get(flow::global_parallelism))
        .route("/v2/wait/{event}", post(waiters::wait_for_event))
        .route("/v2/notify/{event}", post(waiters::notify))
        .route("/v2/notify/{run}/{event}", post(waiters::notify_run))
        .route("/v2/waiters/{event}", get(waiters::waiters))
        .route("/v2/workflows/runs/{id}", get(workflows::run_steps))
        .route(
            "/v2/workflows/dlq/{segment}",
            axum::routing::delete(workflow_dlq::delete_one),
        )
        .route(
            "/v2/workflows/dlq/{action}/{id}",
            post(workflow_dlq::recover_one).delete(workflow_dlq::cancel_one),
        )
        .route("/v2/schedules", get(schedules::list_schedules))
        .route("/v2/keys", get(keys::get_keys))
        .route("/v2/keys/rotate", post(keys::rotate_keys))
        .route_layer(queue_takes(&[]))
}
