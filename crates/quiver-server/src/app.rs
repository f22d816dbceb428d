//! Start-up, supervision and ordered shutdown of one Quiver process.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use quiver_admin::{Admin, Bootstrap, BootstrapCredentials};
use quiver_core::Clock;
use quiver_http::{AppState, Services};
use quiver_queue::delivery::DeliveryRuntime;
use quiver_queue::ssrf::DestinationPolicy;
use quiver_queue::{DeliveryWorker, KeySource, Queue, SigningKeys};
use quiver_store::Database;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

pub use crate::error::StartError;

use crate::config::Config;
use crate::readiness::NodeReadiness;
use crate::stores::Stores;

/// Where nodes share the store: how often each re-reads the day's and month's usage for quotas.
const QUOTA_RESYNC: Duration = Duration::from_secs(5);

/// Everything [`App::start`] needs.
#[derive(Debug, Clone)]
pub struct AppOptions {
    /// The loaded configuration.
    pub config: Config,
    /// The clock for scheduling, leases and metering.
    pub clock: Arc<dyn Clock>,
    /// Credentials wanted for the bootstrap account (environment, then `--dev` values).
    pub bootstrap: BootstrapCredentials,
    /// Writes request lines faster than `tracing`'s formatter (see `quiver_http::request_line`); `None`
    /// logs them as `tracing` events.
    pub request_lines: Option<Arc<dyn quiver_http::request_line::RequestLines>>,
}

/// The catalogue opened on its own, for commands that do not serve (`credentials`, `accounts`).
#[derive(Clone)]
pub struct Catalog {
    /// Accounts and indexes.
    pub admin: Admin,
    store: Arc<dyn quiver_admin::AdminStore>,
    writers: Vec<Database>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

impl Catalog {
    /// Opens the catalogue where the configuration puts it (`catalog.db` in the data directory, created
    /// if needed, or the PostgreSQL database).
    ///
    /// # Errors
    /// The directory or database cannot be created, opened or reached.
    pub async fn open(config: &Config, clock: Arc<dyn Clock>) -> Result<Catalog, StartError> {
        let (store, writers) = Stores::open_catalog(&config.server.data_dir, &config.storage).await?;
        Ok(Catalog::over(store, writers, clock))
    }

    fn over(
        store: Arc<dyn quiver_admin::AdminStore>,
        writers: Vec<Database>,
        clock: Arc<dyn Clock>,
    ) -> Catalog {
        let admin = Admin::new(Arc::clone(&store), clock);
        Catalog {
            admin,
            store,
            writers,
        }
    }

