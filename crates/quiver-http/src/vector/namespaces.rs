//! The namespaces of an index through the vector API: list, delete (never the default one) and rename.

use std::collections::HashMap;

use axum::extract::{Path, State};
use serde::Serialize;

use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::state::AppState;
use crate::vector::caller::VectorCaller;
use crate::vector::reply::{Handled, namespace_of, object_of, success};
use crate::vector::wire::{flag, text_of};

pub(crate) async fn list_namespaces(State(state): State<AppState>, caller: VectorCaller) -> Handled {
    Ok(success(state.vectors.namespaces(&caller.index).await?))
}

pub(crate) async fn delete_namespace(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
) -> Handled {
    caller.require_write()?;
    state
        .vectors
        .delete_namespace(&caller.index, &namespace_of(&params))
        .await?;
    Ok(success("Success"))
}

/// `delete-namespace` without a name: the default namespace cannot be deleted (reset it instead).
pub(crate) async fn delete_unnamed_namespace(caller: VectorCaller) -> Handled {
    caller.require_write()?;
    Err(ApiError::bad_request(
        "namespace: is required; the default namespace cannot be deleted, use reset to empty it",
    ))
}

#[derive(Debug, Serialize)]
struct Renamed {
    renamed: bool,
}

pub(crate) async fn rename_namespace(
    State(state): State<AppState>,
    caller: VectorCaller,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write()?;
    let object = object_of(&body)?;
    let from = text_of(object, "namespace")?.unwrap_or_default().to_owned();
    let to = text_of(object, "newNamespace")?
        .ok_or_else(|| ApiError::bad_request("newNamespace: is required"))?
        .to_owned();
    let delete_existing = flag(object, "deleteExisting")?;
    state
        .vectors
        .rename_namespace(&caller.index, &from, &to, delete_existing)
        .await?;
    Ok(success(Renamed { renamed: true }))
}
