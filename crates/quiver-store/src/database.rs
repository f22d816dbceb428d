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
    /// A repeatable write whose commit may wait for later writes (see [`Database::write_deferred`]).
    Defer(Box<dyn Repeatable>),
    Close(oneshot::Sender<()>),
}

/// Deferred writes are committed once this many wait ...
const DEFER_AT_MOST: usize = 256;
/// ... or once the oldest has waited this long, or as soon as nothing else is waiting.
const DEFER_LONGEST: Duration = Duration::from_millis(10);

/// The writes of one group commit.
#[derive(Default)]
struct Batch {
    once: Vec<Job>,
    repeatable: Vec<Box<dyn Repeatable>>,
    /// Deferred writes held back from the commits so far, and since when the oldest waits.
    deferred: Vec<Box<dyn Repeatable>>,
    deferred_since: Option<std::time::Instant>,
}

impl Batch {
    /// The writes the next commit would carry, deferred ones aside.
    fn len(&self) -> usize {
        self.once.len() + self.repeatable.len()
    }

    /// Adds a write; hands back a close request.
    fn add(&mut self, command: Command) -> Option<oneshot::Sender<()>> {
        match command {
            Command::Write(job) => self.once.push(job),
            Command::Repeat(write) => self.repeatable.push(write),
            Command::Defer(write) => {
                self.deferred_since.get_or_insert_with(std::time::Instant::now);
                self.deferred.push(write);
            }
            Command::Close(done) => return Some(done),
        }
        None
    }

    /// Moves the deferred writes into the next commit when they are many or old enough, or when
    /// `always`.
    fn release_deferred(&mut self, always: bool) {
        let due = always
            || self.deferred.len() >= DEFER_AT_MOST
            || self
                .deferred_since
                .is_some_and(|since| since.elapsed() >= DEFER_LONGEST);
        if due && !self.deferred.is_empty() {
            self.repeatable.append(&mut self.deferred);
            self.deferred_since = None;
        }
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
        self.queue_repeatable(operation, Command::Repeat).await
    }

    /// Like [`Database::write_repeatable`], for a write that nobody waits on promptly (an attempt's
    /// record, say). While other writes keep the writer busy, deferred writes are held back from its
    /// commits until 256 wait or the oldest has waited 10 ms, and then share one commit: each commit
    /// rewrites every page it touches, so a few large commits of such writes write far fewer pages
    /// than many small ones. With nothing else waiting they commit at once, and all commit before
    /// the database closes. It returns once committed. Writes queued after it may commit before it,
    /// so its operation must not depend on their order.
    ///
    /// # Errors
    /// As [`Database::write`].
    pub async fn write_deferred<T, F>(&self, operation: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> StoreResult<T> + Send + 'static,
    {
        self.queue_repeatable(operation, Command::Defer).await
    }

    /// Queues a repeatable write as the command `kind` makes of it, and waits for its outcome.
    async fn queue_repeatable<T, F>(
        &self,
        operation: F,
        kind: fn(Box<dyn Repeatable>) -> Command,
    ) -> StoreResult<T>
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
            .send(kind(Box::new(write)))
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
    loop {
        // The writer never sleeps while it holds deferred writes: with nothing else waiting, it
        // commits them at once. So they share commits only while other writes keep it busy.
        let first = if batch.deferred.is_empty() {
            commands.blocking_recv()
        } else {
            match commands.try_recv() {
                Ok(command) => Some(command),
                Err(mpsc::error::TryRecvError::Empty) => {
                    batch.release_deferred(true);
                    commit(&connection, &mut batch, stats);
                    continue;
                }
                Err(mpsc::error::TryRecvError::Disconnected) => None,
            }
        };
        let Some(first) = first else {
            batch.release_deferred(true);
            commit(&connection, &mut batch, stats);
            return;
        };
        let mut close = batch.add(first);
        while close.is_none() && batch.len() + batch.deferred.len() < max_batch {
            match commands.try_recv() {
                Ok(command) => close = batch.add(command),
                Err(_) => break,
            }
        }
        batch.release_deferred(close.is_some());
        commit(&connection, &mut batch, stats);
        if let Some(done) = close {
            if let Err(error) = connection.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
                tracing::warn!(%error, "checkpoint at close failed; the WAL is replayed at next open");
            }
            let _ = done.send(());
            return;
        }
    }
}

/// Commits the writes of `batch` (deferred ones aside), if any.
fn commit(connection: &Connection, batch: &mut Batch, stats: &WriterStats) {
    if batch.len() > 0 {
        let started = std::time::Instant::now();
        stats.batch_sizes.observe(batch.len() as u64);
        commit_batch(connection, batch);
        stats.commit_durations.observe_duration(started.elapsed());
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
mod tests;
