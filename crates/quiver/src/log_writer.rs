//! Log lines written to standard error by a thread of their own. A request's line is appended to a
//! shared buffer (a copy under a lock, no system call), and the thread writes whatever has gathered in
//! one `write`: at a few thousand requests per second, one system call per line cost more than the
//! rest of the request's logging together.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// Lines may gather up to this many bytes while standard error is slow; past it, loggers wait for the
/// thread (as they would for a direct write) instead of growing memory.
const MOST_PENDING_BYTES: usize = 8 << 20;

/// How long the thread lets lines gather before it writes them.
const GATHERING: std::time::Duration = std::time::Duration::from_millis(20);

/// A gathering this large is written at once.
const WRITE_AT_BYTES: usize = 256 << 10;

/// Lines not yet written, and whether the process is done logging.
#[derive(Default)]
struct Pending {
    lines: Vec<u8>,
    is_closed: bool,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<Pending>,
    /// Signalled when lines arrive in an empty buffer, when the buffer reaches `WRITE_AT_BYTES`, and at
    /// close.
    arrived: Condvar,
    /// Signalled when the thread has written everything it took.
    written: Condvar,
}

/// What the subscriber writes through: cheap to clone, one per event.
#[derive(Clone)]
pub(crate) struct BackgroundWriter(Arc<Shared>);

/// Writes every line logged before it is dropped, then stops the thread.
pub(crate) struct FlushOnDrop {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Starts the writing thread. When it cannot be started, lines are written by the caller instead.
pub(crate) fn start() -> (BackgroundWriter, FlushOnDrop) {
    let shared = Arc::new(Shared::default());
    let worker = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name("quiver-log".into())
        .spawn(move || write_lines(&worker))
        .ok();
    if thread.is_none() {
        shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_closed = true;
    }
    (
        BackgroundWriter(Arc::clone(&shared)),
        FlushOnDrop { shared, thread },
    )
}

fn write_lines(shared: &Shared) {
    let mut taken = Vec::new();
    loop {
        let is_closed = {
            let mut pending = shared.pending.lock().unwrap_or_else(PoisonError::into_inner);
            while pending.lines.is_empty() && !pending.is_closed {
                pending = shared
                    .arrived
                    .wait(pending)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            // Lets the lines of the next moments join these: one wake-up and one write per gathering,
            // not per line. Closing, or a large gathering, ends the wait early.
            if !pending.is_closed && pending.lines.len() < WRITE_AT_BYTES {
                pending = shared
                    .arrived
                    .wait_timeout(pending, GATHERING)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            std::mem::swap(&mut taken, &mut pending.lines);
            pending.is_closed
        };
        // Nowhere to report a failed write of the log itself.
        let _ = std::io::stderr().lock().write_all(&taken);
        taken.clear();
        shared.written.notify_all();
        if is_closed
            && shared
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .lines
                .is_empty()
        {
            return;
        }
    }
}

impl Write for BackgroundWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut pending = self.0.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.is_closed {
            drop(pending);
            return std::io::stderr().lock().write(bytes);
        }
        while pending.lines.len() > MOST_PENDING_BYTES && !pending.is_closed {
            pending = self
                .0
                .written
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let was_empty = pending.lines.is_empty();
        let was_small = pending.lines.len() < WRITE_AT_BYTES;
        pending.lines.extend_from_slice(bytes);
        let is_large = pending.lines.len() >= WRITE_AT_BYTES;
        drop(pending);
        if was_empty || (was_small && is_large) {
            self.0.arrived.notify_one();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for BackgroundWriter {
    type Writer = BackgroundWriter;

    fn make_writer(&'a self) -> BackgroundWriter {
        self.clone()
    }
}

impl Drop for FlushOnDrop {
    fn drop(&mut self) {
        self.shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_closed = true;
        self.shared.arrived.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
