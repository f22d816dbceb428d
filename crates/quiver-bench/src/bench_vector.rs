//! `quiver-bench vector`: Quiver's HNSW against hnswlib on the same clustered vectors, single thread:
//! build rate, QPS and recall@10 at several beam widths, filtered search at three selectivities,
//! memory per vector, and durable upsert throughput through the real store.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use quiver_core::index::{IndexType, SimilarityFunction};
use quiver_core::plan::PlanType;
use quiver_core::{IndexId, SystemClock};
use quiver_server::Config;
use quiver_store::SqliteVectorStore;
use quiver_vector::dense::{DenseIndex, ExactIndex};
use quiver_vector::hnsw::{Hnsw, HnswParams, INSERT_BATCH};
use quiver_vector::record::{IndexSpec, Record};
use quiver_vector::service::{IndexRef, Vectors};

/// Settings of one run.
#[derive(Debug, Clone)]
pub(crate) struct VectorBench {
    pub(crate) count: usize,
    pub(crate) dimension: usize,
    pub(crate) queries: usize,
    pub(crate) centroids: usize,
    pub(crate) sigma: f32,
    pub(crate) efs: Vec<usize>,
    pub(crate) dir: Option<PathBuf>,
    pub(crate) peer_python: Option<PathBuf>,
    pub(crate) service_count: usize,
    pub(crate) filter_rounds: usize,
}

/// SplitMix64 and Box-Muller: deterministic Gaussian samples.
pub(crate) struct Gaussian(pub(crate) u64);

impl Gaussian {
    /// A uniform sample in [0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(crate) fn sample(&mut self) -> f32 {
        let (u, v) = (self.uniform().max(1e-12), self.uniform());
        ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
    }
}

fn normalise(vector: &mut [f32]) {
    let length = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    vector.iter_mut().for_each(|x| *x /= length);
}

/// `count` unit vectors around `centroids` Gaussian centres (coordinates N(0,1)), noise N(0, sigma^2),
/// with the number of each one's centre.
pub(crate) fn clustered(
    random: &mut Gaussian,
    centres: &[Vec<f32>],
    count: usize,
    sigma: f32,
) -> (Vec<Vec<f32>>, Vec<usize>) {
    (0..count)
        .map(|_| {
            let cluster = (random.uniform() * centres.len() as f64) as usize % centres.len().max(1);
            let mut v: Vec<f32> = centres[cluster]
                .iter()
                .map(|c| c + sigma * random.sample())
                .collect();
            normalise(&mut v);
            (v, cluster)
        })
        .unzip()
}

fn write_f32(path: &Path, vectors: &[Vec<f32>]) -> Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    for vector in vectors {
        for x in vector {
            file.write_all(&x.to_le_bytes())?;
        }
    }
    Ok(file.flush()?)
}

/// One engine filter row: its QPS in each round with regions and walked, and its recall either way.
#[derive(Default)]
struct FilterRow<'a> {
    label: &'a str,
    regions_qps: Vec<f64>,
    regions_recall: f64,
    walked_qps: Vec<f64>,
    walked_recall: f64,
}

/// The median of `values` (reordered); 0 for none.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn recall(results: &[Vec<usize>], truth: &[Vec<usize>]) -> f64 {
    let found: usize = results
        .iter()
        .zip(truth)
        .map(|(got, want)| {
            let want: HashSet<&usize> = want.iter().collect();
            got.iter().filter(|s| want.contains(s)).count()
        })
        .sum();
    found as f64 / truth.iter().map(Vec::len).sum::<usize>().max(1) as f64
}

/// Passes over the query set; the best pass counts (both engines, so a noisy neighbour on this shared
/// machine slows one pass, not the figure).
const PASSES: usize = 3;

/// QPS of the best of [`PASSES`] passes, and the results.
fn timed_queries(
    search: impl Fn(&[f32]) -> Vec<(usize, f32)>,
    queries: &[Vec<f32>],
) -> (f64, Vec<Vec<usize>>) {
    let mut best = 0.0_f64;
    let mut results = Vec::new();
    for _ in 0..PASSES {
        let started = Instant::now();
        results = queries
            .iter()
            .map(|q| search(q).into_iter().map(|(s, _)| s).collect())
            .collect();
        best = best.max(queries.len() as f64 / started.elapsed().as_secs_f64());
    }
    (best, results)
}

