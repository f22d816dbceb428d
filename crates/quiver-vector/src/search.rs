//! Running a checked query against one namespace: dense search, sparse scoring with optional IDF, and
//! the fusion of both rankings for hybrid queries.

use std::collections::HashMap;

use crate::filter::Filter;
use crate::namespace::{Namespace, RecordRef};
use crate::query::{Fusion, Hit, Query, Weighting};
use crate::record::{IndexSpec, SparseVector};
use crate::score::score;

/// The fewest candidates a weighted fusion takes from each part.
const WEIGHTED_CANDIDATES: usize = 20;

/// Runs a checked query against one namespace.
pub(crate) fn run_query(spec: &IndexSpec, namespace: &Namespace, query: &Query) -> Vec<Hit> {
    let filter = query.filter.as_ref();
    // A hybrid query fuses each part's own top k (DESIGN §10.10), as the hosted service does. A search
    // index's weighted fusion takes at least `WEIGHTED_CANDIDATES` from each part, so that a record good
    // in both parts can win over one that leads a single part, and each part's normalisation has a
    // spread to measure even when few results are asked for.
    let candidates = match query.fusion {
        Fusion::Weighted(_) => query.top_k.max(WEIGHTED_CANDIDATES),
        Fusion::Rrf | Fusion::Dbsf => query.top_k,
    };
    let dense: Vec<Hit> = query
        .dense()
        .map(|vector| {
            namespace
                .search_dense(vector, candidates, filter)
                .into_iter()
                .filter_map(|(slot, _)| namespace.at(slot))
                .map(|record| Hit {
                    score: record.vector().map_or(0.0, |v| score(spec.similarity, vector, v)),
                    record: record.to_record(),
                })
                .collect()
        })
        .unwrap_or_default();
    let sparse: Vec<Hit> = query
        .sparse()
        .map(|s| sparse_search(namespace, s, candidates, query.weighting, filter))
        .unwrap_or_default();
    let mut hits = match (query.dense().is_some(), query.sparse().is_some()) {
        (true, true) => fuse(dense, sparse, query.fusion),
        (true, false) => dense,
        (false, true | false) => sparse,
    };
    hits.truncate(query.top_k);
    hits
}

