//! What happens after a delivery attempt: a pure decision from the attempt's result and the message's
//! retry settings. The delivery worker applies it; it never computes one.

use std::time::Duration;

use quiver_core::Timestamp;

use crate::duration::parse_duration;
use crate::retry_delay::RetryDelay;

/// The longest any computed or requested delay may be.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(86_400);

/// What the destination did with one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptReport {
    /// The response status, or `None` when no response came (connection error, timeout).
    pub status: Option<u16>,
    /// A delay the destination asked for (`Retry-After` and its cousins), already parsed.
    pub requested_delay: Option<Duration>,
    /// The destination answered 489 with `Svc-NonRetryable-Error: true`.
    pub non_retryable: bool,
}

impl AttemptReport {
    /// Whether the attempt succeeded (any 2xx).
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// The decision after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// A 2xx: the message is done.
    Delivered,
    /// Try again at this time.
    RetryAt(Timestamp),
    /// No retries left, or the destination said not to retry: move to the dead letter queue.
    DeadLettered,
}

/// The default backoff before retry `n` (n = 1 for the first retry): `min(86400, e^(2.5 n))` seconds.
pub fn default_backoff(n: u32) -> Duration {
    let seconds = (2.5 * f64::from(n)).exp().min(MAX_RETRY_DELAY.as_secs_f64());
    Duration::from_secs_f64(seconds)
}

/// Decides the outcome of an attempt that had `retried` retries before it, for a message allowed
/// `max_retries`, with its optional delay expression, at time `now`.
pub fn decide(
    report: &AttemptReport,
    retried: u32,
    max_retries: u32,
    retry_delay: Option<&RetryDelay>,
    now: Timestamp,
) -> DeliveryOutcome {
    if report.succeeded() {
        return DeliveryOutcome::Delivered;
    }
    if report.non_retryable || retried >= max_retries {
        return DeliveryOutcome::DeadLettered;
    }
    let delay = match (report.requested_delay, retry_delay) {
        (Some(requested), _) if requested <= MAX_RETRY_DELAY => requested,
        (_, Some(expression)) => Duration::from_millis(expression.millis(retried)).min(MAX_RETRY_DELAY),
        (_, None) => default_backoff(retried + 1),
    };
    DeliveryOutcome::RetryAt(now.saturating_add(delay))
}

/// Reads a requested delay from a response header value: whole seconds, or a duration like `6m5s`.
/// Dates and other forms give `None` (the default backoff applies).
pub fn parse_requested_delay(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    parse_duration(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_millis(1_000_000);

    fn failed(status: u16) -> AttemptReport {
        AttemptReport {
            status: Some(status),
            requested_delay: None,
            non_retryable: false,
        }
    }

    #[test]
    fn the_default_backoff_is_e_to_the_two_and_a_half_n_seconds_capped_at_a_day() {
        assert_eq!(default_backoff(1).as_secs(), 12);
        assert_eq!(default_backoff(2).as_secs(), 148);
        assert_eq!(default_backoff(3).as_secs(), 1808);
        assert_eq!(default_backoff(10).as_secs(), 86_400);
    }

    #[test]
    fn a_2xx_delivers_and_a_failure_retries_until_retries_run_out() {
        assert_eq!(decide(&failed(204), 0, 3, None, NOW), DeliveryOutcome::Delivered);
        let first_retry = decide(&failed(500), 0, 3, None, NOW);
        assert_eq!(
            first_retry,
            DeliveryOutcome::RetryAt(NOW.saturating_add(default_backoff(1)))
        );
        assert_eq!(
            decide(&failed(500), 3, 3, None, NOW),
            DeliveryOutcome::DeadLettered
        );
        assert_eq!(
            decide(&failed(500), 0, 0, None, NOW),
            DeliveryOutcome::DeadLettered
        );
        let no_response = AttemptReport {
            status: None,
            ..failed(0)
        };
        assert!(matches!(
            decide(&no_response, 1, 3, None, NOW),
            DeliveryOutcome::RetryAt(_)
        ));
    }

    #[test]
    fn an_expression_or_a_requested_delay_replaces_the_backoff() {
        let expression = RetryDelay::parse("1000 * (retried + 1)").unwrap();
        let at = decide(&failed(500), 2, 5, Some(&expression), NOW);
        assert_eq!(at, DeliveryOutcome::RetryAt(Timestamp::from_millis(1_003_000)));
        let asked = AttemptReport {
            requested_delay: Some(Duration::from_secs(7)),
            ..failed(429)
        };
        assert_eq!(
            decide(&asked, 0, 3, Some(&expression), NOW),
            DeliveryOutcome::RetryAt(Timestamp::from_millis(1_007_000))
        );
        let too_long = AttemptReport {
            requested_delay: Some(Duration::from_secs(90_000)),
            ..failed(429)
        };
        assert_eq!(
            decide(&too_long, 0, 3, None, NOW),
            DeliveryOutcome::RetryAt(NOW.saturating_add(default_backoff(1))),
            "a request beyond a day is ignored"
        );
    }

    #[test]
    fn a_non_retryable_489_goes_straight_to_the_dead_letter_queue() {
        let refused = AttemptReport {
            non_retryable: true,
            ..failed(489)
        };
        assert_eq!(decide(&refused, 0, 3, None, NOW), DeliveryOutcome::DeadLettered);
    }

    #[test]
    fn requested_delays_read_seconds_and_durations() {
        assert_eq!(parse_requested_delay("120"), Some(Duration::from_secs(120)));
        assert_eq!(parse_requested_delay("6m5s"), Some(Duration::from_secs(365)));
        assert_eq!(parse_requested_delay("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
