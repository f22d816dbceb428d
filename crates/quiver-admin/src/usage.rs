//! Usage of an index per UTC minute, and the statistics computed from it: counters over UTC days and
//! months, and time series of exactly 60 (or, for 30 days, 240) points aligned to multiples of their
//! interval since the epoch, oldest first, the last one the current partial interval.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Latency buckets: bucket `i` holds latencies below `2^(i/4)` microseconds (about 19 % apart).
const LATENCY_BUCKETS: usize = 120;

/// A latency histogram with logarithmic buckets; merges exactly, answers percentiles approximately.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    /// Observations.
    pub count: u64,
    /// Sum of observations, in microseconds.
    pub sum_micros: u64,
    /// Counts per bucket (trailing empty buckets left out).
    pub buckets: Vec<u64>,
}

fn bucket_of(micros: u64) -> usize {
    if micros == 0 {
        return 0;
    }
    (((micros as f64).log2() * 4.0).floor() as usize + 1).min(LATENCY_BUCKETS - 1)
}

fn bucket_upper_micros(bucket: usize) -> f64 {
    2f64.powf(bucket as f64 / 4.0)
}

impl Latencies {
    /// Adds one observation.
    pub fn record(&mut self, micros: u64) {
        let bucket = bucket_of(micros);
        if self.buckets.len() <= bucket {
            self.buckets.resize(bucket + 1, 0);
        }
        self.buckets[bucket] += 1;
        self.count += 1;
        self.sum_micros = self.sum_micros.saturating_add(micros);
    }

    /// Adds another histogram.
    pub fn merge(&mut self, other: &Latencies) {
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum_micros = self.sum_micros.saturating_add(other.sum_micros);
    }

    /// Mean in milliseconds (0 without observations).
    pub fn mean_millis(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_micros as f64 / self.count as f64 / 1000.0
        }
    }

    /// The `quantile` (0 to 1) in milliseconds: the upper bound of the bucket that holds it.
    pub fn quantile_millis(&self, quantile: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((self.count as f64) * quantile).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return bucket_upper_micros(bucket) / 1000.0;
            }
        }
        0.0
    }
}

/// What happened to one index in one UTC minute.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MinuteUsage {
    /// Query operations (query, fetch, range, resumable queries, random, info).
    pub queries: u64,
    /// Update operations (upsert, update, delete, reset, namespace changes).
    pub updates: u64,
    /// Rerank operations.
    pub reranks: u64,
    /// Request and response bytes.
    pub bytes: u64,
    /// Query latencies.
    pub query_latency: Latencies,
    /// Update latencies.
    pub update_latency: Latencies,
    /// Embedding latencies.
    pub embed_latency: Latencies,
    /// Vectors held after the minute's last update, when one was seen.
    pub vector_count: Option<u64>,
    /// Bytes held after the minute's last update, when one was seen.
    pub data_size: Option<u64>,
}

impl MinuteUsage {
    /// Adds another minute's usage (later snapshots win).
    pub fn merge(&mut self, other: &MinuteUsage) {
        self.queries += other.queries;
        self.updates += other.updates;
        self.reranks += other.reranks;
        self.bytes += other.bytes;
        self.query_latency.merge(&other.query_latency);
        self.update_latency.merge(&other.update_latency);
        self.embed_latency.merge(&other.embed_latency);
        if other.vector_count.is_some() {
            self.vector_count = other.vector_count;
        }
        if other.data_size.is_some() {
            self.data_size = other.data_size;
        }
    }
}

/// Minutes per stored rollup slot. Every stats interval (12 to 180 minutes) and every day and month
/// boundary is a multiple of it, so long periods are answered from slots.
pub const SLOT_MINUTES: i64 = 12;

/// The first minute of the slot holding `minute`.
pub const fn slot_of(minute: i64) -> i64 {
    minute.div_euclid(SLOT_MINUTES) * SLOT_MINUTES
}

/// A stats period of the wire (`period=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// One hour: 60 points of 1 minute.
    Hour,
    /// Three hours: 60 points of 3 minutes.
    ThreeHours,
    /// Twelve hours: 60 points of 12 minutes.
    TwelveHours,
    /// One day: 60 points of 24 minutes.
    Day,
    /// Three days: 60 points of 72 minutes.
    ThreeDays,
    /// Seven days: 60 points of 168 minutes.
    Week,
    /// Thirty days: 240 points of 3 hours.
    Month,
}

/// The allowed `period` values, for messages.
pub const PERIODS: &str = "1h, 3h, 12h, 1d, 3d, 7d, 30d";

impl Period {
    /// Parses the wire value.
    pub fn parse(text: &str) -> Option<Period> {
        Some(match text {
            "1h" => Period::Hour,
            "3h" => Period::ThreeHours,
            "12h" => Period::TwelveHours,
            "1d" => Period::Day,
            "3d" => Period::ThreeDays,
            "7d" => Period::Week,
            "30d" => Period::Month,
            _ => return None,
        })
    }

