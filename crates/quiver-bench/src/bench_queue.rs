//! `quiver-bench queue`: durable publish throughput against a bare hyper server answering 200 (same
//! load generator, same run), delivery throughput to a local receiver, and publish-to-delivery latency
//! at a fixed rate.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use quiver_server::Config;
use tokio::net::TcpListener;

use crate::figures::percentile;

/// A hyper server that answers every request with 200 and does nothing else: the peer.
async fn start_bare_hyper() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = service_fn(|_request: Request<hyper::body::Incoming>| async {
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"{}"))))
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(address)
}

/// Receives deliveries: counts them and, when the body is a send time in microseconds since `epoch`,
/// records the publish-to-delivery latency.
#[derive(Debug)]
pub(crate) struct Arrivals {
    pub(crate) epoch: Instant,
    pub(crate) count: AtomicU64,
    pub(crate) latencies_us: Mutex<Vec<u64>>,
}

async fn arrive(State(arrivals): State<Arc<Arrivals>>, body: Bytes) -> &'static str {
    arrivals.count.fetch_add(1, Ordering::Relaxed);
    if let Some(sent) = std::str::from_utf8(&body)
        .ok()
        .and_then(|t| t.strip_prefix("t="))
        .and_then(|t| t.parse::<u64>().ok())
    {
        let now = u64::try_from(arrivals.epoch.elapsed().as_micros()).unwrap_or(u64::MAX);
        arrivals
            .latencies_us
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(now.saturating_sub(sent));
    }
    "ok"
}

pub(crate) async fn start_receiver(arrivals: Arc<Arrivals>) -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let app = Router::new().fallback(arrive).with_state(arrivals);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(address)
}

/// User and system CPU time from a `/proc` `stat` file's text: the 12th and 13th fields after the command
/// name (which may hold spaces), in clock ticks of 1/100 s.
fn stat_cpu_time(stat: &str) -> Option<Duration> {
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((user + system) * 10))
}

/// CPU time this process has used on all its threads; `None` where `/proc` is not available.
fn process_cpu_time() -> Option<Duration> {
    stat_cpu_time(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// CPU time used by the queue store's writer thread (`quiver-writer-queue`, shown truncated to 15
/// characters); `None` where `/proc` is not available or the thread is not found.
fn queue_writer_cpu_time() -> Option<Duration> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if name.trim_end() == "quiver-writer-q" {
            return stat_cpu_time(&std::fs::read_to_string(task.path().join("stat")).ok()?);
        }
    }
    None
}

/// CPU time per answer, in microseconds, between two readings.
fn per_answer(before: Option<Duration>, after: Option<Duration>, answered: u64) -> Option<f64> {
    match (before, after) {
        (Some(before), Some(after)) if answered > 0 => {
            Some(after.saturating_sub(before).as_secs_f64() * 1e6 / answered as f64)
        }
        _ => None,
    }
}

/// What one closed-loop run achieved.
#[derive(Debug, Clone, Copy)]
struct LoadResult {
    /// 2xx answers per second.
    rate: f64,
    /// CPU time of the whole process (load generator and server) per answer, in microseconds.
    cpu_us: Option<f64>,
    /// CPU time of the queue store's writer thread per answer, in microseconds.
    writer_us: Option<f64>,
}

