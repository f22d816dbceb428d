//! The `quiver` command: serve, print credentials, add accounts, check configuration, install models.
//! Benchmarks are a binary of their own (`quiver-bench`).

mod backup;
mod log_writer;
mod models;
mod request_lines;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use clap::{Parser, Subcommand};
use quiver_admin::{Account, BootstrapCredentials, Email};
use quiver_core::SystemClock;
use quiver_http::request_line::RequestLines;
use quiver_server::config::LogFormat;
use quiver_server::credentials::dev_credentials;
use quiver_server::{App, AppOptions, Catalog, Config};

/// mimalloc instead of the system allocator: requests are allocated on runtime threads and freed on the
/// store's writer threads, which glibc's per-arena locks make costly.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Quiver: vector indexes, a durable message queue and their management API, in one process on one port.
///
/// Configuration comes from the embedded defaults, then `--config FILE`, then environment variables
/// named QUIVER__SECTION__KEY (e.g. QUIVER__SERVER__BIND=0.0.0.0:8080), then these flags.
/// The first start creates an account; its credentials come from QUIVER_ADMIN_EMAIL,
/// QUIVER_ADMIN_API_KEY, QUIVER_QUEUE_TOKEN, QUIVER_CURRENT_SIGNING_KEY and QUIVER_NEXT_SIGNING_KEY,
/// or are generated and printed once.
#[derive(Debug, Parser)]
#[command(name = "quiver", version, about, long_about)]
struct Cli {
    /// A TOML configuration file layered over the defaults.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Data directory (databases, snapshots, models); overrides `server.data_dir`.
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// A PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE) to keep everything in, which several nodes
    /// can share; overrides `storage.url`. Without it, the embedded store in the data directory.
    #[arg(long, global = true, value_name = "URL")]
    store: Option<String>,
    /// How log lines are written to standard error; overrides `log.format`.
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    log_format: Option<LogFormatArg>,
    #[command(subcommand)]
    command: Command,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LogFormatArg {
    /// Readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve every API on one port until SIGINT or SIGTERM, then shut down gracefully.
    Serve {
        /// Address to listen on; overrides `server.bind` (default 127.0.0.1:8080).
        #[arg(long, value_name = "HOST:PORT")]
        bind: Option<String>,
        /// Development mode: fixed, documented credentials (environment values still win) and
        /// deliveries to loopback and private addresses allowed.
        #[arg(long)]
        dev: bool,
    },
    /// Print the bootstrap account's credentials (or another account's, with --email).
    Credentials {
        /// The account to print.
        #[arg(long)]
        email: Option<String>,
    },
    /// Manage accounts.
    Accounts {
        #[command(subcommand)]
        command: AccountsCommand,
    },
    /// Print the effective configuration, secrets redacted, and exit non-zero if it is invalid.
    CheckConfig,
    /// Copy every embedded database (and the installed models) into DEST while the server runs: each
    /// database as one consistent snapshot, with a manifest of sizes and SHA-256 sums.
    Backup {
        /// A new or empty directory.
        destination: PathBuf,
        /// Leave the models out (reinstall them with `quiver models pull`).
        #[arg(long)]
        skip_models: bool,
    },
    /// Check a backup made by `quiver backup` and restore it into the data directory (which must be
    /// empty, unless --force; never while a server has it open).
    Restore {
        /// The backup directory.
        source: PathBuf,
        /// Replace the databases of a data directory that is not empty.
        #[arg(long)]
        force: bool,
    },
    /// List and install dense text-embedding models.
    Models {
        #[command(subcommand)]
        command: models::ModelsCommand,
    },
}

#[derive(Debug, Subcommand)]
enum AccountsCommand {
    /// Add an account and print its API key and queue token.
    Create {
        /// The account's email (its management login).
        email: String,
    },
}

/// Environment variables that set the bootstrap account's credentials.
const BOOTSTRAP_VARIABLES: [&str; 5] = [
    "QUIVER_ADMIN_EMAIL",
    "QUIVER_ADMIN_API_KEY",
    "QUIVER_QUEUE_TOKEN",
    "QUIVER_CURRENT_SIGNING_KEY",
    "QUIVER_NEXT_SIGNING_KEY",
];

/// The process environment, read once.
struct Environment {
    variables: Vec<(String, String)>,
}

impl Environment {
    fn read() -> Environment {
        Environment {
            variables: std::env::vars().collect(),
        }
    }

