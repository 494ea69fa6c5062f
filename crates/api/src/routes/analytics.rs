//! `/analytics/*` (DECISIONS.md "Activity and analytics"): a time series of mail events in the
//! project's time zone or UTC, top campaigns by a metric, one campaign's breakdown, and the
//! most frequent tracked events. Counts come from indexed reads (`herald_store::analytics`);
//! campaigns are named by id (their names are joined once the campaigns resource exists).

use axum::Json;
use axum::extract::State;
use herald_core::analytics::{Interval, SLOT_MS, bucket_of, bucket_starts, parse_zone};
use herald_core::ids::{Uuid, parse_id};
use herald_core::time::{iso, parse_iso};
use herald_store::analytics::{CampaignCounts, SERIES_EVENTS};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::query::{Bounded, Query, text};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(timeseries))
        .routes(routes!(top_campaigns))
        .routes(routes!(campaign_stats))
        .routes(routes!(top_events))
}

const DAY_MS: i64 = 86_400_000;

#[derive(Serialize, ToSchema, Default, Clone)]
#[serde(rename_all = "camelCase")]
pub struct SeriesPoint {
    /// Bucket start, ISO 8601 UTC.
    pub at: String,
    pub sent: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    pub bounced: i64,
}

#[derive(Serialize, ToSchema)]
pub struct SeriesResponse {
    pub series: Vec<SeriesPoint>,
}

fn time_param(value: &Option<String>, key: &str) -> ApiResult<Option<i64>> {
    match text(value) {
        None => Ok(None),
        Some(v) => parse_iso(v).map(Some).ok_or_else(|| {
            ApiError::field(
                key,
                format!("{key} must be an ISO 8601 timestamp"),
                "invalid_date",
            )
        }),
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct SeriesQuery {
    /// ISO 8601, inclusive (default: to - 30 days)
    from: Option<String>,
    /// ISO 8601, exclusive (default: now)
    to: Option<String>,
    /// day (default) or hour
    interval: Option<String>,
    /// IANA time zone (default UTC)
    tz: Option<String>,
}

/// Sent, delivered, opened, clicked and bounced per day or hour over `[from, to)`, every
/// bucket present (default: the last 30 days by day, in UTC).
#[utoipa::path(get, path = "/analytics/timeseries", tag = "analytics", params(SeriesQuery),
    responses((status = 200, body = SeriesResponse), (status = 422)))]
async fn timeseries(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<SeriesQuery>,
) -> ApiResult<Json<SeriesResponse>> {
    let params = SeriesParams {
        from: q.from,
        to: q.to,
        interval: q.interval,
        tz: q.tz,
    };
    let series = series(&state, auth.id(), &params).await?;
    Ok(Json(SeriesResponse { series }))
}

/// The parameters of a time series, as typed.
#[derive(Clone, Debug, Default)]
pub struct SeriesParams {
    pub from: Option<String>,
    pub to: Option<String>,
    pub interval: Option<String>,
    pub tz: Option<String>,
}

/// The project's mail events per bucket over `[from, to)`, every bucket present: the
/// answer of `GET /analytics/timeseries`, its parameters checked with their messages.
pub async fn series(
    state: &AppState,
    project: Uuid,
    q: &SeriesParams,
) -> ApiResult<Vec<SeriesPoint>> {
    let interval = match text(&q.interval) {
        None => Interval::Day,
        Some(v) => Interval::parse(v).ok_or_else(|| {
            ApiError::field("interval", "interval must be day or hour", "invalid_value")
        })?,
    };
    let tz = match text(&q.tz) {
        None => herald_core::analytics::utc(),
        Some(v) => parse_zone(v).ok_or_else(|| {
            ApiError::field("tz", "tz must be an IANA time zone", "invalid_value")
        })?,
    };
    let to = time_param(&q.to, "to")?.unwrap_or_else(|| state.engine.now());
    let from = time_param(&q.from, "from")?.unwrap_or(to - 30 * DAY_MS);
    if from >= to {
        return Err(ApiError::field(
            "from",
            "from must be before to",
            "invalid_range",
        ));
    }
    let starts = bucket_starts(from, to, interval, tz).ok_or_else(|| {
        ApiError::field(
            "from",
            "the range has too many buckets (at most 2000)",
            "out_of_range",
        )
    })?;
    let mut series: Vec<SeriesPoint> = starts
        .iter()
        .map(|s| SeriesPoint {
            at: iso(*s),
            ..SeriesPoint::default()
        })
        .collect();
    for (slot, name, n) in state
        .store
        .mail_event_slots(project, from, to, state.engine.now())
        .await?
    {
        let Some(p) = bucket_of(&starts, slot * SLOT_MS).and_then(|i| series.get_mut(i)) else {
            continue;
        };
        let cell = match SERIES_EVENTS.iter().position(|e| *e == name) {
            Some(0) => &mut p.sent,
            Some(1) => &mut p.delivered,
            Some(2) => &mut p.opened,
            Some(3) => &mut p.clicked,
            Some(4) => &mut p.bounced,
            _ => continue,
        };
        *cell += n;
    }
    Ok(series)
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignRank {
    pub campaign_id: String,
    /// The campaign's name (null once it was deleted).
    pub name: Option<String>,
    pub count: i64,
}

#[derive(Serialize, ToSchema)]
pub struct TopCampaignsResponse {
    pub metric: String,
    pub campaigns: Vec<CampaignRank>,
}

/// `limit` of the top lists: 1..100, default 10.
type TopLimit = Bounded<1, 100, 10>;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct TopCampaignsQuery {
    /// opened, clicked or sent (default)
    metric: Option<String>,
    #[serde(default)]
    #[param(inline)]
    limit: TopLimit,
}

/// Campaigns with the most opens, clicks or sends (events counted).
#[utoipa::path(get, path = "/analytics/top-campaigns", tag = "analytics", params(TopCampaignsQuery),
    responses((status = 200, body = TopCampaignsResponse), (status = 422)))]
