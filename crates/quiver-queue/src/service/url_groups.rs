//! URL groups: named sets of endpoints a publish fans out to, with default headers.

use std::sync::Arc;

use quiver_core::AccountId;
use tokio::sync::Mutex;

use crate::context::{Context, opaque_debug};
use crate::error::QueueError;
use crate::names::UrlGroupName;
use crate::publish::parse_publish_options;
use crate::store::{Endpoint, UrlGroup, UrlGroupStore};

/// The URL groups of every account.
#[derive(Clone)]
pub struct UrlGroups {
    store: Arc<dyn UrlGroupStore>,
    context: Context,
    changes: Arc<Mutex<()>>,
}

opaque_debug!(UrlGroups);

impl UrlGroups {
    pub(crate) fn new(store: Arc<dyn UrlGroupStore>, context: Context) -> UrlGroups {
        UrlGroups {
            store,
            context,
            changes: Arc::new(Mutex::new(())),
        }
    }

    /// A URL group.
    ///
    /// # Errors
    /// [`QueueError::UrlGroupNotFound`]; store failures.
    pub async fn get(&self, account: AccountId, name: &UrlGroupName) -> Result<UrlGroup, QueueError> {
        self.store
            .url_group(account, name)
            .await?
            .ok_or_else(|| QueueError::UrlGroupNotFound(name.to_string()))
    }

    /// Every URL group.
    ///
    /// # Errors
    /// Store failures.
    pub async fn list(&self, account: AccountId) -> Result<Vec<UrlGroup>, QueueError> {
        Ok(self.store.url_groups(account).await?)
    }

    /// Adds endpoints to a group (creating it), updating an endpoint with the same name or URL.
    ///
    /// # Errors
    /// An invalid name or URL (400); an internal URL (400); store failures.
    pub async fn add_endpoints(
        &self,
        account: AccountId,
        name: &UrlGroupName,
        endpoints: Vec<Endpoint>,
    ) -> Result<(), QueueError> {
        if endpoints.is_empty() {
            return Err(QueueError::InvalidRequest(
                "endpoints: at least one endpoint is required".into(),
            ));
        }
        for endpoint in &endpoints {
            let parsed = url::Url::parse(&endpoint.url).map_err(|e| {
                QueueError::InvalidRequest(format!("endpoints: `{}` is not a valid URL: {e}", endpoint.url))
            })?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(QueueError::InvalidRequest(format!(
                    "endpoints: `{}` must be an http or https URL",
                    endpoint.url
                )));
            }
            self.context
                .policy
                .check_url(&endpoint.url)
                .map_err(QueueError::DestinationForbidden)?;
        }
        let _guard = self.changes.lock().await;
        let now = self.context.now();
        let mut group = self
            .store
            .url_group(account, name)
            .await?
            .unwrap_or_else(|| UrlGroup {
                name: name.clone(),
                created_at: now,
                updated_at: now,
                endpoints: Vec::new(),
                default_headers: Vec::new(),
            });
        for endpoint in endpoints {
            let existing = group
                .endpoints
                .iter_mut()
                .find(|e| match (&e.name, &endpoint.name) {
                    (Some(a), Some(b)) => a == b,
                    (None, None) | (Some(_), None) | (None, Some(_)) => e.url == endpoint.url,
                });
            match existing {
                Some(slot) => *slot = endpoint,
                None => group.endpoints.push(endpoint),
            }
        }
        group.updated_at = now;
        Ok(self.store.put_url_group(account, &group).await?)
    }

    /// Removes endpoints matching each reference (by name and/or URL); deletes the group when none remain.
    ///
    /// # Errors
    /// A reference with neither name nor URL (400); an unknown group (404); store failures.
    pub async fn remove_endpoints(
        &self,
        account: AccountId,
        name: &UrlGroupName,
        references: Vec<(Option<String>, Option<String>)>,
    ) -> Result<(), QueueError> {
        if references.is_empty() {
            return Err(QueueError::InvalidRequest(
                "endpoints: at least one endpoint is required".into(),
            ));
        }
        if references.iter().any(|(n, u)| n.is_none() && u.is_none()) {
            return Err(QueueError::InvalidRequest(
                "endpoints: each endpoint needs a name or a url".into(),
            ));
        }
        let _guard = self.changes.lock().await;
        let mut group = self.get(account, name).await?;
        group.endpoints.retain(|endpoint| {
            !references.iter().any(|(ref_name, ref_url)| {
                let name_matches = ref_name
                    .as_ref()
                    .is_none_or(|n| endpoint.name.as_ref() == Some(n));
                let url_matches = ref_url.as_ref().is_none_or(|u| &endpoint.url == u);
                name_matches && url_matches
            })
        });
        if group.endpoints.is_empty() {
            self.store.delete_url_group(account, name).await?;
        } else {
            group.updated_at = self.context.now();
            self.store.put_url_group(account, &group).await?;
        }
        Ok(())
    }

    /// Deletes a URL group.
    ///
    /// # Errors
    /// Store failures; a group that does not exist is not an error.
    pub async fn delete(&self, account: AccountId, name: &UrlGroupName) -> Result<(), QueueError> {
        let _guard = self.changes.lock().await;
        // Deleting a group that does not exist succeeds, as the API description says: the group is gone.
        self.store.delete_url_group(account, name).await?;
        Ok(())
    }

    /// Replaces a group's default headers (merged under each later publish's own headers).
    ///
    /// # Errors
    /// Malformed configuration in the headers (400); an unknown group (404); store failures.
    pub async fn set_default_headers(
        &self,
        account: AccountId,
        name: &UrlGroupName,
        headers: Vec<(String, String)>,
    ) -> Result<(), QueueError> {
        parse_publish_options(&headers, &[])?;
        let _guard = self.changes.lock().await;
        let mut group = self.get(account, name).await?;
        group.default_headers = headers;
        group.updated_at = self.context.now();
        Ok(self.store.put_url_group(account, &group).await?)
    }
}
