//! `quiver backup DEST` and `quiver restore SRC`: a copy of the embedded databases (and the installed
//! models) taken while the server runs, and its checked return into a data directory.
//!
//! A backup is a directory: `vectors.db`, `queue.db`, `catalog.db`, `models/...`, and `MANIFEST.json`
//! written last (a directory without it is an unfinished backup), which lists every file with its size
//! and SHA-256.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use quiver_core::Clock;
use quiver_server::Config;
use quiver_store::backup::{DATABASES, check_database, copy_database, is_in_use};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The manifest's name in a backup directory.
const MANIFEST: &str = "MANIFEST.json";
/// The layout this build writes and reads.
const FORMAT: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    format: u32,
    quiver_version: String,
    /// Unix seconds when the copy began.
    started_at: u64,
    files: Vec<FileEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntry {
    /// Relative to the backup directory, `/`-separated.
    path: String,
    bytes: u64,
    sha256: String,
}

/// `quiver backup DEST`.
///
/// # Errors
/// PostgreSQL storage (back it up with `pg_dump`), no data, a destination that is not empty, or an I/O
/// failure (the partial destination is then left without a manifest).
pub(crate) fn backup(config: &Config, destination: &Path, skip_models: bool) -> Result<()> {
    refuse_postgres(config, "pg_dump")?;
    let data_dir = &config.server.data_dir;
    if !data_dir.join("catalog.db").is_file() {
        bail!("no Quiver data in {}: nothing to back up", data_dir.display());
    }
    if destination.exists() && !is_empty_dir(destination)? {
        bail!(
            "{} exists and is not empty: back up into a new directory",
            destination.display()
        );
    }
    fs::create_dir_all(destination).with_context(|| format!("creating {}", destination.display()))?;
    let started_at = u64::try_from(quiver_core::SystemClock.now().as_millis() / 1000).unwrap_or(0);
    let mut files = Vec::new();
    for (name, _) in DATABASES {
        if !data_dir.join(name).is_file() {
            // Made at the first `quiver serve` (`quiver accounts create` makes only the catalogue).
            println!("{name} does not exist yet: nothing to copy");
            continue;
        }
        let started = Instant::now();
        let target = destination.join(name);
        copy_database(&data_dir.join(name), &target).with_context(|| format!("copying {name}"))?;
        let entry = describe(destination, &target)?;
        println!(
            "copied {name}: {} in {:.1} s",
            human_bytes(entry.bytes),
            started.elapsed().as_secs_f64()
        );
        files.push(entry);
    }
    let models = config.embeddings.models_dir(data_dir);
    if skip_models {
        println!("models skipped (--skip-models)");
    } else if models.root().is_dir() {
        let copied = copy_tree(models.root(), &destination.join("models"))?;
        for file in &copied {
            files.push(describe(destination, file)?);
        }
        println!(
            "copied {} model files from {}",
            copied.len(),
            models.root().display()
        );
    }
    let manifest = Manifest {
        format: FORMAT,
        quiver_version: env!("CARGO_PKG_VERSION").to_owned(),
        started_at,
        files,
    };
    let text = serde_json::to_string_pretty(&manifest)?;
    write_synced(&destination.join(MANIFEST), text.as_bytes())?;
    println!("backup complete: {}", destination.display());
    Ok(())
}