    fn get(&self, name: &str) -> Option<String> {
        self.variables
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .filter(|v| !v.is_empty())
    }

    fn bootstrap(&self) -> Result<BootstrapCredentials> {
        let email = self
            .get("QUIVER_ADMIN_EMAIL")
            .map(Email::try_from)
            .transpose()
            .context("QUIVER_ADMIN_EMAIL")?;
        Ok(BootstrapCredentials {
            email,
            api_key: self.get("QUIVER_ADMIN_API_KEY"),
            queue_token: self.get("QUIVER_QUEUE_TOKEN"),
            current_signing_key: self.get("QUIVER_CURRENT_SIGNING_KEY"),
            next_signing_key: self.get("QUIVER_NEXT_SIGNING_KEY"),
        })
    }
}

fn load_config(cli: &Cli, environment: &Environment) -> Result<Config> {
    let mut config = Config::load(cli.config.as_deref(), environment.variables.iter().cloned())?;
    if let Some(dir) = &cli.data_dir {
        config.server.data_dir.clone_from(dir);
    }
    if let Some(url) = &cli.store {
        config.storage.url.clone_from(url);
    }
    match cli.log_format {
        Some(LogFormatArg::Text) => config.log.format = LogFormat::Text,
        Some(LogFormatArg::Json) => config.log.format = LogFormat::Json,
        None => {}
    }
    if let Some(dir) = environment.get("QUIVER_MODELS_DIR") {
        config.embeddings.models_dir = dir.into();
    }
    if let Command::Serve { bind, dev } = &cli.command {
        if let Some(bind) = bind {
            config.server.bind = bind.parse().map_err(|e| anyhow!("--bind {bind}: {e}"))?;
        }
        config.server.dev |= *dev;
    }
    config.validate()?;
    Ok(config)
}

fn print_credentials(out: &mut impl Write, account: &Account) -> std::io::Result<()> {
    writeln!(out, "management API (HTTP Basic)")?;
    writeln!(out, "  email:                 {}", account.email)?;
    writeln!(out, "  api key:               {}", account.api_key)?;
    writeln!(out, "message queue")?;
    writeln!(out, "  token:                 {}", account.queue_token)?;
    writeln!(out, "  read-only token:       {}", account.queue_read_only_token)?;
    writeln!(out, "  current signing key:   {}", account.current_signing_key)?;
    writeln!(out, "  next signing key:      {}", account.next_signing_key)
}

/// Logs to standard error through [`log_writer`]; lines logged before the returned guard is dropped are
/// all written. Also returns the writer of request lines for the text format without colours (see
/// [`request_lines`]); the other formats, and filters that name spans or fields, log them through
/// `tracing`.
fn init_logging(
    environment: &Environment,
    format: LogFormat,
) -> (log_writer::FlushOnDrop, Option<Arc<dyn RequestLines>>) {
    let filter = environment.get("RUST_LOG").unwrap_or_else(|| "info".to_owned());
    let (writer, flush) = log_writer::start();
    // Colours only for a person at a terminal: escapes in files and pipes are noise, and cost.
    let ansi = std::io::stderr().is_terminal();
    // A filter with span or field directives (`[...]`) may drop some request lines and keep others,
    // which only `tracing` can tell.
    let request_lines: Option<Arc<dyn RequestLines>> = match format {
        LogFormat::Text if !ansi && !filter.contains('[') => {
            Some(Arc::new(request_lines::TextRequestLines(writer.clone())))
        }
        LogFormat::Text | LogFormat::Json => None,
    };
    let lines = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(&filter))
        .with_ansi(ansi)
        .with_writer(writer);
    match format {
        LogFormat::Text => lines.init(),
        LogFormat::Json => lines.json().with_current_span(true).with_span_list(false).init(),
    }
    (flush, request_lines)
}

/// Raises this process's limit of open files to the most the system lets it have. The usual soft limit
/// (1,024 under systemd) is a few hundred idle connections away from refusing every new connection and
/// file: the hard limit is what an operator who wants fewer will have set.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current.is_some() && limit.current != limit.maximum {
        let raised = rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => tracing::debug!(?limit.current, ?limit.maximum, "raised the open-file limit"),
            Err(error) => tracing::warn!(%error, ?limit.current, "could not raise the open-file limit"),
        }
    }
}

