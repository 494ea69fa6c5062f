//! The Events resource: tracked events (recorded by `/v1/track`, see [`super::track`]) listed,
//! counted per name, named, and deleted by name; and every event of one contact (system events
//! such as `contact.subscribed` and `email.sent` included).
//!
//! Invariants: every read and the deletion name the caller's project; only tracked events are
//! listed, counted or deleted by name (system names are refused with 422 `reserved_event`).

use axum::Json;
use axum::extract::{Path, State};
use herald_core::ids::parse_id;
use herald_core::time::iso;
use herald_store::events::Event;
use herald_store::tracked::TrackedFilter;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::contacts::{decode_cursor, encode_cursor};
use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::path_id;
use crate::query::{Bounded, Limit, Query, text};
use crate::routes::usage::{UsageRef, WorkflowRef, filter_usage, workflow_usage};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(contact_events))
        .routes(routes!(list_events))
        .routes(routes!(event_stats))
        .routes(routes!(event_names))
        .routes(routes!(event_usage))
        .routes(routes!(delete_events))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventResponse {
    pub id: String,
    pub name: String,
    pub contact_id: Option<String>,
    /// The message that caused the event (system events of a message), else null.
    pub message_id: Option<String>,
    /// The campaign of that message, else null.
    pub campaign_id: Option<String>,
    /// Recorded through `/v1/track` (false for system events).
    pub tracked: bool,
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: String,
}

