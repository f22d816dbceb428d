//! Distances and the normalised scores of the wire: dense scores lie in [0, 1], and an identical vector
//! scores exactly 1. Ranking uses fast f32 kernels; reported scores are recomputed in f64.

use quiver_core::index::SimilarityFunction;

/// Dot product (f32, ranking): AVX2 and FMA where the CPU has them, a portable loop otherwise.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    match simd::level() {
        simd::Level::Avx512 => return simd::dot512(a, b),
        simd::Level::Avx2 => return simd::dot(a, b),
        simd::Level::Portable => {}
    }
    portable_dot(a, b)
}

/// Squared euclidean distance (f32, ranking), dispatched like [`dot`].
#[inline]
pub fn squared_distance(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    match simd::level() {
        simd::Level::Avx512 => return simd::squared_distance512(a, b),
        simd::Level::Avx2 => return simd::squared_distance(a, b),
        simd::Level::Portable => {}
    }
    portable_squared_distance(a, b)
}

fn portable_dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent accumulators let the compiler vectorise without reassociation.
    let mut sums = [0.0_f32; 8];
    let chunks = a.len() / 8 * 8;
    for (x, y) in a[..chunks].chunks_exact(8).zip(b[..chunks].chunks_exact(8)) {
        for lane in 0..8 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    let mut total: f32 = sums.iter().sum();
    for (x, y) in a[chunks..].iter().zip(&b[chunks..]) {
        total += x * y;
    }
    total
}

fn portable_squared_distance(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0_f32; 8];
    let chunks = a.len() / 8 * 8;
    for (x, y) in a[..chunks].chunks_exact(8).zip(b[..chunks].chunks_exact(8)) {
        for lane in 0..8 {
            let d = x[lane] - y[lane];
            sums[lane] += d * d;
        }
    }
    let mut total: f32 = sums.iter().sum();
    for (x, y) in a[chunks..].iter().zip(&b[chunks..]) {
        total += (x - y) * (x - y);
    }
    total
}

/// Hints the CPU to start loading every cache line of `data` (no effect where unsupported).
#[inline]
pub fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    simd::prefetch(data.as_ptr().cast::<i8>(), std::mem::size_of_val(data));
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

#[cfg(target_arch = "x86_64")]
#[expect(unsafe_code, reason = "SIMD intrinsics behind runtime feature detection")]
pub(crate) mod simd {
    use std::arch::x86_64::{
        __m256, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_movehdup_ps, _mm_movehl_ps, _mm256_add_ps,
        _mm256_castps256_ps128, _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps,
        _mm256_sub_ps,
    };
    use std::sync::OnceLock;

