//! Errors of the queue domain.

use quiver_core::StoreError;

/// A queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// A configuration header (or its query form) is malformed.
    #[error("{header}: {message}")]
    InvalidHeader {
        /// The header, as `Svc-Name`.
        header: String,
        /// What is wrong.
        message: String,
    },
    /// The destination is neither an http(s) URL nor a valid URL group name.
    #[error("invalid destination: {0}")]
    InvalidDestination(String),
    /// The destination or a callback points at an address that is not allowed.
    #[error("destination not allowed: {0}")]
    DestinationForbidden(String),
    /// A request body is malformed.
    #[error("{0}")]
    InvalidRequest(String),
    /// A name or id breaks its kind's rule.
    #[error(transparent)]
    InvalidName(#[from] crate::names::InvalidName),
    /// No URL group by that name.
    #[error("url group `{0}` was not found")]
    UrlGroupNotFound(String),
    /// No pending message with that id.
    #[error("message `{0}` was not found")]
    MessageNotFound(String),
    /// A workflow run with this id exists already: the trigger is a duplicate.
    #[error("workflow run `{run_id}` exists already")]
    WorkflowRunExists {
        /// The run.
        run_id: String,
        /// The message that started it.
        message_id: String,
    },
    /// A language-model route was used without `queue.llm_url` configured.
    #[error(
        "no language-model provider is configured; set queue.llm_url (QUIVER__QUEUE__LLM_URL) to an OpenAI-compatible API"
    )]
    LlmNotConfigured,
    /// The language-model API did not answer.
    #[error("the language-model provider at queue.llm_url could not be reached: {0}")]
    LlmUnavailable(String),
    /// No workflow run with that id.
    #[error("workflow run `{0}` was not found")]
    WorkflowRunNotFound(String),
    /// A step was published for a run that was cancelled or has finished. The workflow SDK stops the run
    /// quietly on the 400 this is.
    #[error("workflow run `{0}` is not running")]
    WorkflowRunNotRunning(String),
    /// No queue by that name.
    #[error("queue `{0}` was not found")]
    QueueNotFound(String),
    /// No schedule with that id.
    #[error("schedule `{0}` was not found")]
    ScheduleNotFound(String),
    /// No flow-control key by that name.
    #[error("flow control key `{0}` was not found")]
    FlowControlNotFound(String),
    /// No dead letter with that id.
    #[error("dlq message `{0}` was not found")]
    DeadLetterNotFound(String),
    /// The message body exceeds the configured maximum.
    #[error("message is {size} bytes; the maximum is {limit}")]
    PayloadTooLarge {
        /// The body's size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// A read-only token tried to change something.
    #[error("this token is read-only")]
    ReadOnly,
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
