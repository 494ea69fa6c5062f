//! `POST /users/@me/projects/{id}/reset` (OWNER only, the project's name as confirmation)
//! wipes the project's data but keeps the project, members, keys and domains (see
//! `herald_store::project_reset`); `GET /projects/{id}/setup-state` tells a new project's
//! onboarding steps (any member).

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::UserAuth;
use crate::error::ApiResult;
use crate::extract::ApiJson;
use crate::routes::members::{project_access, require_enabled};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(reset_project))
        .routes(routes!(setup_state))
}

#[derive(Deserialize, ToSchema)]
pub struct ProjectResetRequest {
    /// The project's name, exactly: the reset cannot be undone.
    #[schema(required = true)]
    pub confirmation: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ResetResponse {
    pub success: bool,
}

/// Irreversibly deletes the project's contacts, events, messages and templates (owner only).
#[utoipa::path(post, path = "/users/@me/projects/{id}/reset", tag = "account", params(("id" = String, Path)),
    request_body = ProjectResetRequest,
    responses((status = 200, body = ResetResponse), (status = 403), (status = 404), (status = 422)))]
async fn reset_project(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ProjectResetRequest>,
) -> ApiResult<Json<ResetResponse>> {
    reset(&state, auth.user, &id, body).await?;
    Ok(Json(ResetResponse { success: true }))
}

/// Resets project `id` for `user` (its owner, confirming with the name): the API and the
/// dashboard.
pub async fn reset(
    state: &AppState,
    user: herald_core::ids::Uuid,
    id: &str,
    body: ProjectResetRequest,
) -> ApiResult<()> {
    let (project, role) = project_access(state, user, id).await?;
    require_enabled(&project)?;
    state
        .engine
        .reset_project(role, &project, body.confirmation.as_deref())
        .await?;
    Ok(())
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetupStateResponse {
    pub domain_added: bool,
    pub domain_verified: bool,
    pub first_contact: bool,
    pub first_template: bool,
    pub first_send: bool,
    pub team_invited: bool,
    /// Domain verified, a contact and a send: the project is ready.
    pub complete: bool,
}

/// The onboarding steps a project has done.
#[utoipa::path(get, path = "/projects/{id}/setup-state", tag = "account", params(("id" = String, Path)),
    responses((status = 200, body = SetupStateResponse), (status = 403), (status = 404)))]
async fn setup_state(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<SetupStateResponse>> {
    let (project, _) = project_access(&state, auth.user, &id).await?;
    let s = state.store.setup_state(project.id).await?;
    let domain_verified = s.verified_domains > 0;
    let first_contact = s.contacts > 0;
    let first_send = s.messages > 0;
    Ok(Json(SetupStateResponse {
        domain_added: s.domains > 0,
        domain_verified,
        first_contact,
        first_template: s.templates > 0,
        first_send,
        team_invited: s.members > 1,
        complete: domain_verified && first_contact && first_send,
    }))
}
