//! The graph's tests: recall against exhaustive search (ordinary vectors, vectors half precision cannot
//! hold, graphs built on two threads), filtered walks and scans, near ties, and deleted nodes.

use super::*;
use crate::dense::ExactIndex;

/// Deterministic pseudo-random unit vectors in clusters.
fn clustered(count: usize, dimension: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as f64 / (1u64 << 31) as f64) as f32 - 0.5
    };
    let centres: Vec<Vec<f32>> = (0..20)
        .map(|_| (0..dimension).map(|_| next()).collect())
        .collect();
    (0..count)
        .map(|i| {
            let v: Vec<f32> = centres[i % 20].iter().map(|c| c + 0.3 * next()).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter().map(|x| x / n).collect()
        })
        .collect()
}

fn recall(similarity: SimilarityFunction, ef_search: usize, accept: &dyn Fn(usize) -> bool) -> f64 {
    recall_of(similarity, ef_search, accept, &clustered(100, 24, 99))
}

/// Recall@10 of `queries` over 5,000 clustered vectors of 24 dimensions (cluster `slot % 20`).
fn recall_of(
    similarity: SimilarityFunction,
    ef_search: usize,
    accept: &dyn Fn(usize) -> bool,
    queries: &[Vec<f32>],
) -> f64 {
    let data = clustered(5_000, 24, 7);
    let mut graph = Hnsw::new(similarity, 24, search_params(ef_search));
    for (slot, vector) in data.iter().enumerate() {
        graph.insert(slot, vector);
    }
    recall_in(&graph, &data, accept, queries)
}

/// Parameters for a test graph: searched with `ef_search`, never exhaustively.
pub(super) fn search_params(ef_search: usize) -> HnswParams {
    HnswParams {
        exact_below: 0,
        ef_search,
        ..HnswParams::default()
    }
}

/// Recall@10 of `queries` in `graph`, which holds `data`, against an exhaustive search.
pub(super) fn recall_in(
    graph: &Hnsw,
    data: &[Vec<f32>],
    accept: &dyn Fn(usize) -> bool,
    queries: &[Vec<f32>],
) -> f64 {
    recall_by(graph, data, accept, queries, &|query| {
        graph.search(query, 10, accept)
    })
}

/// A search's answer to a query: slots and scores, best first.
pub(super) type Search<'a> = &'a dyn Fn(&[f32]) -> Vec<(usize, f32)>;

/// Recall@10 of `search` (a query's ten best slots) against exhaustive search of `data` through `accept`.
pub(super) fn recall_by(
    graph: &Hnsw,
    data: &[Vec<f32>],
    accept: &dyn Fn(usize) -> bool,
    queries: &[Vec<f32>],
    search: Search<'_>,
) -> f64 {
    let k = 10;
    let mut exact = ExactIndex::new(graph.similarity, graph.dimension);
    for (slot, vector) in data.iter().enumerate() {
        exact.insert(slot, vector);
    }
    let mut found = 0;
    for query in queries {
        let truth: std::collections::HashSet<usize> = exact
            .search(query, k, accept)
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        found += search(query)
            .into_iter()
            .filter(|(s, _)| truth.contains(s))
            .count();
    }
    found as f64 / (queries.len() * k) as f64
}

#[test]
fn graph_search_recalls_what_exhaustive_search_finds() {
    for similarity in [
        SimilarityFunction::Cosine,
        SimilarityFunction::Euclidean,
        SimilarityFunction::DotProduct,
    ] {
        let recall = recall(similarity, 128, &|_| true);
        assert!(recall >= 0.95, "{similarity}: recall@10 {recall}");
    }
}

#[test]
fn vectors_too_large_or_too_small_for_half_precision_keep_recall() {
    // Coordinates in the millions overflow half precision; all below 1e-6 they vanish in it.
    let scaled = |vectors: Vec<Vec<f32>>, by: f32| -> Vec<Vec<f32>> {
        vectors
            .into_iter()
            .map(|v| v.into_iter().map(|x| x * by).collect())
            .collect()
    };
    for similarity in [SimilarityFunction::Euclidean, SimilarityFunction::DotProduct] {
        for by in [1e6_f32, 1e-7] {
            let data = scaled(clustered(5_000, 24, 7), by);
            let mut graph = Hnsw::new(similarity, 24, search_params(128));
            for (slot, vector) in data.iter().enumerate() {
                graph.insert(slot, vector);
            }
            let recall = recall_in(&graph, &data, &|_| true, &scaled(clustered(100, 24, 99), by));
            assert!(
                recall >= 0.95,
                "{similarity}, coordinates times {by:e}: recall@10 {recall}"
            );
        }
    }
}

