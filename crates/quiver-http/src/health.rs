//! What `GET /readyz` asks of the server. The routes (`/healthz`, `/readyz`) are in `operations`;
//! neither takes credentials, and neither answer names an account, an index or a message.
//!
//! - `/healthz` answers 200 while the process serves HTTP at all.
//! - `/readyz` answers 200 once this node can do its work (its stores accept writes, the indexes and
//!   models they need are loaded), and 503 with the reasons otherwise. What is checked is the server's
//!   business ([`Readiness`]); this module only renders it.

/// What `GET /readyz` asks: why this node should not get traffic yet, if it should not.
#[async_trait::async_trait]
pub trait Readiness: Send + Sync + std::fmt::Debug {
    /// Every reason this node is not ready, each a sentence an operator can act on; empty when ready.
    /// Reasons never name accounts, indexes or messages (the answer is public).
    async fn unready_reasons(&self) -> Vec<String>;
}
