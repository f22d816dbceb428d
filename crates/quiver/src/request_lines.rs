//! Request lines in the text format, written straight into the log's buffer.
//!
//! `tracing`'s formatter spent about 11,700 instructions on each request line (a tenth of a publish's,
//! counted by `bench/queue_instructions.py`): visiting the fields through `dyn Debug`, padding, and
//! formatting the time through `fmt`. This writes the same bytes, for the one line every request logs,
//! in about 2,600. It serves only the text format without colours; colours (standard error at a
//! terminal) and JSON keep `tracing`'s formatter. The tests compare the two byte for byte.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use quiver_http::request_line::{RequestLines, Served};

use crate::log_writer::BackgroundWriter;

/// Writes request lines as `tracing`'s text formatter does, without colours, into the log's buffer.
pub(crate) struct TextRequestLines(pub(crate) BackgroundWriter);

impl std::fmt::Debug for TextRequestLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TextRequestLines")
    }
}

impl RequestLines for TextRequestLines {
    #[expect(
        clippy::disallowed_methods,
        reason = "a log line's time is the wall clock's, to the microsecond, as `tracing`'s timer reads it"
    )]
    fn served(&self, line: &Served<'_>) {
        thread_local! {
            static TEXT: RefCell<String> = RefCell::new(String::with_capacity(256));
        }
        TEXT.with(|text| {
            let mut text = text.borrow_mut();
            text.clear();
            push_timestamp(&mut text, SystemTime::now());
            push_line(&mut text, line);
            // Nowhere to report a failed write of the log itself.
            let _ = self.0.clone().write_all(text.as_bytes());
        });
    }
}

/// The time as `tracing`'s `SystemTime` timer writes it (`2026-12-07T09:54:28.838988Z`, UTC, to the
/// microsecond), then the space that ends it. Digits are pushed one by one: through `fmt`, the time was
/// most of a line's cost.
fn push_timestamp(out: &mut String, now: SystemTime) {
    // A clock set before 1970 writes the epoch (where `tracing` would write the earlier date): no
    // machine that serves runs there.
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs();
    let (year, month, day) = civil_date(seconds / 86_400);
    let of_day = seconds % 86_400;
    if year > 9_999 {
        out.push('+');
        push_number(out, year);
    } else {
        push_digits(out, year, 4);
    }
    for (separator, value, width) in [
        ('-', month, 2),
        ('-', day, 2),
        ('T', of_day / 3_600, 2),
        (':', of_day / 60 % 60, 2),
        (':', of_day % 60, 2),
        ('.', u64::from(since.subsec_micros()), 6),
    ] {
        out.push(separator);
        push_digits(out, value, width);
    }
    out.push_str("Z ");
}

/// `value`'s last `width` decimal digits, zeros in front.
fn push_digits(out: &mut String, value: u64, width: u32) {
    let mut scale = 10_u64.pow(width.saturating_sub(1));
    while scale > 0 {
        out.push(char::from(b'0' + (value / scale % 10) as u8));
        scale /= 10;
    }
}

/// `value` in decimal.
fn push_number(out: &mut String, value: u64) {
    let width = value.checked_ilog10().unwrap_or(0) + 1;
    push_digits(out, value, width);
}

