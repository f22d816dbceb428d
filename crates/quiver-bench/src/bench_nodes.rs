//! `quiver-bench nodes`: the PostgreSQL backend against the embedded one and against `pgbench`, in one
//! run. Sustained publish-and-deliver throughput (messages in and out: a closed-loop publisher for a
//! while, timed until every acknowledged message has reached the sink) with the SQLite backend, one
//! PostgreSQL node and two PostgreSQL nodes, in alternating rounds; `pgbench`'s single-row insert rate at
//! the same client count on the same database; then vector upsert throughput (SQLite and PostgreSQL)
//! and how long a vector written on one node takes to be found by a query on the other.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use quiver_server::{App, Config};

use crate::bench_queue::{Arrivals, start_receiver};
use crate::figures::percentile_ms;

/// What `nodes` measures with.
#[derive(Debug, Clone)]
pub(crate) struct NodesBench {
    pub(crate) url: String,
    pub(crate) seconds: u64,
    pub(crate) connections: usize,
    pub(crate) rounds: usize,
    pub(crate) samples: usize,
    pub(crate) dir: Option<std::path::PathBuf>,
}

/// One backend setup: its nodes (in this process) and what keeps their data.
struct Setup {
    name: &'static str,
    nodes: Vec<App>,
    _scratch: Vec<tempfile::TempDir>,
}

impl Setup {
    fn bases(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|app| format!("http://{}", app.local_addr()))
            .collect()
    }
}

async fn start(
    config: &Config,
    name: &'static str,
    count: usize,
    dir: Option<std::path::PathBuf>,
) -> Result<Setup> {
    let mut nodes = Vec::new();
    let mut scratch = Vec::new();
    for _ in 0..count {
        let (app, guard, _) = crate::scratch::start_server(config, dir.clone()).await?;
        nodes.push(app);
        scratch.push(guard);
    }
    Ok(Setup {
        name,
        nodes,
        _scratch: scratch,
    })
}

fn postgres_config(config: &Config, url: &str, schema: &str) -> Config {
    let mut config = config.clone();
    config.storage.url = url.to_owned();
    config.storage.schema = schema.to_owned();
    config
}