async fn top_campaigns(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<TopCampaignsQuery>,
) -> ApiResult<Json<TopCampaignsResponse>> {
    let top = campaigns_top(&state, auth.id(), text(&q.metric), q.limit.get()).await?;
    Ok(Json(top))
}

/// The project's campaigns with the most events of `metric` (opened, clicked or sent, the
/// default), with their names: the answer of `GET /analytics/top-campaigns`.
pub async fn campaigns_top(
    state: &AppState,
    project: Uuid,
    metric: Option<&str>,
    limit: u32,
) -> ApiResult<TopCampaignsResponse> {
    let metric = metric.unwrap_or("sent");
    let event = match metric {
        "sent" => "email.sent",
        "opened" => "email.open",
        "clicked" => "email.click",
        _ => {
            return Err(ApiError::field(
                "metric",
                "metric must be opened, clicked or sent",
                "invalid_value",
            ));
        }
    };
    let rows = state.store.top_campaigns(project, event, limit).await?;
    let ids: Vec<Uuid> = rows.iter().map(|(id, _)| *id).collect();
    let names: std::collections::HashMap<Uuid, String> = state
        .store
        .campaign_names(project, &ids)
        .await?
        .into_iter()
        .collect();
    Ok(TopCampaignsResponse {
        metric: metric.to_owned(),
        campaigns: rows
            .into_iter()
            .map(|(id, count)| CampaignRank {
                campaign_id: id.to_string(),
                name: names.get(&id).cloned(),
                count,
            })
            .collect(),
    })
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignStatsResponse {
    pub campaign_id: String,
    pub total_recipients: i64,
    pub sent: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    pub bounced: i64,
    pub complained: i64,
    pub unsubscribed: i64,
    /// Fractions of `sent` (0 when nothing was sent).
    pub delivery_rate: f64,
    pub open_rate: f64,
    pub click_rate: f64,
    pub bounce_rate: f64,
    pub complaint_rate: f64,
    pub unsubscribe_rate: f64,
}

impl CampaignStatsResponse {
    /// The counts with their rates: fractions of `sent`, 0 when nothing was sent.
    pub fn new(id: Uuid, c: &CampaignCounts) -> Self {
        let rate = |n: i64| {
            if c.sent == 0 {
                0.0
            } else {
                n as f64 / c.sent as f64
            }
        };
        Self {
            campaign_id: id.to_string(),
            delivery_rate: rate(c.delivered),
            open_rate: rate(c.opened),
            click_rate: rate(c.clicked),
            bounce_rate: rate(c.bounced),
            complaint_rate: rate(c.complained),
            unsubscribe_rate: rate(c.unsubscribed),
            total_recipients: c.total_recipients,
            sent: c.sent,
            delivered: c.delivered,
            opened: c.opened,
            clicked: c.clicked,
            bounced: c.bounced,
            complained: c.complained,
            unsubscribed: c.unsubscribed,
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct CampaignStatsQuery {
    #[param(required = true)]
    campaign_id: Option<String>,
}

/// One campaign's recipients and how many messages reached each stage.
#[utoipa::path(get, path = "/analytics/campaign-stats", tag = "analytics", params(CampaignStatsQuery),
    responses((status = 200, body = CampaignStatsResponse), (status = 404), (status = 422)))]
async fn campaign_stats(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<CampaignStatsQuery>,
) -> ApiResult<Json<CampaignStatsResponse>> {
    let raw = text(&q.campaign_id)
        .ok_or_else(|| ApiError::field("campaignId", "campaignId is required", "required"))?;
    let id = parse_id(raw)
        .ok_or_else(|| ApiError::field("campaignId", "campaignId must be an id", "invalid_id"))?;
    // Another project's campaign, or none: 404 like every foreign id, never zeros.
    if state.store.campaign(auth.id(), id).await?.is_none() {
        return Err(ApiError::not_found("CAMPAIGN_NOT_FOUND", "Campaign"));
    }
    let c = state.store.campaign_counts(auth.id(), id).await?;
    Ok(Json(CampaignStatsResponse::new(id, &c)))
}

#[derive(Serialize, ToSchema)]
pub struct EventCount {
    pub name: String,
    pub count: i64,
}

#[derive(Serialize, ToSchema)]
pub struct TopEventsResponse {
    pub events: Vec<EventCount>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct TopEventsQuery {
    #[serde(default)]
    #[param(inline)]
    limit: TopLimit,
}

/// The most frequent tracked event names.
#[utoipa::path(get, path = "/analytics/top-events", tag = "analytics", params(TopEventsQuery),
    responses((status = 200, body = TopEventsResponse), (status = 422)))]
async fn top_events(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<TopEventsQuery>,
) -> ApiResult<Json<TopEventsResponse>> {
    Ok(Json(events_top(&state, auth.id(), q.limit.get()).await?))
}

/// The project's most frequent tracked event names: the answer of `GET /analytics/top-events`.
pub async fn events_top(
    state: &AppState,
    project: Uuid,
    limit: u32,
) -> ApiResult<TopEventsResponse> {
    let rows = state.store.top_tracked_events(project, limit).await?;
    Ok(TopEventsResponse {
        events: rows
            .into_iter()
            .map(|(name, count)| EventCount { name, count })
            .collect(),
    })
}
