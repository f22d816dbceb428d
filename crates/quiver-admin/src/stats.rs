//! Index statistics (SPEC 2.2), computed from per-minute usage: counters over the current UTC day and
//! month, and series of points aligned to their interval.

use quiver_core::plan::PlanType;

use crate::usage::{Latencies, MinuteUsage, Period, day_and_month_start};

/// Price of pay-as-you-go requests, in USD per 100,000 (queries and updates).
pub const PAYG_PRICE_PER_100K_REQUESTS: f64 = 0.4;

/// The cost of a month so far: free plans cost nothing, fixed plans their reserved price, pay as you
/// go [`PAYG_PRICE_PER_100K_REQUESTS`] per 100,000 requests.
pub fn monthly_cost(plan: PlanType, requests: u64) -> f64 {
    match plan {
        PlanType::Free => 0.0,
        PlanType::Payg => requests as f64 / 100_000.0 * PAYG_PRICE_PER_100K_REQUESTS,
        PlanType::Fixed => plan.vector_limits().reserved_price,
    }
}

/// What the index holds now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Vectors held.
    pub vector_count: u64,
    /// Vectors not yet in the search graph.
    pub pending: u64,
    /// Bytes held.
    pub storage_bytes: u64,
}

/// One point of a series: the interval's start (unix seconds) and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Start of the interval, unix seconds.
    pub time: i64,
    /// The value.
    pub value: f64,
}

/// Every field of SPEC 2.2.
#[derive(Debug, Clone, PartialEq, Default)]
#[expect(
    missing_docs,
    reason = "each field is named exactly as the SPEC 2.2 field it fills"
)]
pub struct VectorStats {
    pub pending_index_count: u64,
    pub current_vector_count: u64,
    pub daily_query_count: u64,
    pub daily_update_count: u64,
    pub daily_rerank_count: u64,
    pub monthly_query_count: u64,
    pub monthly_update_count: u64,
    pub monthly_rerank_count: u64,
    pub monthly_bandwidth_usage: u64,
    pub storage_usage: u64,
    pub monthly_cost: f64,
    pub daily_update_requests: Vec<Point>,
    pub daily_query_requests: Vec<Point>,
    pub daily_rerank_requests: Vec<Point>,
    pub daily_bandwidths: Vec<Point>,
    pub query_throughput: Vec<Point>,
    pub update_throughput: Vec<Point>,
    pub query_latency_mean: Vec<Point>,
    pub query_latency_99: Vec<Point>,
    pub update_latency_mean: Vec<Point>,
    pub update_latency_99: Vec<Point>,
    pub embeds_latency_mean: Vec<Point>,
    pub embeds_latency_99: Vec<Point>,
    pub rerank_latency_mean: Vec<Point>,
    pub rerank_latency_99: Vec<Point>,
    pub vector_count: Vec<Point>,
    pub data_size: Vec<Point>,
    pub days: Vec<&'static str>,
}

/// The first minute [`compute`] needs usage from, to answer `period` at `now_minute`.
pub fn earliest_minute(period: Period, now_minute: i64) -> i64 {
    let (_, month_start) = day_and_month_start(now_minute);
    period
        .point_starts(now_minute)
        .first()
        .copied()
        .unwrap_or(now_minute)
        .min(month_start)
}

