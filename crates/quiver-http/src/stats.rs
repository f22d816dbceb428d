//! Index statistics (SPEC A1) and the metering that feeds them.

use std::collections::HashMap;
use std::time::Instant;

use axum::Json;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::Body as _;
use quiver_admin::catalog::{IndexKind, IndexRecord, IndexSettings};
use quiver_admin::limits::{AdmitError, LimitExceeded};
use quiver_admin::meter::{UsageEvent, UsageKind};
use quiver_admin::stats::{Holdings, Point, VectorStats, compute, monthly_cost};
use quiver_admin::usage::{PERIODS, Period, wire_time};
use quiver_core::IndexId;
use quiver_vector::record::IndexSpec;
use quiver_vector::service::IndexRef;
use serde::Serialize;

use crate::auth::ManagementAccount;
use crate::error::{ApiError, ApiResult};
use crate::management::TimeSeriesPoint;
use crate::router::AppState;
use crate::vector::vector_error;

/// Operations that change an index; everything else on the vector API is a query.
const UPDATE_ENDPOINTS: [&str; 7] = [
    "upsert",
    "upsert-data",
    "update",
    "delete",
    "reset",
    "delete-namespace",
    "rename-namespace",
];

/// The engine's view of a vector index record.
pub fn index_ref(record: &IndexRecord) -> Option<IndexRef> {
    let IndexSettings::VectorV1(settings) = &record.settings else {
        return None;
    };
    Some(IndexRef {
        id: record.id,
        name: record.name.to_string(),
        spec: IndexSpec {
            dimension: settings.dimension_count as usize,
            similarity: settings.similarity_function,
            index_type: settings.index_type,
        },
        limits: record.limits(),
    })
}

/// Meters every successful vector API request: its kind, latency and bytes; after a write, what the
/// index holds. Recording never waits on storage.
pub async fn meter_vector_usage(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let token = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_owned());
    let path = request
        .extensions()
        .get::<axum::extract::OriginalUri>()
        .map_or_else(|| request.uri().path().to_owned(), |o| o.0.path().to_owned());
    let request_bytes: u64 = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let record = match &token {
        Some(token) => state
            .admin
            .index_by_token(token)
            .await
            .ok()
            .map(|(record, _)| record),
        None => None,
    };
    let endpoint = path
        .strip_prefix("/vector/")
        .and_then(|rest| rest.split_once('/'))
        .map_or(path.as_str(), |(_, rest)| rest);
    let name = endpoint.trim_start_matches('/').split('/').next().unwrap_or("");
    let kind = if UPDATE_ENDPOINTS.contains(&name) {
        UsageKind::Update
    } else {
        UsageKind::Query
    };
    // Unknown tokens go on to the handler, which answers 401.
    let Some(record) = record else {
        return next.run(request).await;
    };
    let admission = match state.limiter.admit(record.id, kind, &record.limits()).await {
        Ok(admission) => admission,
        Err(AdmitError::Exceeded(exceeded)) => return limit_response(&exceeded),
        Err(AdmitError::Store(error)) => return vector_error(ApiError::from(error)).into_response(),
    };
    let response = next.run(request).await;
    if !response.status().is_success() {
        state.limiter.release(admission);
        return response;
    }
    let snapshot = match (kind, index_ref(&record)) {
        (UsageKind::Update, Some(index)) => state
            .vectors
            .info(&index)
            .await
            .ok()
            .map(|info| (info.vector_count as u64, info.index_size as u64)),
        (UsageKind::Update | UsageKind::Query, _) => None,
    };
    let response_bytes = response.body().size_hint().exact().unwrap_or(0);
    state
        .limiter
        .add_bandwidth(admission, request_bytes + response_bytes);
    state.meter.record(UsageEvent {
        index: record.id,
        kind,
        latency: started.elapsed(),
        bytes: request_bytes + response_bytes,
        snapshot,
    });
    response
}