/// `quiver restore SRC`.
///
/// # Errors
/// PostgreSQL storage, an incomplete or damaged backup (nothing is changed then), a data directory that
/// is not empty without `force`, or one a running server has open.
pub(crate) fn restore(config: &Config, source: &Path, force: bool) -> Result<()> {
    refuse_postgres(config, "pg_restore")?;
    let text = fs::read_to_string(source.join(MANIFEST)).with_context(|| {
        format!(
            "{} has no {MANIFEST}: not a backup, or one that did not finish",
            source.display()
        )
    })?;
    let manifest: Manifest = serde_json::from_str(&text)
        .with_context(|| format!("{MANIFEST} of {} is malformed", source.display()))?;
    if manifest.format != FORMAT {
        bail!(
            "the backup has format {}; this build reads format {FORMAT}",
            manifest.format
        );
    }
    // Every check before anything is changed.
    for entry in &manifest.files {
        let path = inside(source, &entry.path)?;
        let found = describe(source, &path).with_context(|| format!("reading {}", entry.path))?;
        if found.bytes != entry.bytes || found.sha256 != entry.sha256 {
            bail!(
                "{} does not match the manifest (damaged or changed since the backup)",
                entry.path
            );
        }
    }
    if !manifest.files.iter().any(|f| f.path == "catalog.db") {
        bail!("the backup lacks catalog.db (accounts and indexes)");
    }
    for (name, schema) in DATABASES {
        if manifest.files.iter().any(|f| f.path == name) {
            check_database(&source.join(name), schema)?;
        }
    }
    println!("checked {} files of the backup", manifest.files.len());

    let data_dir = &config.server.data_dir;
    if data_dir.exists() && !is_empty_dir(data_dir)? {
        if !force {
            bail!(
                "{} is not empty: restore into an empty directory, or pass --force to replace its databases",
                data_dir.display()
            );
        }
        for (name, _) in DATABASES {
            let path = data_dir.join(name);
            if path.exists() && is_in_use(&path)? {
                bail!(
                    "{} is open in another process: stop the server before restoring",
                    path.display()
                );
            }
        }
    }
    fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Databases hold credentials: only the owner may read them.
        fs::set_permissions(data_dir, fs::Permissions::from_mode(0o700))?;
    }
    let models = config.embeddings.models_dir(data_dir);
    for entry in &manifest.files {
        let from = inside(source, &entry.path)?;
        let to = match entry.path.strip_prefix("models/") {
            Some(rest) => models.root().join(rest),
            None => data_dir.join(&entry.path),
        };
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)?;
        }
        // Beside the target first, then renamed over it: a database is never half-copied in place.
        let partial = PathBuf::from(format!("{}.restoring", to.display()));
        fs::copy(&from, &partial).with_context(|| format!("copying {}", entry.path))?;
        fs::File::open(&partial)?.sync_all()?;
        for suffix in ["-wal", "-shm"] {
            let stale = PathBuf::from(format!("{}{suffix}", to.display()));
            if stale.exists() {
                fs::remove_file(&stale).with_context(|| format!("removing {}", stale.display()))?;
            }
        }
        fs::rename(&partial, &to)?;
    }
    println!(
        "restored a backup of Quiver {} into {}",
        manifest.quiver_version,
        data_dir.display()
    );
    Ok(())
}

fn refuse_postgres(config: &Config, tool: &str) -> Result<()> {
    if !config.storage.url.is_empty() {
        bail!(
            "the data lives in PostgreSQL (storage.url): use {tool} on that database; quiver backup and restore copy the embedded databases"
        );
    }
    Ok(())
}

/// `relative` (from a manifest) under `root`, refusing paths that would leave it.
fn inside(root: &Path, relative: &str) -> Result<PathBuf> {
    let path = Path::new(relative);
    if path.is_absolute()
        || path
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        bail!("the manifest names {relative}, which is not a plain relative path");
    }
    Ok(root.join(path))
}

fn is_empty_dir(path: &Path) -> Result<bool> {
    Ok(fs::read_dir(path)
        .with_context(|| format!("reading {}", path.display()))?
        .next()
        .is_none())
}

/// Size and SHA-256 of `file`, named relative to `root`.
fn describe(root: &Path, file: &Path) -> Result<FileEntry> {
    let mut reader = fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let read = reader.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        bytes += read as u64;
    }
    let relative = file.strip_prefix(root).unwrap_or(file);
    Ok(FileEntry {
        path: relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        bytes,
        sha256: hasher.finalize().iter().map(|b| format!("{b:02x}")).collect(),
    })
}

/// Copies every file under `from` to the same place under `to`; the copied files.
fn copy_tree(from: &Path, to: &Path) -> Result<Vec<PathBuf>> {
    let mut copied = Vec::new();
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if fs::metadata(entry.path())?.is_dir() {
            copied.extend(copy_tree(&entry.path(), &target)?);
        } else {
            fs::copy(entry.path(), &target).with_context(|| format!("copying {}", entry.path().display()))?;
            copied.push(target);
        }
    }
    Ok(copied)
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes)?;
    fs::File::open(path)?.sync_all()?;
    Ok(())
}

fn human_bytes(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let bytes = bytes as f64;
    if bytes >= MIB {
        format!("{:.1} MiB", bytes / MIB)
    } else {
        format!("{:.1} KiB", bytes / 1024.0)
    }
}