/// The Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_date(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// The rest of the line after the time: the level, the target, the message and the fields as
/// `tracing`'s formatter writes them (Display for `%` fields, numbers, Debug for text fields).
fn push_line(out: &mut String, line: &Served<'_>) {
    out.push_str(" INFO quiver_http::router: request served request.id=");
    out.push_str(&line.id_text());
    out.push_str(" http.method=");
    out.push_str(line.method.as_str());
    out.push_str(" http.route=");
    out.push_str(line.route);
    out.push_str(" http.status=");
    push_number(out, u64::from(line.status));
    out.push_str(" duration_us=");
    push_number(out, line.duration_us);
    if let Some(made) = line.messages {
        out.push_str(" message.id=");
        // Message ids are Quiver's own (`msg_` and URL-safe base64), which Debug writes as they are,
        // in quotes; anything else goes through Debug.
        let plain = made.iter().all(|id| {
            id.0.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        });
        if plain {
            out.push('"');
            for (n, id) in made.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&id.0);
            }
            out.push('"');
        } else if let Some(joined) = line.message_ids() {
            let _ = write!(out, "{joined:?}");
        }
    }
    if let Some(error) = line.error {
        let _ = write!(out, " error={error:?}");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use quiver_queue::message::MessageId;
    use reqwest::Method;
    use tracing_subscriber::fmt::format::Writer;
    use tracing_subscriber::fmt::time::FormatTime;

    use super::*;

    const TIME: &str = "2026-12-07T09:54:28.838988Z";

    /// `tracing`'s timer, stopped at [`TIME`].
    struct Stopped;

    impl FormatTime for Stopped {
        fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
            w.write_str(TIME)
        }
    }

    /// What `tracing`'s text formatter, without colours, writes for `line`.
    fn by_tracing(line: &Served<'_>) -> String {
        let written = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&written);
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_timer(Stopped)
            .with_writer(move || Capture(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::with_default(subscriber, || quiver_http::router::log_with_tracing(line));
        let bytes = written.lock().expect("not poisoned").clone();
        String::from_utf8(bytes).expect("UTF-8")
    }

    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("not poisoned").extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn by_us(line: &Served<'_>) -> String {
        let mut text = format!("{TIME} ");
        push_line(&mut text, line);
        text
    }

    #[test]
    fn lines_are_those_tracing_writes() {
        let one = [MessageId("msg_0Vd6kNfIvap8qPCNNgm8DVwCpY_0".into())];
        let two = [MessageId("msg_a-b".into()), MessageId("msg_c_d".into())];
        let odd = [MessageId("msg \"quoted\"\n\u{301}é".into())];
        let plain = Served {
            id: b"0322d3e31f2e-1",
            method: &Method::GET,
            route: "/readyz",
            status: 200,
            duration_us: 1_988,
            messages: None,
            error: None,
        };
        let lines = [
            plain,
            Served {
                method: &Method::POST,
                route: "/v2/publish/{*destination}",
                status: 201,
                messages: Some(&one),
                ..plain
            },
            Served {
                route: "/v2/batch",
                messages: Some(&two),
                ..plain
            },
            Served {
                messages: Some(&odd),
                ..plain
            },
            Served {
                id: b"caller:id.\xff",
                route: "(no route)",
                status: 500,
                duration_us: u64::MAX,
                error: Some("internal error (id err_1): \"quoted\"\nnext line \u{1b}[31m é"),
                ..plain
            },
            Served {
                messages: Some(&[] as &[MessageId]),
                ..plain
            },
        ];
        for line in &lines {
            assert_eq!(by_us(line), by_tracing(line), "{line:?}");
        }
    }

    #[test]
    fn times_are_written_as_tracing_writes_them() {
        for (seconds, micros, written) in [
            (0, 0, "1970-01-01T00:00:00.000000Z "),
            (951_782_400, 7, "2000-02-29T00:00:00.000007Z "),
            (951_868_799, 999_999, "2000-02-29T23:59:59.999999Z "),
            (1_796_636_195, 628_000, "2026-12-07T09:36:35.628000Z "),
            (4_102_444_800, 1, "2100-01-01T00:00:00.000001Z "),
            (253_402_300_799, 0, "9999-12-31T23:59:59.000000Z "),
            (253_402_300_800, 0, "+10000-01-01T00:00:00.000000Z "),
        ] {
            let mut text = String::new();
            push_timestamp(
                &mut text,
                UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_micros(micros),
            );
            assert_eq!(text, written);
        }
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "compared with `tracing`'s timer, which reads it"
    )]
    fn a_time_agrees_with_tracing_s_own_timer() {
        // The two clocks are read one after the other; a second may tick between them.
        for _ in 0..5 {
            let mut ours = String::new();
            push_timestamp(&mut ours, SystemTime::now());
            let mut theirs = String::new();
            tracing_subscriber::fmt::time::SystemTime
                .format_time(&mut Writer::new(&mut theirs))
                .expect("formats");
            if ours[..19] == theirs[..19] {
                assert_eq!(ours.len(), theirs.len() + 1, "{ours} against {theirs}");
                return;
            }
        }
        panic!("the two timers never agreed on the second");
    }
}
