//! Group commit for PostgreSQL: writes that arrive together share one transaction (one commit, one WAL
//! flush) instead of paying one each, as the SQLite writer's group commit does. A few writers run at
//! once, each taking whatever is waiting when it starts a batch, so the batches grow with the load and a
//! lone write waits for nobody. A batch's body chooses how it writes: most open a transaction, and a batch
//! that one statement can write sends only that statement (its own transaction, one round trip).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use quiver_core::StoreError;
use quiver_core::store::StoreResult;
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::database::PgDatabase;

/// A batch's work: given the database and the items, one result per item, in order, all written or none.
pub(crate) type BatchBody<T, R> = Arc<dyn Fn(PgDatabase, Arc<Vec<T>>) -> BatchFuture<R> + Send + Sync>;

/// A batch's results, once written.
pub(crate) type BatchFuture<R> = Pin<Box<dyn Future<Output = StoreResult<Vec<R>>> + Send>>;

type Waiting<T, R> = (T, oneshot::Sender<StoreResult<R>>);

/// Items written in batches by a few writer tasks; each caller waits for its own item's result.
pub(crate) struct Batcher<T, R> {
    sender: mpsc::UnboundedSender<Waiting<T, R>>,
}

impl<T, R> std::fmt::Debug for Batcher<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").finish_non_exhaustive()
    }
}

impl<T: Send + Sync + 'static, R: Send + 'static> Batcher<T, R> {
    /// Starts `writers` writer tasks over `database`, each writing up to `max` items per transaction
    /// with `body`. They stop when the batcher is dropped.
    pub(crate) fn start(
        database: PgDatabase,
        writers: usize,
        max: usize,
        body: BatchBody<T, R>,
    ) -> Batcher<T, R> {
        let (sender, receiver) = mpsc::unbounded_channel::<Waiting<T, R>>();
        let receiver = Arc::new(Mutex::new(receiver));
        for _ in 0..writers.max(1) {
            let (database, receiver, body) = (database.clone(), Arc::clone(&receiver), Arc::clone(&body));
            tokio::spawn(async move {
                loop {
                    let mut taken = Vec::new();
                    {
                        let mut waiting = receiver.lock().await;
                        let Some(first) = waiting.recv().await else { return };
                        taken.push(first);
                        while taken.len() < max {
                            match waiting.try_recv() {
                                Ok(next) => taken.push(next),
                                // Nothing more waiting (or every sender gone): write what was taken.
                                Err(_) => break,
                            }
                        }
                    }
                    let (items, replies): (Vec<T>, Vec<_>) = taken.into_iter().unzip();
                    let written = body(database.clone(), Arc::new(items)).await;
                    match written {
                        Ok(results) if results.len() == replies.len() => {
                            for (reply, result) in replies.into_iter().zip(results) {
                                let _ = reply.send(Ok(result));
                            }
                        }
                        Ok(results) => {
                            let error = StoreError::Backend(format!(
                                "a batch of {} writes gave {} results",
                                replies.len(),
                                results.len()
                            ));
                            for reply in replies {
                                let _ = reply.send(Err(error.clone()));
                            }
                        }
                        Err(error) => {
                            for reply in replies {
                                let _ = reply.send(Err(error.clone()));
                            }
                        }
                    }
                }
            });
        }
        Batcher { sender }
    }

    /// Writes `item` with the next batch and returns its result once that batch committed.
    ///
    /// # Errors
    /// The batch's write failed (nothing of it was written), or the writers have stopped.
    pub(crate) async fn submit(&self, item: T) -> StoreResult<R> {
        let (reply, result) = oneshot::channel();
        self.sender.send((item, reply)).map_err(|_| StoreError::Closed)?;
        result.await.map_err(|_| StoreError::Closed)?
    }
}
