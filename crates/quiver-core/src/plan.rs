//! Plans and the limits they grant. `-1` means unlimited, as on the wire.
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

/// Unlimited, as the wire spells it.
pub const UNLIMITED: i64 = -1;

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

/// What a plan allows one index. Counts are `-1` when unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlanLimits {
    /// Vectors (or documents) the index may hold.
    pub max_vector_count: i64,
    /// Largest dense dimension (vector indexes).
    pub max_dimension: u32,
    /// Update operations per UTC day.
    pub max_daily_updates: i64,
    /// Query operations per UTC day.
    pub max_daily_queries: i64,
    /// Bytes in and out per UTC month.
    pub max_monthly_bandwidth: i64,
    /// Rerank operations per UTC month (search indexes).
    pub max_monthly_reranks: i64,
    /// Write operations per second.
    pub max_writes_per_second: i64,
    /// Query operations per second.
    pub max_query_per_second: i64,
    /// Records read by one request (topK, fetched ids).
    pub max_reads_per_request: i64,
    /// Records written by one request.
    pub max_writes_per_request: i64,
    /// Metadata bytes across the index.
    pub max_total_metadata_size: i64,
    /// Monthly price reserved by the plan, in USD.
    pub reserved_price: f64,
}

const GIB: i64 = 1 << 30;

impl PlanType {
    /// The limits of a vector index on this plan.
    pub const fn vector_limits(self) -> PlanLimits {
        match self {
            PlanType::Free => PlanLimits {
                max_vector_count: 200_000,
                max_dimension: 1_536,
                max_daily_updates: 10_000,
                max_daily_queries: 10_000,
                max_monthly_bandwidth: 50 * GIB,
                max_monthly_reranks: 0,
                max_writes_per_second: 1_000,
                max_query_per_second: 1_000,
                max_reads_per_request: 1_000,
                max_writes_per_request: 1_000,
                max_total_metadata_size: 50 * GIB,
                reserved_price: 0.0,
            },
            PlanType::Payg => PlanLimits {
                max_vector_count: 100_000_000,
                max_dimension: 3_072,
                max_daily_updates: UNLIMITED,
                max_daily_queries: UNLIMITED,
                max_monthly_bandwidth: UNLIMITED,
                max_monthly_reranks: 0,
                max_writes_per_second: 1_000,
                max_query_per_second: 1_000,
                max_reads_per_request: 1_000,
                max_writes_per_request: 1_000,
                max_total_metadata_size: 50 * GIB,
                reserved_price: 0.0,
            },
            PlanType::Fixed => PlanLimits {
                max_vector_count: 5_210_000,
                max_dimension: 3_072,
                max_daily_updates: 1_000_000,
                max_daily_queries: 1_000_000,
                max_monthly_bandwidth: UNLIMITED,
                max_monthly_reranks: 0,
                max_writes_per_second: 1_000,
                max_query_per_second: 1_000,
                max_reads_per_request: 1_000,
                max_writes_per_request: 1_000,
                max_total_metadata_size: 50 * GIB,
                reserved_price: 60.0,
            },
        }
    }

    /// The limits of a search index on this plan.
    pub const fn search_limits(self) -> PlanLimits {
        let vector = self.vector_limits();
        let (max_vector_count, max_monthly_reranks) = match self {
            PlanType::Free => (10_000, 100),
            PlanType::Payg => (2_000_000, UNLIMITED),
            PlanType::Fixed => (5_000_000, 1_000_000),
        };
        PlanLimits {
            max_vector_count,
            max_monthly_reranks,
            max_reads_per_request: 100,
            max_writes_per_request: 100,
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
        assert_eq!(PlanType::Free.vector_limits().max_daily_queries, 10_000);
        assert_eq!(PlanType::Payg.vector_limits().max_daily_queries, UNLIMITED);
        assert_eq!(PlanType::Payg.search_limits().max_reads_per_request, 100);
    }
}
