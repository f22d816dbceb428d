//! Where the delivery worker finds an account's signing keys (they live with the account).

use async_trait::async_trait;
use quiver_core::{AccountId, StoreError};

/// An account's current and next signing keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningKeys {
    /// Signs deliveries now.
    pub current: String,
    /// Signs after the next rotation.
    pub next: String,
}

/// Looks up signing keys by account.
#[async_trait]
pub trait KeySource: Send + Sync + 'static {
    /// The account's keys, or `None` if the account is gone.
    ///
    /// # Errors
    /// The keys could not be read (the delivery is then put off, never sent unsigned).
    async fn signing_keys(&self, account: AccountId) -> Result<Option<SigningKeys>, StoreError>;
}
