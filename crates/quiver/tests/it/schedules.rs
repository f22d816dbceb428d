//! Schedules through HTTP: create, read every SPEC 2.5 field, fire on the manual clock, fire once for a
//! missed window, pause and resume, overwrite by id, delete, restart.

use std::time::Duration;

use quiver_core::Timestamp;
use quiver_testkit::calls::send;
use quiver_testkit::poll::until;
use quiver_testkit::{Receiver, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);
/// 2025-01-01T10:02:00Z.
const START: i64 = 1_735_725_720_000;

async fn create(
    server: &TestServer,
    destination: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, Value) {
    let mut request = server
        .queue(Method::POST, &format!("/v2/schedules/{destination}"))
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(request).await
}

async fn schedule(server: &TestServer, id: &str) -> Value {
    let (status, record) = send(server.queue(Method::GET, &format!("/v2/schedules/{id}"))).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    record
}

/// Waits until the schedule's last firing is recorded as `fired_at`.
async fn wait_fired(server: &TestServer, id: &str, fired_at: i64) -> Value {
    until(&format!("schedule {id} firing at {fired_at}"), WAIT, || async {
        let record = schedule(server, id).await;
        (record["lastScheduleTime"] == fired_at).then_some(record)
    })
    .await
}

#[tokio::test]
async fn a_schedule_fires_on_its_cron_and_reports_every_field() {
    let server = TestServer::embedded().await;
    server.clock().set(Timestamp::from_millis(START));
    let receiver = Receiver::start().await;
    let (status, created) = create(
        &server,
        &receiver.url("/tick"),
        &[
            ("Svc-Cron", "*/5 * * * *"),
            ("Svc-Retries", "2"),
            ("Svc-Forward-X-Tenant", "acme"),
            ("Content-Type", "text/plain"),
            ("Svc-Label", "nightly"),
            ("Svc-Callback", &receiver.url("/cb")),
            ("Svc-Callback-Forward-X-Cb", "1"),
            ("Svc-Timeout", "30s"),
            ("Svc-Flow-Control-Key", "ticks"),
            ("Svc-Flow-Control-Value", "rate=5"),
        ],
        "tick",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{created}");
    let id = created["scheduleId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("scd_"));

    let record = schedule(&server, &id).await;
    assert_eq!(record["scheduleId"], id.as_str());
    assert_eq!(record["cron"], "*/5 * * * *");
    assert_eq!(record["destination"], receiver.url("/tick"));
    assert_eq!(record["createdAt"], START);
    assert_eq!(record["method"], "POST");
    assert_eq!(record["isPaused"], false);
    assert_eq!(record["header"]["X-Tenant"], json!(["acme"]));
    assert_eq!(record["header"]["Content-Type"], json!(["text/plain"]));
    assert_eq!(record["body"], "tick");
    assert_eq!(record["retries"], 2);
    assert_eq!(record["callback"], receiver.url("/cb"));
    assert_eq!(record["labels"], json!(["nightly"]));
    assert_eq!(record["timeout"], 30, "seconds, as the SDKs send it");
    assert_eq!(record["callbackHeader"]["X-Cb"], json!(["1"]));
    assert_eq!(
        (record["rate"].clone(), record["period"].clone()),
        (json!(5), json!(1)),
        "a rate without a period reports the default period"
    );
    assert_eq!(record["label"], "nightly");
    assert!(record["callerIp"].is_string());
    assert_eq!(record["nextScheduleTime"], START + 3 * 60_000, "10:05");
    assert!(record.get("lastScheduleTime").is_none());

    server.clock().advance(Duration::from_secs(3 * 60));
    let delivered = receiver.wait_for(1, WAIT).await.remove(0);
    assert_eq!(delivered.uri.path(), "/tick");
    assert_eq!(&delivered.body[..], b"tick");
    assert_eq!(delivered.header("upstash-schedule-id"), Some(id.as_str()));
    assert_eq!(delivered.header("x-tenant"), Some("acme"));
    let record = wait_fired(&server, &id, START + 3 * 60_000).await;
    assert_eq!(record["nextScheduleTime"], START + 8 * 60_000);
    let states = record["lastScheduleStates"].as_object().unwrap();
    assert_eq!(states.len(), 1);
    let message_id = states.keys().next().unwrap().clone();
    let state = &states[&message_id];
    assert!(state == "IN_PROGRESS" || state == "SUCCESS", "{state}");
    // The firing's message is delivered.
    until("the firing's message delivered", WAIT, || async {
        (schedule(&server, &id).await["lastScheduleStates"][&message_id] == "SUCCESS").then_some(())
    })
    .await;
    let (_, message_events) =
        send(server.queue(Method::GET, &format!("/v2/events?messageId={message_id}"))).await;
    assert_eq!(message_events["events"][0]["scheduleId"], id.as_str());

    // An hour of downtime fires once for the missed window, not twelve times.
    server.clock().advance(Duration::from_secs(60 * 60));
    let record = wait_fired(&server, &id, START + 8 * 60_000).await;
    assert_eq!(
        record["nextScheduleTime"],
        START + 68 * 60_000,
        "the first firing after now"
    );
    let ticks = |receiver: &Receiver| {
        receiver
            .requests()
            .iter()
            .filter(|r| r.uri.path() == "/tick")
            .count()
    };
    // Callbacks arrive at the same receiver: wait for the ticks themselves.
    for _ in 0..200 {
        if ticks(&receiver) >= 2 {
            break;
        }
        receiver
            .try_wait_for(receiver.requests().len() + 1, Duration::from_millis(100))
            .await;
    }
    assert_eq!(ticks(&receiver), 2, "one firing for the missed hour, not twelve");
}

#[tokio::test]
async fn pause_resume_overwrite_delete_and_bad_input() {
    let mut server = TestServer::embedded().await;
    server.clock().set(Timestamp::from_millis(START));
    let receiver = Receiver::start().await;
    let headers = [
        ("Upstash-Cron", "0 * * * *"),
        ("Upstash-Schedule-Id", "hourly.job"),
    ];
    let (status, created) = create(&server, &receiver.url("/hourly"), &headers, "first body").await;
    assert_eq!(
        (status, created["scheduleId"].clone()),
        (StatusCode::OK, json!("hourly.job"))
    );
    assert_eq!(schedule(&server, "hourly.job").await["body"], "first body");

    let (status, _) = send(server.queue(Method::PATCH, "/v2/schedules/hourly.job/pause")).await;
    assert_eq!(status, StatusCode::OK);
    let record = schedule(&server, "hourly.job").await;
    assert_eq!(record["isPaused"], true);
    assert_eq!(
        record["retries"], 3,
        "a schedule that does not say gets the default"
    );
    assert!(record.get("nextScheduleTime").is_none());
    server.clock().advance(Duration::from_secs(2 * 3600));
    let (status, _) = send(server.queue(Method::POST, "/v2/schedules/hourly.job/resume")).await;
    assert_eq!(status, StatusCode::OK);
    let record = schedule(&server, "hourly.job").await;
    assert_eq!(record["isPaused"], false);
    assert_eq!(
        record["nextScheduleTime"],
        START + 58 * 60_000 + 2 * 3_600_000,
        "13:00, the next hour after now"
    );
    assert!(receiver.requests().is_empty(), "nothing fired while paused");

    let overwrite = [
        ("Upstash-Cron", "30 * * * *"),
        ("Upstash-Schedule-Id", "hourly.job"),
    ];
    create(&server, &receiver.url("/hourly"), &overwrite, "").await;
    let (_, all) = send(server.queue(Method::GET, "/v2/schedules")).await;
    assert_eq!(
        all.as_array().unwrap().len(),
        1,
        "the same id replaces the schedule"
    );
    assert_eq!(all[0]["cron"], "30 * * * *");
    assert_eq!(all[0]["retries"], 3);
    assert!(
        all[0].get("body").is_none(),
        "re-created without a body: {}",
        all[0]
    );

    server.restart().await;
    assert_eq!(
        schedule(&server, "hourly.job").await["cron"],
        "30 * * * *",
        "schedules survive a restart"
    );

    for (headers, what) in [
        (vec![], "a missing cron"),
        (vec![("Svc-Cron", "not a cron")], "a malformed cron"),
        (vec![("Svc-Cron", "* * * * * *")], "six fields"),
        (
            vec![("Svc-Cron", "CRON_TZ=Nowhere/Never 0 9 * * *")],
            "an unknown zone",
        ),
        (
            vec![("Svc-Cron", "* * * * *"), ("Svc-Schedule-Id", "bad id!")],
            "a bad id",
        ),
        (
            vec![("Svc-Cron", "* * * * *"), ("Svc-Retries", "lots")],
            "a bad publish header",
        ),
    ] {
        let (status, error) = create(&server, &receiver.url("/x"), &headers, "").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{what}: {error}");
    }
    let (status, _) = create(&server, "no-such-group", &[("Svc-Cron", "* * * * *")], "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let reader = server
        .client()
        .get(server.url("/v2/schedules/hourly.job"))
        .bearer_auth(&server.account().queue_read_only_token);
    assert_eq!(
        reader.send().await.unwrap().status(),
        StatusCode::OK,
        "the read-only token reads"
    );
    let deleter = server
        .client()
        .delete(server.url("/v2/schedules/hourly.job"))
        .bearer_auth(&server.account().queue_read_only_token);
    assert_eq!(deleter.send().await.unwrap().status(), StatusCode::FORBIDDEN);

    let (status, _) = send(server.queue(Method::DELETE, "/v2/schedules/hourly.job")).await;
    assert_eq!(status, StatusCode::OK);
    for (method, path) in [
        (Method::GET, "/v2/schedules/hourly.job"),
        (Method::DELETE, "/v2/schedules/hourly.job"),
        (Method::PATCH, "/v2/schedules/hourly.job/pause"),
    ] {
        let (status, _) = send(server.queue(method.clone(), path)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn cron_tz_schedules_fire_in_their_zone() {
    let server = TestServer::embedded().await;
    server.clock().set(Timestamp::from_millis(START));
    let (_, created) = create(
        &server,
        "https://example.com/x",
        &[("Svc-Cron", "CRON_TZ=America/New_York 0 9 * * *")],
        "",
    )
    .await;
    let record = schedule(&server, created["scheduleId"].as_str().unwrap()).await;
    assert_eq!(
        record["nextScheduleTime"], 1_735_740_000_000_i64,
        "14:00 UTC is 09:00 in New York in January"
    );
}
