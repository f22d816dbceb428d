//! HTTP Basic authentication of the management API (`email:api_key`).

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use quiver_admin::Account;

use crate::error::ApiError;
use crate::state::AppState;

/// The account whose HTTP Basic credentials came with the request.
#[derive(Debug, Clone)]
pub struct ManagementAccount(pub Account);

/// Reads `Authorization: Basic base64(user:password)`; `None` when absent or malformed.
fn basic_credentials(parts: &Parts) -> Option<(String, String)> {
    let value = parts.headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

impl FromRequestParts<AppState> for ManagementAccount {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Some((email, api_key)) = basic_credentials(parts) else {
            return Err(ApiError::basic_challenge(
                "Unauthorized: send HTTP Basic credentials: your account email and API key",
            ));
        };
        let account = state.admin.authenticate(&email, &api_key).await?;
        Ok(ManagementAccount(account))
    }
}

/// The account whose queue token came with the request (Bearer header, or `svc_token` /
/// `qstash_token` in the query), and whether that token is the read-only one.
#[derive(Debug, Clone)]
pub struct QueueAccount {
    /// The account (shared with the token cache).
    pub account: std::sync::Arc<Account>,
    /// Whether the token may only read.
    pub read_only: bool,
}

impl QueueAccount {
    /// Refuses read-only tokens (403).
    ///
    /// # Errors
    /// 403 for a read-only token.
    pub fn require_write(&self) -> Result<(), ApiError> {
        if self.read_only {
            Err(ApiError::new(
                axum::http::StatusCode::FORBIDDEN,
                "this token is read-only; use the queue token to change anything",
            ))
        } else {
            Ok(())
        }
    }
}

/// The account of a queue token that may change things. A read-only token is refused (403) here, before
/// the body is read, so a write route answers it the same whatever the body.
#[derive(Debug, Clone)]
pub struct QueueWriter(pub QueueAccount);

impl FromRequestParts<AppState> for QueueWriter {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let account = QueueAccount::from_request_parts(parts, state).await?;
        account.require_write()?;
        Ok(QueueWriter(account))
    }
}

/// The token of an `Authorization: Bearer <token>` header (the scheme in any case). A header that is
/// not text carries no token: the caller answers as it does to a missing one.
pub fn bearer_header(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The bearer token of a request: the `Authorization` header, else a token query parameter.
pub fn bearer_token(parts: &Parts, query_names: &[&str]) -> Option<String> {
    if let Some(token) = bearer_header(&parts.headers) {
        return Some(token.to_owned());
    }
    let query = parts.uri.query()?;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| query_names.contains(&name.as_ref()))
        .map(|(_, value)| value.into_owned())
}

/// The query keys that carry the queue token (`?svc_token=`, and the Upstash spelling), for callers that
/// can only call a plain URL. Queue routes that check their query keys accept these whatever else they take.
pub(crate) const QUEUE_TOKEN_KEYS: [&str; 2] = ["svc_token", "qstash_token"];

impl FromRequestParts<AppState> for QueueAccount {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Some(token) = bearer_token(parts, &QUEUE_TOKEN_KEYS) else {
            return Err(ApiError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "Unauthorized: send the queue token as `Authorization: Bearer <token>` or `?svc_token=<token>`",
            ));
        };
        match state.admin.authenticate_queue(&token).await {
            Ok((account, read_only)) => Ok(QueueAccount { account, read_only }),
            Err(quiver_admin::AdminError::Unauthorized) => Err(ApiError::new(
                axum::http::StatusCode::UNAUTHORIZED,
                "Unauthorized: invalid queue token",
            )),
            Err(other) => Err(other.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::Request;

    use super::*;

    fn parts_with(authorization: &str) -> Parts {
        Request::builder()
            .header(header::AUTHORIZATION, authorization)
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    #[test]
    fn basic_credentials_split_at_the_first_colon() {
        let encoded = STANDARD.encode("me@example.com:key:with:colons");
        let parsed = basic_credentials(&parts_with(&format!("basic {encoded}")));
        assert_eq!(parsed, Some(("me@example.com".into(), "key:with:colons".into())));
    }

    #[test]
    fn other_schemes_and_garbage_are_not_credentials() {
        assert_eq!(basic_credentials(&parts_with("Bearer abc")), None);
        assert_eq!(basic_credentials(&parts_with("Basic !!!")), None);
        assert_eq!(
            basic_credentials(&parts_with(&format!("Basic {}", STANDARD.encode("no-colon")))),
            None
        );
    }
}
