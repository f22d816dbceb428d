//! Threads kept for the parallel steps of a graph build (`Crew`). A build on two threads runs two
//! parallel steps a batch (the neighbour searches, then the prunings), about 1,600 for 100,000 vectors;
//! a thread spawned for each step started its work 300 us after the step began on a Zen 4 instance,
//! summed 0.47 s of a 14 s build (BENCHMARKS.md, session 37). A kept thread spins for a while after
//! each step, so the next one, after the short serial part between them, starts at once.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::time::{Duration, Instant};

/// How long a kept thread looks for the next step before it sleeps: longer than the serial part
/// between two steps (0.3 to 1 ms a batch of 128), short enough that a finished build wastes little.
const SPIN: Duration = Duration::from_millis(2);

/// A step's work, borrowed for the step only (see [`Crew::alongside`]).
type Job = &'static (dyn Fn() + Sync);

/// The kept threads and the step they are offered.
struct Crew {
    /// Held by the thread whose step the crew runs: one step at a time.
    seat: Mutex<()>,
    offer: Mutex<Offer>,
    /// The offer's generation, read without the lock while a kept thread spins.
    generation: AtomicU64,
    woken: Condvar,
    /// Kept threads that took the current step and finished it.
    finished: AtomicUsize,
    /// Kept threads.
    size: usize,
}

/// The step on offer.
struct Offer {
    generation: u64,
    /// `None` once the thread that offered it has done its own part and withdrawn it.
    job: Option<Job>,
    /// How many kept threads may still take it.
    places: usize,
    /// How many took it.
    taken: usize,
    /// Kept threads asleep, waiting for an offer.
    sleeping: usize,
    /// The first panic of a kept thread in this step, raised again in the thread that offered it.
    panic: Option<Box<dyn Any + Send>>,
}

/// The crew of this process: one kept thread for each core but the caller's, started on first use.
fn crew() -> &'static Crew {
    static CREW: OnceLock<&'static Crew> = OnceLock::new();
    CREW.get_or_init(|| {
        let size = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) - 1;
        let crew: &'static Crew = Box::leak(Box::new(Crew {
            seat: Mutex::new(()),
            offer: Mutex::new(Offer {
                generation: 0,
                job: None,
                places: 0,
                taken: 0,
                sleeping: 0,
                panic: None,
            }),
            generation: AtomicU64::new(0),
            woken: Condvar::new(),
            finished: AtomicUsize::new(0),
            size,
        }));
        for at in 0..size {
            // A crew that cannot start a thread has fewer: a step then runs on the threads there are.
            let _ = std::thread::Builder::new()
                .name(format!("quiver-build-{at}"))
                .spawn(move || crew.serve());
        }
        crew
    })
}

/// Runs `job` on up to `helpers` kept threads while the calling thread runs `own`, and returns `own`'s
/// answer once every kept thread that took `job` has finished it (a thread that only wakes after `own`
/// is done does not take it). `None` where another step holds the crew, or the process keeps no
/// threads: the caller then runs the step some other way. A panic of `job` on a kept thread is raised
/// again here.
pub(super) fn alongside<R>(helpers: usize, job: &(dyn Fn() + Sync), own: impl FnOnce() -> R) -> Option<R> {
    let crew = crew();
    if helpers == 0 || crew.size == 0 {
        return None;
    }
    let _seat = match crew.seat.try_lock() {
        Ok(seat) => seat,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return None,
    };
    crew.offer(helpers, job);
    // Withdraws the offer and waits for the threads that took it, even when `own` panics: `job` is
    // borrowed only until then.
    let withdrawn = Withdraw(crew);
    let answer = own();
    drop(withdrawn);
    if let Some(panic) = crew.lock().panic.take() {
        resume_unwind(panic);
    }
    Some(answer)
}

/// Withdraws the crew's offer when dropped (see [`alongside`]).
struct Withdraw(&'static Crew);

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.0.withdraw();
    }
}

