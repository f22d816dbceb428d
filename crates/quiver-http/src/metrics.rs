//! The metrics page (`GET /metrics`, routed in `operations`) in the Prometheus text format
//! (OpenMetrics), written with `prometheus-client`'s encoder.
//!
//! Requests are counted as they are answered (by area, route template, method and status) and timed
//! (by area and route template). Everything else is read when the metrics are scraped, from counters
//! the domains keep as plain atomics (`quiver_core::observe`): the queue's depth (one count over the
//! store), deliveries by outcome and their durations, each database writer's batch sizes, commit
//! durations and queued writes, vectors and pending vectors per loaded index, embedding batches per
//! model, and the process's CPU, memory and open files. Nothing on a request's path waits for them.
//!
//! `http.metrics_token` set: the route wants `Authorization: Bearer <token>`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use quiver_core::observe::{DURATION_BOUNDS_US, HistogramSnapshot, WriterStats};

/// One route's requests: durations, and counts by method and status.
#[derive(Debug)]
struct RouteStats {
    area: &'static str,
    durations: quiver_core::observe::Histogram,
    /// `(method, status, count)`: a handful per route, searched in place.
    answers: Mutex<Vec<(Method, u16, u64)>>,
}

/// One database writer, as the server hands it over.
pub struct WriterSource {
    /// The database (`queue.db`, ...).
    pub database: String,
    /// What its writer counted.
    pub stats: Arc<WriterStats>,
    /// The writes waiting for it now.
    pub queued: Box<dyn Fn() -> usize + Send + Sync>,
}

impl std::fmt::Debug for WriterSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterSource")
            .field("database", &self.database)
            .finish_non_exhaustive()
    }
}

/// The metrics of one process.
#[derive(Debug)]
pub struct Metrics {
    /// By route template. Found with a borrowed `&str` under a read lock, so counting a request
    /// allocates nothing (a metrics library's labelled families cost a request several microseconds
    /// here: owned label strings, and a lock per histogram).
    routes: RwLock<HashMap<String, Arc<RouteStats>>>,
    writers: Vec<WriterSource>,
    token: Option<String>,
}

impl Metrics {
    /// Metrics over the given writers; `token`, when set, protects the route.
    pub fn new(writers: Vec<WriterSource>, token: Option<String>) -> Metrics {
        Metrics {
            routes: RwLock::default(),
            writers,
            token: token.filter(|t| !t.is_empty()),
        }
    }

    /// Counts one answered request.
    pub(crate) fn observe_request(
        &self,
        route: &str,
        method: &Method,
        status: u16,
        duration: std::time::Duration,
    ) {
        let known = self
            .routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(route)
            .cloned();
        let stats = known.unwrap_or_else(|| {
            let mut routes = self.routes.write().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(routes.entry(route.to_owned()).or_insert_with(|| {
                Arc::new(RouteStats {
                    area: area_of(route),
                    durations: quiver_core::observe::Histogram::new(&DURATION_BOUNDS_US),
                    answers: Mutex::default(),
                })
            }))
        });
        stats.durations.observe_duration(duration);
        let mut answers = stats.answers.lock().unwrap_or_else(PoisonError::into_inner);
        match answers.iter_mut().find(|(m, s, _)| m == method && *s == status) {
            Some((_, _, count)) => *count += 1,
            None => answers.push((method.clone(), status, 1)),
        }
    }
}

/// Which API a path belongs to.
pub(crate) fn area_of(route: &str) -> &'static str {
    if route == "/metrics" || route == "/healthz" || route == "/readyz" {
        "operations"
    } else if route.starts_with("/v2/vector/index") || route.starts_with("/v2/search") {
        "management"
    } else if route.starts_with("/v2") {
        "queue"
    } else {
        "vector"
    }
}

