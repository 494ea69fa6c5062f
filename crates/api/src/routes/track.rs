//! `POST /v1/track` (public or secret key) and its dashboard alias `POST /events/track` (secret
//! key or session): records
//! a tracked event for a contact, creating or updating the contact. The engine answers once
//! the contact, the event and its outbox row are committed (group commit with the other
//! requests waiting, see `herald_engine::track`); workflows and segments react later, from
//! the outbox.
//!
//! Browsers may call `/v1/track` from any origin with the public key (see [`crate::cors`]).

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use herald_core::time::iso;
use herald_engine::track::TrackPlan;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::contacts::{data_field, email_field};
use super::send::{accept_error, idempotency_key};
use crate::auth::{ProjectAuth, TrackAuth};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(track))
        .routes(routes!(track_alias))
}

#[derive(Deserialize, ToSchema)]
pub struct TrackRequest {
    /// The event's name: 1 to 255 characters, no control characters, not a system name
    /// (`email.*`, `contact.subscribed`, `contact.unsubscribed`, `segment.*.entry|exit`).
    #[schema(required = true)]
    pub event: Option<String>,
    #[schema(format = Email, required = true)]
    pub email: Option<String>,
    /// Subscription state; a new contact is subscribed unless this is `false`.
    pub subscribed: Option<bool>,
    /// Custom fields of the contact (SPEC.md rules), also kept as the event's data.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
}

#[derive(Serialize, ToSchema)]
pub struct TrackData {
    /// The contact's id.
    pub contact: String,
    /// The event's id.
    pub event: String,
    pub timestamp: String,
}

#[derive(Serialize, ToSchema)]
pub struct TrackResponse {
    pub success: bool,
    pub data: TrackData,
}

/// Records an event for a contact (created or updated). Public or secret key.
#[utoipa::path(post, path = "/v1/track", tag = "public", request_body = TrackRequest,
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]([ -~]{0,253}[!-~])?$",
        description = "1 to 255 printable ASCII characters")),
    responses((status = 200, body = TrackResponse), (status = 409, description = "IDEMPOTENCY_KEY_REUSED"),
        (status = 422, description = "VALIDATION_ERROR; code `reserved_event` for a system event name")))]
async fn track(
    State(state): State<AppState>,
    auth: TrackAuth,
    headers: HeaderMap,
    ApiJson(req): ApiJson<TrackRequest>,
) -> ApiResult<Json<TrackResponse>> {
    record(&state, &auth, &headers, req).await
}

/// The dashboard's alias of `POST /v1/track` (same body, same answer); secret key or session,
/// like every dashboard route (a public key is refused).
#[utoipa::path(post, path = "/events/track", tag = "events", request_body = TrackRequest,
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]([ -~]{0,253}[!-~])?$",
        description = "1 to 255 printable ASCII characters")),
    responses((status = 200, body = TrackResponse), (status = 409, description = "IDEMPOTENCY_KEY_REUSED"),
        (status = 422, description = "VALIDATION_ERROR; code `reserved_event` for a system event name")))]
async fn track_alias(
    State(state): State<AppState>,
    auth: ProjectAuth,
    headers: HeaderMap,
    ApiJson(req): ApiJson<TrackRequest>,
) -> ApiResult<Json<TrackResponse>> {
    let auth = TrackAuth {
        project: auth.project,
    };
    record(&state, &auth, &headers, req).await
}

async fn record(
    state: &AppState,
    auth: &TrackAuth,
    headers: &HeaderMap,
    req: TrackRequest,
) -> ApiResult<Json<TrackResponse>> {
    let idempotency_key = idempotency_key(headers)?;
    let mut errors = Vec::new();
    let event = match req.event.as_deref().map(herald_core::events::tracked_name) {
        Some(Ok(name)) => Some(name),
        Some(Err(v)) => {
            errors.push(FieldError::new("event", v.message, v.code));
            None
        }
        None => {
            errors.push(FieldError::new("event", "event is required", "required"));
            None
        }
    };
    let email = email_field(req.email.as_deref(), "email", &mut errors);
    let data = data_field(req.data.as_ref(), &mut errors);
    let (Some(event), Some(email)) = (event, email) else {
        return Err(ApiError::validation(errors));
    };
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let plan = TrackPlan {
        project_id: auth.project.id,
        email,
        event,
        subscribed: req.subscribed,
        data,
        idempotency_key,
    };
    let tracked = state.engine.track(plan).await.map_err(accept_error)?;
    Ok(Json(TrackResponse {
        success: true,
        data: TrackData {
            contact: tracked.contact_id.to_string(),
            event: tracked.event_id.to_string(),
            timestamp: iso(tracked.created_at),
        },
    }))
}
