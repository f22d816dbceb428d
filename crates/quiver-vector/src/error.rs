//! Errors of the vector engine.

use quiver_core::StoreError;

use crate::filter::FilterError;

/// The message of the wire for text on an index without any embedding model.
pub const NO_EMBEDDING_MODEL: &str = "Embedding data for this index is not allowed. The index must be created with an embedding model to use it.";

/// A vector operation failed.
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    /// A dense vector has the wrong length.
    #[error("Invalid vector dimension: {got}, expected: {expected}")]
    DimensionMismatch {
        /// The length sent.
        got: usize,
        /// The index's dimension.
        expected: usize,
    },
    /// A part the index type needs is missing, or one it cannot hold is present.
    #[error("{0}")]
    WrongParts(String),
    /// The request is malformed.
    #[error("{0}")]
    InvalidRequest(String),
    /// The metadata filter does not parse.
    #[error(transparent)]
    Filter(#[from] FilterError),
    /// A plan limit would be exceeded.
    #[error("{0}")]
    LimitExceeded(String),
    /// No such namespace.
    #[error("Namespace {namespace} for the index {index} does not exist")]
    NamespaceNotFound {
        /// The namespace.
        namespace: String,
        /// The index name.
        index: String,
    },
    /// No such resumable query (never started, ended, or expired).
    #[error("resumable query `{0}` does not exist or has expired")]
    ResumableQueryNotFound(String),
    /// Text was sent to an index without an embedding model.
    #[error("{}", NO_EMBEDDING_MODEL)]
    NoEmbeddingModel,
    /// The index's embedding model is not installed or cannot run.
    #[error(transparent)]
    Embedding(#[from] quiver_embed::EmbedError),
    /// The operation needs something this index does not have.
    #[error("{0}")]
    Unsupported(String),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A background task of the engine failed (it panicked or was cancelled): a server fault, never a
    /// reason the request is wrong.
    #[error("{0}")]
    Internal(String),
}
