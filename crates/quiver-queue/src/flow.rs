//! Flow control: messages published with the same `Flow-Control-Key` (per account) share its limits. At
//! most `parallelism` of them are delivered at once, and at most `rate` deliveries start per `period`;
//! the rest wait (the waitlist). The latest publish sets a key's limits unless they are pinned through
//! the API; a paused key starts nothing until it is resumed.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};

/// A key's limits and its current use (the wire's `FlowControlInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowControlState {
    /// The key.
    pub key: String,
    /// Messages of the key waiting to start.
    pub wait_list_size: u64,
    /// Most deliveries at once; 0 means no limit.
    pub parallelism_max: u32,
    /// Deliveries in flight now.
    pub parallelism_count: u64,
    /// Most deliveries started per period; 0 means no limit.
    pub rate_max: u32,
    /// Deliveries started in the current period.
    pub rate_count: u64,
    /// The rate's period in seconds.
    pub rate_period_secs: u64,
    /// When the current period started.
    pub rate_period_start: Timestamp,
    /// Whether the parallelism is pinned.
    pub pinned_parallelism: bool,
    /// Whether the rate (and its period) is pinned.
    pub pinned_rate: bool,
    /// Whether the key is paused.
    pub paused: bool,
}

/// A change made through the flow-control API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowControlChange {
    /// Start nothing until resumed.
    Pause,
    /// Start again.
    Resume,
    /// Fix these limits (those given) until unpinned, and start a new rate period.
    Pin {
        /// Most deliveries at once.
        parallelism: Option<u32>,
        /// Most deliveries per period.
        rate: Option<u32>,
        /// The period in seconds.
        period_secs: Option<u64>,
    },
    /// Let publishes set these limits again.
    Unpin {
        /// Unpin the parallelism.
        parallelism: bool,
        /// Unpin the rate.
        rate: bool,
    },
    /// Start a new rate period now, with nothing started in it.
    ResetRate,
}

/// A key's limits and counters while a claim decides which of its due messages start: the rule every
/// backend's `claim_due` applies, one message at a time, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyBudget {
    /// Most leases at once (`None`: unlimited).
    pub parallelism: Option<i64>,
    /// Most leases started per period (`None`: unlimited).
    pub rate: Option<i64>,
    /// The rate's period, in milliseconds.
    pub period_ms: i64,
    /// Whether the key starts nothing.
    pub paused: bool,
    /// Leases held now.
    pub in_flight: i64,
    /// When the current rate period began (ms).
    pub rate_period_start: i64,
    /// Leases started in the current period.
    pub rate_count: i64,
    /// Messages this claim admitted.
    pub admitted: i64,
}

impl KeyBudget {
    /// A key without limits (one whose row is missing), with `in_flight` leases held.
    pub fn unlimited(in_flight: i64) -> KeyBudget {
        KeyBudget {
            parallelism: None,
            rate: None,
            period_ms: 1000,
            paused: false,
            in_flight,
            rate_period_start: 0,
            rate_count: 0,
            admitted: 0,
        }
    }

    /// Takes a place for one delivery starting at `now` (ms), if the limits allow it.
    pub fn admit(&mut self, now: i64) -> bool {
        if self.paused || self.parallelism.is_some_and(|p| self.in_flight >= p) {
            return false;
        }
        if let Some(rate) = self.rate {
            if now >= self.rate_period_start + self.period_ms {
                self.rate_period_start = now;
                self.rate_count = 0;
            }
            if self.rate_count >= rate {
                return false;
            }
            self.rate_count += 1;
        }
        self.in_flight += 1;
        self.admitted += 1;
        true
    }

    /// Whether the rate counters changed and must be written back.
    pub fn counted(&self) -> bool {
        self.rate.is_some() && self.admitted > 0
    }
}

/// Where flow-control keys live (part of every queue backend). Enforcement is the backend's
/// `claim_due`, which must never lease a keyed message past its key's limits.
#[async_trait]
pub trait FlowControlStore: Send + Sync + 'static {
    /// A key's state, or `None` when the account never used it.
    async fn flow_control(
        &self,
        account: AccountId,
        key: &str,
        now: Timestamp,
    ) -> StoreResult<Option<FlowControlState>>;

    /// Every key of the account, by key.
    async fn flow_controls(&self, account: AccountId, now: Timestamp) -> StoreResult<Vec<FlowControlState>>;

    /// Messages of the account being delivered now (leased, lease not expired).
    async fn in_flight(&self, account: AccountId, now: Timestamp) -> StoreResult<u64>;

    /// Applies `change` at `now`; `false` when the key does not exist.
    async fn change_flow_control(
        &self,
        account: AccountId,
        key: &str,
        change: FlowControlChange,
        now: Timestamp,
    ) -> StoreResult<bool>;
}
