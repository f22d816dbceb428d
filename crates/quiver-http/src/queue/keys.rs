//! Signing keys (`/v2/keys`).

use axum::Json;
use axum::extract::State;

use crate::auth::{QueueAccount, QueueWriter};
use crate::error::ApiResult;
use crate::queue::wire::SigningKeysOut;
use crate::state::AppState;

pub(crate) async fn get_keys(caller: QueueAccount) -> Json<SigningKeysOut> {
    Json(SigningKeysOut {
        current: caller.account.current_signing_key.clone(),
        next: caller.account.next_signing_key.clone(),
    })
}

pub(crate) async fn rotate_keys(
    State(state): State<AppState>,
    QueueWriter(caller): QueueWriter,
) -> ApiResult<Json<SigningKeysOut>> {
    let rotated = state.admin.rotate_signing_keys(&caller.account).await?;
    Ok(Json(SigningKeysOut {
        current: rotated.current_signing_key,
        next: rotated.next_signing_key,
    }))
}
