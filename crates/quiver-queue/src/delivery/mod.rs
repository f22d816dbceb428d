//! The delivery worker: claims due messages with a lease, calls each destination, and applies the pure
//! retry decision (with its events, callbacks and dead letter) in one transaction.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use quiver_core::clock::wall_clock_now;
use quiver_core::secret::random_below;
use quiver_core::store::StoreResult;
use quiver_core::{StoreError, Timestamp};
use reqwest::header::HeaderMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::observe::{DeliveryStats, InFlight};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::callback::{ResponseRecord, callback_body, callback_message};
use crate::context::Context;
use crate::early::{EarlyDelivery, Finish};
use crate::keys::KeySource;
use crate::message::{
    DeadLetter, EventDetail, FailureCallbackInfo, FailureCallbackState, Message, MessageKind, MessageState,
    NewEvent, NewMessage,
};
use crate::names::RunId;
use crate::retry::{AttemptReport, DeliveryOutcome, decide, parse_requested_delay};
use crate::service::{Queue, WorkflowRuns};
use crate::signing::sign;
use crate::ssrf::CheckedUrls;
use crate::store::{AttemptRecord, AttemptResolution, DeliveryStore};
use crate::transport::Transport;

mod request;
mod runtime;

use request::{Attempted, DELAY_HEADERS, delivery_headers, written_headers};
pub use runtime::DeliveryRuntime;

/// A claimed message waiting for a delivery slot (see `DeliveryWorker::start_claimed`).
struct Claimed {
    message: Message,
    /// When it was claimed, by the queue's clock (which its lease is measured on): its ACTIVE event's
    /// time, and when it began to wait.
    at: Timestamp,
}

/// How long a message claimed ahead of the free slots may wait for one and still start.
#[derive(Debug, Clone, Copy)]
struct SlotWait {
    /// A claim's lease: the longest attempt timeout plus the margin.
    lease: Duration,
    /// `queue.lease_margin_ms`.
    margin: Duration,
}

impl SlotWait {
    /// The longest wait for an attempt of `timeout`: what its lease holds beyond the attempt and half
    /// the margin (the other half covers the claim's round trip and writing the outcome). A message
    /// with a short timeout may wait nearly a whole lease (two hours by default), so a slow destination
    /// that keeps every slot busy delays its backlog, and does not send it to wait out leases. At least
    /// a second, so that a margin set to nothing does not leave every message that waited at all
    /// unstarted.
    fn longest(self, timeout: Duration) -> Duration {
        self.lease
            .saturating_sub(timeout)
            .saturating_sub(self.margin / 2)
            .max(Duration::from_secs(1))
    }
}

/// Delivers due messages until cancelled.
pub struct DeliveryWorker {
    store: Arc<dyn DeliveryStore>,
    runs: WorkflowRuns,
    context: Context,
    keys: Arc<dyn KeySource>,
    transport: Transport,
    destinations: CheckedUrls,
    permits: Arc<Semaphore>,
    dlq_sequence: Arc<AtomicU64>,
    /// Where deliveries run (see [`DeliveryRuntime`]); `None`: on the runtime that runs the worker.
    runtime: Option<tokio::runtime::Handle>,
}

impl std::fmt::Debug for DeliveryWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryWorker").finish_non_exhaustive()
    }
}

/// The worker could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the delivery HTTP client: {0}")]
pub struct WorkerError(String);

