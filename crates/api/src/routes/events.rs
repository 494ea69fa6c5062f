//! Events of a contact (system events such as `contact.subscribed`; tracked events arrive with
//! `/v1/track` in a later version).

use axum::Json;
use axum::extract::{Path, State};
use herald_core::time::iso;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{RawQuery, path_id};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(contact_events))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventResponse {
    pub id: String,
    pub name: String,
    pub contact_id: Option<String>,
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct EventList {
    pub events: Vec<EventResponse>,
}

/// Events of one contact, newest first (`limit` 1..100, default 50).
#[utoipa::path(get, path = "/events/contact/{contactId}", tag = "events",
    params(("contactId" = String, Path), ("limit" = Option<u32>, Query, minimum = 1, maximum = 100)),
    responses((status = 200, body = EventList), (status = 404)))]
async fn contact_events(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(contact_id): Path<String>,
    q: RawQuery,
) -> ApiResult<Json<EventList>> {
    let limit = q.int("limit", 50, 1, 100)?;
    let id = path_id(&contact_id, "CONTACT_NOT_FOUND", "Contact")?;
    if state.store.contact(auth.id(), id).await?.is_none() {
        return Err(ApiError::not_found("CONTACT_NOT_FOUND", "Contact"));
    }
    let events = state.store.events_of_contact(auth.id(), id, limit).await?;
    Ok(Json(EventList {
        events: events
            .into_iter()
            .map(|e| EventResponse {
                id: e.id.to_string(),
                name: e.name,
                contact_id: e.contact_id.map(|c| c.to_string()),
                data: e.data.0,
                created_at: iso(e.created_at),
            })
            .collect(),
    }))
}
