//! Checks of what callers send: dense dimensions, sparse vectors, whole records against the index.

use crate::error::VectorError;
use crate::record::IndexSpec;
use crate::record::{Record, SparseVector};

/// Most non-zero entries of a sparse vector.
const MAX_SPARSE_ENTRIES: usize = 1_000;

pub(super) fn check_dense(spec: &IndexSpec, vector: &[f32]) -> Result<(), VectorError> {
    if vector.len() != spec.dimension {
        return Err(VectorError::DimensionMismatch {
            got: vector.len(),
            expected: spec.dimension,
        });
    }
    if vector.iter().any(|x| !x.is_finite()) {
        return Err(VectorError::InvalidRequest(
            "vector values must be finite numbers".into(),
        ));
    }
    Ok(())
}

/// Sorts a sparse vector by index and checks it.
pub(super) fn normalise_sparse(mut sparse: SparseVector) -> Result<SparseVector, VectorError> {
    if sparse.indices.len() != sparse.values.len() {
        return Err(VectorError::InvalidRequest(
            "sparseVector: indices and values must have the same length".into(),
        ));
    }
    if sparse.indices.len() > MAX_SPARSE_ENTRIES {
        return Err(VectorError::InvalidRequest(format!(
            "sparseVector: at most {MAX_SPARSE_ENTRIES} non-zero entries"
        )));
    }
    let mut pairs: Vec<(u32, f32)> = sparse
        .indices
        .iter()
        .copied()
        .zip(sparse.values.iter().copied())
        .collect();
    // The values of a repeated index add up (the official suites upsert random sparse vectors whose
    // indices repeat); the stable sort adds them in the order given.
    pairs.sort_by_key(|(index, _)| *index);
    sparse.indices.clear();
    sparse.values.clear();
    for (index, value) in pairs {
        if sparse.indices.last() == Some(&index) {
            if let Some(sum) = sparse.values.last_mut() {
                *sum += value;
            }
        } else {
            sparse.indices.push(index);
            sparse.values.push(value);
        }
    }
    Ok(sparse)
}

pub(super) fn check_record(spec: &IndexSpec, mut record: Record) -> Result<Record, VectorError> {
    match (&record.vector, spec.has_dense()) {
        (Some(vector), true) => check_dense(spec, vector)?,
        (None, true) => {
            return Err(VectorError::WrongParts(format!(
                "vector `{}` needs a dense vector on this {} index",
                record.id, spec.index_type
            )));
        }
        (Some(_), false) => {
            return Err(VectorError::WrongParts(format!(
                "this {} index does not take dense vectors",
                spec.index_type
            )));
        }
        (None, false) => {}
    }
    record.sparse = match (record.sparse.take(), spec.has_sparse()) {
        (Some(sparse), true) => Some(normalise_sparse(sparse)?),
        (None, true) => {
            return Err(VectorError::WrongParts(format!(
                "vector `{}` needs a sparse vector on this {} index",
                record.id, spec.index_type
            )));
        }
        (Some(_), false) => {
            return Err(VectorError::WrongParts(format!(
                "this {} index does not take sparse vectors",
                spec.index_type
            )));
        }
        (None, false) => None,
    };
    if let Some(metadata) = &record.metadata
        && !metadata.is_object()
    {
        return Err(VectorError::InvalidRequest(
            "metadata must be a JSON object".into(),
        ));
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_sparse_index_is_one_entry_holding_the_sum_of_its_values() {
        let sparse = normalise_sparse(SparseVector {
            indices: vec![7, 2, 7, 5, 2],
            values: vec![0.5, 1.0, 0.25, 3.0, 2.0],
        })
        .unwrap();
        assert_eq!(sparse.indices, [2, 5, 7]);
        assert_eq!(sparse.values, [3.0, 3.0, 0.75]);
    }
}
