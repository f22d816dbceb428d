//! Running a checked query against one namespace: dense search, sparse scoring with optional IDF, and
//! the fusion of both rankings for hybrid queries.

use std::collections::HashMap;

use crate::filter::Filter;
use crate::namespace::Namespace;
use crate::query::{Fusion, Hit, Query, Weighting};
use crate::record::{IndexSpec, Record, SparseVector};
use crate::score::{score, sparse_dot};

/// Runs a checked query against one namespace.
pub(crate) fn run_query(spec: &IndexSpec, namespace: &Namespace, query: &Query) -> Vec<Hit> {
    let filter = query.filter.as_ref();
    let record_filter = |record: &Record| record.passes(filter);
    let dense_filter: Option<&dyn Fn(&Record) -> bool> =
        filter.map(|_| &record_filter as &dyn Fn(&Record) -> bool);
    // A hybrid query fuses each part's own top k (DESIGN §10.10), as the hosted service does.
    let candidates = query.top_k;
    let dense: Vec<Hit> = query
        .dense()
        .map(|vector| {
            namespace
                .search_dense(vector, candidates, dense_filter)
                .into_iter()
                .filter_map(|(slot, _)| namespace.at(slot))
                .map(|record| Hit {
                    score: record
                        .vector
                        .as_ref()
                        .map_or(0.0, |v| score(spec.similarity, vector, v)),
                    record: record.clone(),
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

fn sparse_search(
    namespace: &Namespace,
    query: &SparseVector,
    k: usize,
    weighting: Weighting,
    filter: Option<&Filter>,
) -> Vec<Hit> {
    let idf: HashMap<u32, f32> = match weighting {
        Weighting::None => HashMap::new(),
        Weighting::Idf => {
            let total = namespace.records().filter(|r| r.sparse.is_some()).count() as f64;
            query
                .indices
                .iter()
                .map(|index| {
                    let containing = namespace
                        .records()
                        .filter(|r| {
                            r.sparse
                                .as_ref()
                                .is_some_and(|s| s.indices.binary_search(index).is_ok())
                        })
                        .count() as f64;
                    (
                        *index,
                        (1.0 + (total - containing + 0.5) / (containing + 0.5)).ln() as f32,
                    )
                })
                .collect()
        }
    };
    let weight = |index: u32| {
        if weighting == Weighting::Idf {
            idf.get(&index).copied().unwrap_or(0.0)
        } else {
            1.0
        }
    };
    let mut best = crate::dense::TopK::new(k);
    let records: Vec<&Record> = namespace.records().collect();
    for (position, record) in records.iter().enumerate() {
        let Some(document) = &record.sparse else { continue };
        if !record.passes(filter) {
            continue;
        }
        if let Some(value) = sparse_dot(
            (&query.indices, &query.values),
            (&document.indices, &document.values),
            weight,
        ) {
            best.offer(position, value);
        }
    }
    best.into_sorted()
        .into_iter()
        .map(|(position, score)| Hit {
            score,
            record: records[position].clone(),
        })
        .collect()
}

/// Fuses two rankings (each best first) as DESIGN §10.10 fixes: RRF `1/(60+rank)` with the first rank 0;
/// DBSF normalises each list over its mean +/- 3 sample standard deviations, 0.5 when that is 0 (or the
/// list has one hit).
pub fn fuse(dense: Vec<Hit>, sparse: Vec<Hit>, fusion: Fusion) -> Vec<Hit> {
    let mut fused: Vec<Hit> = Vec::new();
    let mut position: HashMap<String, usize> = HashMap::new();
    for list in [dense, sparse] {
        let mapped = match fusion {
            Fusion::Rrf => (0..list.len())
                .map(|rank| 1.0 / (60.0 + rank as f32))
                .collect::<Vec<_>>(),
            Fusion::Dbsf => {
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
        };
        for (hit, value) in list.into_iter().zip(mapped) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
