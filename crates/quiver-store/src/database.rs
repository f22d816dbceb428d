//! One SQLite database file: a single writer thread that group-commits, and a pool of readers.
//!
//! Every write is a closure run on the writer thread inside the current batch's transaction, wrapped in
//! its own savepoint, so a failing write rolls back alone. The writer takes every write that is waiting
//! (up to `group_commit_max_batch`), commits them with one fsync (`synchronous=FULL`), and only then
//! answers each caller: an `Ok` means the write is on disk.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use quiver_core::StoreError;
use quiver_core::store::StoreResult;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::config::StorageConfig;
use crate::migrations::{self, Migration};

/// Delivers a write's outcome once its batch's commit outcome is known.
type Completion = Box<dyn FnOnce(StoreResult<()>) + Send>;
/// A write: runs against the writer connection and says whether it succeeded.
type Job = Box<dyn FnOnce(&Connection) -> (bool, Completion) + Send>;

enum Command {
    Write(Job),
    Close(oneshot::Sender<()>),
}

/// A SQLite database with a group-committing writer and a read pool. Cheap to clone.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    commands: mpsc::Sender<Command>,
    readers: Mutex<Vec<Connection>>,
    read_permits: Semaphore,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

pub(crate) fn backend_error(error: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(failure, message) = &error
        && failure.code == rusqlite::ErrorCode::ConstraintViolation
    {
        let detail = message.clone().unwrap_or_else(|| error.to_string());
        let what = detail.rsplit(": ").next().unwrap_or(&detail).to_owned();
        return StoreError::Conflict(what);
    }
    StoreError::Backend(error.to_string())
}

fn configure(connection: &Connection, config: &StorageConfig) -> rusqlite::Result<()> {
    connection.busy_timeout(Duration::from_millis(config.busy_timeout_ms))?;
    connection.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;")?;
    Ok(())
}

impl Database {
    /// Opens (creating if needed) the database at `path`, applies `migrations`, and starts its writer.
    ///
    /// # Errors
    /// The file cannot be opened or created, or a migration fails.
    pub fn open(path: &Path, migrations: &[Migration], config: &StorageConfig) -> StoreResult<Database> {
        let mut writer = Connection::open(path).map_err(backend_error)?;
        let mode: String = writer
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(backend_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Backend(format!(
                "{} cannot use WAL mode (got {mode})",
                path.display()
            )));
        }
        configure(&writer, config).map_err(backend_error)?;
        // Savepoint journals stay in memory; the writer keeps up to 64 MiB of pages cached, so index inserts
        // rarely read the file; and the WAL is checkpointed every 8,192 pages (32 MiB) instead of every
        // 1,000, so a page that many commits rewrite is copied back once.
        writer
            .execute_batch(
                "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = 8192;",
            )
            .map_err(backend_error)?;
        migrations::apply(&mut writer, migrations).map_err(backend_error)?;

        let mut readers = Vec::with_capacity(config.read_connections.max(1));
        for _ in 0..config.read_connections.max(1) {
            let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let reader = Connection::open_with_flags(path, flags).map_err(backend_error)?;
            reader
                .busy_timeout(Duration::from_millis(config.busy_timeout_ms))
                .map_err(backend_error)?;
            readers.push(reader);
        }

