//! Index statistics (SPEC A1) (the metering that feeds them is in `crate::vector::meter`).

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use quiver_admin::catalog::{IndexKind, IndexRecord};
use quiver_admin::stats::{Holdings, Point, VectorStats, compute, monthly_cost};
use quiver_admin::usage::{PERIODS, Period, wire_time};
use quiver_core::IndexId;
use serde::Serialize;

use crate::auth::ManagementAccount;
use crate::error::{ApiError, ApiResult};
use crate::management::wire::TimeSeriesPoint;
use crate::state::AppState;

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
pub(crate) struct StatsResponse {
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
    let info = state.vectors.info(&crate::vector::vector_index(record)).await?;
    Ok(Holdings {
        vector_count: info.vector_count as u64,
        pending: info.pending_vector_count as u64,
        storage_bytes: info.index_size as u64,
    })
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
pub(crate) async fn throughput(state: &AppState, index: IndexId) -> ApiResult<Vec<TimeSeriesPoint>> {
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
pub(crate) async fn vector_index_stats(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Json<StatsResponse>> {
    index_stats(state, owner, IndexKind::Vector, id, query).await
}

/// `GET /v2/search/{id}/stats`.
pub(crate) async fn search_index_stats(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> ApiResult<Json<StatsResponse>> {
    index_stats(state, owner, IndexKind::Search, id, query).await
}

/// The account-wide totals of the current month.
#[derive(Debug, Serialize, Default)]
pub(crate) struct GlobalStats {
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
pub(crate) async fn vector_global_stats(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
) -> ApiResult<Json<GlobalStats>> {
    global_stats(state, owner, IndexKind::Vector).await
}

/// `GET /v2/search/stats`.
pub(crate) async fn search_global_stats(
    State(state): State<AppState>,
    ManagementAccount(owner): ManagementAccount,
) -> ApiResult<Json<GlobalStats>> {
    global_stats(state, owner, IndexKind::Search).await
}
