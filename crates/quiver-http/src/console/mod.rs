//! The web console at `/console`: a page, its script and style sheet, embedded in the binary, and the
//! small API the page calls.
//!
//! The page never holds a credential. Signing in (`POST /console/api/session` with the account's email
//! and API key) sets an `HttpOnly`, `SameSite=Strict` cookie naming a session of this node
//! ([`crate::sessions`]); every other request repeats the session's CSRF token in `X-Quiver-Csrf`. The page
//! reaches the APIs through its proxy: `/console/api/v2/...` is the management or queue API, and
//! `/console/api/vector/{index id}/...` and `/console/api/search/{index id}/...` an index's data plane,
//! each answered by the same router as a client's request, with the credentials the session stands
//! for put in. So everything the console does is an API call, with the API's checks, limits, metering
//! and errors.
//!
//! Cross-origin requests get nothing here: the outermost layer neither answers preflights for
//! `/console` nor marks its answers for other origins.

mod assets;
mod guard;
mod proxy;

use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;
use guard::{COOKIE, session_id, signed_in};

/// Where the console is served from, and the paths its cookie is sent to.
pub(crate) const PREFIX: &str = "/console";

/// Whether `path` is the console's (cross-origin requests get nothing there).
pub(crate) fn is_console_path(path: &str) -> bool {
    path == PREFIX || path.starts_with("/console/")
}

/// The console's routes; `api` is the application's other routes, which the proxy calls.
pub(crate) fn routes(state: AppState, api: Router) -> Router {
    let proxied = Router::new()
        .route("/console/api/v2/{*path}", any(proxy::to_api))
        .route("/console/api/vector/{index}/{*path}", any(proxy::to_index))
        .route("/console/api/search/{index}/{*path}", any(proxy::to_search_index))
        .with_state(proxy::Proxy {
            state: state.clone(),
            api,
        });
    Router::new()
        .route("/console", get(assets::page))
        .route("/console/", get(assets::page))
        .route("/console/app.js", get(assets::script))
        .route("/console/app.css", get(assets::style))
        .route(
            "/console/api/session",
            post(sign_in).get(session).delete(sign_out),
        )
        .route("/console/api/options", get(options))
        .route("/console/api/cron", get(cron_firings))
        .with_state(state)
        .merge(proxied)
}

/// What the page learns about its session.
#[derive(Debug, Serialize)]
struct SessionAnswer {
    email: String,
    csrf: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignInForm {
    email: String,
    api_key: String,
}

/// `Set-Cookie` for a session: `HttpOnly`, `SameSite=Strict`, sent to `/console` only, `Secure` when
/// the request came over TLS (through a proxy that says so in `X-Forwarded-Proto` or `Forwarded`).
fn cookie(headers: &HeaderMap, value: &str, max_age_secs: u64) -> HeaderValue {
    let over_tls = headers
        .get("x-forwarded-proto")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
        || headers
            .get(header::FORWARDED)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|forwarded| forwarded.to_ascii_lowercase().contains("proto=https"));
    let secure = if over_tls { "; Secure" } else { "" };
    let text =
        format!("{COOKIE}={value}; Path={PREFIX}; Max-Age={max_age_secs}; HttpOnly; SameSite=Strict{secure}");
    // A session id is base64url, so the value is always a valid header value.
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("quiver_console=; Max-Age=0"))
}

/// `POST /console/api/session` with `{"email", "api_key"}`: signs in.
async fn sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    // JSON only: a form of another site cannot send it without a preflight, which /console refuses.
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"));
    if !is_json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "sign in with a JSON body: {\"email\": ..., \"api_key\": ...}",
        ));
    }
    let form: SignInForm = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("sign in with {{\"email\", \"api_key\"}}: {e}")))?;
    let account = match state.admin.authenticate(&form.email, &form.api_key).await {
        Ok(account) => account,
        Err(quiver_admin::AdminError::Unauthorized) => {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: no account has that email and API key",
            ));
        }
        Err(other) => return Err(other.into()),
    };
    let (id, who) = state.console.sign_in(&account);
    let cookie = cookie(&headers, &id, state.console.lifetime().as_secs());
    let mut answer = Json(SessionAnswer {
        email: who.email,
        csrf: who.csrf,
    })
    .into_response();
    answer.headers_mut().insert(header::SET_COOKIE, cookie);
    answer
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(answer)
}