impl Crew {
    fn lock(&self) -> MutexGuard<'_, Offer> {
        self.offer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Offers `job` to `places` kept threads, waking those asleep.
    #[expect(
        unsafe_code,
        reason = "a kept thread runs a step's borrowed work, as a scoped thread would"
    )]
    fn offer(&self, places: usize, job: &(dyn Fn() + Sync)) {
        // SAFETY: only the lifetime changes. The reference is copied out of the offer only while the
        // offer holds it, and `alongside` withdraws it (`Withdraw`, which also runs while a panic
        // unwinds) and waits until every thread that copied it has finished calling it before it
        // returns, so no use outlives the borrow.
        let job: Job = unsafe { std::mem::transmute::<&(dyn Fn() + Sync), Job>(job) };
        self.finished.store(0, Ordering::Relaxed);
        let mut offer = self.lock();
        offer.generation += 1;
        offer.job = Some(job);
        offer.places = places;
        offer.taken = 0;
        offer.panic = None;
        self.generation.store(offer.generation, Ordering::Release);
        if offer.sleeping > 0 {
            self.woken.notify_all();
        }
    }

    /// Takes the offer back and waits for the kept threads that took it to finish.
    fn withdraw(&self) {
        let taken = {
            let mut offer = self.lock();
            offer.job = None;
            offer.taken
        };
        let mut spins = 0u32;
        while self.finished.load(Ordering::Acquire) < taken {
            // A kept thread finishing its last item: a search or a pruning, well under a millisecond.
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(1024) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// A kept thread's life: waits for each offer, takes it where a place is left, and runs it.
    fn serve(&self) {
        let mut seen = 0;
        loop {
            seen = self.next_generation(seen);
            let job = {
                let mut offer = self.lock();
                match offer.job {
                    Some(job) if offer.generation == seen && offer.taken < offer.places => {
                        offer.taken += 1;
                        Some(job)
                    }
                    _ => None,
                }
            };
            let Some(job) = job else {
                continue;
            };
            if let Err(panic) = catch_unwind(AssertUnwindSafe(job)) {
                self.lock().panic.get_or_insert(panic);
            }
            self.finished.fetch_add(1, Ordering::Release);
        }
    }

    /// Waits for an offer newer than `seen`, spinning for [`SPIN`] and then asleep; returns its
    /// generation.
    fn next_generation(&self, seen: u64) -> u64 {
        let started = Instant::now();
        let mut spins = 0u32;
        loop {
            let generation = self.generation.load(Ordering::Acquire);
            if generation != seen {
                return generation;
            }
            spins = spins.wrapping_add(1);
            if !spins.is_multiple_of(256) {
                std::hint::spin_loop();
            } else if started.elapsed() > SPIN {
                break;
            } else {
                // A thread waiting for this core (the caller's, where the two share one) gets it.
                std::thread::yield_now();
            }
        }
        let mut offer = self.lock();
        offer.sleeping += 1;
        while offer.generation == seen {
            offer = self.woken.wait(offer).unwrap_or_else(PoisonError::into_inner);
        }
        offer.sleeping -= 1;
        offer.generation
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::alongside;

    fn cores() -> usize {
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    }

    /// `alongside`, asked again while another step holds the crew: `cargo test` runs the tests as
    /// threads of one process, where a test that builds a graph on two threads may hold it.
    fn seated<R>(helpers: usize, job: &(dyn Fn() + Sync), own: impl Fn() -> R) -> R {
        loop {
            if let Some(answer) = alongside(helpers, job, &own) {
                return answer;
            }
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_kept_thread_runs_the_step_and_has_finished_it_when_the_step_returns() {
        if cores() < 2 {
            return;
        }
        let (started, finished) = (AtomicBool::new(false), AtomicBool::new(false));
        let job = || {
            assert!(
                std::thread::current()
                    .name()
                    .is_some_and(|name| name.starts_with("quiver-build"))
            );
            started.store(true, Ordering::SeqCst);
            // Still working when the caller's own part is done.
            std::thread::sleep(std::time::Duration::from_millis(50));
            finished.store(true, Ordering::SeqCst);
        };
        let own = || {
            while !started.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
        };
        seated(1, &job, own);
        assert!(finished.load(Ordering::SeqCst));
    }

    #[test]
    fn lanes_that_share_a_step_do_each_item_once() {
        for _ in 0..200 {
            let next = AtomicUsize::new(0);
            let done: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
            let lane = || {
                while let Some(item) = done.get(next.fetch_add(1, Ordering::Relaxed)) {
                    item.fetch_add(1, Ordering::Relaxed);
                }
            };
            let ran = if cores() > 1 {
                seated(1, &lane, lane);
                Some(())
            } else {
                alongside(1, &lane, lane)
            };
            assert_eq!(ran.is_some(), cores() > 1);
            assert!(
                done.iter()
                    .all(|item| item.load(Ordering::Relaxed) == ran.map_or(0, |()| 1))
            );
        }
    }

    #[test]
    fn a_step_begun_while_another_holds_the_crew_is_refused() {
        if cores() < 2 {
            return;
        }
        let (holding, release) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|scope| {
            let first = scope.spawn(|| {
                seated(1, &|| {}, || {
                    holding.store(true, Ordering::SeqCst);
                    while !release.load(Ordering::SeqCst) {
                        std::hint::spin_loop();
                    }
                })
            });
            while !holding.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            assert_eq!(alongside(1, &|| {}, || 7), None);
            release.store(true, Ordering::SeqCst);
            first.join().expect("the first step ends");
        });
        assert_eq!(seated(1, &|| {}, || 7), 7);
    }

    #[test]
    fn a_panic_on_a_kept_thread_is_raised_in_the_caller() {
        if cores() < 2 {
            return;
        }
        let started = AtomicBool::new(false);
        let job = || {
            started.store(true, Ordering::SeqCst);
            panic!("a kept thread's item failed");
        };
        // The caller waits for the kept thread to take the step, so that it is the one that panics.
        let own = || {
            while !started.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| seated(1, &job, own)));
        assert!(outcome.is_err());
        // The crew serves the next step as before.
        assert_eq!(seated(1, &|| {}, || 7), 7);
    }
}
