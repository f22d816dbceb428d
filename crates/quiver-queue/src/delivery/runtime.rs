//! The threads deliveries run on (`queue.delivery_threads`).
//!
//! A delivery and a publish are both short tasks, and on the shared runtime a delivery's answer, once it
//! arrives, waits in a worker's queue behind every publish queued there before it. On threads of their
//! own, deliveries are scheduled by the kernel beside the HTTP workers: their answers are read as they
//! arrive, a message's record reaches its store sooner, and the publishes' workers do only publishes.
//! On a 2-core machine, sustained publish-and-deliver ran 1.39x as fast on SQLite and 1.07x on
//! PostgreSQL this way; a backlog drains slower on PostgreSQL (0.84 to 0.89x), each claimed message
//! crossing to the delivery thread (BENCHMARKS.md, "session 44").

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;
use tracing::warn;

/// Name of the deliveries' threads.
const THREAD_NAME: &str = "quiver-deliver";

/// A runtime of its own for deliveries. Its tasks stop when it is dropped: drop it once they finished
/// (after the supervisor's wait).
#[derive(Debug)]
pub struct DeliveryRuntime {
    handle: Handle,
    /// Told when the runtime is dropped: its thread then returns, and the runtime with its tasks goes.
    stop: Option<oneshot::Sender<()>>,
}

impl DeliveryRuntime {
    /// A runtime of `threads` threads for deliveries (one: a single thread, which also waits for its
    /// timers and connections). `None` with no threads, or, with a warning, when the runtime or its
    /// thread cannot be made: deliveries then run on the caller's runtime.
    pub fn start(threads: usize) -> Option<DeliveryRuntime> {
        if threads == 0 {
            return None;
        }
        let built = if threads == 1 {
            Builder::new_current_thread().enable_all().build()
        } else {
            Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name(THREAD_NAME)
                .enable_all()
                .build()
        };
        let runtime = match built {
            Ok(runtime) => runtime,
            Err(error) => {
                warn!(%error, "no runtime for deliveries: they run on the shared one");
                return None;
            }
        };
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        // The runtime is handed to its thread through a channel, so that it is still here to shut down
        // if the thread cannot be made (dropping a runtime where it may block is refused).
        let (hand, handed) = std::sync::mpsc::channel::<tokio::runtime::Runtime>();
        // A current-thread runtime runs its tasks while this thread waits in `block_on`; a multi-thread
        // one on its own workers. Either is dropped there, off the async runtime.
        let spawned = std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .spawn(move || {
                if let Ok(runtime) = handed.recv() {
                    let _ = runtime.block_on(stopped);
                }
            });
        match spawned {
            Ok(_) => {
                let _ = hand.send(runtime);
                Some(DeliveryRuntime {
                    handle,
                    stop: Some(stop),
                })
            }
            Err(error) => {
                warn!(%error, "no thread for deliveries: they run on the shared runtime");
                runtime.shutdown_background();
                None
            }
        }
    }

    /// Where deliveries are spawned.
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for DeliveryRuntime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn thread_name(runtime: &DeliveryRuntime) -> Option<String> {
        runtime
            .handle()
            .spawn(async { std::thread::current().name().map(str::to_owned) })
            .await
            .expect("the task ran")
    }

    #[tokio::test]
    async fn deliveries_run_on_threads_of_their_own_and_stop_with_the_runtime() {
        for threads in [1, 2] {
            let runtime = DeliveryRuntime::start(threads).expect("a runtime");
            assert_eq!(thread_name(&runtime).await.as_deref(), Some(THREAD_NAME));
            let (_held, waiting) = oneshot::channel::<()>();
            let pending = runtime.handle().spawn(async move {
                let _ = waiting.await;
            });
            drop(runtime);
            let ended = pending
                .await
                .expect_err("a task left when the runtime stops is cancelled");
            assert!(ended.is_cancelled());
        }
    }

    #[tokio::test]
    async fn no_threads_means_the_shared_runtime() {
        assert!(DeliveryRuntime::start(0).is_none());
    }
}