        let (commands, receiver) = mpsc::channel(config.write_queue_capacity.max(1));
        let max_batch = config.group_commit_max_batch.max(1);
        let thread_name = format!(
            "quiver-writer-{}",
            path.file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
        );
        let handle = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || run_writer(writer, receiver, max_batch))
            .map_err(|e| StoreError::Backend(format!("cannot start the writer thread: {e}")))?;

        Ok(Database {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                commands,
                read_permits: Semaphore::new(readers.len()),
                readers: Mutex::new(readers),
                writer: Mutex::new(Some(handle)),
            }),
        })
    }

    /// The file this database lives in.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `operation` on the writer connection in the next group commit, and returns its result once
    /// that commit is durable. The operation must not begin, commit or roll back transactions itself; if
    /// it fails, its changes are rolled back and the rest of the batch commits.
    ///
    /// # Errors
    /// The operation's own error; a failed commit; [`StoreError::Closed`] after [`Database::close`].
    ///
    /// # Cancel safety
    /// Dropping the future after the write was queued does not withdraw it: it still commits.
    pub async fn write<T, F>(&self, operation: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let (reply, outcome) = oneshot::channel();
        let job: Job = Box::new(move |connection| {
            let result = operation(connection);
            let succeeded = result.is_ok();
            let completion: Completion = Box::new(move |commit: StoreResult<()>| {
                // The caller may have gone away; the write stands regardless.
                let _ = reply.send(commit.and(result));
            });
            (succeeded, completion)
        });
        self.inner
            .commands
            .send(Command::Write(job))
            .await
            .map_err(|_| StoreError::Closed)?;
        outcome
            .await
            .map_err(|_| StoreError::Backend("the write was abandoned by a failing writer".into()))?
    }

    /// Runs `operation` on a read-only connection, off the async runtime. Sees every write whose
    /// [`Database::write`] has returned.
    ///
    /// # Errors
    /// The operation's own error.
    pub async fn read<T, F>(&self, operation: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let _permit = self
            .inner
            .read_permits
            .acquire()
            .await
            .map_err(|_| StoreError::Closed)?;
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let connection = inner.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let Some(connection) = connection else {
                return Err(StoreError::Backend("no reader free despite a permit".into()));
            };
            let result = operation(&connection);
            inner
                .readers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(connection);
            result
        })
        .await
        .map_err(|e| StoreError::Backend(format!("read task failed: {e}")))?
    }

    /// Commits every write queued before this call, checkpoints the WAL and stops the writer. Later
    /// writes fail with [`StoreError::Closed`]; reads keep working.
    pub async fn close(&self) {
        let (done, finished) = oneshot::channel();
        if self.inner.commands.send(Command::Close(done)).await.is_ok() {
            let _ = finished.await;
        }
        let handle = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(handle) = handle {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
    }
}

fn run_writer(connection: Connection, mut commands: mpsc::Receiver<Command>, max_batch: usize) {
    let mut batch: Vec<Job> = Vec::with_capacity(max_batch);
    while let Some(first) = commands.blocking_recv() {
        let mut close = None;
        match first {
            Command::Write(job) => batch.push(job),
            Command::Close(done) => close = Some(done),
        }
        while close.is_none() && batch.len() < max_batch {
            match commands.try_recv() {
                Ok(Command::Write(job)) => batch.push(job),
                Ok(Command::Close(done)) => close = Some(done),
                Err(_) => break,
            }
        }
        if !batch.is_empty() {
            commit_batch(&connection, &mut batch);
        }
        if let Some(done) = close {
            if let Err(error) = connection.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
                tracing::warn!(%error, "checkpoint at close failed; the WAL is replayed at next open");
            }
            let _ = done.send(());
            return;
        }
    }
}

/// Runs a parameterless statement through the statement cache (savepoints run once per write).
fn run_statement(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.execute([]).map(drop)
}