/// A record's `at`: a distinct whole number per record, rising with the order of writing, as a
/// timestamp in seconds would.
fn written_at(n: usize) -> u64 {
    1_700_000_000 + n as u64
}

/// A record's `score`: a number in [0, 1) in millionths, picked by a hash of the record's number, so
/// that nearly every record holds a distinct one and a range over it ignores the order of writing and
/// the clusters.
fn score_of(n: usize) -> f64 {
    ((n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as f64 % 1_000_000.0 / 1_000_000.0
}

/// A window of 1 % of `count` records in the middle of the order of writing, by two ranges over `at`:
/// the filter, and the record numbers it passes.
fn middle_window(count: usize) -> (String, std::ops::Range<usize>) {
    let numbers = count / 2..count / 2 + count / 100;
    let filter = format!(
        "at >= {} AND at < {}",
        written_at(numbers.start),
        written_at(numbers.end)
    );
    (filter, numbers)
}

/// Whether `slot` passes a filter that keeps one in `modulus`, picked by a hash of the slot: independent
/// of insertion order and of the positions the planner samples.
fn keeps(slot: usize, modulus: usize) -> bool {
    ((slot as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40).is_multiple_of(modulus as u64)
}

pub(crate) async fn run(config: &Config, bench: VectorBench) -> Result<()> {
    let k = 10;
    let parent = bench.dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    let scratch = tempfile::tempdir_in(&parent)?;
    let mut random = Gaussian(42);
    let centres: Vec<Vec<f32>> = (0..bench.centroids)
        .map(|_| (0..bench.dimension).map(|_| random.sample()).collect())
        .collect();
    let (base, clusters) = clustered(&mut random, &centres, bench.count, bench.sigma);
    let (queries, _) = clustered(&mut random, &centres, bench.queries, bench.sigma);
    eprintln!(
        "generated {} x {} vectors and {} queries",
        bench.count, bench.dimension, bench.queries
    );

    // Ground truth, exhaustive.
    let exact = exact_index(&base);
    let truth = exact_truth(&exact, &queries, k, &|_| true);
    write_f32(&scratch.path().join("base.f32"), &base)?;
    write_f32(&scratch.path().join("queries.f32"), &queries)?;
    let mut truth_file = std::io::BufWriter::new(std::fs::File::create(scratch.path().join("truth.u32"))?);
    for row in &truth {
        for slot in row {
            truth_file.write_all(&u32::try_from(*slot)?.to_le_bytes())?;
        }
    }
    truth_file.flush()?;

    // Quiver's graph, one thread.
    let params = HnswParams {
        m: 16,
        ef_construction: 128,
        ef_search: 64,
        exact_below: 0,
    };
    let mut graph = Hnsw::new(SimilarityFunction::DotProduct, bench.dimension, params);
    let started = Instant::now();
    // Both builds make room for the whole set first, as the indexer does for its backlog.
    graph.reserve(bench.count);
    for (slot, vector) in base.iter().enumerate() {
        graph.insert(slot, vector);
    }
    let build_rate = bench.count as f64 / started.elapsed().as_secs_f64();

    // The same build on two threads, in batches as the background indexer takes them.
    let mut parallel = Hnsw::new(SimilarityFunction::DotProduct, bench.dimension, params);
    let items: Vec<(usize, &[f32])> = base
        .iter()
        .enumerate()
        .map(|(slot, v)| (slot, v.as_slice()))
        .collect();
    let started = Instant::now();
    parallel.reserve(bench.count);
    for chunk in items.chunks(INSERT_BATCH) {
        parallel.insert_many(chunk, 2);
    }
    let parallel_rate = bench.count as f64 / started.elapsed().as_secs_f64();
    // Compared where recall is most sensitive to the graph: the narrowest beam measured.
    let narrowest = bench.efs.iter().copied().min().unwrap_or(64);
    parallel.set_ef_search(narrowest);
    let (parallel_qps, parallel_results) = timed_queries(|q| parallel.search_all(q, k), &queries);
    let parallel_recall = recall(&parallel_results, &truth);
    drop(parallel);
    let mut ours = Vec::new();
    for &ef in &bench.efs {
        graph.set_ef_search(ef);
        let (qps, results) = timed_queries(|q| graph.search_all(q, k), &queries);
        ours.push((ef, qps, recall(&results, &truth)));
    }

    // Filtered search (ef 64), against filtered ground truth: records picked by a hash of the slot, so
    // that the filter ignores the clusters, and whole clusters kept or dropped by a hash of their number.
    graph.set_ef_search(64);
    // Each row is measured with regions trained (what a graph of this size keeps once the indexer has
    // trained them) and walked as before, in alternating rounds of the same run; medians are reported.
    // The last two keep whole clusters and, besides, records scattered over every cluster (a filter
    // such as `category = 'x' OR pinned = true`): a record in 100 and a record in 1,000.
    let rows: [(&str, usize, bool, bool, Option<usize>); 10] = [
        ("0.1 %", 1_000, false, true, None),
        ("1 %", 100, false, true, None),
        ("10 %", 10, false, true, None),
        ("50 %", 2, false, true, None),
        ("1 % (whole clusters kept)", 100, true, true, None),
        ("10 % (whole clusters kept)", 10, true, true, None),
        ("50 % (whole clusters kept)", 2, true, true, None),
        ("90 % (10 % of clusters dropped)", 10, true, false, None),
        (
            "11 % (10 % of clusters, 1 % of records)",
            10,
            true,
            true,
            Some(100),
        ),
        (
            "10.1 % (10 % of clusters, 0.1 % of records)",
            10,
            true,
            true,
            Some(1_000),
        ),
    ];
    let mut passing_of = Vec::new();
    for (label, modulus, by_cluster, kept, scattered) in rows {
        let passing: Vec<bool> = (0..bench.count)
            .map(|slot| {
                let picked = if by_cluster {
                    keeps(clusters[slot], modulus)
                } else {
                    keeps(slot, modulus)
                };
                picked == kept || scattered.is_some_and(|modulus| keeps(slot, modulus))
            })
            .collect();
        let filtered_truth = exact_truth(&exact, &queries, k, &|slot| passing[slot]);
        passing_of.push((label, passing, filtered_truth));
    }
    let started = Instant::now();
    let explained = graph.train_regions().unwrap_or(0.0);
    let regions_seconds = started.elapsed().as_secs_f64();
    let mut filtered: Vec<FilterRow<'_>> = passing_of
        .iter()
        .map(|(label, _, _)| FilterRow {
            label,
            ..FilterRow::default()
        })
        .collect();
    let mut unfiltered_rounds = Vec::new();
    eprintln!(
        "regions trained; filtered rows, {} rounds",
        bench.filter_rounds.max(1)
    );
    for _ in 0..bench.filter_rounds.max(1) {
        unfiltered_rounds.push(timed_queries(|q| graph.search_all(q, k), &queries).0);
        for use_regions in [true, false] {
            graph.use_regions(use_regions);
            for ((_, passing, filtered_truth), row) in passing_of.iter().zip(filtered.iter_mut()) {
                let accept = |slot: usize| passing[slot];
                let (qps, results) = timed_queries(|q| graph.search_with(q, k, &accept), &queries);
                let found = recall(&results, filtered_truth);
                if use_regions {
                    row.regions_qps.push(qps);
                    row.regions_recall = found;
                } else {
                    row.walked_qps.push(qps);
                    row.walked_recall = found;
                }
            }
        }
    }
    graph.use_regions(true);
    let memory_per_vector = graph.memory_bytes() as f64 / bench.count as f64;

    // The peer, same files, same parameters.
    let mut peer = Vec::new();
    let mut peer_build = None;
    if let Some(python) = &bench.peer_python {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/hnswlib_peer.py");
        let efs: Vec<String> = bench.efs.iter().map(ToString::to_string).collect();
        let output = Command::new(python)
            .arg(&script)
            .arg(scratch.path())
            .args([
                bench.dimension.to_string(),
                "16".into(),
                "128".into(),
                efs.join(","),
            ])
            .output()
            .context("running the hnswlib peer")?;
        anyhow::ensure!(
            output.status.success(),
            "hnswlib peer failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let value: serde_json::Value = serde_json::from_str(line)?;
            if let Some(rate) = value["build_per_second"].as_f64() {
                peer_build = Some(rate);
            } else {
                peer.push((
                    value["ef"].as_u64().unwrap_or(0) as usize,
                    value["qps"].as_f64().unwrap_or(0.0),
                    value["recall"].as_f64().unwrap_or(0.0),
                ));
            }
        }
    }

    // Durable upserts through the real store and engine, batches of 1,000: acknowledged after the commit
    // (the graph insert is the background indexer's, measured above as the build rate).
    let store = SqliteVectorStore::open(scratch.path(), &config.storage)?;
    // The benchmark's index has no models: nothing is embedded.
    let embedders = quiver_embed::Embedders::new(quiver_embed::ModelDir::new(std::env::temp_dir()), 1);
    let vectors = Arc::new(Vectors::new(
        Arc::new(store.clone()),
        SystemClock::shared(),
        Arc::new(embedders),
    ));
    let index = IndexRef {
        id: IndexId::random(),
        name: "bench".into(),
        spec: IndexSpec {
            dimension: bench.dimension,
            similarity: SimilarityFunction::DotProduct,
            index_type: IndexType::Dense,
        },
        limits: quiver_core::plan::PlanLimits {
            max_vector_count: quiver_core::plan::Limit::Unlimited,
            ..PlanType::Payg.vector_limits()
        },
        models: quiver_vector::text::TextModels::default(),
    };
    let upsert_count = bench.count.min(bench.service_count);
    let record_metadata = |n: usize| serde_json::json!({"cluster": clusters[n], "tag": n % 10, "shard": n % 100, "part": n % 1000, "name": format!("r{n}"), "at": written_at(n), "score": score_of(n)});
    let started = Instant::now();
    for (batch_number, chunk) in base[..upsert_count].chunks(1000).enumerate() {
        let records = chunk
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let n = batch_number * 1000 + i;
                Record {
                    id: format!("v{n}"),
                    vector: Some(v.clone()),
                    sparse: None,
                    metadata: Some(record_metadata(n)),
                    data: None,
                }
            })
            .collect();
        vectors.upsert(&index, "", records).await?;
    }
    let upsert_rate = upsert_count as f64 / started.elapsed().as_secs_f64();
    // What the service's metadata index of these records holds.
    let mut metadata_index = quiver_vector::metadata_index::MetadataIndex::default();
    for n in 0..upsert_count {
        metadata_index.add(n as u32, &record_metadata(n));
    }
    let index_bytes = metadata_index.memory_bytes() as f64 / upsert_count as f64;
    // What planning a range over a distinct number per record costs the first time it is asked
    // (median of 21): listed where it holds at most a quarter of the numbers, otherwise left to a walk.
    let (window, _) = middle_window(upsert_count);
    let range_plans: Vec<(&str, f64, bool)> = ["score < 0.01", "score < 0.1", "score >= 0.5", &window]
        .into_iter()
        .map(|text| -> Result<(&str, f64, bool)> {
            let filter = quiver_vector::filter::Filter::parse(text)?.context("a filter")?;
            let mut times: Vec<f64> = (0..21)
                .map(|_| {
                    let started = Instant::now();
                    std::hint::black_box(metadata_index.plan(&filter));
                    started.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            times.sort_by(f64::total_cmp);
            Ok((
                text,
                times[times.len() / 2],
                metadata_index.plan(&filter).is_some(),
            ))
        })
        .collect::<Result<_>>()?;
    drop(metadata_index);
    let language = filter_language_rows(
        &vectors,
        &index,
        &base[..upsert_count],
        &clusters[..upsert_count],
        &queries,
        k,
    )
    .await?;
    store.database().close().await;

    println!(
        "vector benchmark: {} x {} clustered unit vectors ({} centroids, sigma {}), {} queries, k = {k}, M = 16, efConstruction = 128, one thread",
        bench.count, bench.dimension, bench.centroids, bench.sigma, bench.queries
    );
    println!("| ef | Quiver QPS | Quiver recall@10 | hnswlib QPS | hnswlib recall@10 | QPS ratio |");
    println!("|---|---|---|---|---|---|");
    for (ef, qps, recall) in &ours {
        match peer.iter().find(|(peer_ef, _, _)| peer_ef == ef) {
            Some((_, peer_qps, peer_recall)) => {
                println!(
                    "| {ef} | {qps:.0} | {recall:.3} | {peer_qps:.0} | {peer_recall:.3} | {:.2}x |",
                    qps / peer_qps
                );
            }
            None => println!("| {ef} | {qps:.0} | {recall:.3} | - | - | - |"),
        }
    }
    match peer_build {
        Some(peer_rate) => println!(
            "graph build: Quiver {build_rate:.0} vectors/s, hnswlib {peer_rate:.0} vectors/s ({:.2}x)",
            build_rate / peer_rate
        ),
        None => println!("graph build: Quiver {build_rate:.0} vectors/s (no peer run: pass --peer-python)"),
    }
    let one_thread = ours.iter().find(|(ef, _, _)| *ef == narrowest);
    println!(
        "graph build on two threads: {parallel_rate:.0} vectors/s, {:.2}x one thread; that graph at ef {narrowest}: {parallel_qps:.0} QPS, recall@10 {parallel_recall:.3} (one thread's graph: {})",
        parallel_rate / build_rate,
        one_thread.map_or_else(String::new, |(_, qps, recall)| format!(
            "{qps:.0} QPS, recall@10 {recall:.3}"
        ))
    );
    let unfiltered_median = median(&mut unfiltered_rounds);
    println!(
        "regions trained in {regions_seconds:.2} s, explaining {explained:.2} of the variance (read from 0.5 on); filtered rows (ef 64) with regions and walked, {} alternating rounds, medians; unfiltered {unfiltered_median:.0} QPS (median of the rounds)",
        bench.filter_rounds.max(1)
    );
    println!(
        "| filter passes | QPS | recall@10 | against unfiltered | walked: QPS | walked: recall@10 | walked: against unfiltered |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in &mut filtered {
        let (regions_qps, walked_qps) = (median(&mut row.regions_qps), median(&mut row.walked_qps));
        println!(
            "| {} | {regions_qps:.0} | {:.3} | {:.2}x | {walked_qps:.0} | {:.3} | {:.2}x |",
            row.label,
            row.regions_recall,
            regions_qps / unfiltered_median,
            row.walked_recall,
            walked_qps / unfiltered_median
        );
    }
    let (unfiltered_service, service_rows) = language;
    println!(
        "through the service, {upsert_count} records with metadata {{cluster, tag: n % 10, shard: n % 100, part: n % 1000, name: r<n>, at: a number rising with n, score: a hashed number in [0, 1)}}: unfiltered {unfiltered_service:.0} QPS"
    );
    println!("metadata index: {index_bytes:.0} bytes per record (estimated from its capacities)");
    for (text, ms, listed) in &range_plans {
        let outcome = if *listed { "listed" } else { "left to a walk" };
        println!("planning `{text}` the first time it is asked: {ms:.3} ms ({outcome})");
    }
    println!("| filter (filter language) | passes | QPS | recall@10 | QPS against unfiltered |");
    println!("|---|---|---|---|---|");
    for row in &service_rows {
        println!(
            "| `{}` | {} | {:.0} | {:.3} | {:.2}x |",
            row.filter,
            row.passes,
            row.qps,
            row.recall,
            row.qps / unfiltered_service
        );
    }
    println!("memory: {memory_per_vector:.0} bytes per vector (vectors and graph)");
    println!(
        "durable acknowledged upserts (batches of 1,000, {upsert_count} vectors; acknowledged after the commit, the graph catches up in the background): {upsert_rate:.0} vectors/s"
    );
    Ok(())
}

/// One filtered row through the service.
struct ServiceRow {
    filter: String,
    passes: &'static str,
    qps: f64,
    recall: f64,
}

/// Queries through the service, unfiltered and with filters of the filter language on the records'
/// metadata, once the indexer has put every vector in the graph: the unfiltered QPS, and each filter's
/// QPS and recall@10 against an exhaustive search. Comparisons are answered from the metadata index;
/// the `GLOB` row is judged on each record's metadata, as any test the index does not answer.
async fn filter_language_rows(
    vectors: &Arc<Vectors>,
    index: &IndexRef,
    base: &[Vec<f32>],
    clusters: &[usize],
    queries: &[Vec<f32>],
    k: usize,
) -> Result<(f64, Vec<ServiceRow>)> {
    let stop = tokio_util::sync::CancellationToken::new();
    let indexer = tokio::spawn(Arc::clone(vectors).run_indexer(stop.clone()));
    // The rows measure the index as a server serves it once its indexer has caught up: every vector
    // in the graph and the regions trained. The indexer trains them after its last chunk, so stopping
    // it as soon as nothing was pending could leave them untrained, and the rows would then walk.
    let settling = Instant::now();
    loop {
        let counts = vectors
            .loaded_counts()
            .into_iter()
            .find(|counts| counts.index == index.id);
        if counts.is_some_and(|counts| counts.pending == 0 && counts.regions_due == 0) {
            break;
        }
        anyhow::ensure!(
            settling.elapsed() < std::time::Duration::from_secs(600),
            "the indexer had not indexed every vector and trained the regions after 10 minutes"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    stop.cancel();
    indexer.await?;
    let exact = exact_index(base);
    // The clusters `keeps` picks, listed: kept by `IN`, or dropped by `NOT IN`.
    let clusters_where = |modulus: usize, kept: bool| {
        let listed: Vec<String> = (0..clusters.iter().max().map_or(0, |c| c + 1))
            .filter(|&cluster| keeps(cluster, modulus))
            .map(|cluster| cluster.to_string())
            .collect();
        let not = if kept { "" } else { "NOT " };
        format!("cluster {not}IN ({})", listed.join(", "))
    };
    type Truth<'a> = Box<dyn Fn(usize) -> bool + 'a>;
    let in_clusters =
        |modulus: usize, kept: bool| -> Truth<'_> { Box::new(move |n| keeps(clusters[n], modulus) == kept) };
    let (window, window_numbers) = middle_window(base.len());
    let rows: Vec<(String, &'static str, Truth<'_>)> = vec![
        ("part = 7".into(), "0.1 %", Box::new(|n| n % 1000 == 7)),
        ("shard = 7".into(), "1 %", Box::new(|n| n % 100 == 7)),
        ("tag = 3".into(), "10 %", Box::new(|n| n % 10 == 3)),
        ("tag IN (0, 1, 2, 3, 4)".into(), "50 %", Box::new(|n| n % 10 < 5)),
        (
            clusters_where(100, true),
            "1 % (whole clusters kept)",
            in_clusters(100, true),
        ),
        (
            clusters_where(10, true),
            "10 % (whole clusters kept)",
            in_clusters(10, true),
        ),
        (
            clusters_where(2, true),
            "50 % (whole clusters kept)",
            in_clusters(2, true),
        ),
        (
            clusters_where(10, false),
            "90 % (10 % of clusters dropped)",
            in_clusters(10, false),
        ),
        (
            format!("{} OR shard = 7", clusters_where(10, true)),
            "11 % (10 % of clusters, or 1 % of records)",
            Box::new(|n| keeps(clusters[n], 10) || n % 100 == 7),
        ),
        (
            format!("{} OR part = 7", clusters_where(10, true)),
            "10.1 % (10 % of clusters, or 0.1 % of records)",
            Box::new(|n| keeps(clusters[n], 10) || n % 1000 == 7),
        ),
        (
            "tag = 3 AND shard < 50".into(),
            "5 % (two tests)",
            Box::new(|n| n % 10 == 3 && n % 100 < 50),
        ),
        ("tag >= 9".into(), "10 % (a range)", Box::new(|n| n % 10 >= 9)),
        (
            "tag NOT IN (0, 1, 2, 3, 4, 5, 6, 7, 8)".into(),
            "10 % (a negation)",
            Box::new(|n| n % 10 >= 9),
        ),
        (
            format!("at >= {}", written_at(base.len() - base.len() / 100)),
            "1 % (the newest, a range over a distinct number per record)",
            Box::new(|n| written_at(n) >= written_at(base.len() - base.len() / 100)),
        ),
        (
            window,
            "1 % (a window of two ranges over a distinct number per record)",
            Box::new(move |n| window_numbers.contains(&n)),
        ),
        (
            "score < 0.001".into(),
            "0.1 % (a range over a distinct number per record)",
            Box::new(|n| score_of(n) < 0.001),
        ),
        (
            "score < 0.01".into(),
            "1 % (a range over a distinct number per record)",
            Box::new(|n| score_of(n) < 0.01),
        ),
        (
            "score < 0.1".into(),
            "10 % (a range over a distinct number per record)",
            Box::new(|n| score_of(n) < 0.1),
        ),
        (
            "score >= 0.5".into(),
            "50 % (a range over a distinct number per record)",
            Box::new(|n| score_of(n) >= 0.5),
        ),
        (
            "name GLOB '*3'".into(),
            "10 % (a pattern over a distinct name per record)",
            Box::new(|n| n % 10 == 3),
        ),
        (
            "name NOT GLOB '*3'".into(),
            "90 % (most names match: judged when first asked, then listed)",
            Box::new(|n| n % 10 != 3),
        ),
    ];
    let (unfiltered, _) = service_queries(vectors, index, queries, k, None).await?;
    let mut measured = Vec::new();
    for (text, passes, accept) in rows {
        let filter = quiver_vector::filter::Filter::parse(&text)?;
        let (qps, results) = service_queries(vectors, index, queries, k, filter).await?;
        let truth = exact_truth(&exact, queries, k, &*accept);
        measured.push(ServiceRow {
            filter: if text.len() > 40 {
                format!("{}…)", &text[..36])
            } else {
                text
            },
            passes,
            qps,
            recall: recall(&results, &truth),
        });
    }
    Ok((unfiltered, measured))
}

/// The best of [`PASSES`] passes of `queries` through the service with `filter`: QPS and the results.
async fn service_queries(
    vectors: &Arc<Vectors>,
    index: &IndexRef,
    queries: &[Vec<f32>],
    k: usize,
    filter: Option<quiver_vector::filter::Filter>,
) -> Result<(f64, Vec<Vec<usize>>)> {
    let mut best = 0.0_f64;
    let mut results = Vec::new();
    for _ in 0..PASSES {
        let started = Instant::now();
        let mut found = Vec::new();
        for query in queries {
            let hits = vectors
                .query(
                    index,
                    "",
                    quiver_vector::query::Query {
                        input: quiver_vector::query::QueryInput::Vectors {
                            dense: Some(query.clone()),
                            sparse: None,
                        },
                        top_k: k,
                        filter: filter.clone(),
                        ..Default::default()
                    },
                )
                .await?;
            found.push(
                hits.iter()
                    .map(|hit| {
                        let unexpected =
                            || format!("a hit with an id the benchmark did not write: {}", hit.record.id);
                        let slot = hit.record.id.strip_prefix('v').with_context(unexpected)?;
                        slot.parse::<usize>().with_context(unexpected)
                    })
                    .collect::<Result<Vec<usize>>>()?,
            );
        }
        best = best.max(queries.len() as f64 / started.elapsed().as_secs_f64());
        results = found;
    }
    Ok((best, results))
}

/// Exhaustive search over `base`, slot by slot.
fn exact_index(base: &[Vec<f32>]) -> ExactIndex {
    let mut exact = ExactIndex::new(SimilarityFunction::DotProduct, base.first().map_or(0, Vec::len));
    for (slot, vector) in base.iter().enumerate() {
        exact.insert(slot, vector);
    }
    exact
}

/// The true `k` nearest accepted slots of each query.
fn exact_truth(
    exact: &ExactIndex,
    queries: &[Vec<f32>],
    k: usize,
    accept: &dyn Fn(usize) -> bool,
) -> Vec<Vec<usize>> {
    queries
        .iter()
        .map(|q| exact.search(q, k, accept).into_iter().map(|(s, _)| s).collect())
        .collect()
}
