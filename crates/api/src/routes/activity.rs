//! The project activity feed: a keyset list (newest first, optional `type` filter) and the
//! distinct types present. Entries so far: `domain.verified`, `domain.unverified`.

use axum::Json;
use axum::extract::State;
use herald_core::time::iso;
use herald_store::activity::Activity;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::RawQuery;
use crate::routes::contacts::{decode_cursor, encode_cursor};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_activity))
        .routes(routes!(activity_types))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityResponse {
    pub id: String,
    /// e.g. `domain.verified`.
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: String,
}

impl From<Activity> for ActivityResponse {
    fn from(a: Activity) -> Self {
        Self {
            id: a.id.to_string(),
            kind: a.kind,
            data: a.data.0,
            created_at: iso(a.created_at),
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

/// The project's activity, newest first, by cursor.
#[utoipa::path(get, path = "/activity", tag = "activity",
    params(("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "1..100, default 20"), ("cursor" = Option<String>, Query),
        ("type" = Option<String>, Query, description = "only entries of this type, e.g. domain.unverified")),
    responses((status = 200, body = ActivityList), (status = 422)))]
async fn list_activity(
    State(state): State<AppState>,
    auth: ProjectAuth,
    q: RawQuery,
) -> ApiResult<Json<ActivityList>> {
    let limit = q.int("limit", 20, 1, 100)?;
    let before = match q.get("cursor").filter(|c| !c.is_empty()) {
        Some(c) => Some(decode_cursor(auth.id(), c)?),
        None => None,
    };
    let kind = q.get("type").map(str::trim).filter(|t| !t.is_empty());
    if kind.is_some_and(|t| t.len() > 100) {
        return Err(ApiError::field(
            "type",
            "type is at most 100 characters",
            "too_long",
        ));
    }
    let page = state
        .store
        .list_activity(auth.id(), limit, before, kind)
        .await?;
    let cursor = match (page.has_more, page.entries.last()) {
        (true, Some(last)) => Some(encode_cursor(auth.id(), last.id)),
        _ => None,
    };
    Ok(Json(ActivityList {
        data: page
            .entries
            .into_iter()
            .map(ActivityResponse::from)
            .collect(),
        cursor,
        has_more: page.has_more,
    }))
}

/// The distinct activity types present in the project's feed.
#[utoipa::path(get, path = "/activity/types", tag = "activity", responses((status = 200, body = ActivityTypes)))]
async fn activity_types(
    State(state): State<AppState>,
    auth: ProjectAuth,
) -> ApiResult<Json<ActivityTypes>> {
    Ok(Json(ActivityTypes {
        types: state.store.activity_kinds(auth.id()).await?,
    }))
}
