//! The namespaces of an index through the vector API: list, delete (never the default one) and rename.

use std::collections::HashMap;

use axum::extract::{Path, State};
use serde::Serialize;

use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::router::AppState;
use crate::vector::{Handled, VectorCaller, namespace_of, object_of, success, vector_error};
use crate::vector_wire::{flag, text_of};

pub(crate) async fn list_namespaces(State(state): State<AppState>, caller: VectorCaller) -> Handled {
    Ok(success(state.vectors.namespaces(&caller.index).await?))
}

pub(crate) async fn delete_namespace(
    State(state): State<AppState>,
    caller: VectorCaller,
    params: Option<Path<HashMap<String, String>>>,
    uri: axum::http::Uri,
) -> Handled {
    caller.require_write(uri.path())?;
    state
        .vectors
        .delete_namespace(&caller.index, &namespace_of(&params))
        .await?;
    Ok(success("Success"))
}

/// `delete-namespace` without a name: the default namespace cannot be deleted (reset it instead).
pub(crate) async fn delete_unnamed_namespace(caller: VectorCaller, uri: axum::http::Uri) -> Handled {
    caller.require_write(uri.path())?;
    Err(vector_error(ApiError::bad_request(
        "namespace: is required; the default namespace cannot be deleted, use reset to empty it",
    )))
}

#[derive(Debug, Serialize)]
struct Renamed {
    renamed: bool,
}

pub(crate) async fn rename_namespace(
    State(state): State<AppState>,
    caller: VectorCaller,
    uri: axum::http::Uri,
    JsonBody(body): JsonBody,
) -> Handled {
    caller.require_write(uri.path())?;
    let object = object_of(&body)?;
    let from = text_of(object, "namespace")
        .map_err(vector_error)?
        .unwrap_or_default()
        .to_owned();
    let to = text_of(object, "newNamespace")
        .map_err(vector_error)?
        .ok_or_else(|| vector_error(ApiError::bad_request("newNamespace: is required")))?
        .to_owned();
    let delete_existing = flag(object, "deleteExisting").map_err(vector_error)?;
    state
        .vectors
        .rename_namespace(&caller.index, &from, &to, delete_existing)
        .await?;
    Ok(success(Renamed { renamed: true }))
}
