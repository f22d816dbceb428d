//! Group commit for PostgreSQL: writes that arrive together share one transaction (one commit, one WAL
//! flush) instead of paying one each, as the SQLite writer's group commit does. A few writers run at
//! once, each taking whatever is waiting when it starts a batch, so the batches grow with the load and a
//! lone write waits for nobody, except writes that may wait (a [`Hold`]): those wait a few milliseconds
//! for others. A batch's body chooses how it writes: most open a transaction, and a batch
//! that one statement can write sends only that statement (its own transaction, one round trip). A
//! writer whose commits are on a caller's critical path may run on a thread of its own
//! ([`Batcher::start_on_thread`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use quiver_core::StoreError;
use quiver_core::store::StoreResult;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{Mutex, mpsc, oneshot};

/// A batch's work: given its context (the database) and the items, one result per item, in order, all
/// written or none.
pub(crate) type BatchBody<C, T, R> = Arc<dyn Fn(C, Arc<Vec<T>>) -> BatchFuture<R> + Send + Sync>;

/// A batch's results, once written.
pub(crate) type BatchFuture<R> = Pin<Box<dyn Future<Output = StoreResult<Vec<R>>> + Send>>;

/// How long a batch of items that may wait holds for more, and which items may wait.
pub(crate) struct Hold<T> {
    /// The longest a batch waits, from its first item.
    pub(crate) time: std::time::Duration,
    /// Whether an item may wait for others.
    pub(crate) may_wait: fn(&T) -> bool,
}

impl<T> Clone for Hold<T> {
    fn clone(&self) -> Hold<T> {
        *self
    }
}

