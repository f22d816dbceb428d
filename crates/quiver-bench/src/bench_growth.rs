//! `quiver-bench growth`: how the vector engine's costs grow with the index, at each size given: the
//! time to write it through the service (durable upserts, then the background indexer), and, in a fresh
//! process over the stored index, the restart (time to the first answer and to full query speed, with
//! graph snapshots and, up to a size, without), resident memory per vector at its peak during the
//! load, right after the load and once it has settled, and QPS and latency percentiles of queries
//! through the service, with recall@10.
//!
//! Memory settles after the load: the records the store read and the snapshot file are freed on other
//! threads than the ones that allocated them, and mimalloc gives such memory back to the system when
//! those threads next allocate or when they retire (the runtime retires an idle blocking thread after
//! 10 s). The settled figure is read [`SETTLE`] after the index is at full speed, before the queries.
//!
//! Resident memory is the process's own (anonymous) memory plus the pages of files it has mapped and
//! touched. Large snapshots are mapped, so a loaded graph's f32 vectors are file pages: the load lets
//! them go once it has read them, and the queries' re-ranking maps back those it reads. Those pages are
//! page cache that the kernel can reclaim; the settled figure and the figures after the queries are
//! therefore also given split into the two.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use quiver_core::index::{IndexType, SimilarityFunction};
use quiver_core::plan::{Limit, PlanLimits, PlanType};
use quiver_core::{IndexId, SystemClock};
use quiver_server::Config;
use quiver_store::SqliteVectorStore;
use quiver_vector::dense::{DenseIndex, ExactIndex};
use quiver_vector::query::{Query, QueryInput};
use quiver_vector::record::{IndexSpec, Record};
use quiver_vector::service::{IndexRef, Vectors};
use tokio_util::sync::CancellationToken;

use crate::bench_vector::{Gaussian, clustered};

/// Settings of one run.
#[derive(Debug, Clone)]
pub(crate) struct GrowthBench {
    pub(crate) sizes: Vec<usize>,
    pub(crate) dimension: usize,
    pub(crate) queries: usize,
    pub(crate) rebuild_up_to: usize,
    pub(crate) dir: PathBuf,
    pub(crate) keep: bool,
}

const K: usize = 10;

/// Queries whose recall is checked against exhaustive search.
const RECALL_QUERIES: usize = 100;

fn index(id: IndexId, dimension: usize) -> IndexRef {
    IndexRef {
        id,
        name: "growth".into(),
        spec: IndexSpec {
            dimension,
            similarity: SimilarityFunction::Cosine,
            index_type: IndexType::Dense,
        },
        limits: PlanLimits {
            max_vector_count: Limit::Unlimited,
            ..PlanType::Payg.vector_limits()
        },
        models: quiver_vector::text::TextModels::default(),
    }
}

fn engine(store: &SqliteVectorStore, snapshots: Option<&Path>) -> Arc<Vectors> {
    // The benchmark's index has no models: nothing is embedded.
    let embedders = quiver_embed::Embedders::new(quiver_embed::ModelDir::new(std::env::temp_dir()), 1);
    let vectors = Vectors::new(
        Arc::new(store.clone()),
        SystemClock::shared(),
        Arc::new(embedders),
    );
    Arc::new(match snapshots {
        Some(dir) => vectors.with_snapshots(dir.to_owned()),
        None => vectors,
    })
}