/// 429 with `Retry-After` and the vector routes' error shape.
fn limit_response(exceeded: &LimitExceeded) -> Response {
    let mut response =
        vector_error(ApiError::new(StatusCode::TOO_MANY_REQUESTS, exceeded.to_string())).into_response();
    response.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        axum::http::HeaderValue::from(exceeded.retry_after_secs()),
    );
    response
}

fn series(points: &[Point]) -> Vec<TimeSeriesPoint> {
    points
        .iter()
        .map(|p| TimeSeriesPoint {
            x: wire_time(p.time),
            y: p.value,
        })
        .collect()
}

/// SPEC 2.2 on the wire.
#[derive(Debug, Serialize)]
pub struct StatsResponse {
    pending_index_count: u64,
    current_vector_count: u64,
    daily_query_count: u64,
    daily_update_count: u64,
    daily_rerank_count: u64,
    monthly_query_count: u64,
    monthly_update_count: u64,
    monthly_rerank_count: u64,
    monthly_bandwidth_usage: u64,
    storage_usage: u64,
    monthly_cost: f64,
    daily_update_requests: Vec<TimeSeriesPoint>,
    daily_query_requests: Vec<TimeSeriesPoint>,
    daily_rerank_requests: Vec<TimeSeriesPoint>,
    daily_bandwidths: Vec<TimeSeriesPoint>,
    query_throughput: Vec<TimeSeriesPoint>,
    update_throughput: Vec<TimeSeriesPoint>,
    query_latency_mean: Vec<TimeSeriesPoint>,
    query_latency_99: Vec<TimeSeriesPoint>,
    update_latency_mean: Vec<TimeSeriesPoint>,
    update_latency_99: Vec<TimeSeriesPoint>,
    embeds_latency_mean: Vec<TimeSeriesPoint>,
    embeds_latency_99: Vec<TimeSeriesPoint>,
    rerank_latency_mean: Vec<TimeSeriesPoint>,
    rerank_latency_99: Vec<TimeSeriesPoint>,
    vector_count: Vec<TimeSeriesPoint>,
    data_size: Vec<TimeSeriesPoint>,
    days: Vec<&'static str>,
}

impl From<VectorStats> for StatsResponse {
    fn from(stats: VectorStats) -> Self {
        StatsResponse {
            pending_index_count: stats.pending_index_count,
            current_vector_count: stats.current_vector_count,
            daily_query_count: stats.daily_query_count,
            daily_update_count: stats.daily_update_count,
            daily_rerank_count: stats.daily_rerank_count,
            monthly_query_count: stats.monthly_query_count,
            monthly_update_count: stats.monthly_update_count,
            monthly_rerank_count: stats.monthly_rerank_count,
            monthly_bandwidth_usage: stats.monthly_bandwidth_usage,
            storage_usage: stats.storage_usage,
            monthly_cost: stats.monthly_cost,
            daily_update_requests: series(&stats.daily_update_requests),
            daily_query_requests: series(&stats.daily_query_requests),
            daily_rerank_requests: series(&stats.daily_rerank_requests),
            daily_bandwidths: series(&stats.daily_bandwidths),
            query_throughput: series(&stats.query_throughput),
            update_throughput: series(&stats.update_throughput),
            query_latency_mean: series(&stats.query_latency_mean),
            query_latency_99: series(&stats.query_latency_99),
            update_latency_mean: series(&stats.update_latency_mean),
            update_latency_99: series(&stats.update_latency_99),
            embeds_latency_mean: series(&stats.embeds_latency_mean),
            embeds_latency_99: series(&stats.embeds_latency_99),
            rerank_latency_mean: series(&stats.rerank_latency_mean),
            rerank_latency_99: series(&stats.rerank_latency_99),
            vector_count: series(&stats.vector_count),
            data_size: series(&stats.data_size),
            days: stats.days,
        }
    }
}

