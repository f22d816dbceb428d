//! Resumable queries: a query started once and read on page by page until it is ended or has been idle
//! longer than its `max_idle`.

use std::time::Duration;

use quiver_core::plan::PlanLimits;
use quiver_core::{IndexId, Timestamp};

use super::{Hit, IndexRef, Query, Vectors};
use crate::error::VectorError;

#[derive(Debug, Clone)]
pub(super) struct Resumable {
    index: IndexId,
    namespace: String,
    query: Query,
    returned: usize,
    max_idle: Duration,
    last_used: Timestamp,
}

/// Most resumable queries alive at once per process.
const MAX_RESUMABLE_QUERIES: usize = 10_000;
impl Vectors {
    /// Starts a resumable query: the first `top_k` results and the query's id.
    ///
    /// # Errors
    /// As [`Vectors::query`]; too many resumable queries alive.
    pub async fn start_resumable(
        &self,
        index: &IndexRef,
        namespace: &str,
        query: Query,
        max_idle: Duration,
    ) -> Result<(String, Vec<Hit>), VectorError> {
        let hits = self.query(index, namespace, query.clone()).await?;
        let now = self.clock.now();
        let id = quiver_core::IndexId::random().to_string();
        let mut resumable = self.resumable.lock().unwrap_or_else(|p| p.into_inner());
        resumable.retain(|_, r| now.duration_since(r.last_used) <= r.max_idle);
        if resumable.len() >= MAX_RESUMABLE_QUERIES {
            return Err(VectorError::LimitExceeded(format!(
                "at most {MAX_RESUMABLE_QUERIES} resumable queries may be active"
            )));
        }
        resumable.insert(
            id.clone(),
            Resumable {
                index: index.id,
                namespace: namespace.to_owned(),
                query,
                returned: hits.len(),
                max_idle,
                last_used: now,
            },
        );
        Ok((id, hits))
    }

    /// The next `additional_k` results of a resumable query. A page is held to the plan's reads per
    /// request as a query is; the pages together are not.
    ///
    /// # Errors
    /// An unknown, ended or expired query (404); a page larger than the plan allows.
    pub async fn next_resumable(
        &self,
        index: &IndexRef,
        id: &str,
        additional_k: usize,
    ) -> Result<Vec<Hit>, VectorError> {
        let limit = index.limits.max_reads_per_request;
        if !limit.allows(additional_k as u64) {
            return Err(VectorError::LimitExceeded(format!(
                "additionalK may be at most {limit} on this index's plan"
            )));
        }
        let now = self.clock.now();
        let (namespace, mut query, returned) = {
            let mut resumable = self.resumable.lock().unwrap_or_else(|p| p.into_inner());
            let alive = resumable
                .get(id)
                .is_some_and(|r| r.index == index.id && now.duration_since(r.last_used) <= r.max_idle);
            if !alive {
                resumable.remove(id);
                return Err(VectorError::ResumableQueryNotFound(id.to_owned()));
            }
            let entry = resumable
                .get_mut(id)
                .ok_or_else(|| VectorError::ResumableQueryNotFound(id.to_owned()))?;
            entry.last_used = now;
            (entry.namespace.clone(), entry.query.clone(), entry.returned)
        };
        query.top_k = returned.saturating_add(additional_k);
        let unlimited = IndexRef {
            limits: PlanLimits {
                max_reads_per_request: quiver_core::plan::Limit::Unlimited,
                ..index.limits
            },
            ..index.clone()
        };
        let hits: Vec<Hit> = self
            .query(&unlimited, &namespace, query)
            .await?
            .into_iter()
            .skip(returned)
            .collect();
        if let Some(entry) = self
            .resumable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(id)
        {
            entry.returned = returned + hits.len();
        }
        Ok(hits)
    }

    /// Whether the resumable query `id` is still alive (started, not ended, not idle past its limit).
    pub fn resumable_alive(&self, id: &str) -> bool {
        let now = self.clock.now();
        self.resumable
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .is_some_and(|r| now.duration_since(r.last_used) <= r.max_idle)
    }

    /// Ends a resumable query.
    ///
    /// # Errors
    /// An unknown or already ended query (404).
    pub fn end_resumable(&self, index: &IndexRef, id: &str) -> Result<(), VectorError> {
        let mut resumable = self.resumable.lock().unwrap_or_else(|p| p.into_inner());
        match resumable.get(id) {
            Some(entry) if entry.index == index.id => {
                resumable.remove(id);
                Ok(())
            }
            Some(_) | None => Err(VectorError::ResumableQueryNotFound(id.to_owned())),
        }
    }
}
