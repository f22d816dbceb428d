//! Schedule operations of the queue, and the loop that fires them on the injected clock.

use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use quiver_core::AccountId;

use crate::error::QueueError;
use crate::headers::{config_key, is_private_header};
use crate::message::MessageState;
use crate::names::is_valid_name;
use crate::publish::parse_publish_options;
use crate::schedule::{CronSchedule, Schedule, ScheduleState, is_valid_schedule_id, new_schedule_id};
use crate::service::{PublishOutcome, PublishRequest, Queue};

/// Schedules fired per store round trip.
const FIRE_BATCH: usize = 256;

fn invalid(header: &str, message: impl Into<String>) -> QueueError {
    QueueError::InvalidHeader {
        header: header.to_owned(),
        message: message.into(),
    }
}

impl Queue {
    /// Creates (or, with `Svc-Schedule-Id` naming an existing one, replaces) a schedule from a publish
    /// request carrying `Svc-Cron`; returns its id.
    ///
    /// # Errors
    /// A missing or malformed cron or schedule id, malformed publish configuration, an invalid or
    /// internal destination (400); an unknown URL group (404); store failures.
    pub async fn create_schedule(
        &self,
        account: AccountId,
        request: PublishRequest,
    ) -> Result<String, QueueError> {
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
        let parsed = CronSchedule::parse(&cron).map_err(|e| invalid("Svc-Cron", e))?;
        let id = match id {
            Some(id) if !is_valid_schedule_id(&id) => {
                return Err(invalid(
                    "Svc-Schedule-Id",
                    "may only use A-Z, a-z, 0-9, `.`, `_` and `-`",
                ));
            }
            Some(id) => id,
            None => new_schedule_id(),
        };
        parse_publish_options(&headers, &[])?;
        let destination = request.destination.trim().to_owned();
        let lower = destination.to_ascii_lowercase();
        if lower.starts_with("http:") || lower.starts_with("https:") {
            url::Url::parse(&destination)
                .map_err(|e| QueueError::InvalidDestination(format!("`{destination}`: {e}")))?;
            self.policy()
                .check_url(&destination)
                .map_err(QueueError::DestinationForbidden)?;
        } else if !is_valid_name(&destination) {
            return Err(QueueError::InvalidDestination(format!(
                "`{destination}` is neither an http(s) URL nor a URL group name"
            )));
        } else if self.store().url_group(account, &destination).await?.is_none() {
            return Err(QueueError::UrlGroupNotFound(destination));
        }
        let now = self.clock().now();
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
            next_fire: parsed.next_after(now),
            last_states: Vec::new(),
            caller_ip: request.caller_ip,
        };
        self.store().put_schedule(&schedule).await?;
        self.wake_scheduler();
        Ok(id)
    }

    /// A schedule.
    ///
    /// # Errors
    /// [`QueueError::ScheduleNotFound`]; store failures.
    pub async fn schedule(&self, account: AccountId, id: &str) -> Result<Schedule, QueueError> {
        let schedule = self
            .store()
            .schedule(account, id)
            .await?
            .ok_or_else(|| QueueError::ScheduleNotFound(id.to_owned()))?;
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
            if self.store().message(account, &id).await?.is_some() {
                continue;
            }
            let filter = crate::store::Filter {
                message_ids: vec![message_id.clone()],
                ..crate::store::Filter::default()
            };
            let newest = self.store().events(account, &filter, None, 1).await?;
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
    pub async fn schedules(&self, account: AccountId) -> Result<Vec<Schedule>, QueueError> {
        let mut schedules = Vec::new();
        for schedule in self.store().schedules(account).await? {
            schedules.push(self.with_current_states(schedule).await?);
        }
        Ok(schedules)
    }

    /// Deletes a schedule.
    ///
    /// # Errors
    /// [`QueueError::ScheduleNotFound`]; store failures.
    pub async fn delete_schedule(&self, account: AccountId, id: &str) -> Result<(), QueueError> {
        if !self.store().delete_schedule(account, id).await? {
            return Err(QueueError::ScheduleNotFound(id.to_owned()));
        }
        self.wake_scheduler();
        Ok(())
    }

    /// Pauses or resumes a schedule; a resumed schedule next fires at its next time from now.
    ///
    /// # Errors
    /// [`QueueError::ScheduleNotFound`]; store failures.
    pub async fn set_schedule_paused(
        &self,
        account: AccountId,
        id: &str,
        paused: bool,
    ) -> Result<(), QueueError> {
        let mut schedule = self.schedule(account, id).await?;
        schedule.paused = paused;
        schedule.next_fire = if paused {
            None
        } else {
            CronSchedule::parse(&schedule.cron)
                .ok()
                .and_then(|c| c.next_after(self.clock().now()))
        };
        self.store().put_schedule(&schedule).await?;
        self.wake_scheduler();
        Ok(())
    }

    /// Publishes every due schedule once (a missed window fires once) and moves each to its next time
    /// after now. Returns how many fired.
    ///
    /// # Errors
    /// Store failures.
    pub async fn fire_due_schedules(&self) -> Result<usize, QueueError> {
        let now = self.clock().now();
        let due = self.store().due_schedules(now, FIRE_BATCH).await?;
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
            schedule_id: Some(schedule.id.clone()),
        };
        let in_progress = ScheduleState::InProgress.as_str().to_owned();
        schedule.last_states = match self.publish(schedule.account_id, request).await {
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
        schedule.next_fire = CronSchedule::parse(&schedule.cron)
            .ok()
            .and_then(|c| c.next_after(now));
        self.store().put_schedule(&schedule).await?;
        debug!(schedule.id = %schedule.id, "schedule fired");
        Ok(())
    }
}

/// Fires schedules, and times out workflow waits, as the clock reaches them, until `shutdown`.
///
/// # Cancel safety
/// Stopping between firings is safe; a firing interrupted before its schedule was updated fires again
/// at the next start (at least once).
pub async fn run_scheduler(queue: Queue, shutdown: CancellationToken) {
    loop {
        let changed = queue.schedules_changed().notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        queue.scheduler_state().round_starts();
        let mut busy = false;
        for result in [queue.fire_due_schedules().await, queue.time_out_waiters().await] {
            match result {
                Ok(fired) => busy |= fired > 0,
                Err(QueueError::Store(quiver_core::StoreError::Closed)) => return,
                Err(error) => warn!(%error, "firing schedules or timing out waits failed"),
            }
        }
        if busy {
            continue;
        }
        // A failed look-up is not "nothing is due": look again shortly.
        let next = match (
            queue.store().next_schedule_due().await,
            queue.store().next_waiter_deadline().await,
        ) {
            (Ok(schedule), Ok(deadline)) => Ok(match (schedule, deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }),
            (Err(quiver_core::StoreError::Closed), _) | (_, Err(quiver_core::StoreError::Closed)) => return,
            (Err(error), _) | (_, Err(error)) => Err(error),
        };
        let sleep = match next {
            Ok(Some(due)) => {
                queue.scheduler_state().sleeps_until(Some(due));
                queue.clock().sleep_until(due)
            }
            Ok(None) => {
                queue.scheduler_state().sleeps_until(None);
                Box::pin(std::future::pending())
            }
            // Still busy: it looks again shortly.
            Err(error) => {
                warn!(%error, "finding the next schedule or wait deadline failed; looking again shortly");
                Box::pin(tokio::time::sleep(std::time::Duration::from_millis(200)))
            }
        };
        tokio::select! {
            biased;
            () = shutdown.cancelled() => return,
            () = &mut changed => {}
            () = sleep => {}
        }
    }
}
