//! The project activity feed (DECISIONS.md "Activity and analytics"): a keyset list over
//! contact events (sends, deliveries, opens, clicks, bounces, complaints, subscription changes,
//! tracked events) and project entries (`domain.*`), its counts, and what is coming up.
//! Everything reads committed rows directly, so a committed change shows at once.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use herald_core::ids::Uuid;
use herald_core::time::iso;
use herald_store::feed::{FeedEntry, FeedFilter, TRACKED_TYPE};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::query::{Bounded, Limit, Query, text};
use crate::routes::campaigns::CampaignSummary;
use crate::routes::contacts::{decode_cursor, encode_cursor};
use crate::routes::workflows::ExecutionResponse;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_activity))
        .routes(routes!(activity_types))
        .routes(routes!(activity_stats))
        .routes(routes!(recent_count))
        .routes(routes!(upcoming))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityResponse {
    pub id: String,
    /// A system event name (`email.open`, `contact.unsubscribed`, ...), a project entry
    /// (`domain.verified`), or `event` for a tracked event.
    #[serde(rename = "type")]
    pub kind: String,
    pub contact_id: Option<String>,
    /// The contact's address; null for project entries.
    pub email: Option<String>,
    pub message_id: Option<String>,
    pub campaign_id: Option<String>,
    /// The entry's data; for a tracked event `{name, data}` (the event's name and its data).
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: String,
}

