//! Plans and the limits they grant: each a [`Limit`], unlimited or at most a count (`-1` is unlimited on
//! the wire only).
//!
//! | limit | free | payg | fixed |
//! |---|---|---|---|
//! | vector: max vectors | 200,000 | 100,000,000 | 5,210,000 |
//! | vector: max dimension | 1,536 | 3,072 | 3,072 |
//! | daily queries / updates | 10,000 | unlimited | 1,000,000 |
//! | monthly bandwidth (bytes) | 50 GiB | unlimited | unlimited |
//! | monthly reranks (search) | 100 | unlimited | 1,000,000 |
//! | queries / writes per second | 1,000 | 1,000 | 1,000 |
//! | reads / writes per request | 1,000 (search: 100) | 1,000 (search: 100) | 1,000 (search: 100) |
//! | metadata in total (bytes) | 50 GiB | 50 GiB | 50 GiB |
//! | reserved price (USD / month) | 0 | 0 | 60 |

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::index::UnknownValue;
use Limit::{AtMost, Unlimited};

/// A count a plan allows: unlimited, or at most `n`. The wire writes unlimited as `-1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// No limit.
    Unlimited,
    /// At most this many.
    AtMost(u64),
}

impl Limit {
    /// Whether `count` is within the limit.
    pub const fn allows(self, count: u64) -> bool {
        match self {
            Unlimited => true,
            AtMost(max) => count <= max,
        }
    }

    /// The count, when limited.
    pub const fn at_most(self) -> Option<u64> {
        match self {
            Unlimited => None,
            AtMost(max) => Some(max),
        }
    }

    /// The wire's number: `-1` when unlimited.
    pub const fn wire(self) -> i64 {
        match self {
            Unlimited => -1,
            AtMost(max) if max > i64::MAX as u64 => i64::MAX,
            AtMost(max) => max as i64,
        }
    }
}

impl Serialize for Limit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.wire())
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unlimited => f.write_str("unlimited"),
            AtMost(max) => write!(f, "{max}"),
        }
    }
}

/// How an index is paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanType {
    /// Free tier with daily caps.
    Free,
    /// Pay as you go (`paid` is accepted as a synonym).
    Payg,
    /// Fixed monthly price with reserved capacity.
    Fixed,
}

impl PlanType {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            PlanType::Free => "free",
            PlanType::Payg => "payg",
            PlanType::Fixed => "fixed",
        }
    }
}

impl fmt::Display for PlanType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PlanType {
    type Err = UnknownValue;
    fn from_str(text: &str) -> Result<Self, UnknownValue> {
        match text {
            "free" => Ok(PlanType::Free),
            "payg" | "paid" => Ok(PlanType::Payg),
            "fixed" => Ok(PlanType::Fixed),
            other => Err(UnknownValue {
                value: other.to_owned(),
                allowed: "free, payg, fixed".to_owned(),
            }),
        }
    }
}

/// What a plan allows one index.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlanLimits {
    /// Vectors (or documents) the index may hold.
    pub max_vector_count: Limit,
    /// Largest dense dimension (vector indexes).
    pub max_dimension: u32,
    /// Update operations per UTC day.
    pub max_daily_updates: Limit,
    /// Query operations per UTC day.
    pub max_daily_queries: Limit,
    /// Bytes in and out per UTC month.
    pub max_monthly_bandwidth: Limit,
    /// Rerank operations per UTC month (search indexes).
    pub max_monthly_reranks: Limit,
    /// Write operations per second.
    pub max_writes_per_second: Limit,
    /// Query operations per second.
    pub max_query_per_second: Limit,
    /// Records read by one request (topK, fetched ids).
    pub max_reads_per_request: Limit,
    /// Records written by one request.
    pub max_writes_per_request: Limit,
    /// Metadata bytes across the index.
    pub max_total_metadata_size: Limit,
    /// Monthly price reserved by the plan, in USD.
    pub reserved_price: f64,
}

const GIB: u64 = 1 << 30;

impl PlanType {
    /// The limits of a vector index on this plan.
    pub const fn vector_limits(self) -> PlanLimits {
        match self {
            PlanType::Free => PlanLimits {
                max_vector_count: AtMost(200_000),
                max_dimension: 1_536,
                max_daily_updates: AtMost(10_000),
                max_daily_queries: AtMost(10_000),
                max_monthly_bandwidth: AtMost(50 * GIB),
                max_monthly_reranks: AtMost(0),
                max_writes_per_second: AtMost(1_000),
                max_query_per_second: AtMost(1_000),
                max_reads_per_request: AtMost(1_000),
                max_writes_per_request: AtMost(1_000),
                max_total_metadata_size: AtMost(50 * GIB),
                reserved_price: 0.0,
            },
            PlanType::Payg => PlanLimits {
                max_vector_count: AtMost(100_000_000),
                max_dimension: 3_072,
                max_daily_updates: Unlimited,
                max_daily_queries: Unlimited,
                max_monthly_bandwidth: Unlimited,
                max_monthly_reranks: AtMost(0),
                max_writes_per_second: AtMost(1_000),
                max_query_per_second: AtMost(1_000),
                max_reads_per_request: AtMost(1_000),
                max_writes_per_request: AtMost(1_000),
                max_total_metadata_size: AtMost(50 * GIB),
                reserved_price: 0.0,
            },
            PlanType::Fixed => PlanLimits {
                max_vector_count: AtMost(5_210_000),
                max_dimension: 3_072,
                max_daily_updates: AtMost(1_000_000),
                max_daily_queries: AtMost(1_000_000),
                max_monthly_bandwidth: Unlimited,
                max_monthly_reranks: AtMost(0),
                max_writes_per_second: AtMost(1_000),
                max_query_per_second: AtMost(1_000),
                max_reads_per_request: AtMost(1_000),
                max_writes_per_request: AtMost(1_000),
                max_total_metadata_size: AtMost(50 * GIB),
                reserved_price: 60.0,
            },
        }
    }

    /// The limits of a search index on this plan.
    pub const fn search_limits(self) -> PlanLimits {
        let vector = self.vector_limits();
        let (max_vector_count, max_monthly_reranks) = match self {
            PlanType::Free => (AtMost(10_000), AtMost(100)),
            PlanType::Payg => (AtMost(2_000_000), Unlimited),
            PlanType::Fixed => (AtMost(5_000_000), AtMost(1_000_000)),
        };
        PlanLimits {
            max_vector_count,
            max_monthly_reranks,
            max_reads_per_request: AtMost(100),
            max_writes_per_request: AtMost(100),
            ..vector
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paid_is_accepted_as_pay_as_you_go() {
        assert_eq!("paid".parse::<PlanType>().unwrap(), PlanType::Payg);
        assert!("pro".parse::<PlanType>().is_err());
    }

    #[test]
    fn free_plans_cap_daily_work_and_paid_plans_lift_it() {
        assert_eq!(PlanType::Free.vector_limits().max_daily_queries, AtMost(10_000));
        assert_eq!(PlanType::Payg.vector_limits().max_daily_queries, Unlimited);
        assert_eq!(PlanType::Payg.search_limits().max_reads_per_request, AtMost(100));
        assert_eq!(Unlimited.wire(), -1);
        assert!(AtMost(3).allows(3) && !AtMost(3).allows(4) && Unlimited.allows(u64::MAX));
    }
}
