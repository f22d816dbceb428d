//! `quiver-bench sparse`: BM25 through Quiver's sparse search (the postings of a namespace) against
//! `bm25s` on the same corpus and queries, one thread: QPS, and whether the top 10 agree.
//!
//! The corpus is synthetic: token ids drawn from a Zipf distribution (as words are), documents of 10 to
//! 70 tokens. Each document is stored as the sparse vector of its terms' BM25 term-frequency parts
//! (Lucene variant, k1 = 1.2, b = 0.75, the corpus's average length), and each query as its distinct
//! terms with value 1 and `weightingStrategy: IDF`, whose IDF is Lucene's: so Quiver's score is the
//! BM25 score bm25s computes.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};
use quiver_core::index::{IndexType, SimilarityFunction};
use quiver_vector::namespace::Namespace;
use quiver_vector::query::Weighting;
use quiver_vector::record::{IndexSpec, Record, SparseVector, StoredRecord};
use quiver_vector::search::sparse_search;

use crate::bench_vector::Gaussian;

/// Settings of one run.
#[derive(Debug, Clone)]
pub(crate) struct SparseBench {
    pub(crate) documents: usize,
    pub(crate) vocabulary: usize,
    pub(crate) queries: usize,
    pub(crate) passes: usize,
    pub(crate) peer_python: Option<PathBuf>,
    pub(crate) dir: Option<PathBuf>,
}

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Token ids with probability proportional to 1 / (rank + 1), from `first` on.
struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    fn new(vocabulary: usize) -> Zipf {
        let mut total = 0.0;
        let cumulative = (0..vocabulary)
            .map(|rank| {
                total += 1.0 / (rank as f64 + 1.0);
                total
            })
            .collect();
        Zipf { cumulative }
    }

    fn sample(&self, random: &mut Gaussian, first: usize) -> u32 {
        let low = if first == 0 {
            0.0
        } else {
            self.cumulative[first - 1]
        };
        let high = self.cumulative.last().copied().unwrap_or(0.0);
        let target = low + random.uniform() * (high - low);
        let rank = self.cumulative.partition_point(|c| *c < target);
        u32::try_from(rank.min(self.cumulative.len() - 1)).unwrap_or(u32::MAX)
    }
}

fn write_lines(path: &Path, rows: &[Vec<u32>]) -> Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    for row in rows {
        let words: Vec<String> = row.iter().map(u32::to_string).collect();
        writeln!(file, "{}", words.join(" "))?;
    }
    Ok(file.flush()?)
}

/// A document's sparse vector: each term's BM25 term-frequency part, computed in f32 as bm25s does.
fn document_vector(tokens: &[u32], average: f64) -> SparseVector {
    let mut counts: HashMap<u32, u32> = HashMap::new();
    for token in tokens {
        *counts.entry(*token).or_default() += 1;
    }
    let mut terms: Vec<(u32, u32)> = counts.into_iter().collect();
    terms.sort_unstable();
    let length_part = (K1 * ((1.0 - B) + B * tokens.len() as f64 / average)) as f32;
    SparseVector {
        indices: terms.iter().map(|(term, _)| *term).collect(),
        values: terms
            .iter()
            .map(|(_, count)| {
                let tf = *count as f32;
                tf / (length_part + tf)
            })
            .collect(),
    }
}