#[test]
fn a_graph_built_on_two_threads_recalls_what_exhaustive_search_finds_and_is_the_same_every_time() {
    let data = clustered(5_000, 24, 7);
    let items: Vec<(usize, &[f32])> = data
        .iter()
        .enumerate()
        .map(|(slot, v)| (slot, v.as_slice()))
        .collect();
    let build = || {
        let mut graph = Hnsw::new(SimilarityFunction::Cosine, 24, search_params(64));
        for chunk in items.chunks(64) {
            graph.insert_many(chunk, 2);
        }
        graph
    };
    let graph = build();
    assert_eq!(graph.len(), data.len());
    let recall = recall_in(&graph, &data, &|_| true, &clustered(100, 24, 99));
    assert!(recall >= 0.95, "recall@10 {recall}");
    let again = build();
    assert!(
        graph.level0 == again.level0 && graph.upper == again.upper && graph.entry == again.entry,
        "the same inserts make the same graph whichever thread finishes first"
    );
}

#[test]
fn filtered_search_keeps_recall_at_every_selectivity() {
    for modulus in [2, 10, 100] {
        let recall = recall(SimilarityFunction::Cosine, 128, &|slot| slot % modulus == 0);
        assert!(recall >= 0.95, "1/{modulus} pass: recall@10 {recall}");
    }
}

#[test]
fn filters_that_keep_whole_clusters_keep_recall_for_queries_in_rejected_ones() {
    // Queries are stored vectors, so most sit inside a cluster the filter rejects whole.
    let queries: Vec<Vec<f32>> = clustered(5_000, 24, 7).into_iter().step_by(53).collect();
    for kept in [5, 10, 18] {
        let recall = recall_of(SimilarityFunction::Cosine, 64, &|slot| slot % 20 < kept, &queries);
        assert!(recall >= 0.95, "{kept} of 20 clusters kept: recall@10 {recall}");
    }
}

/// One slot in `modulus`, picked by a hash of the slot: independent of the cluster (`slot % 20`).
pub(super) fn scattered(slot: usize, modulus: u64) -> bool {
    ((slot as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40).is_multiple_of(modulus)
}

#[test]
fn filtered_walks_through_rejected_nodes_keep_recall() {
    // More records pass than the 64 * 16 distances a walk at ef 64 costs: the planner walks (the next
    // test shows it walks at these settings rather than scanning).
    for modulus in [2, 3] {
        let recall = recall(SimilarityFunction::Cosine, 64, &move |slot| {
            scattered(slot, modulus)
        });
        assert!(recall >= 0.95, "1/{modulus} pass: recall@10 {recall}");
    }
    // Nine in ten pass: the walk goes through the rejected nodes instead of bridging them, so it
    // recalls what an unfiltered walk of the same width does.
    let recall = recall(SimilarityFunction::Cosine, 128, &|slot| !scattered(slot, 10));
    assert!(recall >= 0.95, "9/10 pass: recall@10 {recall}");
}

/// 5,000 clustered vectors of 24 dimensions and their cosine graph, which always walks (ef 16).
pub(super) fn walked_graph() -> (Vec<Vec<f32>>, Hnsw) {
    let data = clustered(5_000, 24, 7);
    let params = HnswParams {
        exact_below: 0,
        ef_search: 16,
        ..HnswParams::default()
    };
    let mut graph = Hnsw::new(SimilarityFunction::Cosine, 24, params);
    for (slot, vector) in data.iter().enumerate() {
        graph.insert(slot, vector);
    }
    (data, graph)
}

#[test]
fn a_filtered_walk_judges_each_node_once_and_only_near_the_query() {
    let (data, mut graph) = walked_graph();
    for (ef, modulus) in [(16, 10), (64, 2), (64, 3)] {
        graph.set_ef_search(ef);
        let judged = std::cell::RefCell::new(std::collections::HashMap::<usize, usize>::new());
        let hits = graph.search(&data[0], 10, &|slot| {
            *judged.borrow_mut().entry(slot).or_default() += 1;
            scattered(slot, modulus)
        });
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|(slot, _)| scattered(*slot, modulus)));
        let judged = judged.into_inner();
        // The planner's sample judges up to 1,024 slots; the walk judges each other slot at most once
        // more.
        assert!(
            judged.values().all(|&times| times <= 2),
            "ef {ef}, 1/{modulus}: a slot judged three times"
        );
        assert!(
            judged.len() < 1_024 + 2_500,
            "ef {ef}, 1/{modulus}: judged {} of 5,000 slots: a scan, not a walk",
            judged.len()
        );
    }
}

