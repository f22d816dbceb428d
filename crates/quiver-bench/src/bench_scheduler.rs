//! `quiver-bench scheduler`: the scheduler's own CPU cost (timers and enqueueing, no deliveries) with
//! thousands of schedules firing every minute.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use quiver_core::{AccountId, SystemClock};
use quiver_queue::ssrf::DestinationPolicy;
use quiver_queue::{PublishRequest, Queue};
use quiver_server::Config;
use quiver_store::SqliteQueueStore;
use tokio_util::sync::CancellationToken;

/// CPU time (user + system) this process has used so far, from `/proc/self/stat` (clock ticks of 10 ms).
fn process_cpu() -> Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
    // Fields after the command name (which may hold spaces) start at its closing parenthesis.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .context("malformed /proc/self/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<u64> { Ok(fields.get(i).context("short /proc/self/stat")?.parse()?) };
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    Ok(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

fn messages_stored(dir: &std::path::Path) -> Result<i64> {
    let connection = rusqlite::Connection::open_with_flags(
        dir.join("queue.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    Ok(connection.query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))?)
}

pub(crate) async fn scheduler(
    config: &Config,
    schedules: usize,
    minutes: u64,
    dir: Option<std::path::PathBuf>,
) -> Result<()> {
    let parent = dir.unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    let scratch = tempfile::tempdir_in(&parent)?;
    let store = SqliteQueueStore::open(scratch.path(), &config.storage)?;
    let policy = DestinationPolicy {
        allow_internal: true,
        allowed_hosts: Vec::new(),
    };
    let queue = Queue::new(
        Arc::new(store),
        SystemClock::shared(),
        config.queue.clone(),
        policy,
    );
    let account = AccountId::random();

    // Create the schedules, many at a time (the store batches the writes).
    let started = Instant::now();
    let mut creating = tokio::task::JoinSet::new();
    for chunk in (0..schedules)
        .collect::<Vec<_>>()
        .chunks(schedules.div_ceil(64).max(1))
    {
        let (queue, chunk) = (queue.clone(), chunk.to_vec());
        creating.spawn(async move {
            for i in chunk {
                let request = PublishRequest {
                    destination: format!("http://127.0.0.1:9/job/{i}"),
                    headers: vec![
                        ("Svc-Cron".into(), "* * * * *".into()),
                        ("Content-Type".into(), "application/json".into()),
                    ],
                    query: Vec::new(),
                    body: format!("{{\"job\":{i}}}").into_bytes(),
                    caller_ip: None,
                    schedule_id: None,
                };
                queue.schedules.create(account, request).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = creating.join_next().await {
        done??;
    }
    println!(
        "created {schedules} schedules firing every minute in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // Measure whole minutes of firing: from a point just after a minute boundary.
    let shutdown = CancellationToken::new();
    let scheduler = tokio::spawn(quiver_queue::scheduling::run_scheduler(
        queue.clone(),
        shutdown.clone(),
    ));
    let wall_start = Instant::now();
    let cpu_start = process_cpu()?;
    let before = messages_stored(scratch.path())?;
    tokio::time::sleep(Duration::from_secs(60 * minutes)).await;
    let cpu = process_cpu()? - cpu_start;
    let wall = wall_start.elapsed();
    let fired = messages_stored(scratch.path())? - before;
    shutdown.cancel();
    scheduler.await?;
    let share = cpu.as_secs_f64() / wall.as_secs_f64() * 100.0;
    println!(
        "{minutes} minute(s): {fired} firings ({:.0} per minute), process CPU {:.2} s over {:.1} s = {share:.2} % of one core \
         ({:.0} us per firing)",
        fired as f64 / minutes as f64,
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / fired.max(1) as f64
    );
    Ok(())
}