    /// Minutes per point and number of points.
    pub const fn shape(self) -> (i64, usize) {
        match self {
            Period::Hour => (1, 60),
            Period::ThreeHours => (3, 60),
            Period::TwelveHours => (12, 60),
            Period::Day => (24, 60),
            Period::ThreeDays => (72, 60),
            Period::Week => (168, 60),
            Period::Month => (180, 240),
        }
    }

    /// The first minute of each point, oldest first; the last point holds `now_minute`.
    pub fn point_starts(self, now_minute: i64) -> Vec<i64> {
        let (width, points) = self.shape();
        let current = now_minute.div_euclid(width) * width;
        (0..points as i64)
            .rev()
            .map(|back| current - back * width)
            .collect()
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// (year, month, day) to days since 1970-01-01.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// `YYYY-MM-DD HH:MM:SS.000 +0000 UTC` for a time in unix seconds.
pub fn wire_time(unix_seconds: i64) -> String {
    let (days, seconds) = (unix_seconds.div_euclid(86_400), unix_seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    let mut text = String::with_capacity(32);
    let _ = write!(
        text,
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.000 +0000 UTC",
        seconds / 3600,
        seconds % 3600 / 60,
        seconds % 60
    );
    text
}

/// The English name of the weekday of a time in unix seconds.
pub fn weekday(unix_seconds: i64) -> &'static str {
    const NAMES: [&str; 7] = [
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
    ];
    NAMES[unix_seconds.div_euclid(86_400).rem_euclid(7) as usize]
}

/// The first minute of the UTC day and of the UTC month holding `minute`.
pub fn day_and_month_start(minute: i64) -> (i64, i64) {
    let days = minute.div_euclid(1440);
    let (year, month, _) = civil_from_days(days);
    (days * 1440, days_from_civil(year, month, 1) * 1440)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_in_the_wire_form_and_weekdays_are_right() {
        assert_eq!(wire_time(0), "1970-01-01 00:00:00.000 +0000 UTC");
        assert_eq!(wire_time(1_761_253_440), "2025-10-23 21:04:00.000 +0000 UTC");
        assert_eq!(weekday(0), "Thursday");
        assert_eq!(weekday(1_761_253_440), "Thursday");
        assert_eq!(wire_time(951_782_400), "2000-02-29 00:00:00.000 +0000 UTC");
    }

    #[test]
    fn civil_dates_round_trip() {
        for days in [-1000, 0, 59, 11_016, 20_000, 40_000] {
            let (year, month, day) = civil_from_days(days);
            assert_eq!(days_from_civil(year, month, day), days);
        }
    }

    #[test]
    fn periods_have_sixty_aligned_points_and_thirty_days_two_hundred_forty() {
        let now = 29_000_123; // some minute
        for period in [
            Period::Hour,
            Period::ThreeHours,
            Period::TwelveHours,
            Period::Day,
            Period::ThreeDays,
            Period::Week,
        ] {
            let starts = period.point_starts(now);
            let (width, _) = period.shape();
            assert_eq!(starts.len(), 60);
            assert!(starts.iter().all(|s| s % width == 0));
            assert!(
                starts[59] <= now && now < starts[59] + width,
                "the last point holds now"
            );
            assert!(starts.windows(2).all(|w| w[1] - w[0] == width));
        }
        let month = Period::Month.point_starts(now);
        assert_eq!(month.len(), 240);
        assert_eq!(month[1] - month[0], 180);
        assert_eq!(Period::parse("2h"), None);
    }

    #[test]
    fn histograms_merge_and_answer_means_and_percentiles() {
        let mut latencies = Latencies::default();
        for micros in (1..=100).map(|i| i * 1000) {
            latencies.record(micros);
        }
        assert!((latencies.mean_millis() - 50.5).abs() < 1e-9);
        let p99 = latencies.quantile_millis(0.99);
        assert!((99.0..=120.0).contains(&p99), "p99 {p99}");
        let mut merged = Latencies::default();
        merged.merge(&latencies);
        merged.merge(&latencies);
        assert_eq!(merged.count, 200);
        assert_eq!(merged.quantile_millis(0.5), latencies.quantile_millis(0.5));
    }

    #[test]
    fn day_and_month_starts_follow_the_calendar() {
        let minute = 1_761_253_440 / 60; // 2025-10-23 21:04 UTC
        let (day, month) = day_and_month_start(minute);
        assert_eq!(wire_time(day * 60), "2025-10-23 00:00:00.000 +0000 UTC");
        assert_eq!(wire_time(month * 60), "2025-10-01 00:00:00.000 +0000 UTC");
    }
}
