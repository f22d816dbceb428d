//! Schedules: a publish request fired on a cron, and what became of each firing's messages.

use std::sync::Arc;

use tracing::{debug, warn};

use quiver_core::AccountId;

use super::publisher::{PublishOutcome, PublishRequest, Publisher};
use crate::context::{Context, opaque_debug};
use crate::error::QueueError;
use crate::headers::{config_key, is_private_header};
use crate::message::MessageState;
use crate::names::{ScheduleId, UrlGroupName};
use crate::publish::parse_publish_options;
use crate::schedule::{CronSchedule, Schedule, ScheduleState};
use crate::store::{EventLogStore, MessageStore, ScheduleStore, UrlGroupStore};

/// Schedules fired per store round trip.
const FIRE_BATCH: usize = 256;

/// How long a claimed schedule stays out of other nodes' reach while it fires.
const FIRING_HOLD: std::time::Duration = std::time::Duration::from_secs(120);

fn invalid(header: &str, message: impl Into<String>) -> QueueError {
    QueueError::InvalidHeader {
        header: header.to_owned(),
        message: message.into(),
    }
}

/// The schedules of every account, and their firing.
#[derive(Clone)]
pub struct Schedules {
    store: Arc<dyn ScheduleStore>,
    url_groups: Arc<dyn UrlGroupStore>,
    messages: Arc<dyn MessageStore>,
    log: Arc<dyn EventLogStore>,
    publisher: Publisher,
    context: Context,
}

opaque_debug!(Schedules);

impl Schedules {
    pub(crate) fn new(
        store: Arc<dyn ScheduleStore>,
        url_groups: Arc<dyn UrlGroupStore>,
        messages: Arc<dyn MessageStore>,
        log: Arc<dyn EventLogStore>,
        publisher: Publisher,
        context: Context,
    ) -> Schedules {
        Schedules {
            store,
            url_groups,
            messages,
            log,
            publisher,
            context,
        }
    }

    /// When the earliest unpaused schedule fires.
    pub(crate) async fn next_due(&self) -> Result<Option<quiver_core::Timestamp>, quiver_core::StoreError> {
        self.store.next_schedule_due().await
    }

    /// Creates (or, with `Svc-Schedule-Id` naming an existing one, replaces) a schedule from a publish
    /// request carrying `Svc-Cron`; returns its id.
    ///
    /// # Errors
    /// A missing or malformed cron or schedule id, malformed publish configuration, an invalid or
    /// internal destination (400); an unknown URL group (404); store failures.
    pub async fn create(
        &self,
        account: AccountId,
        request: PublishRequest,
    ) -> Result<ScheduleId, QueueError> {
        let mut cron = None;
        let mut id = None;
        let mut headers = Vec::with_capacity(request.headers.len());
        for (name, value) in request.headers.iter().chain(&request.query) {
            match config_key(name).as_deref() {
                Some("cron") => cron = Some(value.clone()),
                Some("schedule-id") => id = Some(value.trim().to_owned()),
                Some(_) => headers.push((name.clone(), value.clone())),
                None if is_private_header(&name.to_ascii_lowercase()) => {}
                None => headers.push((name.clone(), value.clone())),
            }
        }
        let cron = cron.ok_or_else(|| invalid("Svc-Cron", "is required to create a schedule"))?;
        let cron = CronSchedule::parse(&cron).map_err(|e| invalid("Svc-Cron", e))?;
        let id = match id {
            Some(id) => ScheduleId::parse(id).map_err(|e| invalid("Svc-Schedule-Id", e.to_string()))?,
            None => ScheduleId::generate(),
        };
        parse_publish_options(&headers, &[])?;
        let destination = request.destination.trim().to_owned();
        let lower = destination.to_ascii_lowercase();
        if lower.starts_with("http:") || lower.starts_with("https:") {
            url::Url::parse(&destination)
                .map_err(|e| QueueError::InvalidDestination(format!("`{destination}`: {e}")))?;
            self.context
                .policy
                .check_url(&destination)
                .map_err(QueueError::DestinationForbidden)?;
        } else {
            let Ok(group) = UrlGroupName::parse(destination.as_str()) else {
                return Err(QueueError::InvalidDestination(format!(
                    "`{destination}` is neither an http(s) URL nor a URL group name"
                )));
            };
            if self.url_groups.url_group(account, &group).await?.is_none() {
                return Err(QueueError::UrlGroupNotFound(destination));
            }
        }
        let now = self.context.now();
        let next_fire = cron.next_after(now);
        let schedule = Schedule {
            id: id.clone(),
            account_id: account,
            cron,
            destination,
            headers,
            body: request.body,
            paused: false,
            created_at: now,
            last_fired: None,
            next_fire,
            last_states: Vec::new(),
            caller_ip: request.caller_ip,
        };
        self.store.put_schedule(&schedule).await?;
        self.context.signals.wake_scheduler();
        Ok(id)
    }

    /// A schedule.
    ///
    /// # Errors
    /// [`QueueError::ScheduleNotFound`]; store failures.
    pub async fn get(&self, account: AccountId, id: &ScheduleId) -> Result<Schedule, QueueError> {
        let schedule = self
            .store
            .schedule(account, id)
            .await?
            .ok_or_else(|| QueueError::ScheduleNotFound(id.to_string()))?;
        self.with_current_states(schedule).await
    }

