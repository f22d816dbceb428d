//! What can stop a start.

use std::net::SocketAddr;

use quiver_core::StoreError;

/// Start-up failed.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The data directory could not be created.
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The listener could not bind.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The delivery worker could not start.
    #[error(transparent)]
    Worker(#[from] quiver_queue::delivery::WorkerError),
    /// The bootstrap account could not be set up.
    #[error("cannot set up the bootstrap account: {0}")]
    Bootstrap(#[from] quiver_admin::AdminError),
}
