//! Who a console request is: the session its cookie names, checked against the CSRF token it repeats.

use axum::http::{HeaderMap, StatusCode, header};

use crate::error::ApiError;
use crate::state::AppState;

/// The cookie that names a console session.
pub(super) const COOKIE: &str = "quiver_console";

/// The header that repeats a session's CSRF token.
pub(super) const CSRF_HEADER: &str = "x-quiver-csrf";

/// The session id the request's cookie names, if any.
pub(super) fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
}

/// The session of a request that names a live one and repeats its CSRF token: 401 otherwise, so the
/// page shows its sign-in form.
pub(super) fn signed_in(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<crate::sessions::SignedIn, ApiError> {
    let unauthorized = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Unauthorized: sign in to the console (the session has ended or never began)",
        )
    };
    let who = session_id(headers)
        .and_then(|id| state.console.find(id))
        .ok_or_else(unauthorized)?;
    let csrf = headers.get(CSRF_HEADER).and_then(|value| value.to_str().ok());
    match csrf {
        Some(csrf) if quiver_core::secret::constant_time_eq(csrf, &who.csrf) => Ok(who),
        _ => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "Forbidden: a console request must repeat its session's CSRF token in X-Quiver-Csrf",
        )),
    }
}
