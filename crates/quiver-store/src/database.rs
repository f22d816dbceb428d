//! One SQLite database file: a single writer thread that group-commits, and a pool of readers.
//!
//! Every write is a closure run on the writer thread inside the current batch's transaction, and a failing
//! write rolls back alone: [`Database::write`] wraps each write in its own savepoint. The writer takes
//! every write that is waiting (up to `group_commit_max_batch`), commits them with one fsync
//! (`synchronous=FULL`), and only then answers each caller: an `Ok` means the write is on disk.
//!
//! A savepoint copies every page a write touches that an earlier write of the batch touched too, which
//! is most of a small write's cost. Hot writes that can safely run twice use [`Database::write_repeatable`]:
//! they run first, together and without savepoints, and only if one of them fails does the writer roll
//! the batch back and run them again, each under its own savepoint.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use quiver_core::StoreError;
use quiver_core::observe::WriterStats;
use quiver_core::store::StoreResult;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::config::StorageConfig;
use crate::migrations::{self, Migration};

/// Delivers a write's outcome once its batch's commit outcome is known.
type Completion = Box<dyn FnOnce(StoreResult<()>) + Send>;
/// A write: runs against the writer connection and says whether it succeeded.
type Job = Box<dyn FnOnce(&Connection) -> (bool, Completion) + Send>;

/// A write that may run twice (see [`Database::write_repeatable`]).
trait Repeatable: Send {
    /// Runs the operation, keeping its result; says whether it succeeded.
    fn run(&mut self, connection: &Connection) -> bool;
    /// Answers the caller: the commit's outcome, else the last run's result.
    fn finish(self: Box<Self>, commit: StoreResult<()>);
}

struct RepeatableWrite<T, F> {
    operation: F,
    result: Option<StoreResult<T>>,
    reply: oneshot::Sender<StoreResult<T>>,
}

impl<T, F> Repeatable for RepeatableWrite<T, F>
where
    T: Send,
    F: Fn(&Connection) -> StoreResult<T> + Send,
{
    fn run(&mut self, connection: &Connection) -> bool {
        let result = (self.operation)(connection);
        let succeeded = result.is_ok();
        self.result = Some(result);
        succeeded
    }

    fn finish(self: Box<Self>, commit: StoreResult<()>) {
        let RepeatableWrite { result, reply, .. } = *self;
        let outcome = commit.and_then(|()| {
            result.unwrap_or_else(|| Err(StoreError::Backend("the write did not run".into())))
        });
        // The caller may have gone away; the write stands regardless.
        let _ = reply.send(outcome);
    }
}

enum Command {
    Write(Job),
    Repeat(Box<dyn Repeatable>),
    Close(oneshot::Sender<()>),
}

/// The writes of one group commit.
#[derive(Default)]
struct Batch {
    once: Vec<Job>,
    repeatable: Vec<Box<dyn Repeatable>>,
}

impl Batch {
    fn len(&self) -> usize {
        self.once.len() + self.repeatable.len()
    }

    /// Adds a write; hands back a close request.
    fn add(&mut self, command: Command) -> Option<oneshot::Sender<()>> {
        match command {
            Command::Write(job) => self.once.push(job),
            Command::Repeat(write) => self.repeatable.push(write),
            Command::Close(done) => return Some(done),
        }
        None
    }
}

/// A SQLite database with a group-committing writer and a read pool. Cheap to clone.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    commands: mpsc::Sender<Command>,
    stats: Arc<WriterStats>,
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

impl Database {
    /// Opens (creating if needed) the database at `path`, applies `migrations`, and starts its writer.
    ///
    /// # Errors
    /// The file cannot be opened or created, or a migration fails.
    pub fn open(path: &Path, migrations: &[Migration], config: &StorageConfig) -> StoreResult<Database> {
        if !crate::page_cache::install() {
            tracing::debug!(
                "SQLite started before Quiver's page cache could be installed; using its default"
            );
        }
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
        crate::connection::configure(&writer, config).map_err(backend_error)?;
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
                .and_then(|()| crate::connection::stable_plans(&reader))
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
        let stats = Arc::new(WriterStats::default());
        let writer_stats = Arc::clone(&stats);
        let handle = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || run_writer(writer, receiver, max_batch, &writer_stats))
            .map_err(|e| StoreError::Backend(format!("cannot start the writer thread: {e}")))?;