/// `GET /console/api/session`: who is signed in, and the CSRF token (the page asks at load, so a
/// reload keeps the session). The token is the one thing this route hands out without being repeated.
async fn session(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let who = session_id(&headers)
        .and_then(|id| state.console.find(id))
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized: not signed in"))?;
    let mut answer = Json(SessionAnswer {
        email: who.email,
        csrf: who.csrf,
    })
    .into_response();
    answer
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(answer)
}

/// `DELETE /console/api/session`: signs out (the session ends on this node, the cookie is cleared).
async fn sign_out(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    signed_in(&state, &headers)?;
    if let Some(id) = session_id(&headers) {
        state.console.sign_out(id);
    }
    let mut answer = StatusCode::NO_CONTENT.into_response();
    answer
        .headers_mut()
        .insert(header::SET_COOKIE, cookie(&headers, "", 0));
    Ok(answer)
}

/// What the index form offers: every value of each field the management API reads, and of the dense
/// models only those installed on this node.
#[derive(Debug, Serialize)]
struct OptionsAnswer {
    dense_models: Vec<DenseModelAnswer>,
    sparse_models: Vec<&'static str>,
    regions: Vec<&'static str>,
    search_regions: Vec<&'static str>,
    similarity_functions: Vec<&'static str>,
    index_types: Vec<&'static str>,
    plans: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
struct DenseModelAnswer {
    name: &'static str,
    dimension: u32,
}

/// `GET /console/api/options`.
async fn options(State(state): State<AppState>, headers: HeaderMap) -> Result<Json<OptionsAnswer>, ApiError> {
    use quiver_core::index::{IndexType, SearchRegion, SimilarityFunction, SparseModel, VectorRegion};
    use quiver_core::plan::PlanType;
    signed_in(&state, &headers)?;
    let dense_models = state
        .embedders
        .installed_models()
        .into_iter()
        .map(|model| DenseModelAnswer {
            name: model.as_str(),
            dimension: model.dimensions(),
        })
        .collect();
    Ok(Json(OptionsAnswer {
        dense_models,
        sparse_models: SparseModel::ALL.iter().map(|v| v.as_str()).collect(),
        regions: VectorRegion::ALL.iter().map(|v| v.as_str()).collect(),
        search_regions: SearchRegion::ALL.iter().map(|v| v.as_str()).collect(),
        similarity_functions: SimilarityFunction::ALL.iter().map(|v| v.as_str()).collect(),
        index_types: IndexType::ALL.iter().map(|v| v.as_str()).collect(),
        plans: [PlanType::Free, PlanType::Payg, PlanType::Fixed]
            .iter()
            .map(|v| v.as_str())
            .collect(),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CronQuery {
    expression: String,
    #[serde(default)]
    count: Option<usize>,
}

#[derive(Debug, Serialize)]
struct CronAnswer {
    /// The next firings, in milliseconds since the epoch.
    next: Vec<i64>,
}

/// `GET /console/api/cron?expression=...&count=N`: the next firings of a schedule's cron expression
/// (at most 20), or 400 with the parser's reason, for the schedule form's helper.
async fn cron_firings(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<CronQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<CronAnswer>, ApiError> {
    signed_in(&state, &headers)?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let schedule = quiver_queue::schedule::CronSchedule::parse(&query.expression)
        .map_err(|reason| ApiError::bad_request(format!("cron expression: {reason}")))?;
    let count = query.count.unwrap_or(5).clamp(1, 20);
    let mut next = Vec::with_capacity(count);
    let mut after = state.console.now();
    while next.len() < count {
        let Some(firing) = schedule.next_after(after) else {
            break;
        };
        next.push(firing.as_millis());
        after = firing;
    }
    Ok(Json(CronAnswer { next }))
}
