//! Cron expressions (`Svc-Cron`, with `CRON_TZ=`): parsing any text, and finding the next firings of
//! what parses, never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quiver_core::Timestamp;
use quiver_queue::schedule::CronSchedule;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(schedule) = CronSchedule::parse(text) {
        let mut after = Timestamp::from_millis(1_795_000_000_000);
        for _ in 0..3 {
            match schedule.next_after(after) {
                Some(next) => {
                    assert!(next > after, "the next firing of `{text}` is not later");
                    after = next;
                }
                None => break,
            }
        }
    }
});
