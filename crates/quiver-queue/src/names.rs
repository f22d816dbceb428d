//! Names users give to queues, URL groups, schedules and endpoints.

use crate::error::QueueError;

/// URL group and queue names: `[A-Za-z0-9._-]`, 1 to 128 characters.
pub fn is_valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A FIFO queue's name, checked: [`is_valid_name`].
///
/// # Errors
/// [`QueueError::InvalidRequest`] naming the queue.
pub(crate) fn check_queue_name(name: &str) -> Result<(), QueueError> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(QueueError::InvalidRequest(format!(
            "invalid queue name `{name}`: use A-Z, a-z, 0-9, `.`, `_` and `-`"
        )))
    }
}
