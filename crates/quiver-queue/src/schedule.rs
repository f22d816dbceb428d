//! Schedules: a cron expression (5 fields, optionally prefixed `CRON_TZ=Area/City`) that publishes a
//! stored request each time it fires. After downtime a schedule fires once for the missed window, then
//! resumes from the current time: never a burst of catch-up messages.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use quiver_core::{AccountId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::publish::parse_publish_options;

/// A parsed cron expression with its time zone, and the text it was parsed from (what it is stored and
/// shown as; two schedules are equal when their texts are).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CronSchedule {
    source: String,
    cron: Cron,
    zone: Tz,
}

impl PartialEq for CronSchedule {
    fn eq(&self, other: &CronSchedule) -> bool {
        self.source == other.source
    }
}

impl Eq for CronSchedule {}

impl TryFrom<String> for CronSchedule {
    type Error = String;
    fn try_from(text: String) -> Result<CronSchedule, String> {
        CronSchedule::parse(&text)
    }
}

impl From<CronSchedule> for String {
    fn from(cron: CronSchedule) -> String {
        cron.source
    }
}

impl CronSchedule {
    /// Parses `[CRON_TZ=Zone ]m h dom mon dow`.
    ///
    /// # Errors
    /// A message saying what is wrong.
    pub fn parse(text: &str) -> Result<CronSchedule, String> {
        let text = text.trim();
        let (zone, expression) = match text.strip_prefix("CRON_TZ=") {
            Some(rest) => {
                let (zone, expression) = rest
                    .split_once(char::is_whitespace)
                    .ok_or("CRON_TZ needs an expression after it")?;
                (
                    Tz::from_str(zone).map_err(|_| format!("`{zone}` is not a time zone name"))?,
                    expression.trim(),
                )
            }
            None => (Tz::UTC, text),
        };
        let fields = expression.split_whitespace().count();
        if fields != 5 {
            return Err(format!(
                "`{expression}` has {fields} fields; a cron expression has 5 (minute hour day month weekday)"
            ));
        }
        // croner accepts an empty list item (`1,,2`, a lone `,`); the fuzz target found such an
        // expression for which finding the next firing took over ten seconds.
        if let Some(field) = expression
            .split_whitespace()
            .find(|field| field.split(',').any(str::is_empty))
        {
            return Err(format!(
                "`{expression}` has an empty item in the list `{field}`; separate values with single commas"
            ));
        }
        let cron = Cron::from_str(expression)
            .map_err(|e| format!("`{expression}` is not a valid cron expression: {e}"))?;
        Ok(CronSchedule {
            source: text.to_owned(),
            cron,
            zone,
        })
    }

    /// The expression as given (trimmed).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The first firing strictly after `after`.
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let utc: DateTime<Utc> = Utc.timestamp_millis_opt(after.as_millis()).single()?;
        let local = utc.with_timezone(&self.zone);
        let next = self.cron.find_next_occurrence(&local, false).ok()?;
        Some(Timestamp::from_millis(
            next.with_timezone(&Utc).timestamp_millis(),
        ))
    }
}

/// A stored schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// Identifier (`scd_…`, or the one the client chose).
    pub id: crate::names::ScheduleId,
    /// Owner.
    pub account_id: AccountId,
    /// The cron expression, parsed when it is read.
    pub cron: CronSchedule,
    /// URL or URL group name.
    pub destination: String,
    /// The publish request's headers (configuration and forwarded headers), replayed at each firing.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// Whether firing is paused.
    pub paused: bool,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last fired.
    pub last_fired: Option<Timestamp>,
    /// When it fires next (none while paused).
    pub next_fire: Option<Timestamp>,
    /// Messages of the last firing and how their publish went.
    pub last_states: Vec<(String, String)>,
    /// Who created it.
    pub caller_ip: Option<String>,
}

/// How the messages of a schedule's last firing went (`lastScheduleStates`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleState {
    /// Waiting or being delivered.
    InProgress,
    /// Delivered.
    Success,
    /// Dead-lettered or cancelled, or the publish itself failed.
    Fail,
}

impl ScheduleState {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            ScheduleState::InProgress => "IN_PROGRESS",
            ScheduleState::Success => "SUCCESS",
            ScheduleState::Fail => "FAIL",
        }
    }
}

impl Schedule {
    /// The publish settings of the stored headers (validated when the schedule was created).
    pub fn options(&self) -> crate::publish::PublishOptions {
        parse_publish_options(&self.headers, &[]).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::from_millis(DateTime::parse_from_rfc3339(text).unwrap().timestamp_millis())
    }

    #[test]
    fn firing_times_follow_the_expression_in_utc_or_the_given_zone() {
        let every_five = CronSchedule::parse("*/5 * * * *").unwrap();
        assert_eq!(
            every_five.next_after(at("2025-01-01T10:02:30Z")),
            Some(at("2025-01-01T10:05:00Z"))
        );
        assert_eq!(
            every_five.next_after(at("2025-01-01T10:05:00Z")),
            Some(at("2025-01-01T10:10:00Z")),
            "strictly after"
        );
        let nine_in_new_york = CronSchedule::parse("CRON_TZ=America/New_York 0 9 * * *").unwrap();
        assert_eq!(
            nine_in_new_york.next_after(at("2025-01-01T00:00:00Z")),
            Some(at("2025-01-01T14:00:00Z")),
            "EST"
        );
        assert_eq!(
            nine_in_new_york.next_after(at("2025-07-01T00:00:00Z")),
            Some(at("2025-07-01T13:00:00Z")),
            "EDT"
        );
    }

    #[test]
    fn malformed_expressions_are_refused_with_a_reason() {
        assert!(CronSchedule::parse("* * * *").unwrap_err().contains("5"));
        assert!(CronSchedule::parse("0 * * * * *").unwrap_err().contains("5"));
        assert!(CronSchedule::parse("61 * * * *").is_err());
        assert!(
            CronSchedule::parse("CRON_TZ=Mars/Olympus 0 9 * * *")
                .unwrap_err()
                .contains("time zone")
        );
        assert!(CronSchedule::parse("CRON_TZ=UTC").is_err());
        for empty_item in [", * * * 3", "1,,2 * * * *", "* * * * 3,", "0 9 ,1 * *"] {
            assert!(
                CronSchedule::parse(empty_item)
                    .unwrap_err()
                    .contains("empty item"),
                "{empty_item}"
            );
        }
    }
}
