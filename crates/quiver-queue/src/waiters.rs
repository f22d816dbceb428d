//! Workflow runs waiting for events: `context.waitForEvent` registers a waiter (`POST /v2/wait/{event}`),
//! `notify` hands the event to every waiter of the event (or keeps it for a run that has not waited yet),
//! and a waiter whose deadline passes gets a timed-out result. Either result is published to the workflow
//! as the run's next step, through the same path as the SDK's own step messages.

use std::collections::BTreeMap;

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A wait request (`WaitRequest` of the workflow SDK).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitSpec {
    /// Where the notified result goes.
    pub url: String,
    /// Where the timed-out result goes (default: `url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_url: Option<String>,
    /// Body of the timed-out result, if the caller set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_body: Option<Value>,
    /// Headers of both results (the run's workflow headers).
    #[serde(default)]
    pub timeout_headers: BTreeMap<String, Vec<String>>,
    /// The waiting step: `stepId`, `stepName`, `stepType`, `concurrent`, `targetStep`.
    #[serde(default)]
    pub step: Value,
}

/// A stored waiter.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredWaiter {
    /// Store key.
    pub seq: i64,
    /// Owner.
    pub account_id: AccountId,
    /// The awaited event.
    pub event_id: String,
    /// When it times out.
    pub deadline: Timestamp,
    /// The request.
    pub spec: WaitSpec,
}

/// Where waiters and early events live (part of every queue backend).
#[async_trait]
pub trait WaiterStore: Send + Sync + 'static {
    /// Records a waiter.
    async fn add_waiter(
        &self,
        account: AccountId,
        event_id: &str,
        run_id: Option<&str>,
        deadline: Timestamp,
        spec: &WaitSpec,
    ) -> StoreResult<()>;

    /// The waiters of an event (of one run when `run_id` is given), oldest first.
    async fn waiters(
        &self,
        account: AccountId,
        event_id: &str,
        run_id: Option<&str>,
    ) -> StoreResult<Vec<StoredWaiter>>;

    /// Removes a waiter; `false` when another caller removed it first.
    async fn remove_waiter(&self, seq: i64) -> StoreResult<bool>;

    /// Up to `limit` waiters whose deadline is at or before `now`, earliest first.
    async fn due_waiters(&self, now: Timestamp, limit: usize) -> StoreResult<Vec<StoredWaiter>>;

    /// The earliest deadline of any waiter.
    async fn next_waiter_deadline(&self) -> StoreResult<Option<Timestamp>>;

    /// Keeps an event for a run that has not waited for it yet (replacing an earlier one).
    async fn keep_early_event(
        &self,
        account: AccountId,
        run_id: &str,
        event_id: &str,
        data: &[u8],
        now: Timestamp,
    ) -> StoreResult<()>;

    /// Takes (removes and returns) a kept event.
    async fn take_early_event(
        &self,
        account: AccountId,
        run_id: &str,
        event_id: &str,
    ) -> StoreResult<Option<Vec<u8>>>;
}

/// A call of a workflow webhook URL, as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookCall {
    /// HTTP method.
    pub method: String,
    /// `http` or `https`.
    pub proto: String,
    /// The `Host` it was sent to.
    pub host: String,
    /// Path and query.
    pub url: String,
    /// Its headers, in order.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: Vec<u8>,
}

/// What a notify did for one waiter (`NotifyResponse`).
#[derive(Debug, Clone, PartialEq)]
pub struct Notified {
    /// The waiter.
    pub waiter: StoredWaiter,
    /// The message carrying the event to the run, or empty on failure.
    pub message_id: String,
    /// Why the result could not be published, if it could not.
    pub error: Option<String>,
}