async fn holdings(state: &AppState, record: &IndexRecord) -> ApiResult<Holdings> {
    match index_ref(record) {
        Some(index) => {
            let info = state.vectors.info(&index).await?;
            Ok(Holdings {
                vector_count: info.vector_count as u64,
                pending: info.pending_vector_count as u64,
                storage_bytes: info.index_size as u64,
            })
        }
        None => Ok(Holdings::default()),
    }
}

async fn stats_of(state: &AppState, record: &IndexRecord, period: Period) -> ApiResult<VectorStats> {
    let now = state.meter.current_minute();
    let minutes = state.meter.usage_for(record.id, period, now).await?;
    Ok(compute(
        &minutes,
        period,
        now,
        holdings(state, record).await?,
        record.plan,
    ))
}

fn period_of(query: &HashMap<String, String>) -> ApiResult<Period> {
    match query.get("period").map(String::as_str) {
        None | Some("") => Ok(Period::Hour),
        Some(text) => Period::parse(text).ok_or_else(|| {
            ApiError::bad_request(format!(
                "period: `{text}` is not allowed; expected one of: {PERIODS}"
            ))
        }),
    }
}

/// The last hour of requests (queries and updates per minute), for `throughput_vector`.
pub async fn throughput(state: &AppState, index: IndexId) -> ApiResult<Vec<TimeSeriesPoint>> {
    let now = state.meter.current_minute();
    let starts = Period::Hour.point_starts(now);
    let minutes = state.meter.minutes(index, starts[0], now).await?;
    Ok(starts
        .iter()
        .map(|start| {
            let y = minutes
                .iter()
                .filter(|(m, _)| m == start)
                .map(|(_, u)| (u.queries + u.updates) as f64)
                .sum();
            TimeSeriesPoint {
                x: wire_time(start * 60),
                y,
            }
        })
        .collect())
}

async fn index_stats(
    state: AppState,
    owner: quiver_admin::Account,
    kind: IndexKind,
    id: String,
    query: HashMap<String, String>,
) -> ApiResult<Json<StatsResponse>> {
    let period = period_of(&query)?;
    let record = state.admin.index(&owner, kind, &id).await?;
    Ok(Json(stats_of(&state, &record, period).await?.into()))
}

/// `GET /v2/vector/index/{id}/stats`.
pub async fn vector_index_stats(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Json<StatsResponse>> {
    index_stats(state, owner, IndexKind::Vector, id, query).await
}

/// `GET /v2/search/{id}/stats`.
pub async fn search_index_stats(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Json<StatsResponse>> {
    index_stats(state, owner, IndexKind::Search, id, query).await
}

/// The account-wide totals of the current month.
#[derive(Debug, Serialize, Default)]
pub struct GlobalStats {
    record_count: u64,
    request: u64,
    bandwidth: u64,
    storage: u64,
    billing: f64,
    rerank_count: u64,
}

async fn global_stats(
    state: AppState,
    owner: quiver_admin::Account,
    kind: IndexKind,
) -> ApiResult<Json<GlobalStats>> {
    let mut totals = GlobalStats::default();
    for record in state.admin.indexes(&owner, kind).await? {
        let stats = stats_of(&state, &record, Period::Hour).await?;
        totals.record_count += stats.current_vector_count;
        totals.request += stats.monthly_query_count + stats.monthly_update_count;
        totals.bandwidth += stats.monthly_bandwidth_usage;
        totals.storage += stats.storage_usage;
        totals.billing += monthly_cost(
            record.plan,
            stats.monthly_query_count + stats.monthly_update_count,
        );
        totals.rerank_count += stats.monthly_rerank_count;
    }
    Ok(Json(totals))
}

/// `GET /v2/vector/index/stats`.
pub async fn vector_global_stats(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
) -> ApiResult<Json<GlobalStats>> {
    global_stats(state, owner, IndexKind::Vector).await
}

/// `GET /v2/search/stats`.
pub async fn search_global_stats(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
) -> ApiResult<Json<GlobalStats>> {
    global_stats(state, owner, IndexKind::Search).await
}
