//! Sparse vectors as stored: any bytes decode without a panic, a decoded vector encodes back to its
//! bytes, and the sparse inner product of any two sorted vectors is computed without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quiver_vector::record::bytes::{of_sparse, to_sparse};
use quiver_vector::score::sparse_dot;

fuzz_target!(|data: &[u8]| {
    let decoded = to_sparse(data);
    let whole = data.len() / 8 * 8;
    if whole == data.len() {
        assert_eq!(of_sparse(&decoded), data, "a whole record round-trips");
    }
    let (left, right) = data.split_at(data.len() / 2);
    let mut a = to_sparse(left);
    let mut b = to_sparse(right);
    for sparse in [&mut a, &mut b] {
        let mut pairs: Vec<(u32, f32)> = sparse
            .indices
            .iter()
            .copied()
            .zip(sparse.values.iter().copied())
            .collect();
        pairs.sort_by_key(|(index, _)| *index);
        pairs.dedup_by_key(|(index, _)| *index);
        sparse.indices = pairs.iter().map(|(i, _)| *i).collect();
        sparse.values = pairs.iter().map(|(_, v)| *v).collect();
    }
    let _ = sparse_dot((&a.indices, &a.values), (&b.indices, &b.values), |_| 1.0);
});