async fn serve(
    config: Config,
    environment: &Environment,
    request_lines: Option<Arc<dyn RequestLines>>,
) -> Result<()> {
    raise_open_file_limit();
    let mut bootstrap = environment.bootstrap()?;
    if config.server.dev {
        bootstrap = bootstrap.or(dev_credentials());
    }
    let dev = config.server.dev;
    let app = App::start(AppOptions {
        config,
        clock: SystemClock::shared(),
        bootstrap,
        request_lines,
    })
    .await?;
    let mut out = std::io::stdout().lock();
    if app.bootstrap().created || dev {
        let when = if dev {
            "development credentials"
        } else {
            "credentials, shown once (`quiver credentials` prints them again)"
        };
        writeln!(out, "Quiver {when}:")?;
        print_credentials(&mut out, &app.bootstrap().account)?;
    }
    writeln!(out, "listening on http://{}", app.local_addr())?;
    out.flush()?;
    drop(out);
    wait_for_signal().await?;
    app.shutdown().await;
    Ok(())
}

async fn wait_for_signal() -> Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        tokio::select! {
            _ = terminate.recv() => tracing::info!("received SIGTERM"),
            _ = interrupt.recv() => tracing::info!("received SIGINT"),
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await?;
    Ok(())
}

async fn credentials(config: &Config, email: Option<String>) -> Result<()> {
    let catalog = Catalog::open(config, SystemClock::shared()).await?;
    let account = match email {
        Some(email) => Some(catalog.admin.account(&email).await?),
        None => catalog.admin.bootstrap_account().await?,
    };
    catalog.close().await;
    let account = account.ok_or_else(|| {
        anyhow!(
            "no account yet in {}: start `quiver serve` once",
            config.server.data_dir.display()
        )
    })?;
    print_credentials(&mut std::io::stdout().lock(), &account)?;
    Ok(())
}

async fn create_account(config: &Config, email: String) -> Result<()> {
    let email = Email::try_from(email)?;
    let catalog = Catalog::open(config, SystemClock::shared()).await?;
    let created = catalog.admin.create_account(email).await;
    catalog.close().await;
    print_credentials(&mut std::io::stdout().lock(), &created?)?;
    Ok(())
}

fn check_config(config: &Config, environment: &Environment) {
    print!("{}", config.to_toml());
    println!("\n# bootstrap credentials from the environment");
    for name in BOOTSTRAP_VARIABLES {
        let shown = match environment.get(name) {
            Some(value) if name == "QUIVER_ADMIN_EMAIL" => format!("\"{value}\""),
            Some(_) => "<redacted>".to_owned(),
            None => "<not set>".to_owned(),
        };
        println!("# {name} = {shown}");
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let environment = Environment::read();
    let config = load_config(&cli, &environment)?;
    let (_written_at_exit, request_lines) = init_logging(&environment, config.log.format);
    match cli.command {
        Command::Serve { .. } => serve(config, &environment, request_lines).await,
        Command::Credentials { email } => credentials(&config, email).await,
        Command::Accounts {
            command: AccountsCommand::Create { email },
        } => create_account(&config, email).await,
        Command::CheckConfig => {
            check_config(&config, &environment);
            Ok(())
        }
        Command::Backup {
            destination,
            skip_models,
        } => backup::backup(&config, &destination, skip_models),
        Command::Restore { source, force } => backup::restore(&config, &source, force),
        Command::Models { command } => models::run(command, &models::models_dir(&config)).await,
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn empty_bootstrap_variables_count_as_unset() {
        let environment = Environment {
            variables: vec![
                ("QUIVER_ADMIN_API_KEY".into(), String::new()),
                ("QUIVER_QUEUE_TOKEN".into(), "t".into()),
            ],
        };
        let bootstrap = environment.bootstrap().unwrap();
        assert_eq!(bootstrap.api_key, None);
        assert_eq!(bootstrap.queue_token.as_deref(), Some("t"));
    }

    #[test]
    fn an_invalid_admin_email_is_refused() {
        let environment = Environment {
            variables: vec![("QUIVER_ADMIN_EMAIL".into(), "nobody".into())],
        };
        assert!(environment.bootstrap().is_err());
    }
}
