//! The configuration tree. `config/default.toml` is embedded; a file and then `QUIVER__SECTION__KEY`
//! variables override it. Each crate owns its section; unknown keys are errors, found at start-up.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use quiver_embed::EmbedConfig;
use quiver_http::HttpConfig;
use quiver_queue::QueueConfig;
use quiver_store::StorageConfig;
use serde::{Deserialize, Serialize};
use toml::{Table, Value};

/// The embedded defaults: every key, commented.
pub const DEFAULT_CONFIG: &str = include_str!("../../../config/default.toml");

/// Prefix of environment variables that override configuration keys.
pub const ENV_PREFIX: &str = "QUIVER__";

/// Most threads `queue.delivery_threads` may ask for: more than the cores of any machine a node runs on
/// buys nothing, and a typo should not start thousands.
const MAX_DELIVERY_THREADS: usize = 64;

/// The `[server]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address of the HTTP listener.
    pub bind: SocketAddr,
    /// Data directory.
    pub data_dir: PathBuf,
    /// Development mode.
    pub dev: bool,
    /// Grace period of shutdown, in milliseconds.
    pub shutdown_grace_ms: u64,
}

/// How log lines are written (to standard error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One readable line per event, fields as `key=value`.
    Text,
    /// One JSON object per line, with the fields of the event and of its spans (for log shippers).
    Json,
}

/// The `[log]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// Line format.
    pub format: LogFormat,
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Listener, data directory, mode.
    pub server: ServerConfig,
    /// HTTP limits.
    pub http: HttpConfig,
    /// Embedded store.
    pub storage: StorageConfig,
    /// Text-embedding models.
    pub embeddings: EmbedConfig,
    /// Message queue.
    pub queue: QueueConfig,
    /// Log lines.
    pub log: LogConfig,
}

/// The configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The configuration file could not be read.
    #[error("cannot read configuration file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A layer is not valid TOML.
    #[error("{origin} is not valid TOML: {message}")]
    Syntax {
        /// Which layer.
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// An environment override names no key.
    #[error("environment variable {0} must look like QUIVER__SECTION__KEY")]
    EnvName(String),
    /// The merged tree does not fit the schema (unknown key, wrong type).
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

impl Default for Config {
    fn default() -> Self {
        Config::load(None, std::iter::empty())
            .unwrap_or_else(|e| unreachable!("the embedded defaults are valid: {e}"))
    }
}

impl Config {
    /// Loads defaults, then `file` if given, then each `QUIVER__SECTION__KEY` pair of `environment`
    /// (other variables are ignored).
    ///
    /// # Errors
    /// An unreadable or invalid file, a malformed variable name, or a tree that breaks the schema.
    pub fn load(
        file: Option<&Path>,
        environment: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut tree = parse_table(DEFAULT_CONFIG, "the embedded defaults")?;
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
            merge(&mut tree, parse_table(&text, &path.display().to_string())?);
        }
        for (name, value) in environment {
            let Some(key) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            let path: Vec<String> = key.split("__").map(str::to_ascii_lowercase).collect();
            if path.iter().any(String::is_empty) {
                return Err(ConfigError::EnvName(name));
            }
            set_path(&mut tree, &path, env_value(&value));
        }
        let config: Config = Value::Table(tree)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Invalid(e.message().to_owned()))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks values that parse but cannot work (zero sizes, a storage URL of another database).
    ///
    /// # Errors
    /// The first such value, named by its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            (
                "http.management_body_limit_bytes",
                self.http.management_body_limit_bytes,
            ),
            ("http.vector_body_limit_bytes", self.http.vector_body_limit_bytes),
            (
                "http.header_read_timeout_ms",
                usize::try_from(self.http.header_read_timeout_ms).unwrap_or(usize::MAX),
            ),
            (
                "http.body_read_timeout_ms",
                usize::try_from(self.http.body_read_timeout_ms).unwrap_or(usize::MAX),
            ),
            (
                "http.console_session_idle_ms",
                usize::try_from(self.http.console_session_idle_ms).unwrap_or(usize::MAX),
            ),
            (
                "http.console_session_lifetime_ms",
                usize::try_from(self.http.console_session_lifetime_ms).unwrap_or(usize::MAX),
            ),
            (
                "storage.group_commit_max_batch",
                self.storage.group_commit_max_batch,
            ),
            ("storage.write_queue_capacity", self.storage.write_queue_capacity),
            ("storage.read_connections", self.storage.read_connections),
            ("storage.pool_size", self.storage.pool_size),
            (
                "storage.poll_interval_ms",
                usize::try_from(self.storage.poll_interval_ms).unwrap_or(usize::MAX),
            ),
            ("queue.max_message_bytes", self.queue.max_message_bytes),
            ("queue.delivery_concurrency", self.queue.delivery_concurrency),
            ("queue.claim_batch", self.queue.claim_batch),
            ("embeddings.threads", self.embeddings.threads),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(ConfigError::Invalid(format!("{key} must be at least 1")));
            }
        }
        if self.queue.delivery_threads > MAX_DELIVERY_THREADS {
            return Err(ConfigError::Invalid(format!(
                "queue.delivery_threads must be at most {MAX_DELIVERY_THREADS}"
            )));
        }
        self.http.check().map_err(ConfigError::Invalid)?;
        let url = &self.storage.url;
        if !(url.is_empty() || url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(ConfigError::Invalid(
                "storage.url must be empty (the embedded store) or a postgres:// URL".to_owned(),
            ));
        }
        let schema = &self.storage.schema;
        let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
        if !schema.is_empty()
            && (schema.len() > 63
                || !schema.chars().all(plain)
                || schema.starts_with(|c: char| c.is_ascii_digit()))
        {
            return Err(ConfigError::Invalid(format!(
                "storage.schema `{schema}` must be a lowercase identifier (letters, digits, `_`)"
            )));
        }
        Ok(())
    }

    /// Where the stores live, for logs: the data directory, or the PostgreSQL URL without its password.
    pub fn storage_location(&self) -> String {
        if self.storage.url.is_empty() {
            self.server.data_dir.display().to_string()
        } else {
            redact_password(&self.storage.url)
        }
    }

    /// The configuration as TOML, for `quiver check-config`, a storage URL's password hidden.
    pub fn to_toml(&self) -> String {
        let mut shown = self.clone();
        shown.storage.url = redact_password(&self.storage.url);
        toml::to_string_pretty(&shown).unwrap_or_else(|e| format!("# cannot print the configuration: {e}\n"))
    }
}