    /// `schedule` with the state of each message of its last firing as it stands now: in progress while
    /// the message waits or is being delivered, then a success or a failure as its log says.
    async fn with_current_states(&self, mut schedule: Schedule) -> Result<Schedule, QueueError> {
        let account = schedule.account_id;
        for (message_id, state) in &mut schedule.last_states {
            // Schedules fired by earlier versions kept `CREATED` and `ERROR: ...`.
            if state.starts_with("ERROR") {
                *state = ScheduleState::Fail.as_str().to_owned();
            }
            let waiting = [ScheduleState::InProgress.as_str(), "CREATED"].contains(&state.as_str());
            if message_id.is_empty() || !waiting {
                continue;
            }
            let id = crate::message::MessageId(message_id.clone());
            if self.messages.message(account, &id).await?.is_some() {
                continue;
            }
            let filter = crate::store::Filter {
                message_ids: vec![message_id.clone()],
                ..crate::store::Filter::default()
            };
            let newest = self.log.events(account, &filter, None, 1).await?;
            let finished = newest.items.first().map(|event| event.state);
            *state = match finished {
                Some(MessageState::Failed | MessageState::Canceled | MessageState::CancelRequested) => {
                    ScheduleState::Fail
                }
                // Delivered, or its log is gone (kept for `log_retention_days` after the last event).
                Some(MessageState::Delivered) | None => ScheduleState::Success,
                Some(
                    MessageState::Created | MessageState::Active | MessageState::Retry | MessageState::Error,
                ) => ScheduleState::InProgress,
            }
            .as_str()
            .to_owned();
        }
        Ok(schedule)
    }

    /// Every schedule of the account.
    ///
    /// # Errors
    /// Store failures.
    pub async fn list(&self, account: AccountId) -> Result<Vec<Schedule>, QueueError> {
        let mut schedules = Vec::new();
        for schedule in self.store.schedules(account).await? {
            schedules.push(self.with_current_states(schedule).await?);
        }
        Ok(schedules)
    }

    /// Deletes a schedule.
    ///
    /// # Errors
    /// [`QueueError::ScheduleNotFound`]; store failures.
    pub async fn delete(&self, account: AccountId, id: &ScheduleId) -> Result<(), QueueError> {
        if !self.store.delete_schedule(account, id).await? {
            return Err(QueueError::ScheduleNotFound(id.to_string()));
        }
        self.context.signals.wake_scheduler();
        Ok(())
    }

    /// Pauses or resumes a schedule; a resumed schedule next fires at its next time from now.
    ///
    /// # Errors
    /// [`QueueError::ScheduleNotFound`]; store failures.
    pub async fn set_paused(
        &self,
        account: AccountId,
        id: &ScheduleId,
        paused: bool,
    ) -> Result<(), QueueError> {
        let mut schedule = self.get(account, id).await?;
        schedule.paused = paused;
        schedule.next_fire = if paused {
            None
        } else {
            schedule.cron.next_after(self.context.now())
        };
        self.store.put_schedule(&schedule).await?;
        self.context.signals.wake_scheduler();
        Ok(())
    }

    /// Publishes every due schedule once (a missed window fires once) and moves each to its next time
    /// after now. Returns how many fired.
    ///
    /// # Errors
    /// Store failures.
    pub async fn fire_due(&self) -> Result<usize, QueueError> {
        let now = self.context.now();
        let due = self
            .store
            .claim_due_schedules(now, FIRE_BATCH, now.saturating_add(FIRING_HOLD))
            .await?;
        let fired = due.len();
        // Fire the batch concurrently: the store's group commit then writes it in a few transactions
        // instead of two fsyncs per schedule.
        let mut firing = tokio::task::JoinSet::new();
        for schedule in due {
            let queue = self.clone();
            firing.spawn(async move { queue.fire(schedule, now).await });
        }
        let mut failure = None;
        while let Some(done) = firing.join_next().await {
            match done {
                Ok(Ok(())) => {}
                Ok(Err(error)) => failure = Some(error),
                Err(panicked) => warn!(%panicked, "firing a schedule panicked"),
            }
        }
        match failure {
            Some(error) => Err(error),
            None => Ok(fired),
        }
    }

    /// Publishes one due schedule and moves it to its next time after `now`.
    async fn fire(&self, mut schedule: Schedule, now: quiver_core::Timestamp) -> Result<(), QueueError> {
        let request = PublishRequest {
            destination: schedule.destination.clone(),
            headers: schedule.headers.clone(),
            query: Vec::new(),
            body: schedule.body.clone(),
            caller_ip: schedule.caller_ip.clone(),
            schedule_id: Some(schedule.id.to_string()),
        };
        let in_progress = ScheduleState::InProgress.as_str().to_owned();
        schedule.last_states = match self.publisher.publish(schedule.account_id, request).await {
            Ok(PublishOutcome::Url(published)) => vec![(published.message_id.0, in_progress)],
            Ok(PublishOutcome::Group(all)) => all
                .into_iter()
                .map(|p| (p.message_id.0, in_progress.clone()))
                .collect(),
            Err(error) => {
                warn!(schedule.id = %schedule.id, %error, "a scheduled publish failed");
                vec![(String::new(), ScheduleState::Fail.as_str().to_owned())]
            }
        };
        schedule.last_fired = schedule.next_fire.or(Some(now));
        schedule.next_fire = schedule.cron.next_after(now);
        self.store.put_schedule(&schedule).await?;
        debug!(schedule.id = %schedule.id, "schedule fired");
        Ok(())
    }
}