impl DeliveryWorker {
    /// A worker for the messages of `queue`, signing with keys from `keys`.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(queue: &Queue, keys: Arc<dyn KeySource>) -> Result<DeliveryWorker, WorkerError> {
        let config = queue.config();
        // Every delivery slot may be talking to the same host: keep as many connections to it open
        // between deliveries, or each burst opens (and the destination accepts) new ones.
        let transport = Transport::new(
            queue.policy(),
            &config.user_agent,
            config.delivery_concurrency.max(1),
        )
        .map_err(|e| WorkerError(e.to_string()))?;
        Ok(DeliveryWorker {
            permits: Arc::new(Semaphore::new(config.delivery_concurrency.max(1))),
            store: queue.store().clone(),
            runs: queue.workflow_runs.clone(),
            context: queue.context().clone(),
            keys,
            transport,
            destinations: CheckedUrls::new(Arc::clone(queue.policy())),
            dlq_sequence: Arc::new(AtomicU64::new(u64::from(random_below(1_000_000)))),
            runtime: None,
        })
    }

    /// The worker with its deliveries run on `runtime` (see [`DeliveryRuntime`]); its claims and the
    /// rest stay on the runtime that runs it.
    #[must_use]
    pub fn delivering_on(self, runtime: tokio::runtime::Handle) -> DeliveryWorker {
        DeliveryWorker {
            runtime: Some(runtime),
            ..self
        }
    }

    /// Claims and delivers due messages until `shutdown`; deliveries run on `tracker`.
    ///
    /// # Cancel safety
    /// Stopping between claims is safe: a claimed message whose delivery did not finish is leased, and
    /// the next start makes it due again.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken, tracker: TaskTracker) {
        let store = Arc::clone(&self.store);
        let clock = Arc::clone(&self.context.clock);
        let config = Arc::clone(&self.context.config);
        let signals = Arc::clone(&self.context.signals);
        if let Err(error) = store.release_leases(clock.now()).await {
            warn!(%error, "could not release leases left by an earlier run");
        }
        let lease = Duration::from_millis(config.max_timeout_ms.saturating_add(config.lease_margin_ms));
        // Only now, with the earlier run's leases released, may publishes hand messages over.
        let worker = Arc::downgrade(&self);
        let deliveries = tracker.clone();
        let start: crate::handoff::Start = Box::new(move |message, handed_over, slot, early| {
            let Some(worker) = worker.upgrade() else {
                // The worker is gone (shut down): the message stays leased, and the next start
                // releases it.
                return;
            };
            worker.spawn_delivery(&deliveries, message, handed_over, slot, early);
        });
        let _ = signals.handoff.set(crate::handoff::Handoff::new(
            Arc::clone(&self.permits),
            shutdown.clone(),
            lease,
            start,
            tracker.clone(),
        ));
        // While a backlog is due, the worker claims ahead of its free slots: those messages wait in
        // `ready`, and `start_claimed` starts each as a slot frees up. The next claim is then made while
        // the last one's messages are still starting, so slots that free up during a claim's round trip
        // to the store find work waiting. It is made once `ready` has room for a quarter of a batch, so
        // that the worker claims in batches rather than one by one. With no backlog, a claim takes only
        // as many as the free slots, and its messages start here.
        let buffer = config.claim_batch.max(1);
        let low_water = (buffer / 4).max(1);
        // Whether the last claim found more due than it took: only then does the worker claim ahead of
        // its free slots.
        let mut backlog = false;
        let (ready, waiting) = tokio::sync::mpsc::channel::<Claimed>(buffer);
        tracker.spawn(Arc::clone(&self).start_claimed(
            waiting,
            shutdown.clone(),
            tracker.clone(),
            SlotWait {
                lease,
                margin: Duration::from_millis(config.lease_margin_ms),
            },
        ));
        loop {
            let wakeup = signals.wakeup.notified();
            tokio::pin!(wakeup);
            wakeup.as_mut().enable();
            signals.worker.round_starts();
            let wanted = if backlog { low_water } else { 1 };
            if ready.capacity() < wanted {
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break,
                    room = ready.reserve_many(wanted) => match room {
                        Ok(room) => drop(room),
                        // `start_claimed` has stopped, which it does only at shutdown.
                        Err(_) => break,
                    },
                }
                continue;
            }
            let room = if backlog {
                ready.capacity()
            } else {
                // No backlog: only as many as the free slots, so that a slot that frees up stays free
                // for a publish to hand its message over (no claim for it at all), rather than going
                // to a message claimed ahead of it.
                let free = self.permits.available_permits();
                if free == 0 {
                    tokio::select! {
                        biased;
                        () = shutdown.cancelled() => break,
                        permit = Arc::clone(&self.permits).acquire_owned() => drop(permit),
                    }
                    continue;
                }
                ready.capacity().min(free)
            };
            let now = clock.now();
            let claimed = match store.claim_due(now, room, now.saturating_add(lease)).await {
                Ok(claimed) => claimed,
                Err(StoreError::Closed) => break,
                Err(error) => {
                    warn!(%error, "claiming due messages failed; trying again shortly");
                    tokio::select! {
                        () = shutdown.cancelled() => break,
                        () = tokio::time::sleep(Duration::from_millis(200)) => continue,
                    }
                }
            };
            // Claimed ahead of the free slots, its messages wait in `ready`; otherwise each has its slot
            // (or is about to: a hand-over may have taken one meanwhile) and starts here.
            let ahead = backlog;
            let batch_was_full = claimed.len() == room;
            // A full claim of a few messages (as many as the few free slots) says little: a backlog is a
            // full claim of at least a quarter of a batch.
            backlog = batch_was_full && room >= low_water;
            for message in claimed {
                if ahead {
                    // Only this loop sends, and it claimed no more than the room left: this never waits.
                    let claimed = Claimed { message, at: now };
                    if ready.send(claimed).await.is_err() {
                        break;
                    }
                } else {
                    let Ok(permit) = Arc::clone(&self.permits).acquire_owned().await else {
                        break;
                    };
                    self.spawn_delivery(&tracker, message, now, permit, None);
                }
            }
            if batch_was_full {
                continue;
            }
            // A failed look-up is not "nothing is due": the worker looks again shortly instead of
            // sleeping until a publish happens to wake it.
            let (next_due, sleep) = match store.next_due().await {
                Ok(next_due) => (
                    next_due,
                    match next_due {
                        Some(due) => clock.sleep_until(due),
                        None => Box::pin(std::future::pending()),
                    },
                ),
                Err(StoreError::Closed) => break,
                Err(error) => {
                    warn!(%error, "finding the next due message failed; looking again shortly");
                    let retry: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
                        Box::pin(tokio::time::sleep(Duration::from_millis(200)));
                    (None, retry)
                }
            };
            // Publishers wake us only for work due before this; anything published meanwhile saw
            // "busy" and left a wake-up permit.
            signals.worker.sleeps_until(next_due);
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                () = &mut wakeup => {}
                () = sleep => {}
                () = signals.poll_sleep() => {}
            }
        }
        debug!("delivery worker stopped");
    }

    /// Starts the claimed messages that `waiting` hands over, each once a delivery slot is free, until
    /// `shutdown`. A message that waited for its slot longer than its lease can spare (see
    /// [`SlotWait::longest`]) is not started: its lease might run out before its attempt ends, and
    /// another claim could then deliver it a second time. It stays leased, and goes when its lease ends.
    /// Messages left waiting at shutdown stay leased too; the next start (or, on PostgreSQL, another
    /// node once this one is gone) makes them due again.
    async fn start_claimed(
        self: Arc<Self>,
        mut waiting: tokio::sync::mpsc::Receiver<Claimed>,
        shutdown: CancellationToken,
        tracker: TaskTracker,
        wait: SlotWait,
    ) {
        loop {
            let next = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                next = waiting.recv() => next,
            };
            let Some(Claimed { message, at }) = next else {
                break;
            };
            let permit = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                permit = Arc::clone(&self.permits).acquire_owned() => permit,
            };
            // The slots' semaphore is never closed; were it, no delivery could start again.
            let Ok(permit) = permit else {
                break;
            };
            let waited = self.context.clock.now().duration_since(at);
            if waited > wait.longest(Duration::from_millis(message.spec.timeout_ms)) {
                warn!(message.id = %message.id, "a claimed message waited too long for a delivery slot; it goes again when its lease ends");
                DeliveryStats::count(&self.context.signals.deliveries.waited_too_long);
                continue;
            }
            self.spawn_delivery(&tracker, message, at, permit, None);
        }
    }

    /// Starts the delivery of `message`, claimed or handed over `at`, in `slot`; `early` when it is
    /// handed over before it is stored (see [`crate::early`]).
    fn spawn_delivery(
        self: &Arc<Self>,
        tracker: &TaskTracker,
        message: Message,
        at: Timestamp,
        slot: OwnedSemaphorePermit,
        early: Option<EarlyDelivery>,
    ) {
        let worker = Arc::clone(self);
        // Boxed here, so that spawning moves a pointer: a delivery's future is about 7 KB, and a spawn
        // moves its future by value through several calls before it reaches the task's memory. memmove
        // was 6 % of all samples in a drain, 4 % boxed, and the drain ran about 6 % faster
        // (BENCHMARKS.md, "Queue throughput").
        let delivery = Box::pin(async move {
            worker.deliver(message, at, slot, early).await;
        });
        match &self.runtime {
            Some(runtime) => tracker.spawn_on(delivery, runtime),
            None => tracker.spawn(delivery),
        };
    }

    /// Makes one attempt. `Err` means it was not made: something the delivery depends on (the signing
    /// keys, the workflow run) could not be read, and the message goes again later without spending a
    /// retry, rather than going out changed (unsigned, or a step without its history).
    async fn attempt(&self, message: &Message) -> Result<Attempted, String> {
        let spec = &message.spec;
        let failure = |error: String| {
            Ok(Attempted {
                report: AttemptReport {
                    status: None,
                    requested_delay: None,
                    non_retryable: false,
                },
                response: ResponseRecord::default(),
                headers: HeaderMap::new(),
                error: Some(error),
            })
        };
        // Parsed once, for the destination policy and for the request.
        let url = match self.destinations.checked_url(&spec.url) {
            Ok(url) => url,
            Err(error) => return failure(error),
        };
        // A message of a workflow run is delivered with the run's creation time, and a step message carries
        // the run's history instead of its own body.
        let run = match &spec.workflow_run_id {
            Some(run_id) => self
                .runs
                .find(
                    message.account_id,
                    &RunId::parse(run_id.as_str()).map_err(|e| e.to_string())?,
                )
                .await
                .map_err(|error| format!("could not read workflow run `{run_id}`: {error}"))?,
            None => None,
        };
        let body = match (&run, spec.workflow_history) {
            (Some(run), true) => run.history(),
            (Some(_) | None, _) => message.body.clone(),
        };
        let run_created_at = run.map(|run| run.created_at.as_millis().to_string());
        // An account that no longer exists has no keys: its messages go unsigned. An account that cannot
        // be read right now is no reason to drop the signature.
        let keys = self
            .keys
            .signing_keys(message.account_id)
            .await
            .map_err(|error| format!("could not read the account's signing keys: {error}"))?;
        let signature = keys.map(|keys| {
            sign(
                &keys.current,
                &self.context.config.signature_issuer,
                &spec.url,
                &body,
                wall_clock_now(),
            )
        });
        let limit = self.context.config.max_message_bytes;
        let answer = match self
            .transport
            .send(
                spec.method.to_reqwest(),
                url,
                delivery_headers(message, signature, run_created_at.as_deref()),
                body,
                Duration::from_millis(spec.timeout_ms),
                limit,
            )
            .await
        {
            Ok(answer) => answer,
            Err(error) => return failure(error),
        };
        let status = answer.status.as_u16();
        let headers = answer.headers;
        let requested_delay = DELAY_HEADERS.iter().find_map(|name| {
            headers
                .get(*name)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_requested_delay)
        });
        let non_retryable = status == 489
            && ["upstash-nonretryable-error", "svc-nonretryable-error"]
                .iter()
                .any(|name| {
                    headers
                        .get(*name)
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
                });
        let report = AttemptReport {
            status: Some(status),
            requested_delay,
            non_retryable,
        };
        Ok(Attempted {
            report,
            // The headers are written out only for an outcome that reports them (see `deliver`).
            response: ResponseRecord {
                status: Some(status),
                headers: Vec::new(),
                body: answer.body,
            },
            headers,
            error: None,
        })
    }

    /// Puts off an attempt that could not be made: the message is due again in [`POSTPONE`] with its
    /// retries untouched, and the log says why.
    async fn postpone(
        &self,
        message: Message,
        started: Timestamp,
        reason: String,
        early: Option<EarlyDelivery>,
    ) {
        let now = self.context.now();
        let at = now.saturating_add(POSTPONE);
        warn!(message.id = %message.id, %reason, "delivery put off");
        let id = message.id.clone();
        let events = vec![
            active(started),
            NewEvent {
                time: now,
                state: MessageState::Error,
                detail: EventDetail {
                    error: Some(reason),
                    ..EventDetail::default()
                },
            },
            NewEvent {
                time: now,
                state: MessageState::Retry,
                detail: EventDetail {
                    next_delivery_time: Some(at.as_millis()),
                    ..EventDetail::default()
                },
            },
        ];
        let record = AttemptRecord {
            resolution: AttemptResolution::Retry {
                retried: message.retried,
                at,
            },
            message,
            events,
            follow_ups: Vec::new(),
            failure_callback_report: None,
        };
        if let Err(error) = self.apply(record, early).await {
            warn!(message.id = %id, %error, "could not put off a delivery; the lease will expire and it is retried");
        }
        // The worker may be sleeping until the lease would have expired.
        self.context.signals.wake_worker();
    }

    /// Applies an attempt's record. That of a message handed over before it was stored (`early`) is
    /// written with the publish when its delivery finished first and the record is plain, and otherwise
    /// waits for the publish's commit (see [`crate::early`]).
    async fn apply(&self, record: AttemptRecord, early: Option<EarlyDelivery>) -> StoreResult<()> {
        let record = match early {
            Some(early) => {
                let plain = record.is_plain() && !record.may_make_work_due();
                match early.finish(Box::new(record), plain).await {
                    Finish::Apply(record) => *record,
                    Finish::WithPublish => {
                        DeliveryStats::count(&self.context.signals.deliveries.logged_with_publish);
                        return Ok(());
                    }
                    Finish::PublishFailed => return Ok(()),
                }
            }
            None => record,
        };
        self.store.record_attempt(record).await
    }

    /// Makes one attempt at `message` in delivery `slot`, which is given back once the attempt is made,
    /// and applies its outcome. `started`: when the message was claimed or handed over by a publish; its
    /// ACTIVE event is logged with the outcome, at that time (see `DeliveryStore::claim_due`). `early`:
    /// the message is being stored (see [`crate::early`]).
    async fn deliver(
        &self,
        message: Message,
        started: Timestamp,
        slot: OwnedSemaphorePermit,
        early: Option<EarlyDelivery>,
    ) {
        let stats = &self.context.signals.deliveries;
        let _in_flight = InFlight::start(stats);
        let attempt_began = std::time::Instant::now();
        let attempted = self.attempt(&message).await;
        // The slot bounds requests to destinations; the outcome's write waits in the store's queue
        // without it, so the next claim does not wait for this commit (claims queue behind it anyway).
        drop(slot);
        let Attempted {
            report,
            mut response,
            headers,
            error,
        } = match attempted {
            Ok(attempted) => attempted,
            Err(reason) => {
                DeliveryStats::count(&stats.postponed);
                // Boxed, as the run's failure below: rare paths that would otherwise enlarge every
                // delivery's future.
                return Box::pin(self.postpone(message, started, reason, early)).await;
            }
        };
        stats.attempt_durations.observe_duration(attempt_began.elapsed());
        let now = self.context.now();
        let spec = &message.spec;
        let outcome = decide(
            &report,
            message.retried,
            spec.max_retries,
            spec.retry_delay.as_ref(),
            now,
        );
        // Callbacks, failure callbacks and dead letters report the destination's headers; a plain
        // delivery does not keep them.
        let reports_headers = matches!(outcome, DeliveryOutcome::DeadLettered)
            || spec.callback.is_some()
            || spec.reports_dead_letter.is_some();
        if reports_headers {
            response.headers = written_headers(&headers);
        }
        DeliveryStats::count(match outcome {
            DeliveryOutcome::Delivered => &stats.delivered,
            DeliveryOutcome::RetryAt(_) => &stats.retried,
            DeliveryOutcome::DeadLettered => &stats.failed,
        });
        let response_text =
            (!response.body.is_empty()).then(|| String::from_utf8_lossy(&response.body).into_owned());
        let failed_detail = || EventDetail {
            error: Some(
                error
                    .clone()
                    .unwrap_or_else(|| format!("destination answered {}", report.status.unwrap_or(0))),
            ),
            next_delivery_time: None,
            response_status: report.status,
            response_body: response_text.clone(),
        };
        let event = |state, detail| NewEvent {
            time: now,
            state,
            detail,
        };
        let mut events: Vec<NewEvent> = vec![active(started)];
        let mut follow_ups: Vec<NewMessage> = Vec::new();
        let reports_to_callbacks = spec.kind == MessageKind::Publish;
        if reports_to_callbacks && let Some(callback) = &spec.callback {
            let body = callback_body(&message, &response, message.retried, None);
            follow_ups.push(callback_message(
                &message,
                callback,
                MessageKind::Callback,
                body,
                now,
                self.context.config.default_timeout_ms,
            ));
        }
        // The failure callback of a workflow step reports to its step's dead letter, never to a DLQ of
        // its own.
        let callback_info = |state| FailureCallbackInfo {
            state,
            response_status: report.status,
            response_body: response_text.clone(),
            response_headers: response.headers.clone(),
            message_id: None,
        };
        let failure_callback_report = spec.reports_dead_letter.as_ref().and_then(|dlq_id| {
            let state = match outcome {
                DeliveryOutcome::Delivered => FailureCallbackState::Success,
                DeliveryOutcome::DeadLettered => FailureCallbackState::Fail,
                DeliveryOutcome::RetryAt(_) => return None,
            };
            Some((dlq_id.clone(), callback_info(state)))
        });
        let resolution = match outcome {
            DeliveryOutcome::Delivered => {
                events.push(event(
                    MessageState::Delivered,
                    EventDetail {
                        response_status: report.status,
                        response_body: response_text,
                        ..EventDetail::default()
                    },
                ));
                debug!(message.id = %message.id, "delivered");
                AttemptResolution::Finished { dead_letter: None }
            }
            DeliveryOutcome::RetryAt(at) => {
                events.push(event(MessageState::Error, failed_detail()));
                events.push(event(
                    MessageState::Retry,
                    EventDetail {
                        next_delivery_time: Some(at.as_millis()),
                        ..EventDetail::default()
                    },
                ));
                AttemptResolution::Retry {
                    retried: message.retried + 1,
                    at,
                }
            }
            DeliveryOutcome::DeadLettered => {
                events.push(event(MessageState::Error, failed_detail()));
                events.push(event(MessageState::Failed, EventDetail::default()));
                let dlq_id = format!(
                    "{}-{}",
                    now.as_millis(),
                    self.dlq_sequence.fetch_add(1, Ordering::Relaxed)
                );
                // Callback messages may carry a failure callback of their own (the workflow SDK's
                // `context.call`); failure callbacks never do.
                let mut failure_callback = None;
                if spec.kind != MessageKind::FailureCallback
                    && let Some(callback) = &spec.failure_callback
                {
                    let body = callback_body(&message, &response, message.retried, Some(&dlq_id));
                    let mut follow_up = callback_message(
                        &message,
                        callback,
                        MessageKind::FailureCallback,
                        body,
                        now,
                        self.context.config.default_timeout_ms,
                    );
                    if spec.workflow_run_id.is_some() {
                        follow_up.message.spec.reports_dead_letter = Some(dlq_id.clone());
                        failure_callback = Some(FailureCallbackInfo {
                            state: FailureCallbackState::InProgress,
                            response_status: None,
                            response_body: None,
                            response_headers: Vec::new(),
                            message_id: Some(follow_up.message.id.clone()),
                        });
                    }
                    follow_ups.push(follow_up);
                }
                warn!(message.id = %message.id, dlq.id = %dlq_id, url = %spec.url, "retries exhausted; moved to the dead letter queue");
                let dead_letter = spec.reports_dead_letter.is_none().then(|| {
                    Box::new(DeadLetter {
                        dlq_id,
                        message: message.clone(),
                        response_status: report.status,
                        response_headers: response.headers.clone(),
                        response_body: response.body.clone(),
                        failed_at: now,
                        failure_callback,
                    })
                });
                AttemptResolution::Finished { dead_letter }
            }
        };
        let dead_lettered = matches!(outcome, DeliveryOutcome::DeadLettered);
        // A step of the workflow itself that exhausted its retries ends the run as failed; its dead
        // letter is where the run can be resumed or restarted from.
        let failed_run = (dead_lettered && spec.workflow_history)
            .then(|| spec.workflow_run_id.clone())
            .flatten();
        let (account, id) = (message.account_id, message.id.clone());
        let record = AttemptRecord {
            message,
            resolution,
            events,
            follow_ups,
            failure_callback_report,
        };
        // A finished queued or flow-controlled message lets the next one of its queue or key go.
        let wakes_worker = record.may_make_work_due();
        if let Err(error) = self.apply(record, early).await {
            warn!(message.id = %id, %error, "could not record a delivery attempt; the lease will expire and it is retried");
        } else if let Some(run_id) = failed_run {
            let failed = match RunId::parse(run_id.as_str()) {
                Ok(run_id) => Box::pin(self.runs.fail(account, &run_id, now)).await,
                Err(invalid) => Err(invalid.into()),
            };
            if let Err(error) = failed {
                warn!(workflow.run = %run_id, %error, "could not end a failed workflow run or tell its invoker");
            }
        }
        if wakes_worker {
            self.context.signals.wake_worker();
        }
    }
}

/// The ACTIVE event of a message handed over at `at`, logged with its attempt's outcome.
fn active(at: Timestamp) -> NewEvent {
    NewEvent {
        time: at,
        state: MessageState::Active,
        detail: EventDetail::default(),
    }
}

/// How long an attempt that could not be made (see `DeliveryWorker::attempt`) is put off.
const POSTPONE: Duration = Duration::from_secs(5);
