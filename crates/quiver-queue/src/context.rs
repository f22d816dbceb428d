//! What every service of the queue shares: the clock, the configuration, the destination policy, and the
//! signals between the services and the background loops (wake-ups, and each loop's [`LoopState`]).

use std::sync::Arc;

use quiver_core::{Clock, Timestamp};
use tokio::sync::Notify;

use crate::config::QueueConfig;
use crate::idle::LoopState;
use crate::ssrf::DestinationPolicy;

/// The shared parts of the queue's services; cloning it is cheap.
#[derive(Clone)]
pub(crate) struct Context {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: Arc<QueueConfig>,
    pub(crate) policy: Arc<DestinationPolicy>,
    pub(crate) signals: Arc<Signals>,
}

impl Context {
    pub(crate) fn new(clock: Arc<dyn Clock>, config: QueueConfig, policy: DestinationPolicy) -> Context {
        Context {
            clock,
            config: Arc::new(config),
            policy: Arc::new(policy),
            signals: Arc::new(Signals::default()),
        }
    }

    /// The current time on the injected clock.
    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }
}

/// How the services wake the background loops, and what each loop last said of itself.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    /// Wakes the delivery worker: new work may be due now.
    pub(crate) wakeup: Notify,
    /// Wakes the scheduler: a schedule or a wait deadline changed.
    pub(crate) schedules_changed: Notify,
    pub(crate) worker: LoopState,
    pub(crate) scheduler: LoopState,
    pub(crate) retention: LoopState,
    /// Where other nodes share the store: how often the loops look for work those nodes made due,
    /// however long they would otherwise sleep (wake-ups between nodes are hints, not guarantees).
    pub(crate) poll: std::sync::OnceLock<std::time::Duration>,
    /// The running delivery worker's door for messages a publish hands straight over; unset until a
    /// worker runs.
    pub(crate) handoff: std::sync::OnceLock<crate::handoff::Handoff>,
    /// What the delivery worker counts, for metrics.
    pub(crate) deliveries: crate::observe::DeliveryStats,
    /// Publish writes still committing, which reads of the log wait for (see [`crate::answered`]).
    pub(crate) answered: Arc<crate::answered::AnsweredWrites>,
}

impl Signals {
    /// Wakes the delivery worker: new work may be due now.
    pub(crate) fn wake_worker(&self) {
        self.worker.wake();
        self.wakeup.notify_one();
    }

    /// Wakes the worker if a message due at `due` would otherwise wait past it.
    pub(crate) fn wake_worker_for(&self, due: Timestamp) {
        if self.worker.needs_wake_for(due) {
            self.wake_worker();
        }
    }

    /// Wakes the scheduler: a schedule or a wait deadline changed.
    pub(crate) fn wake_scheduler(&self) {
        self.scheduler.wake();
        self.schedules_changed.notify_one();
    }

    /// Ends a loop's sleep after the poll interval, where other nodes share the store; never otherwise.
    pub(crate) fn poll_sleep(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        match self.poll.get() {
            Some(every) => Box::pin(tokio::time::sleep(*every)),
            None => Box::pin(std::future::pending()),
        }
    }
}

/// `impl Debug` for a service: its stores are trait objects and print nothing useful.
macro_rules! opaque_debug {
    ($($service:ident),+) => {$(
        impl std::fmt::Debug for $service {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($service)).finish_non_exhaustive()
            }
        }
    )+};
}
pub(crate) use opaque_debug;