impl<T> Copy for Hold<T> {}

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
    /// Starts `writers` writer tasks over `context` (the database), each writing up to `max` items per
    /// transaction with `body`. They stop when the batcher is dropped. With `hold`, a batch whose items
    /// all may wait (by its test) waits up to its time from the first item for more, until `max` are
    /// taken or an item that may not wait comes.
    pub(crate) fn start_holding<C: Clone + Send + 'static>(
        context: C,
        writers: usize,
        max: usize,
        hold: Option<Hold<T>>,
        body: BatchBody<C, T, R>,
    ) -> Batcher<T, R> {
        let (sender, receiver) = mpsc::unbounded_channel::<Waiting<T, R>>();
        let receiver = Arc::new(Mutex::new(receiver));
        for _ in 0..writers.max(1) {
            tokio::spawn(write_batches(
                context.clone(),
                Arc::clone(&receiver),
                max,
                hold,
                Arc::clone(&body),
            ));
        }
        Batcher { sender }
    }

    /// As [`Batcher::start_holding`] with one writer and no hold, which runs on a thread of its own
    /// (named `name`, with a runtime of its own) instead of the shared runtime's workers. A writer whose
    /// batches follow one another (one transaction in flight) then starts the next as soon as the last
    /// one's answer arrives, rather than after every task queued on a busy worker before it: with
    /// PostgreSQL's commit chain on the shared workers, a batch took about three times as long as
    /// PostgreSQL's execution and commit of it (BENCHMARKS.md, "session 42"). The body's connections
    /// should be made on that thread too (their drivers run where they were made). Where the thread or
    /// its runtime cannot be made, the writer runs on the shared runtime.
    pub(crate) fn start_on_thread<C: Clone + Send + 'static>(
        name: &str,
        context: C,
        max: usize,
        body: BatchBody<C, T, R>,
    ) -> Batcher<T, R> {
        let (sender, receiver) = mpsc::unbounded_channel::<Waiting<T, R>>();
        let receiver = Arc::new(Mutex::new(receiver));
        let writer = write_batches(context, receiver, max, None, body);
        let shared = tokio::runtime::Handle::current();
        // The thread is handed its work through a channel, so that the work is still here to run on the
        // shared runtime if the thread cannot be made.
        let (hand, handed) = std::sync::mpsc::channel();
        let thread_name = name.to_owned();
        let spawned = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
            let Ok(writer) = handed.recv() else { return };
            match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(runtime) => runtime.block_on(writer),
                Err(error) => {
                    tracing::warn!(%error, name = thread_name,
                        "no runtime for a batch writer's thread: it runs on the shared one");
                    shared.spawn(writer);
                }
            }
        });
        match spawned {
            Ok(_) => {
                let _ = hand.send(writer);
            }
            Err(error) => {
                tracing::warn!(%error, name, "no thread for a batch writer: it runs on the shared runtime");
                tokio::spawn(writer);
            }
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

/// One writer: takes what is waiting (holding for more as `hold` allows), writes it with `body`, answers
/// each item, and again, until the batcher is dropped.
async fn write_batches<C: Clone, T, R>(
    context: C,
    receiver: Arc<Mutex<mpsc::UnboundedReceiver<Waiting<T, R>>>>,
    max: usize,
    hold: Option<Hold<T>>,
    body: BatchBody<C, T, R>,
) {
    loop {
        let mut taken = Vec::new();
        {
            let mut waiting = receiver.lock().await;
            let Some(first) = waiting.recv().await else { return };
            let mut until = hold
                .filter(|h| (h.may_wait)(&first.0))
                .map(|h| tokio::time::Instant::now() + h.time);
            taken.push(first);
            while taken.len() < max {
                let next = match waiting.try_recv() {
                    Ok(next) => next,
                    Err(TryRecvError::Empty) => match until {
                        Some(until) => match tokio::time::timeout_at(until, waiting.recv()).await {
                            Ok(Some(next)) => next,
                            _ => break,
                        },
                        // Nothing more waiting: write what was taken.
                        None => break,
                    },
                    Err(TryRecvError::Disconnected) => break,
                };
                if until.is_some() && hold.is_some_and(|h| !(h.may_wait)(&next.0)) {
                    until = None;
                }
                taken.push(next);
            }
        }
        let (items, replies): (Vec<T>, Vec<_>) = taken.into_iter().unzip();
        let written = body(context.clone(), Arc::new(items)).await;
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
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// The batches written, each as its items.
    type Written = Arc<std::sync::Mutex<Vec<Vec<u32>>>>;

    /// A batcher whose batches record their items; items above 100 may wait.
    fn recording(max: usize, hold: Duration) -> (Batcher<u32, ()>, Written) {
        let batches = Written::default();
        let body: BatchBody<Written, u32, ()> = Arc::new(|batches, items| {
            Box::pin(async move {
                batches.lock().expect("not poisoned").push(items.to_vec());
                Ok(vec![(); items.len()])
            })
        });
        let hold = Hold {
            time: hold,
            may_wait: |item: &u32| *item > 100,
        };
        let batcher = Batcher::start_holding(Arc::clone(&batches), 1, max, Some(hold), body);
        (batcher, batches)
    }

    #[tokio::test]
    async fn a_writer_on_a_thread_of_its_own_writes_there_and_answers_each_item() {
        let threads = Arc::new(std::sync::Mutex::new(Vec::new()));
        let body: BatchBody<Arc<std::sync::Mutex<Vec<Option<String>>>>, u32, u32> =
            Arc::new(|threads, items| {
                Box::pin(async move {
                    let name = std::thread::current().name().map(str::to_owned);
                    threads.lock().expect("not poisoned").push(name);
                    Ok(items.iter().map(|item| item * 10).collect())
                })
            });
        let batcher = Arc::new(Batcher::start_on_thread(
            "test-writer",
            Arc::clone(&threads),
            8,
            body,
        ));
        let writes: Vec<_> = (1..=20)
            .map(|item| {
                let batcher = Arc::clone(&batcher);
                tokio::spawn(async move { batcher.submit(item).await })
            })
            .collect();
        for (item, write) in (1..=20).zip(writes) {
            assert_eq!(write.await.expect("joins").expect("written"), item * 10);
        }
        let threads = threads.lock().expect("not poisoned");
        assert!(!threads.is_empty());
        assert!(
            threads.iter().all(|name| name.as_deref() == Some("test-writer")),
            "every batch was written on the writer's thread: {threads:?}"
        );
    }

    #[tokio::test]
    async fn items_that_may_wait_arriving_apart_share_a_batch() {
        let (batcher, batches) = recording(3, Duration::from_secs(30));
        let batcher = Arc::new(batcher);
        let mut writes = Vec::new();
        for item in [101, 102, 103] {
            let batcher = Arc::clone(&batcher);
            writes.push(tokio::spawn(async move { batcher.submit(item).await }));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for write in writes {
            write.await.expect("joins").expect("written");
        }
        assert_eq!(
            *batches.lock().expect("not poisoned"),
            [vec![101, 102, 103]],
            "one batch, written once it was full"
        );
    }

    #[tokio::test]
    async fn an_item_that_may_not_wait_ends_the_hold() {
        let (batcher, batches) = recording(100, Duration::from_secs(30));
        let batcher = Arc::new(batcher);
        let started = Instant::now();
        let held = tokio::spawn({
            let batcher = Arc::clone(&batcher);
            async move { batcher.submit(101).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        batcher.submit(7).await.expect("written");
        held.await.expect("joins").expect("written");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "written without waiting out the hold"
        );
        assert_eq!(*batches.lock().expect("not poisoned"), [vec![101, 7]]);
    }

    #[tokio::test]
    async fn an_item_that_may_not_wait_is_written_at_once() {
        let (batcher, batches) = recording(100, Duration::from_secs(30));
        let started = Instant::now();
        batcher.submit(7).await.expect("written");
        assert!(started.elapsed() < Duration::from_secs(10), "not held");
        assert_eq!(*batches.lock().expect("not poisoned"), [vec![7]]);
    }
}
