//! `Svc-Retry-Delay` expressions: parsing any text, and evaluating what parses for every retry, never
//! panics (no overflow, no division by zero).
#![no_main]

use libfuzzer_sys::fuzz_target;
use quiver_queue::retry_delay::RetryDelay;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(delay) = RetryDelay::parse(text) {
        for retried in [0, 1, 2, 5, 20, 1_000, u32::MAX] {
            let _ = delay.millis(retried);
        }
    }
    let _ = quiver_queue::duration::parse_duration(text);
});
