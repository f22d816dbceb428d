//! `quiver-bench stats`: index statistics over 30 days of per-minute usage, and what metering adds to
//! each vector request.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use quiver_admin::meter::{Meter, UsageEvent, UsageKind};
use quiver_admin::usage::{Latencies, MinuteUsage};
use quiver_core::{IndexId, SystemClock};
use quiver_server::Config;
use quiver_server::credentials::{DEV_ADMIN_API_KEY, DEV_ADMIN_EMAIL};
use serde_json::json;

use crate::figures::percentile_ms;

const MINUTES_PER_DAY: i64 = 24 * 60;

/// One minute of steady traffic, with a snapshot of the holdings every minute.
fn busy_minute(minute: i64) -> MinuteUsage {
    let mut usage = MinuteUsage {
        queries: 600 + (minute % 7) as u64,
        updates: 60 + (minute % 3) as u64,
        bytes: 1_000_000,
        vector_count: Some(10_000 + minute as u64 % 1000),
        data_size: Some(20_000_000),
        ..MinuteUsage::default()
    };
    let mut latencies = Latencies::default();
    for micros in [150, 300, 900, 2_000, 12_000] {
        latencies.record(micros);
    }
    usage.query_latency = latencies.clone();
    usage.update_latency = latencies;
    usage
}

async fn time_stats(client: &reqwest::Client, url: &str, reads: usize) -> Result<(Vec<Duration>, usize)> {
    let mut times = Vec::with_capacity(reads);
    let mut points = 0;
    for _ in 0..reads {
        let started = Instant::now();
        let response = client
            .get(url)
            .basic_auth(DEV_ADMIN_EMAIL, Some(DEV_ADMIN_API_KEY))
            .send()
            .await?;
        anyhow::ensure!(
            response.status().is_success(),
            "stats answered {}",
            response.status()
        );
        let body: serde_json::Value = response.json().await?;
        times.push(started.elapsed());
        points = body["query_latency_99"].as_array().map_or(0, Vec::len);
    }
    times.sort_unstable();
    Ok((times, points))
}

/// Closed-loop queries against `url` for `duration` from `connections` workers: answers per second.
async fn query_rate(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    connections: usize,
    duration: Duration,
) -> Result<f64> {
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|worker| {
            let (client, url, token) = (client.clone(), url.to_owned(), token.to_owned());
            tokio::spawn(async move {
                let mut answered = 0_u64;
                let mut n = worker as f32;
                while Instant::now() < deadline {
                    n += 1.0;
                    let response = client
                        .post(&url)
                        .bearer_auth(&token)
                        .json(&json!({"vector": [n.sin(), n.cos(), 0.5, 0.25], "topK": 10}))
                        .send()
                        .await?;
                    anyhow::ensure!(
                        response.status().is_success(),
                        "query answered {}",
                        response.status()
                    );
                    let _ = response.bytes().await?;
                    answered += 1;
                }
                Ok(answered)
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

pub(crate) async fn stats(
    config: &Config,
    days: i64,
    reads: usize,
    dir: Option<std::path::PathBuf>,
) -> Result<()> {
    let (app, _scratch, parent) = crate::scratch::start_server(config, dir).await?;
    let base = format!("http://{}", app.local_addr());
    let client = reqwest::Client::builder().no_proxy().build()?;
    let record: serde_json::Value = client
        .post(format!("{base}/v2/vector/index"))
        .basic_auth(DEV_ADMIN_EMAIL, Some(DEV_ADMIN_API_KEY))
        .json(&json!({"name": "bench", "region": "us-east-1", "similarity_function": "COSINE", "dimension_count": 4, "type": "payg"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = record["id"].as_str().context("index id")?.to_owned();
    let token = record["token"].as_str().context("index token")?.to_owned();
    let index: IndexId = app.admin().index_by_token(&token).await?.0.id;

    // 1. Seed `days` days of minute data, the way the meter flushes it, then read stats over HTTP.
    let store = app.admin_store();
    let now_minute = SystemClock::shared().now().as_secs().div_euclid(60);
    let first = now_minute - days * MINUTES_PER_DAY;
    for day in 0..days {
        let batch = (0..MINUTES_PER_DAY)
            .map(|m| first + day * MINUTES_PER_DAY + m)
            .map(|minute| (index, minute, busy_minute(minute)))
            .collect();
        store.add_usage(batch).await?;
    }
    let (thirty_days, points_30d) = time_stats(
        &client,
        &format!("{base}/v2/vector/index/{id}/stats?period=30d"),
        reads,
    )
    .await?;
    let (one_hour, points_1h) = time_stats(
        &client,
        &format!("{base}/v2/vector/index/{id}/stats?period=1h"),
        reads,
    )
    .await?;
    let (account, _) = time_stats(&client, &format!("{base}/v2/vector/index/stats"), reads).await?;

    // 2. Metering cost: the work the middleware adds to a request (the index lookup by token and the
    //    bucket update), timed in a loop, set against the measured query rate.
    let upsert: Vec<serde_json::Value> = (0..1000)
        .map(|i| json!({"id": format!("v{i}"), "vector": [(i as f32).sin(), (i as f32).cos(), 0.5, 0.25]}))
        .collect();
    client
        .post(format!("{base}/upsert"))
        .bearer_auth(&token)
        .json(&upsert)
        .send()
        .await?
        .error_for_status()?;
    let meter = Meter::new(app.admin_store(), SystemClock::shared());
    let calls = 1_000_000_u32;
    let started = Instant::now();
    for call in 0..calls {
        let (found, _) = app.admin().index_by_token(&token).await?;
        meter.record(UsageEvent {
            index: found.id,
            kind: UsageKind::Query,
            latency: Duration::from_micros(u64::from(call % 5000)),
            bytes: 512,
            snapshot: None,
        });
    }
    let metering_ns = started.elapsed().as_nanos() as f64 / f64::from(calls);
    let mut rates = Vec::new();
    for _ in 0..3 {
        rates.push(
            query_rate(
                &client,
                &format!("{base}/query"),
                &token,
                16,
                Duration::from_secs(3),
            )
            .await?,
        );
    }
    let rate = rates.iter().sum::<f64>() / rates.len() as f64;
    app.shutdown().await;

    println!(
        "stats benchmark: {days} days of minute usage ({} rows), {reads} sequential reads each over HTTP, data in {}",
        days * MINUTES_PER_DAY,
        parent.display()
    );
    println!("| read | points | p50 | p99 | max |");
    println!("|---|---|---|---|---|");
    for (name, times, points) in [
        ("index stats, period=30d", &thirty_days, points_30d),
        ("index stats, period=1h", &one_hour, points_1h),
        ("account-wide stats (one index)", &account, 0),
    ] {
        println!(
            "| {name} | {points} | {:.2} ms | {:.2} ms | {:.2} ms |",
            percentile_ms(times, 0.5),
            percentile_ms(times, 0.99),
            percentile_ms(times, 1.0)
        );
    }
    println!("metering work per request (token lookup + bucket update, {calls} calls): {metering_ns:.0} ns");
    println!("query rate over HTTP (1,000 vectors, 16 connections, 3 runs of 3 s): {rate:.0} queries/s");
    println!(
        "metering share of one core's time per query at that rate (upper bound): {:.2} %",
        100.0 * metering_ns * rate / 1e9
    );
    Ok(())
}