#[test]
fn a_listing_is_scanned_while_short_for_its_share_and_walked_beyond() {
    let (data, graph) = walked_graph();
    // ef * m = 256: 500 listed at 10 % (50) are scanned; 2,500 at 50 % (1,250) are walked, though
    // ten walks' work would scan them.
    for (modulus, scanned) in [(10, true), (2, false)] {
        let listed: Vec<u32> = (0..5_000_u32).filter(|&slot| slot % modulus == 0).collect();
        let passes = |slot: usize| listed.binary_search(&(slot as u32)).is_ok();
        let judged = std::cell::Cell::new(0_usize);
        let hits = graph.search_listed(
            &data[3],
            10,
            &crate::slots::Slots::List(listed.as_slice().into()),
            false,
            &|slot| {
                judged.set(judged.get() + 1);
                passes(slot)
            },
        );
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|&(slot, _)| passes(slot)));
        let judged = judged.get();
        if scanned {
            assert_eq!(judged, listed.len(), "a short listing is judged whole");
        } else {
            assert!(
                judged < listed.len() / 2,
                "judged {judged} of {}: a scan, not a walk",
                listed.len()
            );
        }
    }
}

#[test]
fn an_identical_vector_comes_first_among_near_parallel_ones() {
    // Directions a few thousandths of a radian apart: half precision cannot order them, so only the
    // f32 re-ranking of every near tie finds the vector itself, walking or scanning.
    let data: Vec<Vec<f32>> = (0..3_000)
        .map(|i| {
            let (a, b, c) = ((i % 50) as f32, (i / 50 % 12) as f32, (i / 600) as f32);
            vec![1.0, a, b, c, 0.5, 0.25, 0.125, 1.0]
        })
        .collect();
    for exact_below in [0, 1_000_000] {
        let params = HnswParams {
            exact_below,
            ..HnswParams::default()
        };
        let mut graph = Hnsw::new(SimilarityFunction::Cosine, 8, params);
        for (slot, vector) in data.iter().enumerate() {
            graph.insert(slot, vector);
        }
        for (slot, vector) in data.iter().enumerate().step_by(7) {
            assert_eq!(
                graph.search_all(vector, 1)[0].0,
                slot,
                "exhaustive below {exact_below}"
            );
        }
    }
}

#[test]
fn an_exhaustive_search_judges_each_node_once_even_where_near_ties_widen_its_band() {
    // Near-parallel vectors: the f32 order of the best is settled only by re-ranking a band of near
    // ties, which must come from the scores taken, not from judging the filter again.
    let data: Vec<Vec<f32>> = (0..3_000)
        .map(|i| vec![1.0, (i % 50) as f32, (i / 50 % 12) as f32, 0.5, 0.25])
        .collect();
    let params = HnswParams {
        exact_below: 1_000_000,
        ..HnswParams::default()
    };
    let mut graph = Hnsw::new(SimilarityFunction::Cosine, 5, params);
    for (slot, vector) in data.iter().enumerate() {
        graph.insert(slot, vector);
    }
    let judged = std::cell::RefCell::new(vec![0_u32; data.len()]);
    let hits = graph.search(&data[7], 10, &|slot| {
        judged.borrow_mut()[slot] += 1;
        slot % 2 == 1
    });
    assert_eq!(hits[0].0, 7, "the vector itself comes first");
    assert!(judged.into_inner().iter().all(|&times| times == 1));
}

