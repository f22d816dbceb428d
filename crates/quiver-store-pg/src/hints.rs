//! Wake-ups between nodes: `NOTIFY` after a write that makes work due, `LISTEN` on a connection of its
//! own. They are hints only, so that a node starts work another node made due without waiting for its
//! next poll; every node also polls, and nothing depends on a hint arriving. Payloads are empty, and a
//! node sends at most one notification per channel per [`COALESCE`], however many writes it commits.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio_postgres::AsyncMessage;
use tokio_util::sync::CancellationToken;

/// What a hint says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// Messages may be due: wake the delivery worker.
    Due,
    /// A schedule or a wait deadline changed: wake the scheduler.
    Schedules,
    /// Vectors were written: catch the loaded indexes up with the feed.
    Vectors,
}

impl Hint {
    fn channel(self) -> &'static str {
        match self {
            Hint::Due => "quiver_due",
            Hint::Schedules => "quiver_schedules",
            Hint::Vectors => "quiver_vectors",
        }
    }

    fn of_channel(channel: &str) -> Option<Hint> {
        [Hint::Due, Hint::Schedules, Hint::Vectors]
            .into_iter()
            .find(|hint| hint.channel() == channel)
    }
}

/// How long a node gathers hints of one channel before it sends one notification for them.
pub const COALESCE: Duration = Duration::from_millis(20);

/// The sending side: a task per channel that turns any number of [`Hints::send`] calls into one
/// `NOTIFY` per [`COALESCE`].
#[derive(Debug)]
pub(crate) struct Hints {
    due: Arc<Notify>,
    schedules: Arc<Notify>,
    vectors: Arc<Notify>,
    stop: CancellationToken,
}

impl Hints {
    /// Starts the senders over `pool`'s connections.
    pub(crate) fn start(pool: deadpool_postgres::Pool) -> Hints {
        let stop = CancellationToken::new();
        let hints = Hints {
            due: Arc::new(Notify::new()),
            schedules: Arc::new(Notify::new()),
            vectors: Arc::new(Notify::new()),
            stop: stop.clone(),
        };
        for (hint, wanted) in [
            (Hint::Due, &hints.due),
            (Hint::Schedules, &hints.schedules),
            (Hint::Vectors, &hints.vectors),
        ] {
            let (wanted, pool, stop) = (Arc::clone(wanted), pool.clone(), stop.clone());
            tokio::spawn(async move {
                let sql = format!("NOTIFY {}", hint.channel());
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = wanted.notified() => {}
                    }
                    tokio::time::sleep(COALESCE).await;
                    let sent = match pool.get().await {
                        Ok(client) => client.batch_execute(&sql).await.map_err(|e| e.to_string()),
                        Err(error) => Err(error.to_string()),
                    };
                    if let Err(error) = sent {
                        tracing::debug!(%error, "a wake-up hint to other nodes was not sent");
                    }
                }
            });
        }
        hints
    }

    /// Asks for a notification on `hint`'s channel soon.
    pub(crate) fn send(&self, hint: Hint) {
        match hint {
            Hint::Due => self.due.notify_one(),
            Hint::Schedules => self.schedules.notify_one(),
            Hint::Vectors => self.vectors.notify_one(),
        }
    }
}

impl Drop for Hints {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The hints other nodes (and this one) send, until `stop`: a connection of its own listens, and
/// connects again a second after it is lost (hints sent meanwhile are missed; polling covers them).
pub(crate) fn listen(secured: crate::tls::Secured, stop: CancellationToken) -> mpsc::UnboundedReceiver<Hint> {
    let (sender, receiver) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while !stop.is_cancelled() {
            if let Err(error) = listen_once(&secured, &sender, &stop).await {
                tracing::warn!(%error, "listening for other nodes' hints failed; connecting again");
            }
            if sender.is_closed() {
                return;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    });
    receiver
}

async fn listen_once(
    secured: &crate::tls::Secured,
    sender: &mpsc::UnboundedSender<Hint>,
    stop: &CancellationToken,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = secured.connect().await?;
    let (messages, mut received) = mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(notification))) => {
                    if messages.send(Ok(notification.channel().to_owned())).is_err() {
                        return;
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    let _ = messages.send(Err(error));
                    return;
                }
                None => return,
            }
        }
    });
    let listening = client
        .batch_execute(&format!(
            "LISTEN {}; LISTEN {}; LISTEN {}",
            Hint::Due.channel(),
            Hint::Schedules.channel(),
            Hint::Vectors.channel()
        ))
        .await;
    if let Err(error) = listening {
        driver.abort();
        return Err(error);
    }
    let outcome = loop {
        tokio::select! {
            () = stop.cancelled() => break Ok(()),
            message = received.recv() => match message {
                Some(Ok(channel)) => {
                    if let Some(hint) = Hint::of_channel(&channel)
                        && sender.send(hint).is_err()
                    {
                        break Ok(());
                    }
                }
                Some(Err(error)) => break Err(error),
                None => break Ok(()),
            },
        }
    };
    driver.abort();
    outcome
}
