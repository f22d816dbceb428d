//! Time, injected. Domain code never reads the system clock: it asks a [`Clock`], so tests can drive
//! time by hand with [`ManualClock`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// A point in time: milliseconds since the Unix epoch, UTC.
///
/// ```
/// use std::time::Duration;
/// use quiver_core::Timestamp;
///
/// let start = Timestamp::from_millis(1_700_000_000_000);
/// let later = start.saturating_add(Duration::from_secs(90));
/// assert_eq!(later.duration_since(start), Duration::from_secs(90));
/// assert_eq!(later.as_secs(), 1_700_000_090);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// A timestamp `millis` milliseconds after the epoch.
    pub const fn from_millis(millis: i64) -> Self {
        Timestamp(millis)
    }

    /// Milliseconds since the epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Whole seconds since the epoch (rounded down).
    pub const fn as_secs(self) -> i64 {
        self.0.div_euclid(1000)
    }

    /// This time plus `duration`, saturating at the far future.
    pub fn saturating_add(self, duration: Duration) -> Self {
        let millis = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        Timestamp(self.0.saturating_add(millis))
    }

    /// This time minus `duration`, saturating at the far past.
    pub fn saturating_sub(self, duration: Duration) -> Self {
        let millis = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
        Timestamp(self.0.saturating_sub(millis))
    }

    /// How long after `earlier` this time is; zero when it is not later.
    pub fn duration_since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// A future that completes at a deadline.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// The source of time for scheduling, leases, retries and metering.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;

    /// Completes once [`Clock::now`] has reached `deadline`.
    ///
    /// # Cancel safety
    /// Dropping the future is always safe: it holds no state but the deadline.
    fn sleep_until(&self, deadline: Timestamp) -> Sleep;
}

/// The operating system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl SystemClock {
    /// A shareable system clock.
    pub fn shared() -> Arc<dyn Clock> {
        Arc::new(SystemClock)
    }
}

/// Reads the wall clock. The one place in Quiver allowed to.
#[expect(
    clippy::disallowed_methods,
    reason = "this is the clock every other crate is given"
)]
pub fn wall_clock_now() -> Timestamp {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    Timestamp(i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX))
}

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        wall_clock_now()
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        let wait = deadline.duration_since(self.now());
        Box::pin(tokio::time::sleep(wait))
    }
}

/// A clock that moves only when told to. Sleepers wake as soon as the time passes their deadline.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<watch::Sender<Timestamp>>,
}

impl ManualClock {
    /// A manual clock reading `start`.
    pub fn new(start: Timestamp) -> Self {
        let (sender, _) = watch::channel(start);
        ManualClock {
            now: Arc::new(sender),
        }
    }

    /// A manual clock starting at the current wall-clock time.
    pub fn starting_now() -> Self {
        Self::new(wall_clock_now())
    }

    /// Moves time forward by `duration` and wakes every sleeper whose deadline has passed.
    pub fn advance(&self, duration: Duration) {
        self.now.send_modify(|now| *now = now.saturating_add(duration));
    }

    /// Sets the time. Moving it backwards is allowed (tests of clock skew) but wakes nobody.
    pub fn set(&self, time: Timestamp) {
        self.now.send_replace(time);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.borrow()
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        let mut receiver = self.now.subscribe();
        Box::pin(async move {
            // The sender lives as long as the clock; if it is gone, nobody can move time, so never wake.
            if receiver.wait_for(|now| *now >= deadline).await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn manual_clock_wakes_a_sleeper_only_once_its_deadline_passes() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000));
        let sleeper = tokio::spawn(clock.sleep_until(Timestamp::from_millis(5_000)));
        clock.advance(Duration::from_secs(2));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(2));
        sleeper.await.unwrap();
        assert_eq!(clock.now(), Timestamp::from_millis(5_000));
    }

    #[test]
    fn duration_since_an_later_time_is_zero() {
        let early = Timestamp::from_millis(10);
        assert_eq!(early.duration_since(Timestamp::from_millis(20)), Duration::ZERO);
        assert_eq!(Timestamp::from_millis(1_999).as_secs(), 1);
    }
}
