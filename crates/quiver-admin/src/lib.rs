//! The management domain: accounts and the catalogue of vector and search indexes.
//!
//! - [`account`]: [`Account`], its credentials and the bootstrap rules.
//! - [`catalog`]: [`IndexRecord`] and the inputs that create one.
//! - [`store`]: [`AdminStore`], the storage trait every backend implements.
//! - [`service`]: [`Admin`], the operations the management API exposes.
//! - [`mod@error`]: [`AdminError`], every way a management operation fails.
//! - `testing` (feature `testing`): the conformance suite for [`AdminStore`] backends.
#![warn(missing_docs)]

pub mod account;
pub mod catalog;
mod endpoint_names;
pub mod error;
pub mod limits;
pub mod meter;
pub mod service;
pub mod stats;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod usage;

pub use account::{Account, BootstrapCredentials, Email};
pub use catalog::{IndexKind, IndexName, IndexRecord, IndexSettings, NewSearchIndex, NewVectorIndex};
pub use error::AdminError;
pub use service::{Admin, Bootstrap};
pub use store::AdminStore;
