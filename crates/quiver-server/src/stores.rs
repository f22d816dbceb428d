//! Opening the stores where the configuration puts them: the embedded SQLite databases in the data
//! directory, or one PostgreSQL database (`storage.url`) that several nodes share.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use quiver_admin::AdminStore;
use quiver_core::Clock;
use quiver_queue::{Queue, QueueStore};
use quiver_store::{Database, SqliteAdminStore, SqliteQueueStore, SqliteVectorStore, StorageConfig};
use quiver_store_pg::{Hint, PgAdminStore, PgDatabase, PgOptions, PgQueueStore, PgVectorStore};
use quiver_vector::VectorStore;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::error::StartError;
use crate::readiness::StoreProbe;

/// Every store of one node.
pub(crate) struct Stores {
    pub(crate) admin: Arc<dyn AdminStore>,
    pub(crate) queue: Arc<dyn QueueStore>,
    pub(crate) vectors: Arc<dyn VectorStore>,
    /// The SQLite databases whose writers flush at shutdown (none with PostgreSQL, whose writes are
    /// committed when they return).
    pub(crate) writers: Vec<Database>,
    /// The PostgreSQL database and queue store that other nodes may share.
    pub(crate) shared: Option<(PgDatabase, Arc<PgQueueStore>)>,
}

impl Stores {
    /// The SQLite writers, for `GET /metrics` (none with PostgreSQL).
    pub(crate) fn writer_sources(&self) -> Vec<quiver_http::metrics::WriterSource> {
        self.writers
            .iter()
            .map(|database| {
                let queued = database.clone();
                quiver_http::metrics::WriterSource {
                    database: database
                        .path()
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                    stats: database.writer_stats(),
                    queued: Box::new(move || queued.queued_writes()),
                }
            })
            .collect()
    }

    /// What `GET /readyz` probes: each SQLite file, or the PostgreSQL database.
    pub(crate) fn probes(&self) -> Vec<StoreProbe> {
        match &self.shared {
            Some((database, _)) => vec![StoreProbe::Postgres(database.clone())],
            None => self.writers.iter().cloned().map(StoreProbe::Sqlite).collect(),
        }
    }
}

impl Stores {
    /// Opens (creating and migrating as needed) every store.
    pub(crate) async fn open(data_dir: &Path, config: &StorageConfig) -> Result<Stores, StartError> {
        if config.url.is_empty() {
            create_data_dir(data_dir)?;
            let admin = SqliteAdminStore::open(data_dir, config)?;
            let queue = SqliteQueueStore::open(data_dir, config)?;
            let vectors = SqliteVectorStore::open(data_dir, config)?;
            let writers = vec![
                queue.database().clone(),
                vectors.database().clone(),
                admin.database().clone(),
            ];
            return Ok(Stores {
                admin: Arc::new(admin),
                queue: Arc::new(queue),
                vectors: Arc::new(vectors),
                writers,
                shared: None,
            });
        }
        let database = open_postgres(config).await?;
        let queue = Arc::new(PgQueueStore::new(database.clone()));
        Ok(Stores {
            admin: Arc::new(PgAdminStore::new(database.clone())),
            queue: Arc::clone(&queue) as Arc<dyn QueueStore>,
            vectors: Arc::new(PgVectorStore::new(database.clone())),
            writers: Vec::new(),
            shared: Some((database, queue)),
        })
    }

    /// Opens the catalogue alone (accounts and indexes), for commands that do not serve.
    pub(crate) async fn open_catalog(
        data_dir: &Path,
        config: &StorageConfig,
    ) -> Result<(Arc<dyn AdminStore>, Vec<Database>), StartError> {
        if config.url.is_empty() {
            create_data_dir(data_dir)?;
            let admin = SqliteAdminStore::open(data_dir, config)?;
            let writers = vec![admin.database().clone()];
            return Ok((Arc::new(admin), writers));
        }
        let database = open_postgres(config).await?;
        Ok((Arc::new(PgAdminStore::new(database)), Vec::new()))
    }
}

/// How often a node looks for the leases of nodes that are gone, and forgets the accounts and indexes
/// it cached (which other nodes may have changed).
const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(2);

/// What a node on a shared database does for the others, until `stop`: wakes its loops on their hints;
/// now and then makes the messages leased by nodes that are gone due again, and forgets its cached
/// accounts and indexes.
pub(crate) async fn follow_other_nodes(
    database: PgDatabase,
    store: Arc<PgQueueStore>,
    queue: Queue,
    admin: quiver_admin::Admin,
    vectors: Arc<quiver_vector::Vectors>,
    clock: Arc<dyn Clock>,
    stop: CancellationToken,
) {
    let mut hints = database.listen(stop.child_token());
    let mut reap = tokio::time::interval(HOUSEKEEPING_EVERY);
    reap.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            hint = hints.recv() => match hint {
                Some(Hint::Due) => queue.wake_worker(),
                Some(Hint::Schedules) => queue.wake_scheduler(),
                Some(Hint::Vectors) => vectors.feed_moved(),
                None => return,
            },
            _ = reap.tick() => {
                admin.forget_cached();
                match store.release_leases_of_gone_nodes(clock.now()).await {
                    Ok(0) => {}
                    Ok(released) => info!(released, "released the leases of a node that is gone"),
                    Err(error) => warn!(%error, "looking for the leases of nodes that are gone failed"),
                }
            }
        }
    }
}

async fn open_postgres(config: &StorageConfig) -> Result<PgDatabase, StartError> {
    let options = PgOptions {
        url: config.url.clone(),
        schema: (!config.schema.is_empty()).then(|| config.schema.clone()),
        pool_size: config.pool_size,
    };
    Ok(PgDatabase::open(&options).await?)
}

fn create_data_dir(path: &Path) -> Result<(), StartError> {
    let error = |source| StartError::DataDir {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(path).map_err(error)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Databases hold credentials: only the owner may read them.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).map_err(error)?;
    }
    Ok(())
}
