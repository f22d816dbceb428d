//! The queue's operations, one service per noun, each over the storage traits it uses:
//!
//! - [`Publisher`]: publish to a URL, a URL group or a FIFO queue; batches; workflow steps.
//! - [`Messages`]: read and cancel pending messages.
//! - [`DeadLetters`]: the dead letter queue.
//! - [`EventLog`]: the events log.
//! - [`UrlGroups`], [`Schedules`], [`FifoQueues`], [`FlowControl`], [`WorkflowRuns`], [`Waiters`].
//! - [`Retention`]: pruning by age.
//!
//! [`Queue`] holds one of each, built over one backend: it is what the server wires and what the HTTP
//! layer and the background loops are handed.

use std::sync::Arc;

use quiver_core::Clock;

use crate::config::QueueConfig;
use crate::context::Context;
use crate::llm::LanguageModels;
use crate::ssrf::DestinationPolicy;
use crate::store::QueueStore;

mod dead_letters;
mod events;
mod fifo_queues;
mod flow_control;
mod messages;
mod publisher;
mod retention;
mod schedules;
mod url_groups;
mod waiters;
mod workflow_runs;

pub use dead_letters::DeadLetters;
pub use events::EventLog;
pub use fifo_queues::{FifoQueues, MAX_PARALLELISM};
pub use flow_control::FlowControl;
pub use messages::Messages;
pub use publisher::{PublishOutcome, PublishRequest, Published, Publisher};
pub use retention::Retention;
pub use schedules::Schedules;
pub use url_groups::UrlGroups;
pub use waiters::Waiters;
pub use workflow_runs::{Triggered, WorkflowRuns};

/// The message queue of every account: its services, over one backend.
#[derive(Clone)]
pub struct Queue {
    /// Publishing.
    pub publisher: Publisher,
    /// Pending messages.
    pub messages: Messages,
    /// The dead letter queue.
    pub dead_letters: DeadLetters,
    /// The events log.
    pub log: EventLog,
    /// URL groups.
    pub url_groups: UrlGroups,
    /// Cron schedules.
    pub schedules: Schedules,
    /// FIFO queues.
    pub fifo_queues: FifoQueues,
    /// Flow-control keys.
    pub flow_control: FlowControl,
    /// Workflow runs.
    pub workflow_runs: WorkflowRuns,
    /// Runs waiting for events.
    pub waiters: Waiters,
    /// Pruning by age.
    pub retention: Retention,
    /// The operator's language-model API.
    pub language_models: LanguageModels,
    store: Arc<dyn QueueStore>,
    context: Context,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("config", &self.context.config)
            .finish_non_exhaustive()
    }
}

impl Queue {
    /// The queue over `store`.
    pub fn new(
        store: Arc<dyn QueueStore>,
        clock: Arc<dyn Clock>,
        config: QueueConfig,
        policy: DestinationPolicy,
    ) -> Queue {
        let context = Context::new(clock, config, policy);
        let publisher = Publisher::new(
            store.clone(),
            store.clone(),
            store.clone(),
            store.clone(),
            context.clone(),
        );
        let dead_letters = DeadLetters::new(store.clone(), context.clone());
        Queue {
            messages: Messages::new(store.clone(), context.clone()),
            log: EventLog::new(store.clone(), Arc::clone(&context.signals.answered)),
            url_groups: UrlGroups::new(store.clone(), context.clone()),
            schedules: Schedules::new(
                store.clone(),
                store.clone(),
                store.clone(),
                store.clone(),
                publisher.clone(),
                context.clone(),
            ),
            fifo_queues: FifoQueues::new(store.clone(), context.clone()),
            flow_control: FlowControl::new(store.clone(), context.clone()),
            workflow_runs: WorkflowRuns::new(
                store.clone(),
                store.clone(),
                dead_letters.clone(),
                publisher.clone(),
                context.clone(),
            ),
            waiters: Waiters::new(store.clone(), store.clone(), publisher.clone(), context.clone()),
            retention: Retention::new(store.clone(), store.clone(), context.clone()),
            language_models: LanguageModels::new(context.clone()),
            dead_letters,
            publisher,
            store,
            context,
        }
    }

    /// How much work the store holds now, over every account (for `GET /metrics`).
    ///
    /// # Errors
    /// Store failures.
    pub async fn depth(&self) -> Result<crate::store::QueueDepth, crate::QueueError> {
        Ok(self.store.depth(self.context.now()).await?)
    }

    /// What this process's delivery worker has counted (for `GET /metrics`).
    pub fn delivery_stats(&self) -> &crate::observe::DeliveryStats {
        &self.context.signals.deliveries
    }

    /// The backend, for the delivery worker.
    pub(crate) fn store(&self) -> &Arc<dyn QueueStore> {
        &self.store
    }

    /// What the services share, for the background loops.
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    /// The queue's configuration.
    pub fn config(&self) -> &QueueConfig {
        &self.context.config
    }

    /// Which destinations deliveries may reach.
    pub fn policy(&self) -> &Arc<DestinationPolicy> {
        &self.context.policy
    }

    /// Wakes the scheduler: a schedule or a wait deadline changed (on another node, say).
    pub fn wake_scheduler(&self) {
        self.context.signals.wake_scheduler();
    }

    /// Makes the background loops look for work at least every `every`, however long they would sleep
    /// otherwise: for a store that other nodes share, whose publishes and schedules this node's
    /// wake-ups never see. Set once; later calls change nothing.
    pub fn poll_for_other_nodes(&self, every: std::time::Duration) {
        let _ = self.context.signals.poll.set(every);
    }

    /// Wakes the delivery worker: work may be due now (another node published it, say).
    pub fn wake_worker(&self) {
        self.context.signals.wake_worker();
    }

    /// Whether the delivery worker has nothing to start at the current time. Deliveries it started may
    /// still be in flight.
    pub fn worker_is_idle(&self) -> bool {
        self.context.signals.worker.is_idle(self.context.now())
    }

    /// Whether the scheduler, retention and the delivery worker all have nothing to do at the current
    /// time. Read in that order: the scheduler and retention hand work to the worker, never back, so a
    /// round they start after their check wakes the worker before its check. Tests wait for this
    /// instead of waiting for time.
    pub fn is_idle(&self) -> bool {
        let now = self.context.now();
        let signals = &self.context.signals;
        signals.scheduler.is_idle(now) && signals.retention.is_idle(now) && signals.worker.is_idle(now)
    }
}