/// Closed-loop load: `connections` workers POST `body` to `url` for `duration`.
async fn closed_loop(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&'static str, String)],
    connections: usize,
    duration: Duration,
) -> Result<LoadResult> {
    let cpu_before = process_cpu_time();
    let writer_before = queue_writer_cpu_time();
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|_| {
            let (client, url, headers) = (client.clone(), url.to_owned(), headers.to_vec());
            let (ok, failed) = (Arc::clone(&ok), Arc::clone(&failed));
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    let mut request = client.post(&url).body("{\"event\":\"bench\",\"n\":1}");
                    for (name, value) in &headers {
                        request = request.header(*name, value);
                    }
                    match request.send().await {
                        Ok(response) if response.status().is_success() => {
                            let _ = response.bytes().await;
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(_) | Err(_) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await?;
    }
    let failures = failed.load(Ordering::Relaxed);
    anyhow::ensure!(failures == 0, "{failures} requests failed during the load");
    let answered = ok.load(Ordering::Relaxed);
    Ok(LoadResult {
        rate: answered as f64 / started.elapsed().as_secs_f64(),
        cpu_us: per_answer(cpu_before, process_cpu_time(), answered),
        writer_us: per_answer(writer_before, queue_writer_cpu_time(), answered),
    })
}

/// The mean rate of `runs`, and their mean process and writer CPU per answer when every run measured it.
fn mean(runs: &[LoadResult]) -> (f64, Option<f64>, Option<f64>) {
    let count = runs.len().max(1) as f64;
    let rate = runs.iter().map(|r| r.rate).sum::<f64>() / count;
    let average = |figure: fn(&LoadResult) -> Option<f64>| {
        runs.iter()
            .map(figure)
            .sum::<Option<f64>>()
            .map(|total| total / count)
    };
    (rate, average(|r| r.cpu_us), average(|r| r.writer_us))
}

fn cpu_text(cpu_us: Option<f64>) -> String {
    cpu_us.map_or_else(|| "not measured".to_owned(), |us| format!("{us:.1} us"))
}

async fn wait_for_arrivals(arrivals: &Arrivals, count: u64, limit: Duration) -> Result<Duration> {
    let started = Instant::now();
    while arrivals.count.load(Ordering::Relaxed) < count {
        anyhow::ensure!(
            started.elapsed() < limit,
            "only {} of {count} deliveries arrived",
            arrivals.count.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(started.elapsed())
}

/// One closed-loop round: the peer and durable publish at one concurrency, alternating pair by pair so
/// drift on this shared machine hits both.
#[derive(Debug)]
struct Round {
    connections: usize,
    peer: (f64, Option<f64>),
    publish: (f64, Option<f64>, Option<f64>),
    /// Each pair's publish / peer, in percent, sorted.
    pair_ratios: Vec<f64>,
}

/// The median of `sorted` (the mean of the middle two for an even count).
fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

pub(crate) async fn queue(
    config: &Config,
    seconds: u64,
    connections: Vec<usize>,
    pairs: usize,
    dir: Option<std::path::PathBuf>,
) -> Result<()> {
    anyhow::ensure!(
        !connections.is_empty() && !connections.contains(&0),
        "--connections needs one or more counts above zero"
    );
    anyhow::ensure!(pairs > 0, "--pairs needs at least one pair of runs");
    let (app, _scratch, parent) = crate::scratch::start_server(config, dir).await?;
    let base = format!("http://{}", app.local_addr());
    let token = format!("Bearer {}", app.bootstrap().account.queue_token);
    let arrivals = Arc::new(Arrivals {
        epoch: Instant::now(),
        count: AtomicU64::new(0),
        latencies_us: Mutex::new(Vec::new()),
    });
    let receiver = start_receiver(Arc::clone(&arrivals)).await?;
    let peer = start_bare_hyper().await?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(connections.iter().copied().max().unwrap_or(1))
        .build()?;
    let duration = Duration::from_secs(seconds);
    let publish_url = format!("{base}/v2/publish/http://{receiver}/bench");

    // 1. The peer and durable publish at each concurrency.
    let mut rounds = Vec::with_capacity(connections.len());
    for &count in &connections {
        let mut peer_rates = Vec::new();
        let mut publish_rates = Vec::new();
        for _ in 0..pairs {
            peer_rates.push(closed_loop(&client, &format!("http://{peer}/"), &[], count, duration).await?);
            let delayed = [("authorization", token.clone()), ("svc-delay", "7d".to_owned())];
            publish_rates.push(
                closed_loop(&client, &publish_url, &delayed, count, duration)
                    .await
                    .context("publish load")?,
            );
        }
        let (peer_rate, peer_cpu, _) = mean(&peer_rates);
        let mut pair_ratios: Vec<f64> = peer_rates
            .iter()
            .zip(&publish_rates)
            .map(|(peer, publish)| 100.0 * publish.rate / peer.rate)
            .collect();
        pair_ratios.sort_unstable_by(f64::total_cmp);
        rounds.push(Round {
            connections: count,
            peer: (peer_rate, peer_cpu),
            publish: mean(&publish_rates),
            pair_ratios,
        });
    }

    // 2. Delivery throughput: publish a backlog in batches, then time until every message has arrived.
    let backlog: u64 = 20_000;
    let batch: Vec<serde_json::Value> = (0..100)
        .map(|_| serde_json::json!({"destination": format!("http://{receiver}/drain"), "body": "x"}))
        .collect();
    let before = arrivals.count.load(Ordering::Relaxed);
    let drain_started = Instant::now();
    for _ in 0..(backlog / 100) {
        let response = client
            .post(format!("{base}/v2/batch"))
            .header("authorization", &token)
            .json(&batch)
            .send()
            .await?;
        anyhow::ensure!(
            response.status().is_success(),
            "batch publish failed: {}",
            response.status()
        );
    }
    wait_for_arrivals(&arrivals, before + backlog, Duration::from_secs(300)).await?;
    let delivery_rate = backlog as f64 / drain_started.elapsed().as_secs_f64();

    // 3. Latency at 1,000 messages/s, open loop.
    arrivals
        .latencies_us
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
    let rate_seconds = seconds.max(5);
    let total = rate_seconds * 1000;
    let before = arrivals.count.load(Ordering::Relaxed);
    let mut ticker = tokio::time::interval(Duration::from_millis(1));
    let mut senders = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for _ in 0..total {
        ticker.tick().await;
        let (client, url, token) = (client.clone(), publish_url.clone(), token.clone());
        let sent = u64::try_from(arrivals.epoch.elapsed().as_micros()).unwrap_or(0);
        senders.push(tokio::spawn(async move {
            client
                .post(url)
                .header("authorization", token)
                .body(format!("t={sent}"))
                .send()
                .await
                .map(|r| r.status().is_success())
        }));
    }
    for sender in senders {
        anyhow::ensure!(sender.await??, "a paced publish failed");
    }
    wait_for_arrivals(&arrivals, before + total, Duration::from_secs(60)).await?;
    let mut latencies = arrivals
        .latencies_us
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    latencies.sort_unstable();

    app.shutdown().await;
    println!(
        "queue benchmark: {seconds} s per closed-loop run ({pairs} peer-then-publish pairs per connection count), data in {}",
        parent.display()
    );
    println!(
        "| connections | bare hyper server answering 200 (peer) | durable publish (acknowledged after fsync) | publish / peer | publish / peer, pair by pair: median (lowest-highest) | process CPU per answer (load generator included): peer, publish | queue store's writer thread CPU per publish |"
    );
    println!("|---|---|---|---|---|---|---|");
    for round in &rounds {
        let ((peer_rate, peer_cpu), (publish_rate, publish_cpu, writer_cpu)) = (round.peer, round.publish);
        println!(
            "| {} | {peer_rate:.0} req/s | {publish_rate:.0} msg/s | {:.1} % | {:.1} % ({:.1}-{:.1} %) | {}, {} | {} |",
            round.connections,
            100.0 * publish_rate / peer_rate,
            median(&round.pair_ratios),
            round.pair_ratios.first().copied().unwrap_or(f64::NAN),
            round.pair_ratios.last().copied().unwrap_or(f64::NAN),
            cpu_text(peer_cpu),
            cpu_text(publish_cpu),
            cpu_text(writer_cpu)
        );
    }
    println!();
    println!("| measure | figure |");
    println!("|---|---|");
    println!("| delivery throughput (backlog of {backlog} to a local receiver) | {delivery_rate:.0} msg/s |");
    println!(
        "| publish-to-delivery latency at 1,000 msg/s ({} samples) | p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms |",
        latencies.len(),
        percentile(&latencies, 0.50).map_or(f64::NAN, |us| us as f64 / 1000.0),
        percentile(&latencies, 0.99).map_or(f64::NAN, |us| us as f64 / 1000.0),
        percentile(&latencies, 1.0).map_or(f64::NAN, |us| us as f64 / 1000.0)
    );
    Ok(())
}
