//! Signing keys (`/v2/keys`).

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::ApiResult;
use crate::state::AppState;

pub(crate) async fn get_keys(caller: QueueAccount) -> Json<Value> {
    Json(json!({"current": caller.account.current_signing_key, "next": caller.account.next_signing_key}))
}

pub(crate) async fn rotate_keys(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
) -> ApiResult<Json<Value>> {
    let rotated = state.admin.rotate_signing_keys(&caller.account).await?;
    Ok(Json(
        json!({"current": rotated.current_signing_key, "next": rotated.next_signing_key}),
    ))
}
