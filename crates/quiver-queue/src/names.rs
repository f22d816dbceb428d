//! Names users give to queues, URL groups, schedules and endpoints.

/// URL group and queue names: `[A-Za-z0-9._-]`, 1 to 128 characters.
pub fn is_valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}