/// Runs the benchmark and prints its table.
pub(crate) fn run(bench: &SparseBench) -> Result<()> {
    let mut random = Gaussian(42);
    let zipf = Zipf::new(bench.vocabulary);
    let corpus: Vec<Vec<u32>> = (0..bench.documents)
        .map(|_| {
            let length = 10 + (random.uniform() * 61.0) as usize;
            (0..length).map(|_| zipf.sample(&mut random, 0)).collect()
        })
        .collect();
    // Queries of 2 to 6 distinct terms, the most common 20 (stop words) left out.
    let queries: Vec<Vec<u32>> = (0..bench.queries)
        .map(|_| {
            let length = 2 + (random.uniform() * 5.0) as usize;
            let mut terms: Vec<u32> = (0..length).map(|_| zipf.sample(&mut random, 20)).collect();
            terms.sort_unstable();
            terms.dedup();
            terms
        })
        .collect();
    let average = corpus.iter().map(Vec::len).sum::<usize>() as f64 / corpus.len().max(1) as f64;

    let spec = IndexSpec {
        dimension: 0,
        similarity: SimilarityFunction::DotProduct,
        index_type: IndexType::Sparse,
    };
    let started = Instant::now();
    let mut namespace = Namespace::new(&spec);
    for (n, tokens) in corpus.iter().enumerate() {
        namespace.put(StoredRecord {
            sequence: n as u64 + 1,
            record: Record {
                id: n.to_string(),
                vector: None,
                sparse: Some(document_vector(tokens, average)),
                metadata: None,
                data: None,
            },
        });
    }
    let index_seconds = started.elapsed().as_secs_f64();
    let query_vectors: Vec<SparseVector> = queries
        .iter()
        .map(|terms| SparseVector {
            indices: terms.clone(),
            values: vec![1.0; terms.len()],
        })
        .collect();
    let mut qps = 0.0_f64;
    let mut ours: Vec<Vec<(String, f32)>> = Vec::new();
    for _ in 0..bench.passes.max(1) {
        let started = Instant::now();
        ours = query_vectors
            .iter()
            .map(|query| {
                sparse_search(&namespace, query, 10, Weighting::Idf, None)
                    .into_iter()
                    .map(|hit| (hit.record.id, hit.score))
                    .collect()
            })
            .collect();
        qps = qps.max(query_vectors.len() as f64 / started.elapsed().as_secs_f64());
    }

    println!(
        "sparse BM25: {} documents (average {average:.1} tokens, vocabulary {}), {} queries, one thread",
        bench.documents, bench.vocabulary, bench.queries
    );
    println!("| engine | index build (s) | QPS | top-10 the same as bm25s's |");
    println!("|---|---|---|---|");
    let Some(python) = &bench.peer_python else {
        println!("| Quiver | {index_seconds:.2} | {qps:.0} | (no peer: pass --peer-python) |");
        return Ok(());
    };
    let parent = bench.dir.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&parent)?;
    let scratch = tempfile::tempdir_in(&parent)?;
    let corpus_path = scratch.path().join("corpus.txt");
    let queries_path = scratch.path().join("queries.txt");
    let out_path = scratch.path().join("peer-top10.txt");
    write_lines(&corpus_path, &corpus)?;
    write_lines(&queries_path, &queries)?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/bm25s_peer.py");
    let output = Command::new(python)
        .arg(&script)
        .arg(&corpus_path)
        .arg(&queries_path)
        .arg(&out_path)
        .arg(bench.passes.max(1).to_string())
        .output()
        .context("running the bm25s peer")?;
    anyhow::ensure!(
        output.status.success(),
        "bm25s peer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let peer_qps = line["qps"].as_f64().context("peer qps")?;
    let peer_index = line["index_seconds"].as_f64().context("peer index_seconds")?;
    let backend = line["backend"].as_str().unwrap_or("?").to_owned();
    let theirs: Vec<Vec<(String, f32)>> = std::fs::read_to_string(&out_path)?
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(|pair| {
                    let (id, score) = pair
                        .split_once(':')
                        .with_context(|| format!("the peer wrote `{pair}`, not document:score"))?;
                    Ok((id.to_owned(), score.parse()?))
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    // bm25s fills a short result with documents that score 0; Quiver answers only those that match.
    // Equal scores (common: short documents with one rare term) may come in either order.
    let close = |a: f32, b: f32| (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1.0);
    let same_scores = ours
        .iter()
        .zip(&theirs)
        .filter(|(ours, theirs)| {
            theirs
                .iter()
                .enumerate()
                .all(|(at, (_, score))| match ours.get(at) {
                    Some((_, mine)) => close(*mine, *score),
                    None => *score == 0.0,
                })
        })
        .count();
    let same_ids = ours
        .iter()
        .zip(&theirs)
        .filter(|(ours, theirs)| ours.iter().zip(theirs.iter()).all(|(a, b)| a.0 == b.0))
        .count();
    println!(
        "| Quiver | {index_seconds:.2} | {qps:.0} | scores: {same_scores} of {n}; ids in order: {same_ids} of {n} |",
        n = ours.len()
    );
    println!("| bm25s ({backend}) | {peer_index:.2} | {peer_qps:.0} | |");
    println!("QPS ratio (Quiver / bm25s): {:.2}x", qps / peer_qps);
    Ok(())
}
