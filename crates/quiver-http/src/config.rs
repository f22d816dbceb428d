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
    /// Origins whose pages may call the APIs (CORS): `*` for any, else exact `scheme://host[:port]`.
    pub cors_allowed_origins: Vec<String>,
    /// When not empty, `GET /metrics` wants `Authorization: Bearer <this>`.
    pub metrics_token: String,
    /// A connection that sends no complete request head for this long (idle between requests
    /// included) is closed.
    pub header_read_timeout_ms: u64,
    /// A request body that has not arrived whole this long after its head is answered 408.
    pub body_read_timeout_ms: u64,
    /// Whether the web console is served at `/console`.
    pub console_enabled: bool,
    /// A console session ends after this long without a request.
    pub console_session_idle_ms: u64,
    /// A console session ends this long after sign-in, however busy.
    pub console_session_lifetime_ms: u64,
}

impl HttpConfig {
    /// Checks values that parse but cannot work.
    ///
    /// # Errors
    /// The first allowed origin that is neither `*` nor a bare origin, named.
    pub fn check(&self) -> Result<(), String> {
        for origin in &self.cors_allowed_origins {
            if origin == "*" {
                continue;
            }
            // Browsers send an origin as `scheme://host[:port]`, the default port left out: a listed
            // origin must be written the same way to ever match.
            let is_bare_origin = url::Url::parse(origin).is_ok_and(|url| {
                matches!(url.scheme(), "http" | "https")
                    && url.host_str().is_some()
                    && url.origin().ascii_serialization() == *origin
            });
            if !is_bare_origin {
                return Err(format!(
                    "http.cors_allowed_origins: `{origin}` is not `*` or an origin such as `https://app.example.com`"
                ));
            }
        }
        Ok(())
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            management_body_limit_bytes: 1 << 20,
            vector_body_limit_bytes: 64 << 20,
            enforce_rate_limits: true,
            cors_allowed_origins: vec!["*".to_owned()],
            metrics_token: String::new(),
            header_read_timeout_ms: 60_000,
            body_read_timeout_ms: 60_000,
            console_enabled: true,
            console_session_idle_ms: 30 * 60 * 1000,
            console_session_lifetime_ms: 12 * 60 * 60 * 1000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(list: &[&str]) -> Result<(), String> {
        HttpConfig {
            cors_allowed_origins: list.iter().map(|o| (*o).to_owned()).collect(),
            ..HttpConfig::default()
        }
        .check()
    }

    #[test]
    fn allowed_origins_are_a_star_or_origins_as_browsers_send_them() {
        assert_eq!(origins(&["*"]), Ok(()));
        assert_eq!(
            origins(&["https://app.example.com", "http://127.0.0.1:3000"]),
            Ok(())
        );
        for wrong in [
            "app.example.com",
            "https://app.example.com/",
            "https://app.example.com/console",
            "https://app.example.com:443",
            "ftp://files.example.com",
        ] {
            let refused = origins(&[wrong]).unwrap_err();
            assert!(refused.contains(wrong), "{refused}");
        }
    }
}