#[test]
fn a_count_past_the_graphs_size_finds_every_passing_node() {
    let (data, graph) = walked_graph();
    let hits = graph.search(&data[0], usize::MAX, &|slot| slot % 2 == 0);
    assert_eq!(hits.len(), 2_500);
    assert!(hits.iter().all(|(slot, _)| slot % 2 == 0));
}

#[test]
fn deleted_nodes_are_never_returned() {
    let data = clustered(3_000, 8, 3);
    let mut graph = Hnsw::new(
        SimilarityFunction::Cosine,
        8,
        HnswParams {
            exact_below: 0,
            ..HnswParams::default()
        },
    );
    for (slot, vector) in data.iter().enumerate() {
        graph.insert(slot, vector);
    }
    for slot in (0..3_000).step_by(2) {
        graph.remove(slot);
    }
    let hits = graph.search(&data[0], 20, &|_| true);
    assert_eq!(hits.len(), 20);
    assert!(hits.iter().all(|(slot, _)| slot % 2 == 1));
    // A filter that 3 % pass is scanned (judged sixteen nodes at a time; 3,000 is not a multiple of
    // sixteen, and the last eight slots pass): every live passing slot is found, no removed one.
    let hits = graph.search(&data[0], 40, &|slot| slot % 100 < 3 || slot >= 2_992);
    let mut found: Vec<usize> = hits.iter().map(|(slot, _)| *slot).collect();
    found.sort_unstable();
    let live_passing: Vec<usize> = (0..30)
        .map(|n| n * 100 + 1)
        .chain([2_993, 2_995, 2_997, 2_999])
        .collect();
    assert_eq!(found, live_passing);
}

#[test]
fn a_beam_no_longer_than_twice_the_answers_returns_them_by_their_exact_scores() {
    // At ef 16 for 10 answers the whole beam goes to the f32 vectors, in the codes' order: the answer
    // must still come best first, with the scores an exhaustive search gives.
    let data = clustered(5_000, 24, 7);
    for similarity in [
        SimilarityFunction::Cosine,
        SimilarityFunction::Euclidean,
        SimilarityFunction::DotProduct,
    ] {
        let mut graph = Hnsw::new(similarity, 24, search_params(16));
        let mut exact = ExactIndex::new(similarity, 24);
        for (slot, vector) in data.iter().enumerate() {
            graph.insert(slot, vector);
            exact.insert(slot, vector);
        }
        for query in clustered(50, 24, 99) {
            let found = graph.search_all(&query, 10);
            assert_eq!(found.len(), 10);
            assert!(
                found.windows(2).all(|pair| pair[0].1 >= pair[1].1),
                "{similarity}: best first"
            );
            for (slot, score) in found {
                let (_, exact_score) = exact.search(&query, 1, &|s| s == slot)[0];
                assert!(
                    (score - exact_score).abs() <= 1e-5 * exact_score.abs().max(1.0),
                    "{similarity}: slot {slot} scored {score}, exactly {exact_score}"
                );
            }
        }
    }
}

#[test]
fn a_filter_of_its_own_type_finds_what_the_same_filter_through_a_pointer_finds() {
    let data = clustered(5_000, 24, 7);
    let mut graph = Hnsw::new(SimilarityFunction::Cosine, 24, search_params(64));
    for (slot, vector) in data.iter().enumerate() {
        graph.insert(slot, vector);
    }
    graph.remove(40);
    // Kept: one in 1,000 (a scan) and one in 7 (a filtered walk); dropped: the rest, most of the graph
    // (a walk through rejected nodes).
    for modulus in [1_000, 7] {
        let kept = |slot: usize| slot.is_multiple_of(modulus);
        let dropped = |slot: usize| !slot.is_multiple_of(modulus);
        for query in clustered(20, 24, 99) {
            assert_eq!(
                graph.search_with(&query, 10, &kept),
                graph.search(&query, 10, &kept),
                "1 in {modulus} kept"
            );
            assert_eq!(
                graph.search_with(&query, 10, &dropped),
                graph.search(&query, 10, &dropped),
                "1 in {modulus} dropped"
            );
        }
    }
    let answer = graph.search_with(&clustered(1, 24, 99)[0], 10, &|slot| slot == 40);
    assert!(answer.is_empty(), "the one passing node is removed: {answer:?}");
}
