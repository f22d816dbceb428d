//! The operators' routes: health, metrics and this description (no API credentials).

use serde_json::json;

use super::schemas::{array, object, string, words};
use super::{Auth, Op};

pub(super) fn operations() -> Vec<Op> {
    let health = |statuses: &[&str]| object(&[("status", words(statuses)), ("reasons", array(string()))], 1);
    vec![
        Op::new(
            "GET",
            "/healthz",
            "operations",
            Auth::Open,
            "The process answers.",
        )
        .ok(health(&["ok"])),
        Op::new(
            "GET",
            "/readyz",
            "operations",
            Auth::Open,
            "Stores writable, models and indexes loaded: 200, else 503 with the reasons.",
        )
        .ok(health(&["ready"]))
        .answer(
            "503",
            "Not ready; the reasons say why.",
            Some(health(&["unavailable"])),
        ),
        Op::new(
            "GET",
            "/metrics",
            "operations",
            Auth::Metrics,
            "Prometheus text format metrics.",
        )
        .answer("200", "The metrics.", None)
        .content("200", "application/openmetrics-text", json!({"type": "string"})),
        Op::new(
            "GET",
            "/openapi.json",
            "operations",
            Auth::Open,
            "This description.",
        )
        .ok(json!({"type": "object"})),
    ]
}
