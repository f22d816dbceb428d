//! Raw text to vectors, with the index's hosted models: BM25 (sparse) is built in, dense models run on
//! the embedding workers of `quiver-embed` once their files are installed.

use std::sync::{Arc, OnceLock};

use quiver_core::index::{DenseModel, SparseModel};
use quiver_embed::{Bm25, Embedders};

use crate::error::VectorError;
use crate::record::{IndexSpec, SparseVector};

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

/// Vectors for each of `texts`: both parts the index needs (documents, `query` None), or the parts
/// `query` asks for. Dense vectors come from the index's model on the embedding workers, in one batch.
///
/// # Errors
/// [`VectorError::NoEmbeddingModel`] for an index without models; [`VectorError::Embedding`] when the
/// model is not installed or cannot run; [`VectorError::Unsupported`] for BGE_M3 sparse.
pub async fn embed(
    embedders: &Arc<Embedders>,
    spec: &IndexSpec,
    models: TextModels,
    texts: Vec<String>,
    query: Option<QueryMode>,
) -> Result<Vec<Embedded>, VectorError> {
    if models.dense.is_none() && models.sparse.is_none() {
        return Err(VectorError::NoEmbeddingModel);
    }
    let mode = query.unwrap_or_default();
    let wants_dense = spec.has_dense() && !(spec.has_sparse() && mode == QueryMode::Sparse);
    let wants_sparse = spec.has_sparse() && !(spec.has_dense() && mode == QueryMode::Dense);
    let sparse: Vec<Option<SparseVector>> = if wants_sparse {
        match models.sparse.ok_or(VectorError::NoEmbeddingModel)? {
            SparseModel::Bm25 => texts
                .iter()
                .map(|text| {
                    let embedding = if query.is_some() {
                        bm25().query(text)
                    } else {
                        bm25().document(text)
                    };
                    Some(SparseVector {
                        indices: embedding.indices,
                        values: embedding.values,
                    })
                })
                .collect(),
            SparseModel::BgeM3 => {
                return Err(VectorError::Unsupported(
                    "sparse embedding with BGE_M3 is not supported yet".into(),
                ));
            }
        }
    } else {
        vec![None; texts.len()]
    };
    let dense: Vec<Option<Vec<f32>>> = if wants_dense {
        let model = models.dense.ok_or(VectorError::NoEmbeddingModel)?;
        let embedder = embedders.load(model).await?;
        embedder.embed(texts).await?.into_iter().map(Some).collect()
    } else {
        vec![None; sparse.len()]
    };
    Ok(dense.into_iter().zip(sparse).collect())
}

/// The dense and sparse vectors of one text.
pub type Embedded = (Option<Vec<f32>>, Option<SparseVector>);
