//! The events log's reads (a page of an account's log, newest first, under the filters) and the
//! retention rounds that prune it.

use async_trait::async_trait;
use quiver_core::store::StoreResult;
use quiver_core::{AccountId, Timestamp};
use quiver_queue::message::Event;
use quiver_queue::store::{EventLogStore, Filter, LogPosition, Page};

use crate::queue::SqliteQueueStore;
use crate::queue::listing::{cursor_seq, filter_sql, newest_by};
use crate::queue::log::{log_parts, stored_event_from_row};
use crate::queue::rows::read_error;

#[async_trait]
impl EventLogStore for SqliteQueueStore {
    async fn claim_retention_round(&self, now: Timestamp, next_round: Timestamp) -> StoreResult<bool> {
        let mut next = self
            .next_retention_round
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if next.is_some_and(|due| now < due) {
            return Ok(false);
        }
        *next = Some(next_round);
        Ok(true)
    }

    async fn prune_log(
        &self,
        older_than: Timestamp,
        window: usize,
        from: Option<LogPosition>,
    ) -> StoreResult<(u64, Option<LogPosition>)> {
        self.database
            .write(move |c| crate::queue::listing::prune_log(c, older_than.as_millis(), window, from))
            .await
    }

    async fn events(
        &self,
        account: AccountId,
        filter: &Filter,
        cursor: Option<&str>,
        count: usize,
    ) -> StoreResult<Page<Event>> {
        // Each part of the log (see `log_parts`) that can hold the filter's states, with the filter's
        // conditions on its columns; a part whose events share one state needs no condition on it.
        let parts: Vec<_> = log_parts(!filter.message_ids.is_empty(), &filter.states)
            .into_iter()
            .map(|part| {
                let mut conditions = if part.state.is_some() {
                    let any_state = Filter {
                        states: Vec::new(),
                        ..filter.clone()
                    };
                    filter_sql(account, &any_state, part.time, false)
                } else {
                    filter_sql(account, filter, part.time, false)
                };
                if let Some(condition) = &part.condition {
                    conditions.0 = format!("{} AND {condition}", conditions.0);
                }
                (part, conditions)
            })
            .collect();
        let below = cursor_seq(cursor);
        self.database
            .read(move |c| {
                // A page from each part, merged into the page kept so far. Once the parts read fill a
                // page, nothing placed below its last item can be on it, so the next parts stop there: a
                // part that few rows belong to (the ACTIVE events rows carry, under a log's newest
                // thousands of cancels) is not read to the log's start for a page it has nothing of.
                let page = count.saturating_add(1);
                let mut items = Vec::with_capacity(page.saturating_mul(2).min(4_096));
                let mut above = None;
                for (part, conditions) in parts {
                    items.extend(newest_by(
                        c,
                        (&part.table, &part.columns, part.order),
                        conditions,
                        (
                            above.map(|above: i64| above.saturating_add(part.shift)),
                            below.map(|below| below.saturating_add(part.shift)),
                        ),
                        count,
                        stored_event_from_row,
                    )?);
                    items.sort_unstable_by_key(|(seq, _)| std::cmp::Reverse(*seq));
                    items.truncate(page);
                    if items.len() == page {
                        above = items.last().map(|(seq, _)| *seq);
                    }
                }
                let mut decoded = Vec::with_capacity(items.len());
                for (seq, stored) in items {
                    decoded.push((seq, stored.decode(seq).map_err(read_error)?));
                }
                Ok(Page::from_newest(decoded, count))
            })
            .await
    }
}
