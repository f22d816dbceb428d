//! Copies of the embedded databases taken while a server keeps writing to them, and the checks a copy
//! must pass before it is restored. The files, checksums and commands are the binary's (`quiver backup`,
//! `quiver restore`); what needs SQLite is here.

use std::path::Path;
use std::time::Duration;

use quiver_core::StoreError;
use quiver_core::store::StoreResult;
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use crate::database::backend_error;
use crate::migrations::{self, Migration};

/// The databases of a data directory, in the order a backup copies them: the catalogue last, so every
/// index that the vectors' copy holds records of is in the catalogue's copy (one deleted in between
/// leaves records nobody reaches, never an index whose records are missing from its own copy).
pub const DATABASES: [(&str, &[Migration]); 3] = [
    ("vectors.db", migrations::VECTORS),
    ("queue.db", migrations::QUEUE),
    ("catalog.db", migrations::CATALOG),
];

/// How long a copy waits for a moment when it can read, when another process holds the file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Copies the live database `source` to the new file `destination` as one consistent snapshot: every
/// page is copied under one read transaction, which a WAL database lets its writer go on beside, so the
/// copy holds every transaction committed before it began and none after.
///
/// # Errors
/// The source cannot be read, or the destination cannot be written.
pub fn copy_database(source: &Path, destination: &Path) -> StoreResult<()> {
    // Read-write only so that SQLite may use the WAL index; nothing is written to the source.
    let from =
        Connection::open_with_flags(source, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(backend_error)?;
    from.busy_timeout(BUSY_TIMEOUT).map_err(backend_error)?;
    let mut to = Connection::open(destination).map_err(backend_error)?;
    {
        let backup = Backup::new(&from, &mut to).map_err(backend_error)?;
        loop {
            // All pages in one step: one read transaction, so one snapshot.
            match backup.step(-1).map_err(backend_error)? {
                StepResult::Done => break,
                StepResult::More | StepResult::Busy | StepResult::Locked => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    return Err(StoreError::Backend(
                        "the SQLite backup reported a step result this build does not know".into(),
                    ));
                }
            }
        }
    }
    to.execute_batch("PRAGMA journal_mode = DELETE")
        .map_err(backend_error)
}

/// Checks a copied database before it is restored: SQLite's `quick_check` passes, and its schema is
/// not newer than this build knows (`schema` is its migrations).
///
/// # Errors
/// [`StoreError::Corrupt`] naming what is wrong.
pub fn check_database(path: &Path, schema: &[Migration]) -> StoreResult<()> {
    let connection =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(backend_error)?;
    let verdict: Vec<String> = connection
        .prepare("PRAGMA quick_check")
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))?;
    if verdict != ["ok"] {
        return Err(StoreError::Corrupt(format!(
            "{} fails SQLite's quick_check: {}",
            path.display(),
            verdict.join("; ")
        )));
    }
    let version: i64 = connection
        .query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            [],
            |row| row.get(0),
        )
        .map_err(|e| StoreError::Corrupt(format!("{} has no Quiver schema: {e}", path.display())))?;
    let newest = schema.last().map_or(0, |m| m.version);
    if version > newest {
        return Err(StoreError::Corrupt(format!(
            "{} has schema version {version}, newer than this build knows ({newest}): restore it with a newer Quiver",
            path.display()
        )));
    }
    Ok(())
}

/// Whether another process (a running server) has `path` open: leaving WAL mode needs the only
/// connection to the file, so it fails while any other is open. Only for a file about to be replaced:
/// when nobody has it open, it is left in rollback-journal mode.
///
/// # Errors
/// The file cannot be opened.
pub fn is_in_use(path: &Path) -> StoreResult<bool> {
    let connection =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(backend_error)?;
    let mode = connection.query_row("PRAGMA journal_mode = DELETE", [], |row| row.get::<_, String>(0));
    match mode {
        Ok(mode) => Ok(!mode.eq_ignore_ascii_case("delete")),
        Err(rusqlite::Error::SqliteFailure(failure, _))
            if matches!(
                failure.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ) =>
        {
            Ok(true)
        }
        Err(error) => Err(backend_error(error)),
    }
}
