//! URL groups: named sets of endpoints.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::names::UrlGroupName;

/// An endpoint of a URL group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Optional name, unique in the group.
    pub name: Option<String>,
    /// Where messages go.
    pub url: String,
}

/// A URL group: publishing to its name fans out to every endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlGroup {
    /// Name.
    pub name: UrlGroupName,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// Endpoints, in the order they were added.
    pub endpoints: Vec<Endpoint>,
    /// Headers merged under each publish's own.
    pub default_headers: Vec<(String, String)>,
}

/// Where URL groups live. Every write is durable when it returns.
#[async_trait]
pub trait UrlGroupStore: Send + Sync + 'static {
    /// A URL group.
    async fn url_group(&self, account: AccountId, name: &UrlGroupName) -> StoreResult<Option<UrlGroup>>;

    /// Every URL group, by name.
    async fn url_groups(&self, account: AccountId) -> StoreResult<Vec<UrlGroup>>;

    /// Creates or replaces a URL group.
    async fn put_url_group(&self, account: AccountId, group: &UrlGroup) -> StoreResult<()>;

    /// Deletes a URL group; `false` when it did not exist.
    async fn delete_url_group(&self, account: AccountId, name: &UrlGroupName) -> StoreResult<bool>;
}