/// Waits until nothing of `index` is pending (polling its counts).
async fn until_indexed(vectors: &Vectors, index: &IndexRef) -> Result<()> {
    while vectors.info(index).await?.pending_vector_count > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// Namespaces of `index` whose graphs are due to train regions (none once loaded with them).
fn regions_due(vectors: &Vectors, index: &IndexRef) -> usize {
    vectors
        .loaded_counts()
        .into_iter()
        .find(|counts| counts.index == index.id)
        .map_or(0, |counts| counts.regions_due)
}

/// How long after the load the settled memory is read.
const SETTLE: Duration = Duration::from_secs(15);

/// The process's resident memory: anonymous, and file pages mapped (bytes).
#[derive(Debug, Clone, Copy)]
struct Resident {
    anonymous: u64,
    file: u64,
    /// The most the process has held resident since it started (`VmHWM`).
    peak: u64,
}

impl Resident {
    fn read() -> Result<Resident> {
        let status = std::fs::read_to_string("/proc/self/status")?;
        let field = |name: &str| -> Result<u64> {
            let line = status
                .lines()
                .find(|line| line.starts_with(name))
                .with_context(|| format!("no {name} in /proc/self/status"))?;
            let kib: u64 = line
                .split_whitespace()
                .nth(1)
                .with_context(|| format!("{name} has no figure"))?
                .parse()?;
            Ok(kib * 1024)
        };
        Ok(Resident {
            anonymous: field("RssAnon:")?,
            file: field("RssFile:")?,
            peak: field("VmHWM:")?,
        })
    }

    fn total(self) -> u64 {
        self.anonymous + self.file
    }
}

fn write_vectors(path: &Path, vectors: &[Vec<f32>]) -> Result<()> {
    let bytes: Vec<u8> = vectors.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    Ok(std::fs::write(path, bytes)?)
}

fn read_vectors(path: &Path, dimension: usize) -> Result<Vec<Vec<f32>>> {
    let bytes = std::fs::read(path)?;
    Ok(bytes
        .chunks_exact(4 * dimension)
        .map(|row| {
            row.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
        .collect())
}

/// Writes `count` vectors through the service and lets the indexer finish and stop (writing its
/// snapshots); the seconds each took, and the index.
async fn write_index(
    config: &Config,
    dir: &Path,
    base: &[Vec<f32>],
    dimension: usize,
) -> Result<(IndexId, f64, f64, f64)> {
    let store = SqliteVectorStore::open(dir, &config.storage)?;
    let vectors = engine(&store, Some(&dir.join("snapshots")));
    let index = index(IndexId::random(), dimension);
    let stop = CancellationToken::new();
    let indexer = tokio::spawn(Arc::clone(&vectors).run_indexer(stop.clone()));
    let started = Instant::now();
    for (batch, chunk) in base.chunks(1_000).enumerate() {
        let records = chunk
            .iter()
            .enumerate()
            .map(|(i, vector)| Record {
                id: format!("v{}", batch * 1_000 + i),
                vector: Some(vector.clone()),
                sparse: None,
                metadata: None,
                data: None,
            })
            .collect();
        vectors.upsert(&index, "", records).await?;
    }
    let upserted = started.elapsed().as_secs_f64();
    until_indexed(&vectors, &index).await?;
    let indexed = started.elapsed().as_secs_f64();
    // A server left running trains the graph's regions once it has caught up, and its snapshot keeps
    // them; a stop before that would give the training up and leave the restart to train them.
    let training = Instant::now();
    while regions_due(&vectors, &index) > 0 {
        anyhow::ensure!(
            training.elapsed() < Duration::from_secs(600),
            "the indexer had not trained the regions after 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!(
        "regions trained {:.1} s after the graph was built",
        training.elapsed().as_secs_f64()
    );
    let stopping = Instant::now();
    stop.cancel();
    indexer.await?;
    let shutdown = stopping.elapsed().as_secs_f64();
    store.database().close().await;
    Ok((index.id, upserted, indexed, shutdown))
}

/// What one restart measured (printed by the child process as one JSON line).
#[derive(Debug)]
struct Restart {
    first_answer_s: f64,
    full_speed_s: f64,
    resident_bytes_per_vector: f64,
    peak_bytes_per_vector: f64,
    settled_bytes_per_vector: f64,
    settled_file_bytes_per_vector: f64,
    queried_anonymous_bytes_per_vector: f64,
    queried_file_bytes_per_vector: f64,
    qps: f64,
    p50_ms: f64,
    p99_ms: f64,
    recall: f64,
    /// Namespaces that trained their regions after the load (their snapshots had none).
    regions_to_train: f64,
}

/// The child: restarts over the stored index and measures (see the module comment).
pub(crate) async fn restart(
    config: &Config,
    dir: &Path,
    id: IndexId,
    dimension: usize,
    snapshots: bool,
) -> Result<()> {
    let queries = read_vectors(&dir.join("queries.f32"), dimension)?;
    let truth: Vec<Vec<String>> = serde_json::from_slice(&std::fs::read(dir.join("truth.json"))?)?;
    let before = Resident::read()?;
    let started = Instant::now();
    let store = SqliteVectorStore::open(dir, &config.storage)?;
    let vectors = engine(&store, snapshots.then(|| dir.join("snapshots")).as_deref());
    let index = index(id, dimension);
    let stop = CancellationToken::new();
    let indexer = tokio::spawn(Arc::clone(&vectors).run_indexer(stop.clone()));
    let query = |vector: &Vec<f32>| Query {
        input: QueryInput::Vectors {
            dense: Some(vector.clone()),
            sparse: None,
        },
        top_k: K,
        ..Query::default()
    };
    vectors.query(&index, "", query(&queries[0])).await?;
    let first_answer = started.elapsed().as_secs_f64();
    until_indexed(&vectors, &index).await?;
    let full_speed = started.elapsed().as_secs_f64();
    let regions_to_train = regions_due(&vectors, &index);
    let count = vectors.info(&index).await?.vector_count;
    let per_vector = |bytes: u64, before: u64| bytes.saturating_sub(before) as f64 / count.max(1) as f64;
    let loaded = Resident::read()?;
    let resident = per_vector(loaded.total(), before.total());
    tokio::time::sleep(SETTLE).await;
    let settled = Resident::read()?;
    let mut latencies = Vec::with_capacity(queries.len());
    let mut found = 0;
    let all = Instant::now();
    for (number, vector) in queries.iter().enumerate() {
        let one = Instant::now();
        let hits = vectors.query(&index, "", query(vector)).await?;
        latencies.push(one.elapsed());
        if let Some(want) = truth.get(number) {
            found += hits.iter().filter(|hit| want.contains(&hit.record.id)).count();
        }
    }
    let qps = queries.len() as f64 / all.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let percentile = |p: f64| {
        latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)].as_secs_f64() * 1e3
    };
    let queried = Resident::read()?;
    stop.cancel();
    indexer.await?;
    let measured = serde_json::json!({
        "first_answer_s": first_answer,
        "full_speed_s": full_speed,
        "resident_bytes_per_vector": resident,
        "peak_bytes_per_vector": per_vector(loaded.peak, before.total()),
        "settled_bytes_per_vector": per_vector(settled.total(), before.total()),
        "settled_file_bytes_per_vector": per_vector(settled.file, before.file),
        "queried_anonymous_bytes_per_vector": per_vector(queried.anonymous, before.anonymous),
        "queried_file_bytes_per_vector": per_vector(queried.file, before.file),
        "qps": qps,
        "p50_ms": percentile(0.5),
        "p99_ms": percentile(0.99),
        "recall": found as f64 / (truth.len() * K).max(1) as f64,
        "regions_to_train": regions_to_train,
    });
    println!("{measured}");
    Ok(())
}

fn run_child(dir: &Path, id: IndexId, dimension: usize, snapshots: bool) -> Result<Restart> {
    let mut command = Command::new(std::env::current_exe()?);
    command.args([
        "growth-restart",
        "--dir",
        &dir.display().to_string(),
        "--index",
        &id.to_string(),
        "--dimension",
        &dimension.to_string(),
    ]);
    if snapshots {
        command.arg("--snapshots");
    }
    let output = command.output().context("running the restart")?;
    anyhow::ensure!(
        output.status.success(),
        "the restart failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = String::from_utf8_lossy(&output.stdout);
    let value: serde_json::Value = serde_json::from_str(line.trim())
        .with_context(|| format!("reading the restart's figures from {line:?}"))?;
    let figure = |name: &str| {
        value[name]
            .as_f64()
            .with_context(|| format!("the restart printed no `{name}`: {line}"))
    };
    Ok(Restart {
        first_answer_s: figure("first_answer_s")?,
        full_speed_s: figure("full_speed_s")?,
        resident_bytes_per_vector: figure("resident_bytes_per_vector")?,
        peak_bytes_per_vector: figure("peak_bytes_per_vector")?,
        settled_bytes_per_vector: figure("settled_bytes_per_vector")?,
        settled_file_bytes_per_vector: figure("settled_file_bytes_per_vector")?,
        queried_anonymous_bytes_per_vector: figure("queried_anonymous_bytes_per_vector")?,
        queried_file_bytes_per_vector: figure("queried_file_bytes_per_vector")?,
        qps: figure("qps")?,
        p50_ms: figure("p50_ms")?,
        p99_ms: figure("p99_ms")?,
        recall: figure("recall")?,
        regions_to_train: figure("regions_to_train")?,
    })
}

pub(crate) async fn run(config: &Config, bench: GrowthBench) -> Result<()> {
    println!(
        "growth: {}-d clustered unit vectors (1,000 centres, sigma 0.6), cosine, {} queries through the service, k = {K}, one query at a time",
        bench.dimension, bench.queries
    );
    println!(
        "| vectors | upserts acknowledged | graph built | shutdown (snapshot) | restart: first answer | restart: full speed, snapshot | restart: full speed, no snapshot | resident bytes/vector: peak during the load, after the load | settled (of which file pages) | after the queries: anonymous + file pages | QPS | p50 ms | p99 ms | recall@10 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &size in &bench.sizes {
        let dir = bench.dir.join(format!("growth-{size}"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir_all(&dir)?;
        let mut random = Gaussian(42);
        let centres: Vec<Vec<f32>> = (0..1_000)
            .map(|_| (0..bench.dimension).map(|_| random.sample()).collect())
            .collect();
        let (base, _) = clustered(&mut random, &centres, size, 0.6);
        let (queries, _) = clustered(&mut random, &centres, bench.queries, 0.6);
        write_vectors(&dir.join("queries.f32"), &queries)?;
        let mut exact = ExactIndex::new(SimilarityFunction::Cosine, bench.dimension);
        for (slot, vector) in base.iter().enumerate() {
            exact.insert(slot, vector);
        }
        let truth: Vec<Vec<String>> = queries
            .iter()
            .take(RECALL_QUERIES)
            .map(|q| {
                exact
                    .search(q, K, &|_| true)
                    .into_iter()
                    .map(|(slot, _)| format!("v{slot}"))
                    .collect()
            })
            .collect();
        drop(exact);
        std::fs::write(dir.join("truth.json"), serde_json::to_vec(&truth)?)?;
        eprintln!("{size}: data ready; writing through the service");
        let (id, upserted, indexed, shutdown) = write_index(config, &dir, &base, bench.dimension).await?;
        drop(base);
        eprintln!("{size}: index {id} written in {indexed:.1} s; restarting");
        let with = run_child(&dir, id, bench.dimension, true)?;
        eprintln!(
            "{size}: restarted; namespaces that trained their regions after the load: {}",
            with.regions_to_train
        );
        let without = if size <= bench.rebuild_up_to {
            format!(
                "{:.2} s",
                run_child(&dir, id, bench.dimension, false)?.full_speed_s
            )
        } else {
            "not run".to_owned()
        };
        println!(
            "| {size} | {upserted:.1} s | {indexed:.1} s | {shutdown:.2} s | {:.2} s | {:.2} s | {without} | {:.0}, {:.0} | {:.0} ({:.0}) | {:.0} + {:.0} | {:.0} | {:.2} | {:.2} | {:.3} |",
            with.first_answer_s,
            with.full_speed_s,
            with.peak_bytes_per_vector,
            with.resident_bytes_per_vector,
            with.settled_bytes_per_vector,
            with.settled_file_bytes_per_vector,
            with.queried_anonymous_bytes_per_vector,
            with.queried_file_bytes_per_vector,
            with.qps,
            with.p50_ms,
            with.p99_ms,
            with.recall
        );
        if !bench.keep {
            std::fs::remove_dir_all(&dir)?;
        }
    }
    Ok(())
}
