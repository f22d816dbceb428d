//! The server a benchmark measures: in process, on a loopback port, its data in a scratch directory.

use std::path::{Path, PathBuf};

use anyhow::Result;
use quiver_server::Config;

/// A dev-mode server on a loopback port with its data in a new temporary directory under `dir` (default:
/// the system's temporary directory); the directory lives as long as the returned guard.
pub(crate) async fn start_server(
    config: &Config,
    dir: Option<PathBuf>,
) -> Result<(quiver_server::App, tempfile::TempDir, PathBuf)> {
    let parent = dir.unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    let scratch = tempfile::tempdir_in(&parent)?;
    let mut config = config.clone();
    config.server.bind = "127.0.0.1:0".parse()?;
    config.server.data_dir = scratch.path().to_owned();
    config.server.dev = true;
    // Benchmarks measure beyond one index's plan rate (1,000 requests per second).
    config.http.enforce_rate_limits = false;
    let app = quiver_server::App::start(quiver_server::AppOptions {
        config,
        clock: quiver_core::SystemClock::shared(),
        bootstrap: quiver_server::credentials::dev_credentials(),
        request_lines: None,
    })
    .await?;
    Ok((app, scratch, parent))
}

/// Where dense models are installed for the embedding benchmark.
pub(crate) fn models_dir(config: &Config) -> quiver_embed::ModelDir {
    config.embeddings.models_dir(Path::new(&config.server.data_dir))
}