/// What is read at a scrape, besides the request families.
#[derive(Debug)]
struct Scrape {
    depth: Option<quiver_queue::store::QueueDepth>,
    in_flight: u64,
    outcomes: [(&'static str, u64); 5],
    logged_with_publish: u64,
    answered_when_delivered: u64,
    attempts: HistogramSnapshot,
    writers: Vec<(String, HistogramSnapshot, HistogramSnapshot, usize)>,
    indexes: Vec<quiver_vector::service::LoadedCounts>,
    routes: Vec<RouteScrape>,
    models: Vec<(&'static str, HistogramSnapshot, HistogramSnapshot)>,
    process: Option<Process>,
}

/// One route's counts at a scrape.
#[derive(Debug)]
struct RouteScrape {
    area: &'static str,
    route: String,
    /// `(method, status, count)`.
    answers: Vec<(Method, u16, u64)>,
    durations: HistogramSnapshot,
}

#[derive(Debug)]
struct Process {
    cpu_seconds: f64,
    resident_bytes: u64,
    open_files: u64,
}

/// CPU, resident memory and open files of this process, from `/proc` (Linux). `None` where `/proc` is
/// missing or reads differently: the page then leaves the process metrics out rather than fail the
/// scrape of everything else.
fn process() -> Option<Process> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, in clock ticks (USER_HZ, 100 on Linux).
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let resident_pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    let open_files = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    Some(Process {
        cpu_seconds: ticks / 100.0,
        resident_bytes: resident_pages * 4096,
        open_files,
    })
}

fn gauge(encoder: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> std::fmt::Result {
    encoder
        .encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_gauge(&value)
}

fn histogram(mut metric: MetricEncoder, snapshot: &HistogramSnapshot, scale: f64) -> std::fmt::Result {
    // The encoder adds the buckets up itself: hand it each bucket's own count.
    let mut below = 0;
    let buckets: Vec<(f64, u64)> = snapshot
        .buckets
        .iter()
        .map(|(bound, cumulative)| {
            let own = cumulative - below;
            below = *cumulative;
            (bound / scale, own)
        })
        .collect();
    metric.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
        snapshot.sum as f64 / scale,
        snapshot.count,
        &buckets,
        None,
    )
}

const MICROS: f64 = 1_000_000.0;

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        let mut requests = encoder.encode_descriptor(
            "quiver_http_requests",
            "HTTP requests answered, by area, route template, method and status",
            None,
            MetricType::Counter,
        )?;
        for scraped in &self.routes {
            for (method, status, count) in &scraped.answers {
                let status = status.to_string();
                let labels = [
                    ("area", scraped.area),
                    ("route", scraped.route.as_str()),
                    ("method", method.as_str()),
                    ("status", status.as_str()),
                ];
                requests
                    .encode_family(&labels)?
                    .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(count, None)?;
            }
        }
        let mut durations = encoder.encode_descriptor(
            "quiver_http_request_duration_seconds",
            "Time to answer HTTP requests, by area and route template",
            None,
            MetricType::Histogram,
        )?;
        for scraped in &self.routes {
            let labels = [("area", scraped.area), ("route", scraped.route.as_str())];
            histogram(durations.encode_family(&labels)?, &scraped.durations, MICROS)?;
        }
        if let Some(depth) = &self.depth {
            let mut family = encoder.encode_descriptor(
                "quiver_queue_messages",
                "Messages in the store by state: waiting (due now), delayed (due later, or leased by a delivery on another node), in_flight (delivering on this node), dead_letter (in the DLQ)",
                None,
                MetricType::Gauge,
            )?;
            let delayed = depth
                .pending
                .saturating_sub(depth.due)
                .saturating_sub(self.in_flight);
            for (state, value) in [
                ("waiting", depth.due),
                ("delayed", delayed),
                ("in_flight", self.in_flight),
                ("dead_letter", depth.dead_letters),
            ] {
                family.encode_family(&[("state", state)])?.encode_gauge(&value)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "quiver_deliveries",
            "Delivery attempts of this process by outcome",
            None,
            MetricType::Counter,
        )?;
        for (outcome, value) in self.outcomes {
            family
                .encode_family(&[("outcome", outcome)])?
                .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&value, None)?;
        }
        encoder
            .encode_descriptor(
                "quiver_deliveries_logged_with_publish",
                "First-try deliveries that finished before their publish was written, logged with it instead of stored and then deleted",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&self.logged_with_publish, None)?;
        encoder
            .encode_descriptor(
                "quiver_publishes_answered_when_delivered",
                "Publishes answered once all their messages were delivered, before their write committed",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(
                &self.answered_when_delivered,
                None,
            )?;
        let attempts = encoder.encode_descriptor(
            "quiver_delivery_duration_seconds",
            "Duration of each delivery attempt's HTTP exchange",
            None,
            MetricType::Histogram,
        )?;
        histogram(attempts, &self.attempts, MICROS)?;

        let mut batches = encoder.encode_descriptor(
            "quiver_store_commit_writes",
            "Writes folded into each commit of a database's writer",
            None,
            MetricType::Histogram,
        )?;
        for (database, sizes, _, _) in &self.writers {
            histogram(
                batches.encode_family(&[("database", database.as_str())])?,
                sizes,
                1.0,
            )?;
        }
        let mut commits = encoder.encode_descriptor(
            "quiver_store_commit_duration_seconds",
            "Duration of each commit of a database's writer (its writes and the sync)",
            None,
            MetricType::Histogram,
        )?;
        for (database, _, durations, _) in &self.writers {
            histogram(
                commits.encode_family(&[("database", database.as_str())])?,
                durations,
                MICROS,
            )?;
        }
        let mut queued = encoder.encode_descriptor(
            "quiver_store_queued_writes",
            "Writes waiting for a database's writer",
            None,
            MetricType::Gauge,
        )?;
        for (database, _, _, waiting) in &self.writers {
            queued
                .encode_family(&[("database", database.as_str())])?
                .encode_gauge(waiting)?;
        }

        let mut vectors = encoder.encode_descriptor(
            "quiver_index_vectors",
            "Records of each vector index loaded in this process",
            None,
            MetricType::Gauge,
        )?;
        for counts in &self.indexes {
            let index = counts.index.to_string();
            vectors
                .encode_family(&[("index", index.as_str())])?
                .encode_gauge(&counts.vectors)?;
        }
        let mut pending = encoder.encode_descriptor(
            "quiver_index_pending_vectors",
            "Records of each loaded vector index not in its graph yet (searched by scan meanwhile)",
            None,
            MetricType::Gauge,
        )?;
        for counts in &self.indexes {
            let index = counts.index.to_string();
            pending
                .encode_family(&[("index", index.as_str())])?
                .encode_gauge(&counts.pending)?;
        }

        let mut sizes = encoder.encode_descriptor(
            "quiver_embedding_batch_texts",
            "Texts embedded together, per dense model",
            None,
            MetricType::Histogram,
        )?;
        for (model, batch_sizes, _) in &self.models {
            histogram(sizes.encode_family(&[("model", *model)])?, batch_sizes, 1.0)?;
        }
        let mut durations = encoder.encode_descriptor(
            "quiver_embedding_batch_duration_seconds",
            "Duration of each embedding batch, per dense model",
            None,
            MetricType::Histogram,
        )?;
        for (model, _, batch_durations) in &self.models {
            histogram(
                durations.encode_family(&[("model", *model)])?,
                batch_durations,
                MICROS,
            )?;
        }

        if let Some(process) = &self.process {
            encoder
                .encode_descriptor(
                    "process_cpu_seconds",
                    "User and system CPU time of the process",
                    None,
                    MetricType::Counter,
                )?
                .encode_counter::<prometheus_client::encoding::NoLabelSet, _, f64>(
                    &process.cpu_seconds,
                    None,
                )?;
            gauge(
                &mut encoder,
                "process_resident_memory_bytes",
                "Resident memory of the process",
                process.resident_bytes,
            )?;
            gauge(
                &mut encoder,
                "process_open_fds",
                "Open file descriptors of the process",
                process.open_files,
            )?;
        }
        Ok(())
    }
}

impl Metrics {
    /// Whether `given` (a request's bearer token) is the metrics token, when one is set.
    pub(crate) fn is_authorised(&self, given: Option<&str>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        given.is_some_and(|given| quiver_core::secret::constant_time_eq(given, token))
    }

