//! Which workflow runs an operation addresses ([`RunSelection`]), and how a dead-lettered run starts
//! again ([`RunRecovery`]).

use quiver_core::Timestamp;

use crate::workflow::{RunState, WorkflowRun};

/// Which runs a bulk cancel or a run listing addresses: those that every filter given matches (the
/// values of one filter are alternatives). With none, every run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSelection {
    /// These runs.
    pub run_ids: Vec<String>,
    /// Workflow URLs: prefixes, or whole URLs when `url_exact`.
    pub urls: Vec<String>,
    /// Whether `urls` are whole URLs rather than prefixes.
    pub url_exact: bool,
    /// Hosts of the workflow URL.
    pub hosts: Vec<String>,
    /// Paths of the workflow URL.
    pub paths: Vec<String>,
    /// Labels (a run matches when it carries any of them).
    pub labels: Vec<String>,
    /// Flow-control keys.
    pub flow_control_keys: Vec<String>,
    /// Addresses the runs were started from.
    pub caller_ips: Vec<String>,
    /// Started at or after.
    pub from: Option<Timestamp>,
    /// Started at or before.
    pub to: Option<Timestamp>,
    /// At most this many runs are cancelled.
    pub count: Option<usize>,
    /// Created at exactly this time.
    pub created_at: Option<Timestamp>,
    /// In one of these states (any, when empty; a cancel takes running runs only whatever this says).
    pub states: Vec<RunState>,
    /// Runs one of whose steps was carried by one of these messages.
    pub message_ids: Vec<String>,
}

impl RunSelection {
    /// Whether `run` is selected (its state aside).
    pub fn matches(&self, run: &WorkflowRun) -> bool {
        let one = |wanted: &[String], value: Option<&str>| {
            wanted.is_empty() || value.is_some_and(|v| wanted.iter().any(|w| w == v))
        };
        let url = url::Url::parse(&run.url).ok();
        let url_matches = self.urls.is_empty()
            || self.urls.iter().any(|wanted| {
                if self.url_exact {
                    run.url == *wanted
                } else {
                    run.url.starts_with(wanted.as_str())
                }
            });
        (self.run_ids.is_empty() || self.run_ids.iter().any(|id| run.id == *id.as_str()))
            && url_matches
            && one(&self.hosts, url.as_ref().and_then(url::Url::host_str))
            && one(&self.paths, url.as_ref().map(url::Url::path))
            && (self.labels.is_empty() || run.labels.iter().any(|l| self.labels.contains(l)))
            && one(&self.flow_control_keys, run.flow_control_key.as_deref())
            && one(&self.caller_ips, run.caller_ip.as_deref())
            && self.from.is_none_or(|from| run.created_at >= from)
            && self.to.is_none_or(|to| run.created_at <= to)
            && self.created_at.is_none_or(|at| run.created_at == at)
            && (self.states.is_empty() || self.states.contains(&run.state))
            && (self.message_ids.is_empty()
                || run
                    .steps
                    .iter()
                    .any(|step| self.message_ids.contains(&step.message_id)))
    }
}

/// How a run whose step was dead-lettered starts again, as a new run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRecovery {
    /// From the failed step, with the history before it.
    Resume,
    /// From the beginning, with the initial payload.
    Restart,
}
