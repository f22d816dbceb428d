//! The graph's distances: by the half-precision copies (building, and ranking a walk's candidates), by
//! the 8-bit codes (a query's walk), and exact f32 distances (re-ranking, and choosing neighbours).

use quiver_core::index::SimilarityFunction;

use super::Hnsw;
use super::candidates::Probe;
use crate::half;
use crate::score::{dot, squared_distance};

impl Hnsw {
    /// `node`'s packed half-precision copy.
    pub(super) fn packed(&self, node: u32) -> &[u32] {
        let start = node as usize * self.half_words;
        &self.halves[start..start + self.half_words]
    }

    /// Distance from a padded query to `node`'s half-precision copy: what the traversal ranks by (the
    /// f32 vector where the graph holds vectors that half precision cannot).
    #[inline]
    pub(super) fn traversal_distance(&self, padded: &[f32], node: u32) -> f32 {
        if self.exact_traversal {
            return self.distance(&padded[..self.dimension], node);
        }
        let candidate = self.packed(node);
        match self.similarity {
            SimilarityFunction::Cosine | SimilarityFunction::DotProduct => -half::dot(padded, candidate),
            SimilarityFunction::Euclidean => half::squared_distance(padded, candidate),
        }
    }

    /// Distance from `probe` to `node` by the copy it walks.
    #[inline]
    pub(super) fn probe_distance(&self, probe: Probe<'_>, node: u32) -> f32 {
        match probe {
            Probe::Half(padded) => self.traversal_distance(padded, node),
            Probe::Int8(query) => {
                let (code, scale, squared_norm) = self.codes.get(node as usize);
                match self.similarity {
                    SimilarityFunction::Cosine | SimilarityFunction::DotProduct => -query.dot(code, scale),
                    SimilarityFunction::Euclidean => query.squared_distance(code, scale, squared_norm),
                }
            }
        }
    }

    /// Starts loading the copy of `node` that `probe` reads.
    #[inline]
    pub(super) fn probe_prefetch(&self, probe: Probe<'_>, node: u32) {
        match probe {
            Probe::Half(_) => crate::score::prefetch(self.packed(node)),
            Probe::Int8(_) => self.codes.prefetch(node as usize),
        }
    }

    /// Exact f32 distance from a prepared `query` to `node`.
    #[inline]
    pub(super) fn distance(&self, query: &[f32], node: u32) -> f32 {
        let candidate = self.vector(node);
        match self.similarity {
            SimilarityFunction::Cosine => -dot(query, candidate) * self.scale(node),
            SimilarityFunction::DotProduct => -dot(query, candidate),
            SimilarityFunction::Euclidean => squared_distance(query, candidate),
        }
    }
}
