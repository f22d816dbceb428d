//! Raw text to vectors, with the index's hosted models. BM25 (sparse) is built in; dense models are not
//! available in this build, and asking for one is a clear error, never a made-up vector.

use std::sync::OnceLock;

use quiver_core::index::{DenseModel, SparseModel};
use quiver_embed::Bm25;

use crate::error::VectorError;
use crate::record::{IndexSpec, SparseVector};

/// The message of the wire for text on an index without any embedding model.
pub const NO_EMBEDDING_MODEL: &str = "Embedding data for this index is not allowed. The index must be created with an embedding model to use it.";

/// The hosted models of an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextModels {
    /// Dense model.
    pub dense: Option<DenseModel>,
    /// Sparse model.
    pub sparse: Option<SparseModel>,
}

/// Which parts of a hybrid index a text query uses (`queryMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryMode {
    /// Both, fused.
    #[default]
    Hybrid,
    /// The dense part only.
    Dense,
    /// The sparse part only.
    Sparse,
}

fn bm25() -> &'static Bm25 {
    static BM25: OnceLock<Bm25> = OnceLock::new();
    BM25.get_or_init(Bm25::default)
}

/// Vectors for `text`: both parts the index needs (a document), or the parts `mode` asks for (a query).
///
/// # Errors
/// [`VectorError::NoEmbeddingModel`] for an index without models; [`VectorError::Unsupported`] for a
/// model this build cannot run.
pub fn embed(
    spec: &IndexSpec,
    models: TextModels,
    text: &str,
    query: Option<QueryMode>,
) -> Result<(Option<Vec<f32>>, Option<SparseVector>), VectorError> {
    if models.dense.is_none() && models.sparse.is_none() {
        return Err(VectorError::NoEmbeddingModel);
    }
    let mode = query.unwrap_or_default();
    let wants_dense = spec.has_dense() && !(spec.has_sparse() && mode == QueryMode::Sparse);
    let wants_sparse = spec.has_sparse() && !(spec.has_dense() && mode == QueryMode::Dense);
    let dense = if wants_dense {
        let model = models.dense.ok_or(VectorError::NoEmbeddingModel)?;
        return Err(VectorError::Unsupported(format!(
            "embedding text with {model} is not available in this build; upsert and query with vectors, or use a \
             SPARSE index with BM25"
        )));
    } else {
        None
    };
    let sparse = if wants_sparse {
        match models.sparse.ok_or(VectorError::NoEmbeddingModel)? {
            SparseModel::Bm25 => {
                let embedding = if query.is_some() {
                    bm25().query(text)
                } else {
                    bm25().document(text)
                };
                Some(SparseVector {
                    indices: embedding.indices,
                    values: embedding.values,
                })
            }
            SparseModel::BgeM3 => {
                return Err(VectorError::Unsupported(
                    "sparse embedding with BGE_M3 is not supported yet".into(),
                ));
            }
        }
    } else {
        None
    };
    Ok((dense, sparse))
}
