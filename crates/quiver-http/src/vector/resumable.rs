//! Resumable queries of the vector API: a query started once and continued page by page until it is
//! ended or idle for longer than its `maxIdle`.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::{Path, State};
use serde::Serialize;
use serde_json::Value;

use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::state::AppState;
use crate::vector::caller::VectorCaller;
use crate::vector::query::parse_query;
use crate::vector::reply::{Handled, namespace_of, object_of, success};
use crate::vector::wire::{Include, VectorOut, count_of, text_of};

/// Default and most `maxIdle` of a resumable query, in seconds.
const DEFAULT_MAX_IDLE_SECS: u64 = 3600;

#[derive(Debug, Serialize)]
struct ResumableStart {
    uuid: String,
    scores: Vec<VectorOut>,
}

fn include_cache() -> &'static std::sync::Mutex<HashMap<String, Include>> {
    static INCLUDES: std::sync::OnceLock<std::sync::Mutex<HashMap<String, Include>>> =
        std::sync::OnceLock::new();
    INCLUDES.get_or_init(|| std::sync::Mutex::new(HashMap::new()))
}

pub(crate) async fn resumable_query(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    JsonBody(body): JsonBody,
) -> Handled {
    let object = object_of(&body)?;
    let (query, include) = parse_query(object)?;
    let max_idle = count_of(object, "maxIdle")?
        .map_or(DEFAULT_MAX_IDLE_SECS, |s| s as u64)
        .min(DEFAULT_MAX_IDLE_SECS);
    let (uuid, hits) = state
        .vectors
        .start_resumable(
            &caller.index,
            &namespace_of(&params),
            query,
            Duration::from_secs(max_idle),
        )
        .await?;
    {
        let mut includes = include_cache().lock().unwrap_or_else(|p| p.into_inner());
        // Forget the flags of queries that ended or idled out without `resumable-query-end`.
        includes.retain(|id, _| state.vectors.resumable_alive(id));
        includes.insert(uuid.clone(), include);
    }
    Ok(success(ResumableStart {
        uuid,
        scores: hits.into_iter().map(|h| VectorOut::hit(h, include)).collect(),
    }))
}

fn uuid_of(body: &Value) -> Result<String, ApiError> {
    let object = object_of(body)?;
    text_of(object, "uuid")?
        .map(str::to_owned)
        .ok_or_else(|| ApiError::bad_request("uuid: is required"))
}

pub(crate) async fn resumable_next(
    State(state): State<AppState>,
    caller: VectorCaller,
    JsonBody(body): JsonBody,
) -> Handled {
    let uuid = uuid_of(&body)?;
    let additional = count_of(object_of(&body)?, "additionalK")?.unwrap_or(10);
    let hits = state
        .vectors
        .next_resumable(&caller.index, &uuid, additional)
        .await?;
    let include = include_cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&uuid)
        .copied()
        .unwrap_or_default();
    Ok(success(
        hits.into_iter()
            .map(|h| VectorOut::hit(h, include))
            .collect::<Vec<_>>(),
    ))
}

pub(crate) async fn resumable_end(
    State(state): State<AppState>,
    caller: VectorCaller,
    JsonBody(body): JsonBody,
) -> Handled {
    let uuid = uuid_of(&body)?;
    state.vectors.end_resumable(&caller.index, &uuid)?;
    include_cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&uuid);
    Ok(success("Success"))
}