    /// The widest kernels this CPU runs (f32 here, half precision in the `half` module).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Level {
        /// 16 lanes, AVX-512F (which converts halves itself).
        Avx512,
        /// 8 lanes, AVX2, FMA and F16C (every AVX2 CPU has F16C; checked all the same).
        Avx2,
        /// No usable SIMD extension: the portable loops.
        Portable,
    }

    /// Which kernels to use (checked once).
    #[inline]
    pub(crate) fn level() -> Level {
        static LEVEL: OnceLock<Level> = OnceLock::new();
        *LEVEL.get_or_init(|| {
            if is_x86_feature_detected!("avx512f") {
                Level::Avx512
            } else if is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c")
            {
                Level::Avx2
            } else {
                Level::Portable
            }
        })
    }

    #[target_feature(enable = "avx512f")]
    fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
        use std::arch::x86_64::{
            _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_reduce_add_ps, _mm512_setzero_ps,
        };
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut first, mut second) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let mut i = 0;
        // SAFETY: every load reads 16 floats starting at `i`, and the loops keep `i + 16 <= n`.
        unsafe {
            while i + 32 <= n {
                first = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)), first);
                second = _mm512_fmadd_ps(
                    _mm512_loadu_ps(pa.add(i + 16)),
                    _mm512_loadu_ps(pb.add(i + 16)),
                    second,
                );
                i += 32;
            }
            while i + 16 <= n {
                first = _mm512_fmadd_ps(_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)), first);
                i += 16;
            }
        }
        let mut total = _mm512_reduce_add_ps(_mm512_add_ps(first, second));
        for j in i..n {
            total += a[j] * b[j];
        }
        total
    }

    #[target_feature(enable = "avx512f")]
    fn squared_distance_avx512(a: &[f32], b: &[f32]) -> f32 {
        use std::arch::x86_64::{
            _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_reduce_add_ps, _mm512_setzero_ps,
            _mm512_sub_ps,
        };
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut first, mut second) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let mut i = 0;
        // SAFETY: as in `dot_avx512`: every 16-float load stays below `n`.
        unsafe {
            while i + 32 <= n {
                let d = _mm512_sub_ps(_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)));
                first = _mm512_fmadd_ps(d, d, first);
                let e = _mm512_sub_ps(_mm512_loadu_ps(pa.add(i + 16)), _mm512_loadu_ps(pb.add(i + 16)));
                second = _mm512_fmadd_ps(e, e, second);
                i += 32;
            }
            while i + 16 <= n {
                let d = _mm512_sub_ps(_mm512_loadu_ps(pa.add(i)), _mm512_loadu_ps(pb.add(i)));
                first = _mm512_fmadd_ps(d, d, first);
                i += 16;
            }
        }
        let mut total = _mm512_reduce_add_ps(_mm512_add_ps(first, second));
        for j in i..n {
            total += (a[j] - b[j]) * (a[j] - b[j]);
        }
        total
    }

    #[inline]
    pub(super) fn dot512(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: callers check `level()` first, so the CPU has AVX-512F.
        unsafe { dot_avx512(a, b) }
    }

    #[inline]
    pub(super) fn squared_distance512(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: callers check `level()` first, so the CPU has AVX-512F.
        unsafe { squared_distance_avx512(a, b) }
    }

    /// The sum of the eight lanes of `v`.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn horizontal_sum(v: __m256) -> f32 {
        let low = _mm256_castps256_ps128(v);
        let high = _mm256_extractf128_ps(v, 1);
        let sum = _mm_add_ps(low, high);
        let shuffled = _mm_movehdup_ps(sum);
        let sums = _mm_add_ps(sum, shuffled);
        _mm_cvtss_f32(_mm_add_ss(sums, _mm_movehl_ps(shuffled, sums)))
    }

    #[target_feature(enable = "avx2,fma")]
    fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut accumulators = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        // SAFETY: every load reads 8 floats starting at `i`, and the loops keep `i + 8 <= n`, where `n`
        // is within both slices.
        unsafe {
            while i + 32 <= n {
                for (lane, accumulator) in accumulators.iter_mut().enumerate() {
                    let offset = i + lane * 8;
                    *accumulator = _mm256_fmadd_ps(
                        _mm256_loadu_ps(pa.add(offset)),
                        _mm256_loadu_ps(pb.add(offset)),
                        *accumulator,
                    );
                }
                i += 32;
            }
            while i + 8 <= n {
                accumulators[0] = _mm256_fmadd_ps(
                    _mm256_loadu_ps(pa.add(i)),
                    _mm256_loadu_ps(pb.add(i)),
                    accumulators[0],
                );
                i += 8;
            }
        }
        let sum = _mm256_add_ps(
            _mm256_add_ps(accumulators[0], accumulators[1]),
            _mm256_add_ps(accumulators[2], accumulators[3]),
        );
        let mut total = horizontal_sum(sum);
        for j in i..n {
            total += a[j] * b[j];
        }
        total
    }

    #[target_feature(enable = "avx2,fma")]
    fn squared_distance_avx2(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut accumulators = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        // SAFETY: as in `dot_avx2`: every 8-float load stays below `n`.
        unsafe {
            while i + 32 <= n {
                for (lane, accumulator) in accumulators.iter_mut().enumerate() {
                    let offset = i + lane * 8;
                    let d = _mm256_sub_ps(_mm256_loadu_ps(pa.add(offset)), _mm256_loadu_ps(pb.add(offset)));
                    *accumulator = _mm256_fmadd_ps(d, d, *accumulator);
                }
                i += 32;
            }
            while i + 8 <= n {
                let d = _mm256_sub_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
                accumulators[0] = _mm256_fmadd_ps(d, d, accumulators[0]);
                i += 8;
            }
        }
        let sum = _mm256_add_ps(
            _mm256_add_ps(accumulators[0], accumulators[1]),
            _mm256_add_ps(accumulators[2], accumulators[3]),
        );
        let mut total = horizontal_sum(sum);
        for j in i..n {
            total += (a[j] - b[j]) * (a[j] - b[j]);
        }
        total
    }

    #[inline]
    pub(super) fn prefetch(start: *const i8, bytes: usize) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        for offset in (0..bytes).step_by(64) {
            // SAFETY: prefetch is a hint that never faults; the address lies inside the caller's slice.
            // SSE is part of the x86_64 baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
        }
    }

    #[inline]
    pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: callers check `level()` first, so the CPU has AVX2 and FMA.
        unsafe { dot_avx2(a, b) }
    }

    #[inline]
    pub(super) fn squared_distance(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: callers check `level()` first, so the CPU has AVX2 and FMA.
        unsafe { squared_distance_avx2(a, b) }
    }
}

/// Euclidean norm.
pub fn norm(a: &[f32]) -> f32 {
    dot(a, a).sqrt()
}