/// The sparse part of a query: the records that share a dimension with it, read from the namespace's
/// postings, scored by inner product (each query value weighted by its IDF when asked), best first.
pub fn sparse_search(
    namespace: &Namespace,
    query: &SparseVector,
    k: usize,
    weighting: Weighting,
    filter: Option<&Filter>,
) -> Vec<Hit> {
    let total = namespace.sparse_records() as f64;
    let weight = |index: u32| match weighting {
        Weighting::None => 1.0,
        Weighting::Idf => {
            let containing = namespace.sparse_frequency(index) as f64;
            (1.0 + (total - containing + 0.5) / (containing + 0.5)).ln() as f32
        }
    };
    let passes = |record: RecordRef<'_>| record.passes(filter);
    namespace
        .search_sparse(
            query,
            k,
            weight,
            filter.map(|_| &passes as &dyn Fn(RecordRef<'_>) -> bool),
        )
        .into_iter()
        .map(|(record, score)| Hit {
            score,
            record: record.to_record(),
        })
        .collect()
}

/// Fuses two rankings (each best first) as DESIGN §10.10 fixes: RRF `1/(60+rank)` with the first rank 0;
/// DBSF normalises each list over its mean +/- 3 sample standard deviations, 0.5 when that is 0 (or the
/// list has one hit). A weighted fusion scales DBSF's values by each part's share and leaves out a part
/// whose share is 0.
pub fn fuse(dense: Vec<Hit>, sparse: Vec<Hit>, fusion: Fusion) -> Vec<Hit> {
    let mut fused: Vec<Hit> = Vec::new();
    let mut position: HashMap<String, usize> = HashMap::new();
    let shares = match fusion {
        Fusion::Weighted(weight) => [weight.dense(), weight.sparse()],
        Fusion::Rrf | Fusion::Dbsf => [1.0, 1.0],
    };
    for (list, share) in [dense, sparse].into_iter().zip(shares) {
        if share == 0.0 {
            continue;
        }
        let mapped = match fusion {
            Fusion::Rrf => (0..list.len())
                .map(|rank| 1.0 / (60.0 + rank as f32))
                .collect::<Vec<_>>(),
            Fusion::Dbsf | Fusion::Weighted(_) => distribution_normalised(&list),
        };
        for (hit, value) in list.into_iter().zip(mapped) {
            let value = value * share;
            match position.get(&hit.record.id) {
                Some(at) => fused[*at].score += value,
                None => {
                    position.insert(hit.record.id.clone(), fused.len());
                    fused.push(Hit {
                        score: value,
                        record: hit.record,
                    });
                }
            }
        }
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused
}

/// DBSF's values of a list: each score over the list's mean +/- 3 sample standard deviations, 0.5 when
/// that deviation is 0 (or the list has one hit).
fn distribution_normalised(list: &[Hit]) -> Vec<f32> {
    let n = list.len() as f32;
    let mean = list.iter().map(|h| h.score).sum::<f32>() / n.max(1.0);
    let squares = list.iter().map(|h| (h.score - mean).powi(2)).sum::<f32>();
    let sigma = if list.len() > 1 {
        (squares / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    list.iter()
        .map(|h| {
            if sigma == 0.0 {
                0.5
            } else {
                (h.score - (mean - 3.0 * sigma)) / (6.0 * sigma)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use quiver_core::index::{IndexType, SimilarityFunction};

    use super::*;
    use crate::query::SemanticWeight;
    use crate::record::{Record, StoredRecord};
    use crate::score::sparse_dot;

    /// The sparse part as a scan of every record in insertion order would find it.
    fn scanned(
        namespace: &Namespace,
        query: &SparseVector,
        k: usize,
        weighting: Weighting,
        filter: Option<&Filter>,
    ) -> Vec<(String, f32)> {
        let with_sparse = namespace.records().filter(|r| r.sparse().is_some()).count() as f64;
        let weight = |index: u32| match weighting {
            Weighting::None => 1.0,
            Weighting::Idf => {
                let containing = namespace
                    .records()
                    .filter(|r| {
                        r.sparse()
                            .is_some_and(|s| s.indices.binary_search(&index).is_ok())
                    })
                    .count() as f64;
                (1.0 + (with_sparse - containing + 0.5) / (containing + 0.5)).ln() as f32
            }
        };
        let records: Vec<RecordRef<'_>> = namespace.records().collect();
        let mut best = crate::dense::TopK::new(k);
        for (position, record) in records.iter().enumerate() {
            let Some(document) = record.sparse() else { continue };
            if let Some(value) = sparse_dot(
                (&query.indices, &query.values),
                (&document.indices, &document.values),
                weight,
            ) && record.passes(filter)
            {
                best.offer(position, value);
            }
        }
        best.into_sorted()
            .into_iter()
            .map(|(p, score)| (records[p].id().to_owned(), score))
            .collect()
    }

    /// A sparse vector of `entries` distinct dimensions below `dimensions`, from a simple generator;
    /// values in (0, 1], or in [-1, 1] when `is_signed`.
    fn sparse_of(seed: &mut u64, dimensions: u32, entries: usize, is_signed: bool) -> SparseVector {
        let mut next = || {
            *seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (*seed >> 33) as u32
        };
        let mut indices: Vec<u32> = (0..entries).map(|_| next() % dimensions).collect();
        indices.sort_unstable();
        indices.dedup();
        let values = indices
            .iter()
            .map(|_| {
                let magnitude = (next() % 1000) as f32 / 997.0 + 0.01;
                if is_signed && next() % 3 == 0 {
                    -magnitude
                } else {
                    magnitude
                }
            })
            .collect();
        SparseVector { indices, values }
    }

    #[test]
    fn sparse_search_by_postings_finds_what_a_scan_finds_bit_for_bit() {
        postings_find_what_a_scan_finds(
            false,
            |n| 1 + n % 8,
            &[3, 5_000],
            &[Weighting::None, Weighting::Idf],
        );
    }

    #[test]
    fn negative_values_and_long_queries_find_what_a_scan_finds_bit_for_bit() {
        // Products that take away (scored term at a time), and long queries; IDF weights are the other
        // test's (the scan's reference IDF is slow on long queries).
        postings_find_what_a_scan_finds(true, |n| [1, 2, 5, 40][n % 4], &[1, 10], &[Weighting::None]);
    }

    fn postings_find_what_a_scan_finds(
        is_signed: bool,
        terms: impl Fn(usize) -> usize,
        ks: &[usize],
        weightings: &[Weighting],
    ) {
        let sparse =
            |seed: &mut u64, dimensions: u32, entries: usize| sparse_of(seed, dimensions, entries, is_signed);
        let spec = IndexSpec {
            dimension: 0,
            similarity: SimilarityFunction::DotProduct,
            index_type: IndexType::Sparse,
        };
        let mut namespace = Namespace::new(&spec);
        let mut seed = 7;
        let put = |namespace: &mut Namespace, id: String, sequence: u64, sparse: SparseVector, group: u64| {
            namespace.put(StoredRecord {
                sequence,
                record: Record {
                    id,
                    vector: None,
                    sparse: Some(sparse),
                    metadata: Some(serde_json::json!({"group": group})),
                    data: None,
                },
            });
        };
        for n in 0..3_000_u64 {
            let vector = sparse(&mut seed, 200, 1 + (n % 12) as usize);
            put(&mut namespace, format!("r{n}"), n + 1, vector, n % 7);
        }
        // Ties: copies of one vector, and records replaced (a fresh slot, their old place in order) or
        // removed (postings left behind, then dropped).
        let copied = sparse(&mut seed, 200, 6);
        // Then put again last to first: their slots now run against their order.
        let ascending: Vec<u64> = (0..30).collect();
        for n in ascending.iter().chain(ascending.iter().rev()) {
            put(
                &mut namespace,
                format!("copy{n}"),
                10_000 + n,
                copied.clone(),
                n % 7,
            );
        }
        for n in (0..3_000_u64).step_by(3) {
            let vector = sparse(&mut seed, 200, 5);
            put(&mut namespace, format!("r{n}"), n + 1, vector, n % 7);
        }
        for n in (1..3_000_u64).step_by(4) {
            namespace.remove(&format!("r{n}"));
        }
        let filter = Filter::parse("group = 3").unwrap();
        let mut queries: Vec<SparseVector> = (0..24).map(|n| sparse(&mut seed, 210, terms(n))).collect();
        queries.push(copied);
        for query in &queries {
            for &weighting in weightings {
                for filter in [None, filter.as_ref()] {
                    for &k in ks {
                        let found: Vec<(String, f32)> =
                            sparse_search(&namespace, query, k, weighting, filter)
                                .into_iter()
                                .map(|hit| (hit.record.id, hit.score))
                                .collect();
                        assert_eq!(
                            found,
                            scanned(&namespace, query, k, weighting, filter),
                            "{query:?} {weighting:?} k={k}"
                        );
                    }
                }
            }
        }
    }

    fn hit(id: &str, score: f32) -> Hit {
        Hit {
            score,
            record: Record {
                id: id.into(),
                vector: None,
                sparse: None,
                metadata: None,
                data: None,
            },
        }
    }

    #[test]
    fn rrf_sums_reciprocal_ranks_from_zero() {
        let fused = fuse(
            vec![hit("a", 0.9), hit("b", 0.8)],
            vec![hit("b", 5.0), hit("c", 1.0)],
            Fusion::Rrf,
        );
        let ids: Vec<&str> = fused.iter().map(|h| h.record.id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "c"]);
        assert!((fused[0].score - (1.0 / 61.0 + 1.0 / 60.0)).abs() < 1e-7);
        assert!((fused[1].score - 1.0 / 60.0).abs() < 1e-7);
        let first_in_both = fuse(vec![hit("a", 0.9)], vec![hit("a", 3.0)], Fusion::Rrf);
        assert!((first_in_both[0].score - 2.0 / 60.0).abs() < 1e-7);
    }

    #[test]
    fn dbsf_normalises_by_three_sample_sigmas_and_uses_a_half_when_flat() {
        let fused = fuse(
            vec![hit("a", 1.0), hit("b", 0.0)],
            vec![hit("c", 2.0)],
            Fusion::Dbsf,
        );
        // Dense: mean 0.5, sample sigma sqrt(0.5) -> a = (0.5 + 3 sigma) / (6 sigma). Sparse: one hit -> 0.5.
        let sigma = 0.5_f32.sqrt();
        let score = |id: &str| fused.iter().find(|h| h.record.id == id).unwrap().score;
        assert!((score("a") - (0.5 + 3.0 * sigma) / (6.0 * sigma)).abs() < 1e-6);
        assert!((score("b") - (-0.5 + 3.0 * sigma) / (6.0 * sigma)).abs() < 1e-6);
        assert_eq!(score("c"), 0.5);
    }

    #[test]
    fn a_weighted_fusion_ranks_a_record_good_in_both_parts_above_one_that_leads_only_one() {
        let spec = IndexSpec {
            dimension: 2,
            similarity: SimilarityFunction::Cosine,
            index_type: IndexType::Hybrid,
        };
        let mut namespace = Namespace::new(&spec);
        // a leads the dense part, b the sparse part, and c is second in both.
        for (sequence, (id, dense, sparse)) in [
            ("a", [1.0, 0.0], 0.1),
            ("b", [0.0, 1.0], 1.0),
            ("c", [0.9, 0.44], 0.9),
        ]
        .into_iter()
        .enumerate()
        {
            namespace.put(StoredRecord {
                sequence: sequence as u64 + 1,
                record: Record {
                    id: id.into(),
                    vector: Some(dense.to_vec()),
                    sparse: Some(SparseVector {
                        indices: vec![0],
                        values: vec![sparse],
                    }),
                    metadata: None,
                    data: None,
                },
            });
        }
        let query = |fusion| Query {
            input: crate::query::QueryInput::Vectors {
                dense: Some(vec![1.0, 0.0]),
                sparse: Some(SparseVector {
                    indices: vec![0],
                    values: vec![1.0],
                }),
            },
            top_k: 1,
            fusion,
            ..Query::default()
        };
        let best = |fusion| run_query(&spec, &namespace, &query(fusion))[0].record.id.clone();
        assert_eq!(best(Fusion::Weighted(SemanticWeight::new(0.5).unwrap())), "c");
        // Fusing only each part's top 1 cannot see c.
        assert_ne!(best(Fusion::Dbsf), "c");
    }

    #[test]
    fn a_weighted_fusion_scales_each_part_by_its_share_and_drops_a_part_with_none() {
        let dense = || vec![hit("a", 1.0), hit("b", 0.0)];
        let sparse = || vec![hit("b", 4.0), hit("c", 2.0)];
        let weighted = |share: f64| {
            fuse(
                dense(),
                sparse(),
                Fusion::Weighted(SemanticWeight::new(share).unwrap()),
            )
        };
        let sigma = 0.5_f32.sqrt();
        let (high, low) = (
            (0.5 + 3.0 * sigma) / (6.0 * sigma),
            (-0.5 + 3.0 * sigma) / (6.0 * sigma),
        );
        let sparse_sigma = 2.0_f32.sqrt();
        let (sparse_high, sparse_low) = (
            (1.0 + 3.0 * sparse_sigma) / (6.0 * sparse_sigma),
            (-1.0 + 3.0 * sparse_sigma) / (6.0 * sparse_sigma),
        );
        let fused = weighted(0.75);
        let score = |id: &str| fused.iter().find(|h| h.record.id == id).unwrap().score;
        assert!((score("a") - 0.75 * high).abs() < 1e-6);
        assert!((score("b") - (0.75 * low + 0.25 * sparse_high)).abs() < 1e-6);
        assert!((score("c") - 0.25 * sparse_low).abs() < 1e-6);
        let ids = |hits: Vec<Hit>| hits.into_iter().map(|h| h.record.id).collect::<Vec<_>>();
        assert_eq!(ids(weighted(1.0)), ["a", "b"]);
        assert_eq!(ids(weighted(0.0)), ["b", "c"]);
        assert!(SemanticWeight::new(1.5).is_none() && SemanticWeight::new(-0.1).is_none());
    }
}
