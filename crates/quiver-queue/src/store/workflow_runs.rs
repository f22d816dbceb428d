//! Workflow runs and their steps.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};

use crate::message::MessageId;
use crate::names::RunId;

/// Where workflow runs live (part of every queue backend).
#[async_trait]
pub trait WorkflowRunStore: Send + Sync + 'static {
    /// Records a new run; `false` (and nothing changes) when a run with its id exists.
    async fn start_run(&self, run: &crate::workflow::WorkflowRun) -> StoreResult<bool>;

    /// Appends a step to a started run; `false` when the run is missing or has ended.
    async fn append_step(
        &self,
        account: AccountId,
        run_id: &RunId,
        step: &crate::workflow::RunStep,
    ) -> StoreResult<bool>;

    /// Takes back the step that `message_id` carries, as if it had never been written: its message was
    /// not stored (a duplicate turned it away, or its write failed). A run left without steps (the step
    /// was its start) is removed. `false` when the run or the step is missing.
    async fn take_back_step(&self, account: AccountId, run_id: &RunId, message_id: &str)
    -> StoreResult<bool>;

    /// A run.
    async fn run(
        &self,
        account: AccountId,
        run_id: &RunId,
    ) -> StoreResult<Option<crate::workflow::WorkflowRun>>;

    /// Every run of the account, newest first.
    async fn runs(&self, account: AccountId) -> StoreResult<Vec<crate::workflow::WorkflowRun>>;

    /// Ends a started run in `state`; `false` when it was missing or had ended.
    async fn finish_run(
        &self,
        account: AccountId,
        run_id: &RunId,
        state: crate::workflow::RunState,
        at: Timestamp,
        response: Option<String>,
    ) -> StoreResult<bool>;

    /// The pending messages of a run, and whether each is being delivered right now.
    async fn run_messages(
        &self,
        account: AccountId,
        run_id: &RunId,
        now: Timestamp,
    ) -> StoreResult<Vec<(MessageId, bool)>>;
}