impl From<FeedEntry> for ActivityResponse {
    fn from(e: FeedEntry) -> Self {
        let data = if e.kind == TRACKED_TYPE {
            json!({ "name": e.name, "data": e.data.0 })
        } else {
            e.data.0
        };
        Self {
            id: e.id.to_string(),
            kind: e.kind,
            contact_id: e.contact_id.map(|c| c.to_string()),
            email: e.email,
            message_id: e.message_id.map(|m| m.to_string()),
            campaign_id: e.campaign_id.map(|c| c.to_string()),
            data,
            created_at: iso(e.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityList {
    pub data: Vec<ActivityResponse>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub cursor: Option<String>,
    pub has_more: bool,
}

#[derive(Serialize, ToSchema)]
pub struct ActivityTypes {
    pub types: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct RecentCount {
    pub count: i64,
}

#[derive(Serialize, ToSchema)]
pub struct Upcoming {
    /// Scheduled campaigns, soonest first.
    pub campaigns: Vec<CampaignSummary>,
    /// Workflow executions waiting for a timer or an event, oldest first.
    pub executions: Vec<ExecutionResponse>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct ActivityQuery {
    #[serde(default)]
    #[param(inline)]
    limit: Limit,
    cursor: Option<String>,
    /// only entries of this type: a system event such as email.open, domain.verified, or
    /// event (tracked events)
    r#type: Option<String>,
    /// only this contact's events
    contact_id: Option<String>,
}

/// The project's activity, newest first, by cursor.
#[utoipa::path(get, path = "/activity", tag = "activity", params(ActivityQuery),
    responses((status = 200, body = ActivityList), (status = 422)))]
async fn list_activity(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<ActivityQuery>,
) -> ApiResult<Json<ActivityList>> {
    let params = ActivityParams {
        limit: q.limit.get(),
        cursor: q.cursor,
        kind: q.r#type,
        contact_id: q.contact_id,
        since: None,
        until: None,
    };
    Ok(Json(activity_list(&state, auth.id(), &params).await?))
}

/// What a page of the feed asks for, as typed (the dashboard's Activity page adds a time
/// range to the API's parameters).
#[derive(Clone, Debug, Default)]
pub struct ActivityParams {
    pub limit: u32,
    pub cursor: Option<String>,
    pub kind: Option<String>,
    pub contact_id: Option<String>,
    /// Entries created at or after this time.
    pub since: Option<i64>,
    /// Entries created before this time.
    pub until: Option<i64>,
}

/// A page of the project's feed: the cursor checked against the project, the type and
/// contact validated (422 with the field), newest first.
pub async fn activity_list(
    state: &AppState,
    project: Uuid,
    q: &ActivityParams,
) -> ApiResult<ActivityList> {
    let before = match text(&q.cursor) {
        Some(c) => Some(decode_cursor(project, c)?),
        None => None,
    };
    let kind = q.kind.as_deref().map(str::trim).filter(|t| !t.is_empty());
    if kind.is_some_and(|t| t.len() > 100) {
        return Err(ApiError::field(
            "type",
            "type is at most 100 characters",
            "too_long",
        ));
    }
    let contact_id = match q
        .contact_id
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        Some(raw) => Some(herald_core::ids::parse_id(raw).ok_or_else(|| {
            ApiError::field("contactId", "contactId is not a contact id", "invalid_id")
        })?),
        None => None,
    };
    let filter = FeedFilter {
        kind,
        contact_id,
        since: q.since,
        until: q.until,
    };
    let page = state.store.feed(project, q.limit, before, filter).await?;
    let cursor = match (page.has_more, page.entries.last()) {
        (true, Some(last)) => Some(encode_cursor(project, last.id)),
        _ => None,
    };
    Ok(ActivityList {
        data: page
            .entries
            .into_iter()
            .map(ActivityResponse::from)
            .collect(),
        cursor,
        has_more: page.has_more,
    })
}

/// The distinct activity types present in the project's feed.
#[utoipa::path(get, path = "/activity/types", tag = "activity", responses((status = 200, body = ActivityTypes)))]
async fn activity_types(
    State(state): State<AppState>,
    auth: ProjectAuth,
) -> ApiResult<Json<ActivityTypes>> {
    Ok(Json(ActivityTypes {
        types: state.store.feed_types(auth.id()).await?,
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct StatsQuery {
    #[serde(default)]
    #[param(inline)]
    days: Bounded<1, 365, 7>,
}

/// Entries per type over the last `days` days, as a flat object `{type: count}`.
#[utoipa::path(get, path = "/activity/stats", tag = "activity", params(StatsQuery),
    responses((status = 200, body = BTreeMap<String, i64>), (status = 422)))]
async fn activity_stats(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<StatsQuery>,
) -> ApiResult<Json<BTreeMap<String, i64>>> {
    let days = q.days.get();
    let since = state.engine.now() - i64::from(days) * 86_400_000;
    Ok(Json(state.store.feed_counts(auth.id(), since).await?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct RecentQuery {
    /// at most a week
    #[serde(default)]
    #[param(inline)]
    minutes: Bounded<1, 10_080, 60>,
}

/// How many entries the last `minutes` minutes brought.
#[utoipa::path(get, path = "/activity/recent-count", tag = "activity", params(RecentQuery),
    responses((status = 200, body = RecentCount), (status = 422)))]
async fn recent_count(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<RecentQuery>,
) -> ApiResult<Json<RecentCount>> {
    let minutes = q.minutes.get();
    let since = state.engine.now() - i64::from(minutes) * 60_000;
    Ok(Json(RecentCount {
        count: state.store.feed_count_since(auth.id(), since).await?,
    }))
}

/// Most scheduled campaigns listed.
const UPCOMING_MAX: u32 = 100;

/// Scheduled campaigns, soonest first, and waiting workflow executions, oldest first.
#[utoipa::path(get, path = "/activity/upcoming", tag = "activity", responses((status = 200, body = Upcoming)))]
async fn upcoming(State(state): State<AppState>, auth: ProjectAuth) -> ApiResult<Json<Upcoming>> {
    let campaigns = state
        .store
        .scheduled_campaigns(auth.id(), UPCOMING_MAX)
        .await?;
    Ok(Json(Upcoming {
        campaigns: campaigns.into_iter().map(CampaignSummary::from).collect(),
        executions: state
            .store
            .waiting_executions(auth.id(), UPCOMING_MAX)
            .await?
            .into_iter()
            .map(ExecutionResponse::from)
            .collect(),
    }))
}
