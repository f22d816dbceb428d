//! `quiver-bench`: Quiver's benchmarks and their peer comparisons, printing the figures BENCHMARKS.md
//! quotes (`cargo run --release -p quiver-bench -- queue`). A binary of its own: the product binary links
//! none of its load generators, peers and scratch stores.

mod bench;
mod bench_embed;
mod bench_growth;
mod bench_nodes;
mod bench_queue;
mod bench_scheduler;
mod bench_sparse;
mod bench_stats;
mod bench_vector;
mod figures;
mod scratch;

use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;
use quiver_server::Config;

/// The same allocator as the `quiver` binary, so the in-process servers measure what users run.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Quiver's benchmarks: each prints its figures and the peer's, from the same run.
#[derive(Debug, Parser)]
#[command(name = "quiver-bench", version)]
struct Cli {
    /// A configuration file, layered over the defaults as `quiver serve --config` does.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// The data directory (models are found in it unless QUIVER_MODELS_DIR says otherwise).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: bench::BenchCommand,
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".to_owned());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .init();
    let mut config = Config::load(cli.config.as_deref(), std::env::vars())?;
    if let Some(dir) = cli.data_dir {
        config.server.data_dir = dir;
    }
    if let Ok(dir) = std::env::var("QUIVER_MODELS_DIR") {
        config.embeddings.models_dir = dir.into();
    }
    bench::run(cli.command, &config).await
}
