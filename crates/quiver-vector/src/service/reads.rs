//! Reads of records by id, by prefix and by page: each sees every acknowledged write (where other
//! nodes write too, the index catches up with the feed first).

use super::{IndexRef, Vectors, read};
use crate::error::VectorError;
use crate::record::Record;

impl Vectors {
    /// Records by id (`None` where missing), in the order asked.
    ///
    /// # Errors
    /// Plan limits; store failures on first load.
    pub async fn fetch(
        &self,
        index: &IndexRef,
        namespace: &str,
        ids: &[String],
    ) -> Result<Vec<Option<Record>>, VectorError> {
        let limit = index.limits.max_reads_per_request;
        if !limit.allows(ids.len() as u64) {
            return Err(VectorError::LimitExceeded(format!(
                "a request may read at most {limit} vectors"
            )));
        }
        let state = self.loaded(index).await?;
        self.fresh(index.id, &state).await?;
        let namespaces = read(&state.namespaces);
        let found = namespaces.get(namespace);
        Ok(ids
            .iter()
            .map(|id| found.and_then(|n| n.get(id)).map(|r| r.to_record()))
            .collect())
    }

    /// Up to `limit` records whose id starts with `prefix`, in insertion order.
    ///
    /// # Errors
    /// Store failures on first load.
    pub async fn fetch_prefix(
        &self,
        index: &IndexRef,
        namespace: &str,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<Record>, VectorError> {
        let state = self.loaded(index).await?;
        self.fresh(index.id, &state).await?;
        let namespaces = read(&state.namespaces);
        Ok(namespaces
            .get(namespace)
            .map(|n| {
                n.records()
                    .filter(|r| r.id().starts_with(prefix))
                    .take(limit)
                    .map(|r| r.to_record())
                    .collect()
            })
            // A namespace that was never written has no records.
            .unwrap_or_default())
    }

    /// A page of records in insertion order from `cursor` (an opaque position; `""` or `"0"` is the
    /// start), and the cursor of the next page (`""` at the end).
    ///
    /// # Errors
    /// A malformed cursor or limit; store failures on first load.
    pub async fn range(
        &self,
        index: &IndexRef,
        namespace: &str,
        cursor: &str,
        limit: usize,
        prefix: Option<&str>,
    ) -> Result<(Vec<Record>, String), VectorError> {
        if limit == 0 {
            return Err(VectorError::InvalidRequest("limit must be greater than 0".into()));
        }
        let max = index.limits.max_reads_per_request;
        if !max.allows(limit as u64) {
            return Err(VectorError::LimitExceeded(format!(
                "limit may be at most {max} on this index's plan"
            )));
        }
        // The cursor counts the records (with the prefix) before the page, from 0, as the hosted service's
        // does: from cursor 0 with limit 5 the next cursor is "5".
        let start: usize = if cursor.is_empty() {
            0
        } else {
            cursor.parse().map_err(|_| {
                VectorError::InvalidRequest(format!("`{cursor}` is not a cursor returned by range"))
            })?
        };
        let state = self.loaded(index).await?;
        self.fresh(index.id, &state).await?;
        let namespaces = read(&state.namespaces);
        let Some(found) = namespaces.get(namespace) else {
            return Ok((Vec::new(), String::new()));
        };
        let mut matching = found
            .records()
            .filter(|record| prefix.is_none_or(|p| record.id().starts_with(p)))
            .skip(start);
        let page: Vec<Record> = matching.by_ref().take(limit).map(|r| r.to_record()).collect();
        let next = if matching.next().is_some() {
            (start + page.len()).to_string()
        } else {
            String::new()
        };
        Ok((page, next))
    }
}
