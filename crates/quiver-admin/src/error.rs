//! Errors of the management domain.

use quiver_core::StoreError;

/// A management operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The credentials do not match any account.
    #[error("invalid email or API key")]
    Unauthorized,
    /// No index with this id belongs to the account (or it is of the other kind).
    #[error("index `{0}` was not found")]
    IndexNotFound(String),
    /// No account is known by this email or id.
    #[error("account `{0}` was not found")]
    AccountNotFound(String),
    /// An account with this email exists already.
    #[error("an account with email `{0}` already exists")]
    AccountExists(String),
    /// A field of the request breaks a rule.
    #[error("{field}: {message}")]
    InvalidField {
        /// The wire name of the field.
        field: &'static str,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The request is valid but asks for something not available yet.
    #[error("{0}")]
    Unsupported(String),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