    /// Commits outstanding writes and stops the writer.
    pub async fn close(&self) {
        for writer in &self.writers {
            writer.close().await;
        }
    }
}

/// Signing keys live with the account, in the catalogue.
struct AccountKeys(Admin);

#[async_trait::async_trait]
impl KeySource for AccountKeys {
    async fn signing_keys(
        &self,
        account: quiver_core::AccountId,
    ) -> Result<Option<SigningKeys>, quiver_core::StoreError> {
        let account = match self.0.account_by_id(account).await {
            Ok(account) => account,
            Err(quiver_admin::AdminError::Store(error)) => return Err(error),
            Err(other) => return Err(quiver_core::StoreError::Backend(other.to_string())),
        };
        Ok(account.map(|account| SigningKeys {
            current: account.current_signing_key,
            next: account.next_signing_key,
        }))
    }
}

/// A running Quiver: HTTP listener, stores and background work under one supervisor.
#[derive(Debug)]
pub struct App {
    local_addr: SocketAddr,
    catalog: Catalog,
    queue: Queue,
    writers: Vec<Database>,
    bootstrap: Bootstrap,
    shutdown: CancellationToken,
    tracker: TaskTracker,
    http: JoinHandle<()>,
    grace: Duration,
    /// Where deliveries run; dropped (its tasks with it) only after the supervisor's wait.
    delivery_runtime: Option<DeliveryRuntime>,
}

impl App {
    /// Opens the stores, sets up the bootstrap account and starts serving.
    ///
    /// # Errors
    /// See [`StartError`].
    pub async fn start(options: AppOptions) -> Result<App, StartError> {
        let config = options.config;
        let stores = Stores::open(&config.server.data_dir, &config.storage).await?;
        let catalog = Catalog::over(Arc::clone(&stores.admin), Vec::new(), Arc::clone(&options.clock));
        let bootstrap = catalog.admin.bootstrap(&options.bootstrap).await?;

        let address = config.server.bind;
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| StartError::Bind { address, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| StartError::Bind { address, source })?;

        let mut allowed_hosts = config.queue.allowed_hosts.clone();
        // The operator's language-model API is a destination they chose, wherever it runs.
        if let Some(host) = config
            .queue
            .llm_chat_url()
            .and_then(|url| url::Url::parse(&url).ok())
            .and_then(|url| url.host_str().map(str::to_owned))
        {
            allowed_hosts.push(host.trim_start_matches('[').trim_end_matches(']').to_owned());
        }
        let policy = DestinationPolicy {
            allow_internal: config.queue.allow_private_destinations || config.server.dev,
            allowed_hosts,
        };
        let queue = Queue::new(
            Arc::clone(&stores.queue),
            Arc::clone(&options.clock),
            config.queue.clone(),
            policy,
        );

        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let delivery_runtime = DeliveryRuntime::start(config.queue.delivery_threads);
        let worker = DeliveryWorker::new(&queue, Arc::new(AccountKeys(catalog.admin.clone())))?;
        let worker = Arc::new(match &delivery_runtime {
            Some(runtime) => worker.delivering_on(runtime.handle().clone()),
            None => worker,
        });
        tracker.spawn(worker.run(shutdown.child_token(), tracker.clone()));
        tracker.spawn(quiver_queue::scheduling::run_scheduler(
            queue.clone(),
            shutdown.child_token(),
        ));
        tracker.spawn(quiver_queue::retention::run_retention(
            queue.clone(),
            shutdown.child_token(),
        ));

        let embedders = Arc::new(quiver_embed::Embedders::new(
            config.embeddings.models_dir(&config.server.data_dir),
            config.embeddings.threads,
        ));
        let vectors = Arc::new(
            quiver_vector::Vectors::new(
                Arc::clone(&stores.vectors),
                Arc::clone(&options.clock),
                Arc::clone(&embedders),
            )
            .with_snapshots(config.server.data_dir.join("snapshots")),
        );
        tracker.spawn(Arc::clone(&vectors).run_indexer(shutdown.child_token()));
        // Other nodes' vector writes reach this node's memory within a poll interval (at once for reads
        // by id); a store no other node shares has no feed, and this returns at once.
        tracker.spawn(Arc::clone(&vectors).follow_feed(
            Duration::from_millis(config.storage.poll_interval_ms),
            shutdown.child_token(),
        ));
        if let Some((database, store)) = stores.shared.clone() {
            queue.poll_for_other_nodes(Duration::from_millis(config.storage.poll_interval_ms));
            tracker.spawn(crate::stores::follow_other_nodes(
                database,
                store,
                queue.clone(),
                catalog.admin.clone(),
                Arc::clone(&vectors),
                Arc::clone(&options.clock),
                shutdown.child_token(),
            ));
        }
        let readiness = Arc::new(NodeReadiness::new(stores.probes(), Arc::clone(&vectors)));
        tracker.spawn(Arc::clone(&readiness).warm_up(Arc::clone(&stores.admin), shutdown.child_token()));
        let meter = Arc::new(quiver_admin::meter::Meter::new(
            Arc::clone(&catalog.store) as Arc<dyn quiver_admin::AdminStore>,
            Arc::clone(&options.clock),
        ));
        tracker.spawn(Arc::clone(&meter).run(shutdown.child_token()));

        let state = AppState::new(Services {
            admin: catalog.admin.clone(),
            queue: queue.clone(),
            vectors,
            embedders,
            limiter: Arc::new({
                let limiter = quiver_admin::limits::Limiter::new(
                    Arc::clone(&meter),
                    Arc::clone(&options.clock),
                    config.http.enforce_rate_limits,
                );
                // Quotas count every node's usage where nodes share the store (rates stay per node).
                if stores.shared.is_some() {
                    limiter.resync_every(QUOTA_RESYNC)
                } else {
                    limiter
                }
            }),
            meter,
            metrics: Arc::new(quiver_http::metrics::Metrics::new(
                stores.writer_sources(),
                Some(config.http.metrics_token.clone()),
            )),
            readiness,
            console: quiver_http::sessions::Sessions::new(
                Arc::clone(&options.clock),
                Duration::from_millis(config.http.console_session_idle_ms),
                Duration::from_millis(config.http.console_session_lifetime_ms),
            ),
            config: config.http.clone(),
            request_lines: options.request_lines.clone(),
        });
        let router = quiver_http::router(state);
        let http = tracker.spawn(crate::serve::serve(
            listener,
            router,
            Duration::from_millis(config.http.header_read_timeout_ms),
            Duration::from_millis(config.http.body_read_timeout_ms),
            shutdown.child_token(),
        ));
        info!(%local_addr, storage = %config.storage_location(), dev = config.server.dev, "quiver is serving");
        Ok(App {
            local_addr,
            catalog,
            queue,
            writers: stores.writers,
            bootstrap,
            shutdown,
            tracker,
            http,
            grace: Duration::from_millis(config.server.shutdown_grace_ms),
            delivery_runtime,
        })
    }

    /// The address the listener is bound to (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The bootstrap account, and whether this start created it.
    pub fn bootstrap(&self) -> &Bootstrap {
        &self.bootstrap
    }

    /// The message queue (the test kit asks it whether the delivery worker is idle).
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Accounts and indexes.
    pub fn admin(&self) -> &Admin {
        &self.catalog.admin
    }

    /// The catalogue store, which also holds per-minute usage (for tools that seed or inspect it).
    pub fn admin_store(&self) -> Arc<dyn quiver_admin::AdminStore> {
        Arc::clone(&self.catalog.store) as Arc<dyn quiver_admin::AdminStore>
    }

    /// Stops the process in order: stop accepting connections and let in-flight requests finish, stop
    /// background loops, wait for in-flight work up to the grace period, then flush the stores.
    pub async fn shutdown(self) {
        info!("shutting down");
        self.shutdown.cancel();
        self.tracker.close();
        match tokio::time::timeout(self.grace, self.tracker.wait()).await {
            Ok(()) => {}
            Err(_) => {
                warn!(
                    grace_ms = self.grace.as_millis(),
                    "in-flight work did not finish within the grace period"
                );
                self.http.abort();
            }
        }
        drop(self.delivery_runtime);
        for writer in &self.writers {
            writer.close().await;
        }
        info!("shut down cleanly");
    }
}