/// Statistics of an index from its usage `minutes` (oldest first, from at least
/// [`earliest_minute`]), at `now_minute`.
pub fn compute(
    minutes: &[(i64, MinuteUsage)],
    period: Period,
    now_minute: i64,
    holdings: Holdings,
    plan: PlanType,
) -> VectorStats {
    let (day_start, month_start) = day_and_month_start(now_minute);
    let (width, _) = period.shape();
    let mut stats = VectorStats {
        pending_index_count: holdings.pending,
        current_vector_count: holdings.vector_count,
        storage_usage: holdings.storage_bytes,
        ..VectorStats::default()
    };
    for (minute, usage) in minutes {
        if *minute >= month_start && *minute <= now_minute {
            stats.monthly_query_count += usage.queries;
            stats.monthly_update_count += usage.updates;
            stats.monthly_rerank_count += usage.reranks;
            stats.monthly_bandwidth_usage += usage.bytes;
            if *minute >= day_start {
                stats.daily_query_count += usage.queries;
                stats.daily_update_count += usage.updates;
                stats.daily_rerank_count += usage.reranks;
            }
        }
    }
    stats.monthly_cost = monthly_cost(plan, stats.monthly_query_count + stats.monthly_update_count);

    let starts = period.point_starts(now_minute);
    let seconds = (width * 60) as f64;
    let mut snapshots: Vec<Option<(u64, u64)>> = Vec::with_capacity(starts.len());
    for start in &starts {
        let mut interval = MinuteUsage::default();
        let first = minutes.partition_point(|(m, _)| *m < *start);
        let end = minutes.partition_point(|(m, _)| *m < start + width);
        for (_, usage) in &minutes[first..end.max(first)] {
            interval.merge(usage);
        }
        let time = start * 60;
        let point = |value: f64| Point { time, value };
        stats.daily_query_requests.push(point(interval.queries as f64));
        stats.daily_update_requests.push(point(interval.updates as f64));
        stats.daily_rerank_requests.push(point(interval.reranks as f64));
        stats.daily_bandwidths.push(point(interval.bytes as f64));
        stats
            .query_throughput
            .push(point(interval.queries as f64 / seconds));
        stats
            .update_throughput
            .push(point(interval.updates as f64 / seconds));
        let latency = |latencies: &Latencies| {
            (
                point(latencies.mean_millis()),
                point(latencies.quantile_millis(0.99)),
            )
        };
        let (mean, p99) = latency(&interval.query_latency);
        stats.query_latency_mean.push(mean);
        stats.query_latency_99.push(p99);
        let (mean, p99) = latency(&interval.update_latency);
        stats.update_latency_mean.push(mean);
        stats.update_latency_99.push(p99);
        let (mean, p99) = latency(&interval.embed_latency);
        stats.embeds_latency_mean.push(mean);
        stats.embeds_latency_99.push(p99);
        let no_reranks = latency(&Latencies::default());
        stats.rerank_latency_mean.push(no_reranks.0);
        stats.rerank_latency_99.push(no_reranks.1);
        snapshots.push(interval.vector_count.zip(interval.data_size));
        stats.days.push(crate::usage::weekday(time));
    }
    // Holdings per point: the last snapshot taken in or before it; before the first snapshot, the first
    // one seen; the current point is what is held now.
    let first_known = snapshots
        .iter()
        .flatten()
        .next()
        .copied()
        .unwrap_or((holdings.vector_count, holdings.storage_bytes));
    let mut carried = first_known;
    for (position, start) in starts.iter().enumerate() {
        if let Some(snapshot) = snapshots[position] {
            carried = snapshot;
        }
        let held = if position + 1 == starts.len() {
            (holdings.vector_count, holdings.storage_bytes)
        } else {
            carried
        };
        stats.vector_count.push(Point {
            time: start * 60,
            value: held.0 as f64,
        });
        stats.data_size.push(Point {
            time: start * 60,
            value: held.1 as f64,
        });
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::wire_time;

    fn usage(queries: u64, updates: u64, bytes: u64) -> MinuteUsage {
        MinuteUsage {
            queries,
            updates,
            bytes,
            ..MinuteUsage::default()
        }
    }

    #[test]
    fn counters_follow_utc_day_and_month_boundaries() {
        // 2025-10-23 21:04 UTC; the day began 1,264 minutes earlier, the month on the 1st.
        let now = 1_761_253_440 / 60;
        let minutes = vec![
            (now - 30 * 1440, usage(100, 100, 100)), // September: counts nowhere
            (now - 2 * 1440, usage(5, 1, 10)),       // this month, not today
            (now - 1265, usage(7, 0, 0)),            // yesterday 23:59
            (now - 1264, usage(3, 2, 20)),           // today 00:00
            (now, usage(1, 1, 5)),
        ];
        let stats = compute(
            &minutes,
            Period::Hour,
            now,
            Holdings {
                vector_count: 9,
                pending: 1,
                storage_bytes: 99,
            },
            PlanType::Payg,
        );
        assert_eq!((stats.daily_query_count, stats.daily_update_count), (4, 3));
        assert_eq!(
            (
                stats.monthly_query_count,
                stats.monthly_update_count,
                stats.monthly_bandwidth_usage
            ),
            (16, 4, 35)
        );
        assert_eq!(
            (
                stats.current_vector_count,
                stats.pending_index_count,
                stats.storage_usage
            ),
            (9, 1, 99)
        );
        assert!((stats.monthly_cost - 20.0 / 100_000.0 * 0.4).abs() < 1e-12);
    }

    #[test]
    fn series_points_aggregate_their_intervals() {
        let now = 1_761_253_440 / 60 + 2; // 21:06, inside the 21:06-21:09 point of 3h
        let minutes = vec![
            (now - 2, usage(4, 0, 0)),
            (now - 1, usage(2, 6, 0)),
            (now, usage(1, 0, 0)),
        ];
        let stats = compute(
            &minutes,
            Period::ThreeHours,
            now,
            Holdings::default(),
            PlanType::Free,
        );
        assert_eq!(stats.daily_query_requests.len(), 60);
        let last = stats.daily_query_requests[59];
        assert_eq!(wire_time(last.time), "2025-10-23 21:06:00.000 +0000 UTC");
        assert_eq!(last.value, 1.0, "21:06 alone");
        assert_eq!(
            stats.daily_query_requests[58].value, 6.0,
            "21:03-21:05 holds 21:04 and 21:05"
        );
        assert_eq!(stats.update_throughput[58].value, 6.0 / 180.0);
        assert_eq!(stats.days.len(), 60);
        assert_eq!(stats.days[59], "Thursday");
        assert_eq!(stats.monthly_cost, 0.0);
        assert_eq!(
            compute(&[], Period::Month, now, Holdings::default(), PlanType::Fixed)
                .daily_query_requests
                .len(),
            240
        );
    }

    #[test]
    fn holdings_carry_forward_from_snapshots_and_end_at_what_is_held_now() {
        let now = 1_000_000;
        let snapshot = |vectors| MinuteUsage {
            updates: 1,
            vector_count: Some(vectors),
            data_size: Some(vectors * 10),
            ..MinuteUsage::default()
        };
        let minutes = vec![(now - 40, snapshot(5)), (now - 10, snapshot(8))];
        let stats = compute(
            &minutes,
            Period::Hour,
            now,
            Holdings {
                vector_count: 7,
                pending: 0,
                storage_bytes: 70,
            },
            PlanType::Free,
        );
        let values: Vec<f64> = stats.vector_count.iter().map(|p| p.value).collect();
        assert_eq!(values[0], 5.0, "before the first snapshot: the first one seen");
        assert_eq!(values[19], 5.0);
        assert_eq!(values[49], 8.0);
        assert_eq!(values[59], 7.0, "the current point is what is held now");
        assert_eq!(stats.data_size[49].value, 80.0);
    }
}
