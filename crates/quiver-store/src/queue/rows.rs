//! Conversions between rows and values shared by the queue store's modules.

use quiver_core::store::StoreResult;
use quiver_core::{AccountId, StoreError};

use crate::database::backend_error;

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(e.to_string()))
}

/// A message spec's stored form (tagged with its version).
pub(crate) fn spec_json(spec: &quiver_queue::message::MessageSpec) -> StoreResult<String> {
    spec.encode().map_err(|e| StoreError::Backend(e.to_string()))
}

pub(crate) fn corrupt(
    column: usize,
    error: impl std::error::Error + Send + Sync + 'static,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, Box::new(error))
}

pub(crate) fn read_error(error: rusqlite::Error) -> StoreError {
    if matches!(error, rusqlite::Error::FromSqlConversionFailure(..)) {
        StoreError::Corrupt(error.to_string())
    } else {
        backend_error(error)
    }
}

pub(crate) fn account_of(text: &str, column: usize) -> rusqlite::Result<AccountId> {
    text.parse().map_err(|e| corrupt(column, e))
}