    /// The metrics page: what the domains counted, read now.
    pub(crate) async fn render(
        &self,
        queue: &quiver_queue::Queue,
        vectors: &quiver_vector::Vectors,
        embedders: &quiver_embed::Embedders,
    ) -> Response {
        let metrics = self;
        let depth = match queue.depth().await {
            Ok(depth) => Some(depth),
            Err(error) => {
                // The rest of the metrics are still worth a scrape; the gap shows in the series.
                tracing::warn!(%error, "counting the queue's messages for metrics failed");
                None
            }
        };
        let deliveries = queue.delivery_stats();
        let count = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        let scrape = Scrape {
            depth,
            in_flight: count(&deliveries.in_flight),
            outcomes: [
                ("delivered", count(&deliveries.delivered)),
                ("retried", count(&deliveries.retried)),
                ("failed", count(&deliveries.failed)),
                ("postponed", count(&deliveries.postponed)),
                ("waited_too_long", count(&deliveries.waited_too_long)),
            ],
            logged_with_publish: count(&deliveries.logged_with_publish),
            answered_when_delivered: count(&deliveries.answered_when_delivered),
            attempts: deliveries.attempt_durations.snapshot(),
            writers: metrics
                .writers
                .iter()
                .map(|w| {
                    (
                        w.database.clone(),
                        w.stats.batch_sizes.snapshot(),
                        w.stats.commit_durations.snapshot(),
                        (w.queued)(),
                    )
                })
                .collect(),
            indexes: vectors.loaded_counts(),
            routes: metrics
                .routes
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|(route, stats)| {
                    let answers = stats
                        .answers
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone();
                    RouteScrape {
                        area: stats.area,
                        route: route.clone(),
                        answers,
                        durations: stats.durations.snapshot(),
                    }
                })
                .collect(),
            models: embedders
                .loaded_models()
                .into_iter()
                .map(|(model, embedder)| {
                    (
                        model.as_str(),
                        embedder.stats().batch_sizes.snapshot(),
                        embedder.stats().batch_durations.snapshot(),
                    )
                })
                .collect(),
            process: process(),
        };
        let mut registry = Registry::default();
        registry.register_collector(Box::new(scrape));
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &registry) {
            let _ = write!(text, "# encoding failed: {error}");
        }
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            )],
            text,
        )
            .into_response()
    }
}