impl From<Event> for EventResponse {
    fn from(e: Event) -> Self {
        EventResponse {
            id: e.id.to_string(),
            name: e.name,
            contact_id: e.contact_id.map(|c| c.to_string()),
            message_id: e.message_id.map(|m| m.to_string()),
            campaign_id: e.campaign_id.map(|c| c.to_string()),
            tracked: e.tracked,
            data: e.data.0,
            created_at: iso(e.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct EventList {
    pub events: Vec<EventResponse>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ContactEventsQuery {
    #[serde(default)]
    #[param(inline)]
    limit: Bounded<1, 100, 50>,
}

/// Events of one contact, newest first.
#[utoipa::path(get, path = "/events/contact/{contactId}", tag = "events",
    params(("contactId" = String, Path), ContactEventsQuery),
    responses((status = 200, body = EventList), (status = 404)))]
async fn contact_events(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(contact_id): Path<String>,
    Query(q): Query<ContactEventsQuery>,
) -> ApiResult<Json<EventList>> {
    let limit = q.limit.get();
    let id = path_id(&contact_id, "CONTACT_NOT_FOUND", "Contact")?;
    if state.store.contact(auth.id(), id).await?.is_none() {
        return Err(ApiError::not_found("CONTACT_NOT_FOUND", "Contact"));
    }
    let events = state.store.events_of_contact(auth.id(), id, limit).await?;
    Ok(Json(EventList {
        events: events.into_iter().map(EventResponse::from).collect(),
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrackedEventResponse {
    #[serde(flatten)]
    pub event: EventResponse,
    /// The contact's address (null if the contact was deleted meanwhile).
    pub email: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrackedEventList {
    pub data: Vec<TrackedEventResponse>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub cursor: Option<String>,
    pub has_more: bool,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct EventListQuery {
    #[serde(default)]
    #[param(inline)]
    limit: Limit,
    cursor: Option<String>,
    /// one event name
    name: Option<String>,
    /// one contact's events
    contact_id: Option<String>,
}

/// Recent tracked events, newest first, by cursor; filters `name` and `contactId`.
#[utoipa::path(get, path = "/events", tag = "events", params(EventListQuery),
    responses((status = 200, body = TrackedEventList)))]
async fn list_events(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<EventListQuery>,
) -> ApiResult<Json<TrackedEventList>> {
    let limit = q.limit.get();
    let before = match text(&q.cursor) {
        Some(c) => Some(decode_cursor(auth.id(), c)?),
        None => None,
    };
    let contact_id = match text(&q.contact_id) {
        Some(raw) => Some(parse_id(raw).ok_or_else(|| {
            ApiError::field("contactId", "contactId is not a contact id", "invalid_id")
        })?),
        None => None,
    };
    let name = q.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
    let page = state
        .store
        .list_tracked_events(
            auth.id(),
            limit,
            TrackedFilter {
                name,
                contact_id,
                before,
            },
        )
        .await?;
    let cursor = match (page.has_more, page.events.last()) {
        (true, Some(last)) => Some(encode_cursor(auth.id(), last.event.id)),
        _ => None,
    };
    Ok(Json(TrackedEventList {
        data: page
            .events
            .into_iter()
            .map(|t| TrackedEventResponse {
                event: t.event.into(),
                email: t.email,
            })
            .collect(),
        cursor,
        has_more: page.has_more,
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventStatResponse {
    pub name: String,
    /// Events of this name in the window.
    pub count: i64,
    /// Distinct contacts that recorded it in the window.
    pub unique_contacts: i64,
    pub last_seen: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventStats {
    pub days: u32,
    /// Start of the window.
    pub since: String,
    /// Tracked events in the window.
    pub total_events: i64,
    /// Per name, most frequent first.
    pub events: Vec<EventStatResponse>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct EventStatsQuery {
    #[serde(default)]
    #[param(inline)]
    days: Bounded<1, 365, 30>,
}

/// Per tracked name over the last `days`: count, distinct contacts and last time seen.
#[utoipa::path(get, path = "/events/stats", tag = "events", params(EventStatsQuery),
    responses((status = 200, body = EventStats)))]
async fn event_stats(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<EventStatsQuery>,
) -> ApiResult<Json<EventStats>> {
    let days = q.days.get();
    let since = state.engine.now() - i64::from(days) * 86_400_000;
    let stats = state.store.tracked_event_stats(auth.id(), since).await?;
    Ok(Json(EventStats {
        days,
        since: iso(since),
        total_events: stats.iter().map(|s| s.count).sum(),
        events: stats
            .into_iter()
            .map(|s| EventStatResponse {
                name: s.name,
                count: s.count,
                unique_contacts: s.contacts,
                last_seen: iso(s.last_seen),
            })
            .collect(),
    }))
}

#[derive(Serialize, ToSchema)]
pub struct EventNames {
    /// Distinct tracked names, alphabetically.
    pub names: Vec<String>,
}

/// Distinct tracked event names of the project.
#[utoipa::path(get, path = "/events/names", tag = "events",
    responses((status = 200, body = EventNames)))]
async fn event_names(
    State(state): State<AppState>,
    auth: ProjectAuth,
) -> ApiResult<Json<EventNames>> {
    Ok(Json(EventNames {
        names: state.store.tracked_event_names(auth.id()).await?,
    }))
}

#[derive(Serialize, ToSchema)]
pub struct EventUsage {
    pub event: String,
    /// Tracked events of this name in the project.
    pub count: i64,
    /// Workflows triggered by or waiting for this name.
    pub workflows: Vec<UsageRef>,
    /// Segments whose conditions name it.
    pub segments: Vec<UsageRef>,
    /// Campaigns whose audience filter names it.
    pub campaigns: Vec<UsageRef>,
}

/// Where an event name is referenced: segments and campaigns whose filter names it, and
/// workflows it triggers or that wait for it.
#[utoipa::path(get, path = "/events/{eventName}/usage", tag = "events",
    params(("eventName" = String, Path)),
    responses((status = 200, body = EventUsage)))]
async fn event_usage(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(name): Path<String>,
) -> ApiResult<Json<EventUsage>> {
    let count = state.store.count_tracked_events(auth.id(), &name).await?;
    let (segments, campaigns) = filter_usage(&state, auth.id(), |f| f.uses_event(&name)).await?;
    let workflows = workflow_usage(&state, auth.id(), WorkflowRef::Event(&name)).await?;
    Ok(Json(EventUsage {
        event: name,
        count,
        workflows,
        segments,
        campaigns,
    }))
}

#[derive(Serialize, ToSchema)]
pub struct EventsDeleted {
    pub event: String,
    /// Tracked events removed (0 when there were none).
    pub deleted: u64,
}

/// Deletes every tracked event of that name in the project; system names are refused.
#[utoipa::path(delete, path = "/events/{eventName}", tag = "events",
    params(("eventName" = String, Path)),
    responses((status = 200, body = EventsDeleted),
        (status = 422, description = "VALIDATION_ERROR; code `reserved_event` for a system event name")))]
async fn delete_events(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(raw): Path<String>,
) -> ApiResult<Json<EventsDeleted>> {
    let name = herald_core::events::tracked_name(&raw)
        .map_err(|v| ApiError::field("eventName", v.message, v.code))?;
    let deleted = state.store.delete_tracked_events(auth.id(), &name).await?;
    Ok(Json(EventsDeleted {
        event: name,
        deleted,
    }))
}