        Ok(Database {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                commands,
                stats,
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

    /// What the writer did so far (for `GET /metrics`).
    pub fn writer_stats(&self) -> Arc<WriterStats> {
        Arc::clone(&self.inner.stats)
    }

    /// Writes waiting for the writer now.
    pub fn queued_writes(&self) -> usize {
        self.inner.commands.max_capacity() - self.inner.commands.capacity()
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

    /// Like [`Database::write`], for an operation that may run twice in one batch: it must only read and
    /// write through `connection` (no other side effects), so that running it again after a rollback is
    /// the same as running it once. Such writes skip the per-write savepoint unless one of them fails.
    ///
    /// # Errors
    /// As [`Database::write`].
    pub async fn write_repeatable<T, F>(&self, operation: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> StoreResult<T> + Send + 'static,
    {
        let (reply, outcome) = oneshot::channel();
        let write = RepeatableWrite {
            operation,
            result: None,
            reply,
        };
        self.inner
            .commands
            .send(Command::Repeat(Box::new(write)))
            .await
            .map_err(|_| StoreError::Closed)?;
        outcome
            .await
            .map_err(|_| StoreError::Backend("the write was abandoned by a failing writer".into()))?
    }

    /// Whether the database takes writes now: an empty write through the writer thread, which begins
    /// (and commits) a write transaction, so a stopped writer, a file that became read-only or a lock
    /// another process holds shows here.
    ///
    /// # Errors
    /// Why the write could not be made.
    pub async fn check_writable(&self) -> StoreResult<()> {
        // Repeatable, so that a transaction that cannot begin answers with its reason.
        self.write_repeatable(|_| Ok(())).await
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

fn run_writer(
    connection: Connection,
    mut commands: mpsc::Receiver<Command>,
    max_batch: usize,
    stats: &WriterStats,
) {
    let mut batch = Batch::default();
    while let Some(first) = commands.blocking_recv() {
        let mut close = batch.add(first);
        while close.is_none() && batch.len() < max_batch {
            match commands.try_recv() {
                Ok(command) => close = batch.add(command),
                Err(_) => break,
            }
        }
        if batch.len() > 0 {
            let started = std::time::Instant::now();
            stats.batch_sizes.observe(batch.len() as u64);
            commit_batch(&connection, &mut batch);
            stats.commit_durations.observe_duration(started.elapsed());
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

/// Fails every write of `batch` without running it (its transaction could not start). A dropped job's
/// caller learns that its write was abandoned.
fn fail_batch(batch: &mut Batch, error: &StoreError) {
    tracing::error!(%error, writes = batch.len(), "could not start a transaction");
    batch.once.clear();
    for write in batch.repeatable.drain(..) {
        write.finish(Err(StoreError::Backend(format!(
            "could not start a transaction: {error}"
        ))));
    }
}

/// Runs `write` under its own savepoint; `false` when it panicked (its caller learns the write was
/// abandoned when it is dropped).
fn run_guarded(connection: &Connection, write: &mut dyn FnMut(&Connection) -> bool) -> bool {
    if let Err(error) = run_statement(connection, "SAVEPOINT write") {
        tracing::error!(%error, "savepoint failed");
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| write(connection)));
    if !matches!(outcome, Ok(true)) {
        let _ = run_statement(connection, "ROLLBACK TO write");
    }
    let _ = run_statement(connection, "RELEASE write");
    if outcome.is_err() {
        tracing::error!("a write operation panicked; its changes were rolled back");
    }
    outcome.is_ok()
}

/// Runs the repeatable writes together without savepoints; if one fails or panics, rolls the
/// transaction back, begins it again and runs each under its own savepoint. Writes that panicked are
/// dropped from `writes`.
///
/// # Errors
/// The transaction could not be rolled back and begun again.
fn run_repeatable(connection: &Connection, writes: &mut Vec<Box<dyn Repeatable>>) -> StoreResult<()> {
    let all_succeeded = writes
        .iter_mut()
        .all(|write| catch_unwind(AssertUnwindSafe(|| write.run(connection))).unwrap_or(false));
    if all_succeeded {
        return Ok(());
    }
    connection
        .execute_batch("ROLLBACK; BEGIN IMMEDIATE")
        .map_err(backend_error)?;
    writes.retain_mut(|write| run_guarded(connection, &mut |c| write.run(c)));
    Ok(())
}

fn commit_batch(connection: &Connection, batch: &mut Batch) {
    if let Err(error) = connection.execute_batch("BEGIN IMMEDIATE") {
        fail_batch(batch, &backend_error(error));
        return;
    }
    if let Err(error) = run_repeatable(connection, &mut batch.repeatable) {
        if !connection.is_autocommit() {
            let _ = connection.execute_batch("ROLLBACK");
        }
        fail_batch(batch, &error);
        return;
    }
    let repeatable = std::mem::take(&mut batch.repeatable);
    let mut completions = Vec::with_capacity(batch.once.len());
    for job in batch.once.drain(..) {
        let mut job = Some(job);
        let mut completion = None;
        run_guarded(connection, &mut |c| {
            let Some(job) = job.take() else { return false };
            let (succeeded, reply) = job(c);
            completion = Some(reply);
            succeeded
        });
        completions.extend(completion);
    }
    let outcome = connection.execute_batch("COMMIT").map_err(backend_error);
    if let Err(error) = &outcome {
        tracing::error!(%error, writes = completions.len() + repeatable.len(), "group commit failed");
        let _ = connection.execute_batch("ROLLBACK");
    }
    let shared = || match &outcome {
        Ok(()) => Ok(()),
        Err(error) => Err(StoreError::Backend(error.to_string())),
    };
    for completion in completions {
        completion(shared());
    }
    for write in repeatable {
        write.finish(shared());
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

    /// A write inserting `value` into `items`.
    fn insert(value: impl Into<String>) -> impl Fn(&Connection) -> StoreResult<usize> + Send + 'static {
        let value = value.into();
        move |c| {
            c.execute("INSERT INTO items (v) VALUES (?1)", [&value])
                .map_err(backend_error)
        }
    }

    async fn values(database: &Database) -> Vec<String> {
        database
            .read(|c| {
                let mut statement = c
                    .prepare("SELECT v FROM items ORDER BY v")
                    .map_err(backend_error)?;
                let rows = statement.query_map([], |r| r.get(0)).map_err(backend_error)?;
                rows.collect::<Result<_, _>>().map_err(backend_error)
            })
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_failing_write_rolls_back_alone_and_reports_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let database = open(&dir);
        database.write(insert("a")).await.unwrap();
        let clash = database.write(|c| {
            insert("b")(c)?;
            insert("a")(c)
        });
        let fine = database.write(insert("c"));
        let (clash, fine) = tokio::join!(clash, fine);
        assert!(
            matches!(clash, Err(StoreError::Conflict(ref what)) if what == "items.v"),
            "{clash:?}"
        );
        assert_eq!(fine.unwrap(), 1);
        assert_eq!(
            values(&database).await,
            ["a", "c"],
            "the failed write's first insert was rolled back"
        );
    }

    /// Occupies the writer thread with one write until the returned sender is used or dropped, so that
    /// writes queued meanwhile share the next batch.
    async fn hold_writer(database: &Database) -> std::sync::mpsc::Sender<()> {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (started, running) = oneshot::channel();
        let holder = database.clone();
        tokio::spawn(async move {
            holder
                .write(move |_| {
                    let _ = started.send(());
                    let _ = released.recv();
                    Ok(())
                })
                .await
        });
        running.await.unwrap();
        release
    }

    /// Waits until `count` writes wait in the writer's queue.
    async fn queued(database: &Database, count: usize) {
        let commands = &database.inner.commands;
        while commands.max_capacity() - commands.capacity() < count {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_repeatable_write_rolls_back_alone_in_a_batch_of_both_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let database = open(&dir);
        database.write(insert("taken")).await.unwrap();
        // Forty writes of both kinds share one batch; one repeatable write clashes halfway.
        let release = hold_writer(&database).await;
        let mut handles = Vec::new();
        for i in 0..40 {
            let database = database.clone();
            handles.push(tokio::spawn(async move {
                let value = format!("r{i:02}");
                if i == 20 {
                    database
                        .write_repeatable(move |c| {
                            insert("half")(c)?;
                            insert("taken")(c)
                        })
                        .await
                } else if i % 2 == 0 {
                    database.write_repeatable(insert(value)).await
                } else {
                    database.write(insert(value)).await
                }
            }));
        }
        queued(&database, 40).await;
        drop(release);
        let mut outcomes = Vec::new();
        for handle in handles {
            outcomes.push(handle.await.unwrap());
        }
        assert!(
            matches!(outcomes[20], Err(StoreError::Conflict(ref what)) if what == "items.v"),
            "{:?}",
            outcomes[20]
        );
        assert!(
            outcomes
                .iter()
                .enumerate()
                .all(|(i, o)| i == 20 || o.as_ref().is_ok_and(|n| *n == 1)),
            "{outcomes:?}"
        );
        let stored = values(&database).await;
        assert_eq!(stored.len(), 40, "39 writes and the earlier one: {stored:?}");
        assert!(
            !stored.contains(&"half".to_owned()),
            "the failed write's first insert was rolled back"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_repeatable_write_fails_without_losing_the_others_in_its_batch() {
        let dir = tempfile::tempdir().unwrap();
        let database = open(&dir);
        let release = hold_writer(&database).await;
        let (first, second) = (database.clone(), database.clone());
        let panicked = tokio::spawn(async move {
            first
                .write_repeatable(|c| -> StoreResult<()> {
                    insert("lost")(c)?;
                    panic!("boom")
                })
                .await
        });
        let fine = tokio::spawn(async move { second.write_repeatable(insert("kept")).await });
        queued(&database, 2).await;
        drop(release);
        let (panicked, fine) = (panicked.await.unwrap(), fine.await.unwrap());
        assert!(panicked.is_err());
        assert_eq!(fine.unwrap(), 1);
        assert_eq!(values(&database).await, ["kept"]);
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
    async fn the_writability_check_fails_while_another_process_holds_the_write_lock_and_after_close() {
        let dir = tempfile::tempdir().unwrap();
        let database = Database::open(
            &dir.path().join("test.db"),
            TEST_SCHEMA,
            &StorageConfig {
                busy_timeout_ms: 50,
                ..StorageConfig::default()
            },
        )
        .unwrap();
        database.check_writable().await.unwrap();
        // What `quiver accounts create` or a stuck tool would do to the file.
        let other = Connection::open(dir.path().join("test.db")).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let refused = database.check_writable().await.unwrap_err();
        assert!(refused.to_string().contains("locked"), "{refused}");
        other.execute_batch("ROLLBACK").unwrap();
        database.check_writable().await.unwrap();
        database.close().await;
        assert!(matches!(database.check_writable().await, Err(StoreError::Closed)));
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

    #[tokio::test]
    async fn a_cached_statement_keeps_its_plan_when_new_values_are_bound() {
        let dir = tempfile::tempdir().unwrap();
        let schema = [Migration {
            version: 1,
            name: "due items",
            sql: "CREATE TABLE due (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, queue TEXT);
                  CREATE INDEX due_at ON due (at);
                  CREATE INDEX due_by_queue ON due (queue) WHERE queue IS NOT NULL;",
        }];
        let database =
            Database::open(&dir.path().join("plans.db"), &schema, &StorageConfig::default()).unwrap();
        let reprepared = database
            .write(|c| {
                let mut statement = c
                    .prepare_cached(
                        "SELECT id FROM due WHERE at <= ?1 AND (queue IS NULL OR queue = 'q') ORDER BY at LIMIT ?2",
                    )
                    .map_err(backend_error)?;
                for (now, limit) in [(10, 0), (20, 1), (30, 64), (40, 0)] {
                    statement
                        .query_map([now, limit], |r| r.get::<_, i64>(0))
                        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                        .map_err(backend_error)?;
                }
                Ok(statement.get_status(rusqlite::StatementStatus::RePrepare))
            })
            .await
            .unwrap();
        assert_eq!(reprepared, 0);
    }
}
