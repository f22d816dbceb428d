//! The console's files, embedded at build time (`crates/quiver-http/console/`): one page, one script
//! (its source kept in a file per area, joined here), one style sheet, written by hand with no
//! third-party code, so nothing is fetched at run time and `cargo build` needs no JavaScript toolchain.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const PAGE: &str = include_str!("../../console/index.html");
const SCRIPT: &str = concat!(
    include_str!("../../console/core.js"),
    include_str!("../../console/indexes.js"),
    include_str!("../../console/search.js"),
    include_str!("../../console/queue.js"),
);
const STYLE: &str = include_str!("../../console/app.css");

/// Only this origin's script, style sheet and API; no framing, no inline code.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

fn file(body: &'static str, content_type: &'static str) -> Response {
    let mut answer = body.into_response();
    let headers = answer.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Revalidated at each load, so a new build's files are never mixed with an old one's.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    answer
}

/// `GET /console`: the page.
pub(crate) async fn page() -> Response {
    let mut answer = file(PAGE, "text/html; charset=utf-8");
    let headers = answer.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    answer
}

/// `GET /console/app.js`.
pub(crate) async fn script() -> Response {
    file(SCRIPT, "text/javascript; charset=utf-8")
}

/// `GET /console/app.css`.
pub(crate) async fn style() -> Response {
    file(STYLE, "text/css; charset=utf-8")
}
