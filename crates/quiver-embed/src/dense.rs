//! Dense sentence embeddings: a tokenizer plus a BERT encoder, run by a small pool of worker threads
//! that batch concurrent requests (off the async runtime).
//!
//! A worker takes the oldest request and, without waiting, every other request already queued (up to
//! [`MAX_BATCH`] texts), and runs them as one batch. An idle server adds no delay to a lone query; a busy
//! one batches naturally while the workers are occupied.

use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};

use quiver_core::index::DenseModel;
use tokenizers::{Tokenizer, TruncationParams};

use crate::EmbedError;
use crate::bert::{Bert, Pooling};
use crate::models::ModelDir;

/// The most texts one forward pass takes.
pub const MAX_BATCH: usize = 32;

/// A tokenizer and an encoder: text in, unit vectors out. Runs on the calling thread.
pub struct TextEncoder {
    tokenizer: Tokenizer,
    bert: Bert,
    pooling: Pooling,
    dimensions: usize,
}

impl std::fmt::Debug for TextEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextEncoder")
            .field("pooling", &self.pooling)
            .field("dimensions", &self.dimensions)
            .finish_non_exhaustive()
    }
}

impl TextEncoder {
    /// Loads a model directory (`config.json`, `tokenizer.json`, `model.safetensors`, and optionally
    /// `sentence_bert_config.json` for the maximum sequence length).
    ///
    /// # Errors
    /// Missing or malformed files.
    pub fn load(dir: &Path, pooling: Pooling) -> Result<Self, EmbedError> {
        let bert = Bert::load(dir)?;
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(|e| EmbedError::BadModel(format!("{}: {e}", tokenizer_path.display())))?;
        // The shipped tokenizer pads and truncates to 128: no padding (the encoder needs none), and
        // truncation at the model's own maximum.
        let max_length = sentence_max_length(dir)
            .unwrap_or(usize::MAX)
            .min(bert.max_tokens());
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| EmbedError::BadModel(format!("tokenizer truncation: {e}")))?;
        let dimensions = bert.hidden_size();
        Ok(TextEncoder {
            tokenizer,
            bert,
            pooling,
            dimensions,
        })
    }

    /// The length of the vectors.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Unit vectors for `texts`, in order. Longer texts are truncated, never refused.
    ///
    /// # Errors
    /// A tokenizer failure.
    pub fn embed<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let ids = texts
            .iter()
            .map(|text| {
                self.tokenizer
                    .encode(text.as_ref(), true)
                    .map(|encoding| encoding.get_ids().to_vec())
                    .map_err(|e| EmbedError::Tokenizer(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.bert.embed(&ids, self.pooling)
    }
}

fn sentence_max_length(dir: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(dir.join("sentence_bert_config.json")).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value
        .get("max_seq_length")?
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
}

struct Job {
    texts: Vec<String>,
    reply: tokio::sync::oneshot::Sender<Result<Vec<Vec<f32>>, EmbedError>>,
}

/// What a model's workers did, for metrics: texts per batch and how long each batch took.
#[derive(Debug)]
pub struct EmbedStats {
    /// Texts embedded together.
    pub batch_sizes: quiver_core::observe::Histogram,
    /// Duration of each batch, in microseconds.
    pub batch_durations: quiver_core::observe::Histogram,
}

impl Default for EmbedStats {
    fn default() -> Self {
        EmbedStats {
            batch_sizes: quiver_core::observe::Histogram::new(&quiver_core::observe::SIZE_BOUNDS),
            batch_durations: quiver_core::observe::Histogram::new(&quiver_core::observe::DURATION_BOUNDS_US),
        }
    }
}

/// A loaded model with its worker threads. Dropping it stops the workers once their queue drains.
#[derive(Debug)]
pub struct DenseEmbedder {
    jobs: Sender<Job>,
    dimensions: usize,
    stats: Arc<EmbedStats>,
}

impl DenseEmbedder {
    /// Starts `threads` workers sharing `encoder`.
    pub fn start(encoder: TextEncoder, threads: usize) -> Self {
        let dimensions = encoder.dimensions();
        let encoder = Arc::new(encoder);
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let stats = Arc::new(EmbedStats::default());
        for i in 0..threads.max(1) {
            let encoder = Arc::clone(&encoder);
            let queue = Arc::clone(&queue);
            let stats = Arc::clone(&stats);
            let spawned = std::thread::Builder::new()
                .name(format!("embed-{i}"))
                .spawn(move || work(&encoder, &queue, &stats));
            if let Err(error) = spawned {
                tracing::error!(%error, "could not start an embedding worker");
            }
        }
        DenseEmbedder {
            jobs,
            dimensions,
            stats,
        }
    }

    /// What the workers did so far.
    pub fn stats(&self) -> &EmbedStats {
        &self.stats
    }

    /// The length of the vectors.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Unit vectors for `texts`, in order, computed on the worker threads.
    ///
    /// # Errors
    /// A tokenizer failure, or [`EmbedError::Stopped`] when the workers are gone.
    pub async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut pending = Vec::new();
        let mut texts = texts.into_iter().peekable();
        while texts.peek().is_some() {
            let chunk: Vec<String> = texts.by_ref().take(MAX_BATCH).collect();
            let (reply, answer) = tokio::sync::oneshot::channel();
            self.jobs
                .send(Job { texts: chunk, reply })
                .map_err(|_| EmbedError::Stopped)?;
            pending.push(answer);
        }
        let mut out = Vec::new();
        for answer in pending {
            out.extend(answer.await.map_err(|_| EmbedError::Stopped)??);
        }
        Ok(out)
    }
}

fn work(encoder: &TextEncoder, queue: &Mutex<Receiver<Job>>, stats: &EmbedStats) {
    loop {
        let mut batch = Vec::new();
        {
            let queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
            match queue.recv() {
                Ok(job) => batch.push(job),
                Err(_) => return,
            }
            let mut count = batch[0].texts.len();
            while count < MAX_BATCH {
                match queue.try_recv() {
                    Ok(job) => {
                        count += job.texts.len();
                        batch.push(job);
                    }
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
        }
        let texts: Vec<&str> = batch
            .iter()
            .flat_map(|j| j.texts.iter().map(String::as_str))
            .collect();
        let started = std::time::Instant::now();
        let embedded = encoder.embed(&texts);
        stats.batch_sizes.observe(texts.len() as u64);
        stats.batch_durations.observe_duration(started.elapsed());
        match embedded {
            Ok(vectors) => {
                let mut vectors = vectors.into_iter();
                for job in batch {
                    let mine: Vec<Vec<f32>> = vectors.by_ref().take(job.texts.len()).collect();
                    let _ = job.reply.send(Ok(mine));
                }
            }
            Err(error) => {
                for job in batch {
                    let _ = job.reply.send(Err(error.clone()));
                }
            }
        }
    }
}

/// The loaded dense models of a server, each loaded on first use from the models directory.
#[derive(Debug)]
pub struct Embedders {
    dir: ModelDir,
    threads: usize,
    loaded: Mutex<HashMap<DenseModel, Arc<DenseEmbedder>>>,
}

impl Embedders {
    /// Models from `dir`, each run by `threads` workers.
    pub fn new(dir: ModelDir, threads: usize) -> Self {
        Embedders {
            dir,
            threads,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// The models directory.
    pub fn dir(&self) -> &ModelDir {
        &self.dir
    }

    /// Every dense model whose files are installed, loaded or not.
    pub fn installed_models(&self) -> Vec<DenseModel> {
        DenseModel::ALL
            .iter()
            .copied()
            .filter(|model| self.dir.check(*model).is_ok())
            .collect()
    }

    /// Every model loaded so far, with its embedder.
    pub fn loaded_models(&self) -> Vec<(DenseModel, Arc<DenseEmbedder>)> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(model, embedder)| (*model, Arc::clone(embedder)))
            .collect()
    }

    fn loaded(&self, model: DenseModel) -> Option<Arc<DenseEmbedder>> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&model)
            .cloned()
    }

    /// [`Embedders::get`] on a blocking thread, for async callers.
    ///
    /// # Errors
    /// As [`Embedders::get`].
    pub async fn load(self: &Arc<Self>, model: DenseModel) -> Result<Arc<DenseEmbedder>, EmbedError> {
        if let Some(found) = self.loaded(model) {
            return Ok(found);
        }
        let this = Arc::clone(self);
        tokio::task::spawn_blocking(move || this.get(model))
            .await
            .map_err(|_| EmbedError::Stopped)?
    }

    /// The embedder of `model`, loading it (blocking, a fraction of a second) on first use.
    ///
    /// # Errors
    /// [`EmbedError::NotInstalled`], [`EmbedError::Unsupported`] or a load failure.
    pub fn get(&self, model: DenseModel) -> Result<Arc<DenseEmbedder>, EmbedError> {
        if let Some(found) = self.loaded(model) {
            return Ok(found);
        }
        let spec = self.dir.check(model)?;
        let encoder = TextEncoder::load(&self.dir.path_of(model), spec.pooling)?;
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let embedder = loaded
            .entry(model)
            .or_insert_with(|| Arc::new(DenseEmbedder::start(encoder, self.threads)));
        Ok(Arc::clone(embedder))
    }
}
