//! Text embeddings.
//!
//! - [`bm25`]: the BM25 sparse embedder: Unicode word segmentation, lowercase, English stop words,
//!   Snowball (English) stemming, token index = murmur3-32 (seed 0) of the stemmed token masked to a
//!   non-negative i32. Documents get BM25 term weights (k1 1.2, b 0.75, average length 32); queries
//!   weigh each distinct term 1.0. Stored data depends on these choices: never change them silently.
//! - [`murmur3`]: the 32-bit MurmurHash3 the token indices use.
#![warn(missing_docs)]

pub mod bm25;
pub mod murmur3;

pub use bm25::Bm25;
