//! The vector engine: namespaces of records in memory, mirrored from the store.
//!
//! - [`service`]: [`Vectors`], every operation of the vector REST API.
//! - [`namespace`]: one namespace's records, insertion order and dense index.
//! - [`dense`]: the [`dense::DenseIndex`] trait and exact search.
//! - [`hnsw`]: the HNSW graph used for dense search.
//! - [`snapshot`]: graph snapshots in the data directory, so a restart does not rebuild the graphs.
//! - [`half`]: half-precision vector copies and their distance kernels, for graph traversal.
//! - [`search`]: one query against one namespace, and hybrid fusion.
//! - [`score`]: distance kernels and the wire's normalised scores.
//! - [`filter`]: the metadata filter language.
//! - [`record`]: records and index settings.
//! - [`text`]: raw text to vectors with the index's hosted models (BM25 built in).
//! - [`store`]: [`VectorStore`], the storage trait every backend implements; `testing` (feature
//!   `testing`): its conformance suite.
//! - [`mod@error`]: [`VectorError`], every way a vector operation fails.
#![warn(missing_docs)]

mod codec;
pub mod dense;
pub mod error;
pub mod filter;
pub mod half;
pub mod hnsw;
mod huge;
pub mod int8;
mod mapped;
pub mod metadata_index;
pub mod namespace;
mod postings;
pub mod query;
mod recent_listings;
pub mod record;
pub mod score;
pub mod search;
pub mod service;
pub mod slots;
pub mod snapshot;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod text;

pub use error::VectorError;
pub use service::Vectors;
pub use store::VectorStore;