/// Publishes closed-loop from `connections` clients (spread over the nodes) for `seconds`, then waits
/// for every acknowledged message to arrive: returns (published, publish rate, in-and-out rate).
async fn publish_and_deliver(
    client: &reqwest::Client,
    setup: &Setup,
    sink: &str,
    arrivals: &Arrivals,
    connections: usize,
    seconds: u64,
) -> Result<(u64, f64, f64)> {
    let bases = setup.bases();
    let token = format!("Bearer {}", quiver_server::credentials::DEV_QUEUE_TOKEN);
    let before = arrivals.count.load(Ordering::Relaxed);
    let published = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let mut tasks = Vec::with_capacity(connections);
    for n in 0..connections {
        let url = format!("{}/v2/publish/{sink}", bases[n % bases.len()]);
        let (client, token, published) = (client.clone(), token.clone(), Arc::clone(&published));
        tasks.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                let answer = client
                    .post(&url)
                    .header("authorization", &token)
                    .body("x")
                    .send()
                    .await;
                if answer.is_ok_and(|r| r.status().is_success()) {
                    published.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let publishing = started.elapsed();
    let published = published.load(Ordering::Relaxed);
    let limit = Instant::now() + Duration::from_secs(600);
    while arrivals.count.load(Ordering::Relaxed) < before + published {
        anyhow::ensure!(
            Instant::now() < limit,
            "{}: deliveries did not catch up",
            setup.name
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let all = started.elapsed();
    Ok((
        published,
        published as f64 / publishing.as_secs_f64(),
        published as f64 / all.as_secs_f64(),
    ))
}

/// `pgbench`'s rate of single-row inserts, one transaction each, from `clients` clients.
fn pgbench(url: &str, schema: &str, clients: usize, seconds: u64, dir: &std::path::Path) -> Result<f64> {
    let script = dir.join("insert.sql");
    std::fs::write(
        &script,
        format!("INSERT INTO {schema}.single_rows (body) VALUES ('x');\n"),
    )?;
    let output = std::process::Command::new("pgbench")
        .args([
            "-n",
            "-j",
            "2",
            "-c",
            &clients.to_string(),
            "-T",
            &seconds.to_string(),
            "-f",
        ])
        .arg(&script)
        .arg(url)
        .output()
        .context("pgbench runs (Debian: postgresql-client)")?;
    let text = String::from_utf8_lossy(&output.stdout);
    anyhow::ensure!(
        output.status.success(),
        "pgbench failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    text.lines()
        .find_map(|line| line.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .context("pgbench printed no tps")
}

fn psql(url: &str, sql: &str) -> Result<()> {
    let status = std::process::Command::new("psql")
        .args([url, "-q", "-c", sql])
        .env("PGOPTIONS", "--client-min-messages=warning")
        .status()
        .context("psql runs")?;
    anyhow::ensure!(status.success(), "psql failed: {sql}");
    Ok(())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// A random-ish unit vector of `dimension` from `seed` (a fixed generator: runs are comparable).
fn vector(seed: u64, dimension: usize) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    let mut values: Vec<f32> = (0..dimension)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    for value in &mut values {
        *value /= norm;
    }
    values
}

/// Creates a cosine index of `dimension` on `base`; returns its token.
async fn create_index(client: &reqwest::Client, base: &str, dimension: usize) -> Result<String> {
    let answer: serde_json::Value = client
        .post(format!("{base}/v2/vector/index"))
        .basic_auth(
            quiver_server::credentials::DEV_ADMIN_EMAIL,
            Some(quiver_server::credentials::DEV_ADMIN_API_KEY),
        )
        .json(
            // Pay as you go: the free plan's 10,000 updates a day per index would cap the single
            // upserts' figure on a fast node.
            &serde_json::json!({"name": format!("bench-{}", rand_suffix()), "region": "us-east-1",
            "similarity_function": "COSINE", "dimension_count": dimension, "type": "payg"}),
        )
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    answer["token"]
        .as_str()
        .map(str::to_owned)
        .context("the index record has a token")
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// Upserts closed-loop (batches of `batch` vectors) from `connections` clients for `seconds`: vectors
/// per second.
async fn upsert_rate(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    batch: usize,
    connections: usize,
    seconds: u64,
) -> Result<f64> {
    let written = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for worker in 0..connections {
        let (client, url, token, written) = (
            client.clone(),
            format!("{base}/upsert"),
            token.to_owned(),
            Arc::clone(&written),
        );
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while Instant::now() < deadline {
                let body: Vec<serde_json::Value> = (0..batch)
                    .map(|i| {
                        let seed = (worker as u64) << 40 | n << 10 | i as u64;
                        serde_json::json!({"id": format!("{worker}-{n}-{i}"), "vector": vector(seed, 64)})
                    })
                    .collect();
                n += 1;
                let answer = client.post(&url).bearer_auth(&token).json(&body).send().await;
                if answer.is_ok_and(|r| r.status().is_success()) {
                    written.fetch_add(batch as u64, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    Ok(written.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
}

/// How long after its upsert on `writer` answers a vector is the top hit of a query on `reader`.
async fn visibility(
    client: &reqwest::Client,
    writer: &str,
    reader: &str,
    token: &str,
    samples: usize,
) -> Result<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(samples);
    for sample in 0..samples {
        let id = format!("visible-{sample}");
        let values = vector(1_000_000 + sample as u64, 64);
        client
            .post(format!("{writer}/upsert"))
            .bearer_auth(token)
            .json(&serde_json::json!([{"id": id, "vector": values}]))
            .send()
            .await?
            .error_for_status()?;
        let written = Instant::now();
        loop {
            let answer: serde_json::Value = client
                .post(format!("{reader}/query"))
                .bearer_auth(token)
                .json(&serde_json::json!({"vector": values, "topK": 1}))
                .send()
                .await?
                .json()
                .await?;
            if answer["result"][0]["id"] == id.as_str() {
                latencies.push(written.elapsed());
                break;
            }
            anyhow::ensure!(
                written.elapsed() < Duration::from_secs(10),
                "{id} never became visible; the last answer: {answer}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    latencies.sort();
    Ok(latencies)
}

pub(crate) async fn nodes(config: &Config, bench: NodesBench) -> Result<()> {
    anyhow::ensure!(
        bench.rounds > 0 && bench.connections > 0,
        "--rounds and --connections must be above zero"
    );
    let suffix = rand_suffix() % 1_000_000_000;
    let schemas = [
        format!("bench_one_{suffix}"),
        format!("bench_two_{suffix}"),
        format!("bench_pgbench_{suffix}"),
    ];
    let result = run(config, &bench, &schemas).await;
    for schema in &schemas {
        if let Err(error) = psql(&bench.url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")) {
            eprintln!("could not drop {schema}: {error}");
        }
    }
    result
}

async fn run(config: &Config, bench: &NodesBench, schemas: &[String; 3]) -> Result<()> {
    let scratch = tempfile::tempdir()?;
    psql(
        &bench.url,
        &format!(
            "CREATE SCHEMA {}; CREATE TABLE {}.single_rows (id BIGSERIAL PRIMARY KEY, body TEXT)",
            schemas[2], schemas[2]
        ),
    )?;
    let arrivals = Arc::new(Arrivals {
        epoch: Instant::now(),
        count: AtomicU64::new(0),
        latencies_us: std::sync::Mutex::new(Vec::new()),
    });
    let receiver = start_receiver(Arc::clone(&arrivals)).await?;
    let sink = format!("http://{receiver}/sink");
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(bench.connections * 2)
        .build()?;
    // Each run starts its setup and stops it after, so that only the measured setup (or pgbench) holds
    // connections to the database.
    let kinds = [
        ("SQLite", config.clone(), 1),
        (
            "PostgreSQL, 1 node",
            postgres_config(config, &bench.url, &schemas[0]),
            1,
        ),
        (
            "PostgreSQL, 2 nodes",
            postgres_config(config, &bench.url, &schemas[1]),
            2,
        ),
    ];
    println!(
        "publish-and-deliver, {} connections, {} s of publishing per run, {} alternating rounds",
        bench.connections, bench.seconds, bench.rounds
    );
    let mut rates: Vec<Vec<(f64, f64)>> = vec![Vec::new(); kinds.len()];
    let mut pgbench_rates = Vec::new();
    for round in 1..=bench.rounds {
        for ((name, config, count), rates) in kinds.iter().zip(&mut rates) {
            let setup = start(config, name, *count, bench.dir.clone()).await?;
            let (published, publish_rate, in_out) = publish_and_deliver(
                &client,
                &setup,
                &sink,
                &arrivals,
                bench.connections,
                bench.seconds,
            )
            .await?;
            println!(
                "  round {round} {:<20} {published:>7} messages, publish {publish_rate:>7.0}/s, in and out {in_out:>7.0}/s",
                setup.name
            );
            rates.push((publish_rate, in_out));
            for app in setup.nodes {
                app.shutdown().await;
            }
        }
        let tps = pgbench(
            &bench.url,
            &schemas[2],
            bench.connections,
            bench.seconds,
            scratch.path(),
        )?;
        println!(
            "  round {round} {:<20} {tps:>7.0} single-row inserts/s",
            "pgbench"
        );
        pgbench_rates.push(tps);
    }
    let sqlite_in_out = median(rates[0].iter().map(|(_, r)| *r).collect());
    let pgbench_tps = median(pgbench_rates);
    println!("medians (in and out; publish):");
    for ((name, _, _), rates) in kinds.iter().zip(&rates) {
        let in_out = median(rates.iter().map(|(_, r)| *r).collect());
        let publish = median(rates.iter().map(|(p, _)| *p).collect());
        println!(
            "  {:<20} {in_out:>7.0}/s ({:>5.1} % of SQLite, {:>5.2}x pgbench); publish {publish:>7.0}/s",
            name,
            100.0 * in_out / sqlite_in_out,
            in_out / pgbench_tps
        );
    }
    println!(
        "  {:<20} {pgbench_tps:>7.0} single-row inserts/s ({} clients)",
        "pgbench", bench.connections
    );

    // Vectors: upsert throughput on SQLite and on PostgreSQL (one node), then cross-node visibility.
    let setups = [
        start(&kinds[0].1, kinds[0].0, 1, bench.dir.clone()).await?,
        start(&kinds[2].1, kinds[2].0, 2, bench.dir.clone()).await?,
    ];
    let sqlite = setups[0].bases()[0].clone();
    let [first, second] = [setups[1].bases()[0].clone(), setups[1].bases()[1].clone()];
    println!(
        "vector upserts (64 dimensions, {} connections):",
        bench.connections.min(16)
    );
    for batch in [1, 100] {
        let mut ours = Vec::new();
        let mut peer = Vec::new();
        for _ in 0..bench.rounds {
            let token = create_index(&client, &sqlite, 64).await?;
            peer.push(
                upsert_rate(
                    &client,
                    &sqlite,
                    &token,
                    batch,
                    bench.connections.min(16),
                    bench.seconds,
                )
                .await?,
            );
            let token = create_index(&client, &first, 64).await?;
            ours.push(
                upsert_rate(
                    &client,
                    &first,
                    &token,
                    batch,
                    bench.connections.min(16),
                    bench.seconds,
                )
                .await?,
            );
        }
        let (ours, peer) = (median(ours), median(peer));
        println!(
            "  batches of {batch:>3}: PostgreSQL {ours:>8.0} vectors/s, SQLite {peer:>8.0} vectors/s ({:.2}x)",
            ours / peer
        );
    }
    // A new index per 40 samples keeps the polling queries under the plan's daily query quota.
    let mut latencies = Vec::with_capacity(bench.samples);
    let mut left = bench.samples;
    while left > 0 {
        let samples = left.min(40);
        left -= samples;
        let token = create_index(&client, &first, 64).await?;
        // The reader holds the index in memory first, so only following the feed brings the writes.
        client
            .post(format!("{second}/query"))
            .bearer_auth(&token)
            .json(&serde_json::json!({"vector": vector(7, 64), "topK": 1}))
            .send()
            .await?
            .error_for_status()?;
        latencies.extend(visibility(&client, &first, &second, &token, samples).await?);
    }
    latencies.sort();
    println!(
        "write on node 1 to top hit of a query on node 2 ({} samples, poll interval {} ms): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        latencies.len(),
        config.storage.poll_interval_ms,
        percentile_ms(&latencies, 0.5),
        percentile_ms(&latencies, 0.99),
        percentile_ms(&latencies, 1.0)
    );
    for setup in setups {
        for app in setup.nodes {
            app.shutdown().await;
        }
    }
    Ok(())
}
