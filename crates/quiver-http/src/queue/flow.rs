//! The flow-control API (wire-format §3.12): read keys, pause, resume, pin, unpin, reset the rate.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use quiver_queue::flow::{FlowControlChange, FlowControlState};
use serde::Serialize;
use serde_json::Value;

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::{ApiError, ApiResult};
use crate::queue::params::Params;
use crate::state::AppState;

/// `FlowControlInfo`; limits that are not set read 0.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FlowControlInfo {
    flow_control_key: String,
    wait_list_size: u64,
    parallelism_max: u32,
    parallelism_count: u64,
    rate_max: u32,
    rate_count: u64,
    rate_period: u64,
    rate_period_start: i64,
    is_pinned_parallelism: bool,
    is_pinned_rate: bool,
    is_paused: bool,
}

impl From<FlowControlState> for FlowControlInfo {
    fn from(state: FlowControlState) -> Self {
        FlowControlInfo {
            flow_control_key: state.key,
            wait_list_size: state.wait_list_size,
            parallelism_max: state.parallelism_max,
            parallelism_count: state.parallelism_count,
            rate_max: state.rate_max,
            rate_count: state.rate_count,
            rate_period: state.rate_period_secs,
            rate_period_start: state.rate_period_start.as_secs(),
            is_pinned_parallelism: state.pinned_parallelism,
            is_pinned_rate: state.pinned_rate,
            is_paused: state.paused,
        }
    }
}

pub(crate) async fn get_flow_control(
    State(state): State<AppState>,
    caller: QueueAccount,
    Path(key): Path<String>,
) -> ApiResult<Json<FlowControlInfo>> {
    Ok(Json(
        state
            .queue
            .flow_control
            .get(caller.account.id, &key)
            .await?
            .into(),
    ))
}

pub(crate) async fn list_flow_controls(
    State(state): State<AppState>,
    caller: QueueAccount,
) -> ApiResult<Json<Vec<FlowControlInfo>>> {
    let all = state.queue.flow_control.list(caller.account.id).await?;
    Ok(Json(all.into_iter().map(FlowControlInfo::from).collect()))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GlobalParallelism {
    parallelism_max: usize,
    parallelism_count: u64,
}

pub(crate) async fn global_parallelism(
    State(state): State<AppState>,
    caller: QueueAccount,
) -> ApiResult<Json<GlobalParallelism>> {
    let (max, count) = state
        .queue
        .flow_control
        .global_parallelism(caller.account.id)
        .await?;
    Ok(Json(GlobalParallelism {
        parallelism_max: max,
        parallelism_count: count,
    }))
}

/// A whole number of a pin (`period` may end in `s`); absent or empty reads as `None`.
fn number(params: &mut Params, name: &str) -> ApiResult<Option<u64>> {
    match params
        .one(name)?
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => Ok(None),
        Some(text) => text
            .trim_end_matches('s')
            .parse::<u64>()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("{name}: `{text}` is not a whole number"))),
    }
}

/// A limit of a pin, which fits in `u32`.
fn limit(params: &mut Params, name: &str) -> ApiResult<Option<u32>> {
    number(params, name)?
        .map(|n| u32::try_from(n).map_err(|_| ApiError::bad_request(format!("{name}: {n} is too large"))))
        .transpose()
}

/// A flag of an unpin: `true`/`1` or `false`/`0` (any case); absent or empty reads as `false`.
fn unpin_flag(params: &mut Params, name: &str) -> ApiResult<bool> {
    match params.one(name)?.as_deref().map(str::trim) {
        None | Some("") => Ok(false),
        Some(v) if v.eq_ignore_ascii_case("true") || v == "1" => Ok(true),
        Some(v) if v.eq_ignore_ascii_case("false") || v == "0" => Ok(false),
        Some(v) => Err(ApiError::bad_request(format!(
            "{name}: `{v}` is not true or false"
        ))),
    }
}

/// `pause`, `resume`, `pin`, `unpin` or `resetRate` on a key. A query parameter the action does not
/// take is refused by name.
pub(crate) async fn change_flow_control(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
    Path((key, action)): Path<(String, String)>,
    uri: Uri,
) -> ApiResult<StatusCode> {
    let mut params = Params::new(&uri, &Value::Null)?;
    let change = match action.as_str() {
        "pause" => FlowControlChange::Pause,
        "resume" => FlowControlChange::Resume,
        "resetRate" => FlowControlChange::ResetRate,
        "pin" => FlowControlChange::Pin {
            parallelism: limit(&mut params, "parallelism")?,
            rate: limit(&mut params, "rate")?,
            period_secs: number(&mut params, "period")?,
        },
        "unpin" => FlowControlChange::Unpin {
            parallelism: unpin_flag(&mut params, "parallelism")?,
            rate: unpin_flag(&mut params, "rate")?,
        },
        other => {
            return Err(ApiError::not_found(format!(
                "unknown flow control action `{other}`; expected pause, resume, pin, unpin or resetRate"
            )));
        }
    };
    params.finish()?;
    state
        .queue
        .flow_control
        .change(caller.account.id, &key, change)
        .await?;
    Ok(StatusCode::OK)
}
