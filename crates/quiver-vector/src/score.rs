//! Distances and the normalised scores of the wire: dense scores lie in [0, 1], and an identical vector
//! scores exactly 1. Ranking uses fast f32 kernels; reported scores are recomputed in f64.

use quiver_core::index::SimilarityFunction;

/// Dot product (f32, ranking).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
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

/// Squared euclidean distance (f32, ranking).
#[inline]
pub fn squared_distance(a: &[f32], b: &[f32]) -> f32 {
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

/// Euclidean norm.
pub fn norm(a: &[f32]) -> f32 {
    dot(a, a).sqrt()
}

/// A ranking key (higher is more similar) for `candidate` against `query`. For cosine, both must be
/// unit length (the engine stores normalised copies for ranking).
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
    fn kernels_agree_with_plain_loops() {
        let a: Vec<f32> = (0..37).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..37).map(|i| (i as f32 * 0.11).cos()).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-4);
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
        assert!((squared_distance(&a, &b) - plain).abs() < 1e-4);
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
