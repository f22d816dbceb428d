//! The error every storage trait returns, whatever the backend.

/// A storage operation failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule was broken (the named constraint or column).
    #[error("conflict on {0}")]
    Conflict(String),
    /// A stored value could not be decoded; the store is damaged or from a newer version.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The backend failed or is unreachable.
    #[error("storage backend failed: {0}")]
    Backend(String),
    /// The store is shutting down and takes no more work.
    #[error("the store is closed")]
    Closed,
}

/// The result of a storage operation.
pub type StoreResult<T> = Result<T, StoreError>;