/// `url` with its password (if any) replaced by `***`.
fn redact_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

fn parse_table(text: &str, origin: &str) -> Result<Table, ConfigError> {
    text.parse::<Table>().map_err(|e| ConfigError::Syntax {
        origin: origin.to_owned(),
        message: e.message().to_owned(),
    })
}

/// An environment value is read as a TOML value when it is one (`true`, `8`, `"x"`), else as text.
fn env_value(text: &str) -> Value {
    format!("value = {text}")
        .parse::<Table>()
        .ok()
        .and_then(|mut table| table.remove("value"))
        .unwrap_or_else(|| Value::String(text.to_owned()))
}

fn merge(base: &mut Table, overrides: Table) {
    for (key, value) in overrides {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(inner)), Value::Table(more)) => merge(inner, more),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

fn set_path(tree: &mut Table, path: &[String], value: Value) {
    let Some((last, sections)) = path.split_last() else {
        return;
    };
    let mut table = tree;
    for section in sections {
        let entry = table
            .entry(section.clone())
            .or_insert_with(|| Value::Table(Table::new()));
        if !entry.is_table() {
            *entry = Value::Table(Table::new());
        }
        let Value::Table(inner) = entry else { return };
        table = inner;
    }
    table.insert(last.clone(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_embedded_defaults_load() {
        let config = Config::default();
        assert_eq!(config.server.bind.to_string(), "127.0.0.1:8080");
        assert_eq!(config.http.management_body_limit_bytes, 1 << 20);
    }

    #[test]
    fn environment_overrides_win_over_the_file_and_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("quiver.toml");
        std::fs::write(&file, "[server]\nbind = \"127.0.0.1:9000\"\ndev = true\n").unwrap();
        let config = Config::load(
            Some(&file),
            env(&[
                ("QUIVER__SERVER__BIND", "0.0.0.0:7000"),
                ("QUIVER__STORAGE__READ_CONNECTIONS", "2"),
                ("PATH", "/bin"),
            ]),
        )
        .unwrap();
        assert_eq!(config.server.bind.to_string(), "0.0.0.0:7000");
        assert!(
            config.server.dev,
            "the file's value stays where nothing overrides it"
        );
        assert_eq!(config.storage.read_connections, 2);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_at_load() {
        let unknown = Config::load(None, env(&[("QUIVER__SERVER__COLOUR", "blue")])).unwrap_err();
        assert!(unknown.to_string().contains("colour"), "{unknown}");
        let bad = Config::load(None, env(&[("QUIVER__SERVER__BIND", "not an address")])).unwrap_err();
        assert!(matches!(bad, ConfigError::Invalid(_)));
        let zero = Config::load(None, env(&[("QUIVER__STORAGE__READ_CONNECTIONS", "0")])).unwrap_err();
        assert!(zero.to_string().contains("storage.read_connections"));
        let many = Config::load(None, env(&[("QUIVER__QUEUE__DELIVERY_THREADS", "1000")])).unwrap_err();
        assert!(many.to_string().contains("queue.delivery_threads"), "{many}");
        let none = Config::load(None, env(&[("QUIVER__QUEUE__DELIVERY_THREADS", "0")])).unwrap();
        assert_eq!(
            none.queue.delivery_threads, 0,
            "0 runs deliveries on the HTTP workers"
        );
        assert!(matches!(
            Config::load(None, env(&[("QUIVER____X", "1")])),
            Err(ConfigError::EnvName(_))
        ));
    }

    #[test]
    fn a_storage_url_must_be_postgres_and_its_password_is_never_printed() {
        let mysql =
            Config::load(None, env(&[("QUIVER__STORAGE__URL", "mysql://root@localhost/q")])).unwrap_err();
        assert!(mysql.to_string().contains("storage.url"), "{mysql}");
        let schema = Config::load(None, env(&[("QUIVER__STORAGE__SCHEMA", "Bad-Name")])).unwrap_err();
        assert!(schema.to_string().contains("storage.schema"), "{schema}");
        let config = Config::load(
            None,
            env(&[(
                "QUIVER__STORAGE__URL",
                "postgres://quiver:hunter2@db.internal:5432/quiver",
            )]),
        )
        .unwrap();
        let printed = config.to_toml();
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(
            printed.contains("postgres://quiver:***@db.internal:5432/quiver"),
            "{printed}"
        );
        assert!(!config.storage_location().contains("hunter2"));
    }
}