fn commit_batch(connection: &Connection, batch: &mut Vec<Job>) {
    if let Err(error) = connection.execute_batch("BEGIN IMMEDIATE") {
        let error = backend_error(error);
        for job in batch.drain(..) {
            let (_, completion) = job(connection);
            completion(Err(StoreError::Backend(format!(
                "could not start a transaction: {error}"
            ))));
        }
        return;
    }
    let mut completions = Vec::with_capacity(batch.len());
    for job in batch.drain(..) {
        if let Err(error) = run_statement(connection, "SAVEPOINT write") {
            tracing::error!(%error, "savepoint failed");
        }
        match catch_unwind(AssertUnwindSafe(|| job(connection))) {
            Ok((true, completion)) => {
                let _ = run_statement(connection, "RELEASE write");
                completions.push(completion);
            }
            Ok((false, completion)) => {
                let _ = run_statement(connection, "ROLLBACK TO write")
                    .and_then(|()| run_statement(connection, "RELEASE write"));
                completions.push(completion);
            }
            Err(_) => {
                // The job's reply channel was dropped with it, so its caller learns it was abandoned.
                tracing::error!("a write operation panicked; its changes were rolled back");
                let _ = run_statement(connection, "ROLLBACK TO write")
                    .and_then(|()| run_statement(connection, "RELEASE write"));
            }
        }
    }
    let outcome = connection.execute_batch("COMMIT").map_err(backend_error);
    if let Err(error) = &outcome {
        tracing::error!(%error, writes = completions.len(), "group commit failed");
        let _ = connection.execute_batch("ROLLBACK");
    }
    for completion in completions {
        let shared = match &outcome {
            Ok(()) => Ok(()),
            Err(error) => Err(StoreError::Backend(error.to_string())),
        };
        completion(shared);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_SCHEMA: &[Migration] = &[Migration {
        version: 1,
        name: "items",
        sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, v TEXT UNIQUE)",
    }];

    fn open(dir: &tempfile::TempDir) -> Database {
        Database::open(
            &dir.path().join("test.db"),
            TEST_SCHEMA,
            &StorageConfig::default(),
        )
        .unwrap()
    }

    async fn count(database: &Database) -> i64 {
        database
            .read(|c| {
                c.query_row("SELECT COUNT(*) FROM items", [], |r| r.get(0))
                    .map_err(backend_error)
            })
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writes_are_all_committed_and_visible_to_readers() {
        let dir = tempfile::tempdir().unwrap();
        let database = open(&dir);
        let writers: Vec<_> = (0..500)
            .map(|i| {
                let database = database.clone();
                tokio::spawn(async move {
                    database
                        .write(move |c| {
                            c.execute("INSERT INTO items (v) VALUES (?1)", [format!("item {i}")])
                                .map_err(backend_error)
                        })
                        .await
                })
            })
            .collect();
        for writer in writers {
            assert_eq!(writer.await.unwrap().unwrap(), 1);
        }
        assert_eq!(count(&database).await, 500);
    }

    #[tokio::test]
    async fn a_failing_write_rolls_back_alone_and_reports_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let database = open(&dir);
        database
            .write(|c| {
                c.execute("INSERT INTO items (v) VALUES ('a')", [])
                    .map_err(backend_error)
            })
            .await
            .unwrap();
        let clash = database.write(|c| {
            c.execute("INSERT INTO items (v) VALUES ('b')", [])
                .map_err(backend_error)?;
            c.execute("INSERT INTO items (v) VALUES ('a')", [])
                .map_err(backend_error)
        });
        let fine = database.write(|c| {
            c.execute("INSERT INTO items (v) VALUES ('c')", [])
                .map_err(backend_error)
        });
        let (clash, fine) = tokio::join!(clash, fine);
        assert!(
            matches!(clash, Err(StoreError::Conflict(ref what)) if what == "items.v"),
            "{clash:?}"
        );
        assert_eq!(fine.unwrap(), 1);
        let values: Vec<String> = database
            .read(|c| {
                let mut statement = c
                    .prepare("SELECT v FROM items ORDER BY v")
                    .map_err(backend_error)?;
                let rows = statement.query_map([], |r| r.get(0)).map_err(backend_error)?;
                rows.collect::<Result<_, _>>().map_err(backend_error)
            })
            .await
            .unwrap();
        assert_eq!(
            values,
            ["a", "c"],
            "the failed write's first insert was rolled back"
        );
    }

    #[tokio::test]
    async fn a_panicking_write_fails_without_stopping_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let database = open(&dir);
        let panicked = database.write(|_| -> StoreResult<()> { panic!("boom") }).await;
        assert!(panicked.is_err());
        database
            .write(|c| {
                c.execute("INSERT INTO items (v) VALUES ('x')", [])
                    .map_err(backend_error)
            })
            .await
            .unwrap();
        assert_eq!(count(&database).await, 1);
    }

    #[tokio::test]
    async fn writes_after_close_are_refused_and_data_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let database = open(&dir);
        database
            .write(|c| {
                c.execute("INSERT INTO items (v) VALUES ('kept')", [])
                    .map_err(backend_error)
            })
            .await
            .unwrap();
        database.close().await;
        let refused = database
            .write(|c| {
                c.execute("INSERT INTO items (v) VALUES ('late')", [])
                    .map_err(backend_error)
            })
            .await;
        assert!(matches!(refused, Err(StoreError::Closed)));
        drop(database);
        let reopened = open(&dir);
        assert_eq!(count(&reopened).await, 1);
    }

    #[tokio::test]
    async fn a_database_from_a_newer_build_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let newer = [
            TEST_SCHEMA[0],
            Migration {
                version: 2,
                name: "more",
                sql: "CREATE TABLE more (x)",
            },
        ];
        Database::open(&dir.path().join("test.db"), &newer, &StorageConfig::default())
            .unwrap()
            .close()
            .await;
        let older = Database::open(
            &dir.path().join("test.db"),
            TEST_SCHEMA,
            &StorageConfig::default(),
        );
        assert!(older.is_err());
    }
}
