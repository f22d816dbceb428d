//! Development credentials used by `quiver serve --dev`. They are public: never use them in deployment.
//!
//! The queue token and signing keys are those of the queue's local development server (user 1), so the
//! official SDKs' development mode works against Quiver unchanged.

use quiver_admin::{BootstrapCredentials, Email};

/// Management login in development mode.
pub const DEV_ADMIN_EMAIL: &str = "dev@quiver.local";
/// Management API key in development mode.
pub const DEV_ADMIN_API_KEY: &str = "quiver-dev-api-key";
/// Queue bearer token in development mode.
pub const DEV_QUEUE_TOKEN: &str = "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0=";
/// Current signing key in development mode.
pub const DEV_CURRENT_SIGNING_KEY: &str = "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r";
/// Next signing key in development mode.
pub const DEV_NEXT_SIGNING_KEY: &str = "sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs";

/// The development credentials, every field set.
pub fn dev_credentials() -> BootstrapCredentials {
    BootstrapCredentials {
        email: Email::try_from(DEV_ADMIN_EMAIL.to_owned()).ok(),
        api_key: Some(DEV_ADMIN_API_KEY.to_owned()),
        queue_token: Some(DEV_QUEUE_TOKEN.to_owned()),
        current_signing_key: Some(DEV_CURRENT_SIGNING_KEY.to_owned()),
        next_signing_key: Some(DEV_NEXT_SIGNING_KEY.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_development_credential_is_set() {
        let dev = dev_credentials();
        assert!(dev.email.is_some() && dev.api_key.is_some() && dev.queue_token.is_some());
        assert!(dev.current_signing_key.is_some() && dev.next_signing_key.is_some());
    }
}
