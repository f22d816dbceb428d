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
            tokio::spawn(async move { database.write(insert(format!("item {i}"))).await })
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
    values_by(database, "v").await
}

/// Every value, ordered by the column `order` (`id` is the order the writes committed in).
async fn values_by(database: &Database, order: &'static str) -> Vec<String> {
    database
        .read(move |c| {
            let mut statement = c
                .prepare(&format!("SELECT v FROM items ORDER BY {order}"))
                .map_err(backend_error)?;
            let rows = statement.query_map([], |r| r.get(0)).map_err(backend_error)?;
            rows.collect::<Result<_, _>>().map_err(backend_error)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn deferred_writes_let_later_writes_commit_first_and_then_share_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    let database = open(&dir);
    // Alone, a deferred write commits at once: the writer has nothing else to do.
    assert_eq!(database.write_deferred(insert("alone")).await.unwrap(), 1);
    let release = hold_writer(&database).await;
    let mut deferred = Vec::new();
    for (i, value) in ["d0", "d1", "d2"].into_iter().enumerate() {
        let writer = database.clone();
        deferred.push(tokio::spawn(
            async move { writer.write_deferred(insert(value)).await },
        ));
        queued(&database, i + 1).await;
    }
    let prompt = {
        let database = database.clone();
        tokio::spawn(async move { database.write(insert("p")).await })
    };
    queued(&database, 4).await;
    let commits_before = database.writer_stats().batch_sizes.snapshot().count;
    release.send(()).unwrap();
    assert_eq!(prompt.await.unwrap().unwrap(), 1);
    for write in deferred {
        assert_eq!(write.await.unwrap().unwrap(), 1);
    }
    assert_eq!(
        values_by(&database, "id").await,
        ["alone", "p", "d0", "d1", "d2"],
        "the write queued last committed first"
    );
    let commits = database.writer_stats().batch_sizes.snapshot().count - commits_before;
    // The held write's commit was counted as it began.
    assert_eq!(commits, 2, "the prompt write's, and one for the deferred three");
}

#[tokio::test]
async fn a_deferred_write_held_at_close_is_committed_before_the_writer_stops() {
    let dir = tempfile::tempdir().unwrap();
    let database = open(&dir);
    let release = hold_writer(&database).await;
    let deferred = {
        let database = database.clone();
        tokio::spawn(async move { database.write_deferred(insert("kept")).await })
    };
    queued(&database, 1).await;
    let closing = {
        let database = database.clone();
        tokio::spawn(async move { database.close().await })
    };
    queued(&database, 2).await;
    release.send(()).unwrap();
    closing.await.unwrap();
    assert_eq!(deferred.await.unwrap().unwrap(), 1);
    drop(database);
    assert_eq!(values(&open(&dir)).await, ["kept"]);
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
    database.write(insert("x")).await.unwrap();
    assert_eq!(count(&database).await, 1);
}

#[tokio::test]
async fn writes_after_close_are_refused_and_data_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let database = open(&dir);
    database.write(insert("kept")).await.unwrap();
    database.close().await;
    let refused = database.write(insert("late")).await;
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
    let database = Database::open(&dir.path().join("plans.db"), &schema, &StorageConfig::default()).unwrap();
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
