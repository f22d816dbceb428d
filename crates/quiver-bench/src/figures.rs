//! Figures every benchmark reports the same way.

use std::time::Duration;

/// The value at `fraction` (0.5 for the median) of `sorted`, by the nearest-rank method; `None` when empty.
pub(crate) fn percentile<T: Copy>(sorted: &[T], fraction: f64) -> Option<T> {
    if sorted.is_empty() {
        return None;
    }
    let index = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[index])
}

/// [`percentile`] of durations, in milliseconds (`NaN` when there are none).
pub(crate) fn percentile_ms(sorted: &[Duration], fraction: f64) -> f64 {
    percentile(sorted, fraction).map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        assert_eq!(percentile(&values, 0.5), Some(5));
        assert_eq!(percentile(&values, 0.99), Some(10));
        assert_eq!(percentile(&values, 0.0), Some(1));
        assert_eq!(percentile::<u64>(&[], 0.5), None);
    }
}
