//! Running a checked query against one namespace: dense search, sparse scoring with optional IDF, and
//! the fusion of both rankings for hybrid queries.

use std::collections::HashMap;

use serde_json::Value;

use crate::filter::Filter;
use crate::namespace::Namespace;
use crate::record::{IndexSpec, Record, SparseVector};
use crate::score::{score, sparse_dot};
use crate::service::{Fusion, Hit, Query, Weighting};

fn passes(filter: Option<&Filter>, record: &Record) -> bool {
    filter.is_none_or(|f| f.matches(record.metadata.as_ref().unwrap_or(&Value::Null)))
}

/// Runs a checked query against one namespace.
pub(crate) fn run_query(spec: &IndexSpec, namespace: &Namespace, query: &Query) -> Vec<Hit> {
    let filter = query.filter.as_ref();
    let record_filter = |record: &Record| passes(filter, record);
    let dense_filter: Option<&dyn Fn(&Record) -> bool> =
        filter.map(|_| &record_filter as &dyn Fn(&Record) -> bool);
    let both = query.vector.is_some() && query.sparse.is_some();
    let candidates = if both {
        (query.top_k * 3).max(30)
    } else {
        query.top_k
    };
    let dense: Vec<Hit> = query
        .vector
        .as_ref()
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
        .sparse
        .as_ref()
        .map(|s| sparse_search(namespace, s, candidates, query.weighting, filter))
        .unwrap_or_default();
    let mut hits = match (query.vector.is_some(), query.sparse.is_some()) {
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
        if !passes(filter, record) {
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

/// Fuses two rankings (each best first) as DESIGN §10.10 fixes: RRF `1/(60+rank)` from rank 1; DBSF
/// mean +/- 3 population sigma, 0.5 when sigma is 0.
pub fn fuse(dense: Vec<Hit>, sparse: Vec<Hit>, fusion: Fusion) -> Vec<Hit> {
    let mut fused: Vec<Hit> = Vec::new();
    let mut position: HashMap<String, usize> = HashMap::new();
    for list in [dense, sparse] {
        let mapped = match fusion {
            Fusion::Rrf => (1..=list.len())
                .map(|rank| 1.0 / (60.0 + rank as f32))
                .collect::<Vec<_>>(),
            Fusion::Dbsf => {
                let n = list.len() as f32;
                let mean = list.iter().map(|h| h.score).sum::<f32>() / n.max(1.0);
                let sigma = (list.iter().map(|h| (h.score - mean).powi(2)).sum::<f32>() / n.max(1.0)).sqrt();
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