/// A ranking key (higher is more similar) for `candidate` against `query`. For cosine, both must be
/// unit length (see `ExactIndex::prepare`; the graph scales by each vector's inverse norm instead).
#[inline]
pub fn rank_key(similarity: SimilarityFunction, query: &[f32], candidate: &[f32]) -> f32 {
    match similarity {
        SimilarityFunction::Cosine | SimilarityFunction::DotProduct => dot(query, candidate),
        SimilarityFunction::Euclidean => -squared_distance(query, candidate),
    }
}

/// The wire score of `candidate` for `query`, computed in f64 from the original vectors.
pub fn score(similarity: SimilarityFunction, query: &[f32], candidate: &[f32]) -> f32 {
    // The wire promises exactly 1 for an identical vector; f32 rounding of "unit" vectors would not.
    if query == candidate && query.iter().any(|x| *x != 0.0) {
        return 1.0;
    }
    let dot64 = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum::<f64>()
    };
    let value = match similarity {
        SimilarityFunction::Cosine => {
            let denominator = (dot64(query, query) * dot64(candidate, candidate)).sqrt();
            let cosine = if denominator == 0.0 {
                0.0
            } else {
                dot64(query, candidate) / denominator
            };
            (1.0 + cosine.clamp(-1.0, 1.0)) / 2.0
        }
        SimilarityFunction::Euclidean => {
            let distance: f64 = query
                .iter()
                .zip(candidate)
                .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
                .sum();
            1.0 / (1.0 + distance)
        }
        SimilarityFunction::DotProduct => ((1.0 + dot64(query, candidate)) / 2.0).max(0.0),
    };
    value as f32
}

/// Sparse inner product over shared indices (both sorted by index), each query value weighted.
pub fn sparse_dot(
    query: (&[u32], &[f32]),
    document: (&[u32], &[f32]),
    weight: impl Fn(u32) -> f32,
) -> Option<f32> {
    let (mut i, mut j) = (0, 0);
    let mut total = 0.0_f32;
    let mut shared = false;
    while i < query.0.len() && j < document.0.len() {
        match query.0[i].cmp(&document.0[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                total += query.1[i] * weight(query.0[i]) * document.1[j];
                shared = true;
                i += 1;
                j += 1;
            }
        }
    }
    shared.then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identical_vector_scores_exactly_one_for_every_metric() {
        let v = [0.1_f32, 0.2, 0.3, 0.7, -0.4, 0.05, 0.9, 0.33, 0.12];
        assert_eq!(score(SimilarityFunction::Cosine, &v, &v), 1.0);
        assert_eq!(score(SimilarityFunction::Euclidean, &v, &v), 1.0);
        let n = norm(&v);
        let unit: Vec<f32> = v.iter().map(|x| x / n).collect();
        assert_eq!(score(SimilarityFunction::DotProduct, &unit, &unit), 1.0);
    }

    #[test]
    fn scores_follow_the_documented_formulas() {
        let (a, b) = ([1.0_f32, 0.0], [0.0_f32, 1.0]);
        assert_eq!(score(SimilarityFunction::Cosine, &a, &b), 0.5);
        assert_eq!(score(SimilarityFunction::Euclidean, &a, &b), 1.0 / 3.0);
        assert_eq!(score(SimilarityFunction::DotProduct, &a, &[-1.0, 0.0]), 0.0);
    }

    #[test]
    fn kernels_agree_with_plain_loops_at_every_length() {
        for length in [0, 1, 7, 8, 9, 31, 32, 33, 100, 384] {
            let a: Vec<f32> = (0..length).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..length).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-3, "dot at {length}");
            assert!((portable_dot(&a, &b) - plain).abs() < 1e-3);
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
            assert!(
                (squared_distance(&a, &b) - plain).abs() < 1e-3,
                "distance at {length}"
            );
            assert!((portable_squared_distance(&a, &b) - plain).abs() < 1e-3);
            #[cfg(target_arch = "x86_64")]
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                assert!(
                    (simd::squared_distance(&a, &b) - plain).abs() < 1e-3,
                    "avx2 distance at {length}"
                );
                let plain_dot: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
                assert!(
                    (simd::dot(&a, &b) - plain_dot).abs() < 1e-3,
                    "avx2 dot at {length}"
                );
            }
        }
    }

    #[test]
    fn sparse_scores_only_count_shared_indices() {
        let score = sparse_dot(
            (&[1, 5, 9], &[1.0, 2.0, 3.0]),
            (&[2, 5, 9], &[0.5, 0.5, 1.0]),
            |_| 1.0,
        );
        assert_eq!(score, Some(4.0));
        assert_eq!(sparse_dot((&[1], &[1.0]), (&[2], &[1.0]), |_| 1.0), None);
    }
}
