//! The queue store itself: its database and the batchers of its hottest writes.

use std::sync::Arc;

use quiver_core::Timestamp;
use quiver_queue::message::{Enqueued, NewMessage};
use quiver_queue::store::AttemptRecord;

use crate::batch::Batcher;
use crate::database::PgDatabase;

/// The queue's store over a [`PgDatabase`].
#[derive(Debug, Clone)]
pub struct PgQueueStore {
    pub(crate) database: PgDatabase,
    pub(crate) batches: Arc<Batches>,
}

/// The batchers of a queue store's hottest writes (their bodies are `messages`').
#[derive(Debug)]
pub(crate) struct Batches {
    pub(crate) publishes: Batcher<(Vec<NewMessage>, Timestamp), Vec<Enqueued>>,
    pub(crate) attempts: Batcher<AttemptRecord, ()>,
}
