//! The `[http]` configuration section.

use serde::{Deserialize, Serialize};

/// Limits of the HTTP surface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Largest management API request body; larger ones get 413.
    pub management_body_limit_bytes: usize,
    /// Largest vector API request body; larger ones get 413.
    pub vector_body_limit_bytes: usize,
    /// Whether the plans' per-second query and write rates are enforced (429). Daily and monthly quotas
    /// always are.
    pub enforce_rate_limits: bool,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            management_body_limit_bytes: 1 << 20,
            vector_body_limit_bytes: 64 << 20,
            enforce_rate_limits: true,
        }
    }
}
