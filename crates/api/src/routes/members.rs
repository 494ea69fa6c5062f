//! Project members (DECISIONS.md "Accounts"): `GET/POST /projects/{id}/members`,
//! `PATCH/DELETE /projects/{id}/members/{userId}`.
//!
//! The rules are the engine's (`herald_engine::accounts::members`): only OWNERs and ADMINs
//! manage members (a MEMBER: 403 `FORBIDDEN`), only an OWNER grants, changes or removes the
//! OWNER role (403 `FORBIDDEN`), the last OWNER can be neither removed nor demoted (409). Here:
//! a signed-in user who is not a member of the project is 403 `PROJECT_ACCESS_DENIED`; a
//! disabled project refuses these writes (403 `PROJECT_DISABLED`); inviting an existing user
//! adds them at once (201 with the member), a new address gets an invitation mail and joins
//! when it signs up through the mail's link, whose token proves the address (202).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_core::email::EmailAddress;
use herald_core::ids::Uuid;
use herald_core::kinds::{Role, TokenKind};
use herald_core::time::iso;
use herald_engine::accounts::{MemberAddition, MemberError};
use herald_store::accounts::Project;
use herald_store::members::Member;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::account_mail::{TokenFor, send_token_mail};
use crate::auth::UserAuth;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::{ApiJson, path_id};
use crate::language::RequestLanguage;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_members, invite_member))
        .routes(routes!(update_member, remove_member))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberResponse {
    pub user_id: String,
    pub email: String,
    /// OWNER, ADMIN or MEMBER.
    #[schema(value_type = String)]
    pub role: Role,
    pub created_at: String,
}

impl From<&Member> for MemberResponse {
    fn from(m: &Member) -> Self {
        Self {
            user_id: m.user_id.to_string(),
            email: m.email.clone(),
            role: m.role,
            created_at: iso(m.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationResponse {
    pub email: String,
    #[schema(value_type = String)]
    pub role: Role,
    /// Always true: the address has no account yet and was mailed an invitation.
    pub invited: bool,
}

#[derive(Deserialize, ToSchema)]
pub struct InviteRequest {
    #[schema(format = Email, required = true)]
    pub email: Option<String>,
    /// OWNER, ADMIN or MEMBER (default MEMBER).
    pub role: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct RoleRequest {
    /// OWNER, ADMIN or MEMBER.
    #[schema(required = true)]
    pub role: Option<String>,
}

/// The project and the caller's role in it: 404 for a malformed id or a project that does
/// not exist, 403 `PROJECT_ACCESS_DENIED` for a project the caller is not a member of.
pub(crate) async fn project_access(
    state: &AppState,
    user: Uuid,
    raw_id: &str,
) -> ApiResult<(Project, Role)> {
    let id = path_id(raw_id, "NOT_FOUND", "Project")?;
    let project = state
        .store
        .project_by_id(id)
        .await?
        .filter(|p| p.id != herald_core::account::SYSTEM_PROJECT_ID)
        .ok_or_else(|| ApiError::not_found("NOT_FOUND", "Project"))?;
    let role = state.store.member_role(id, user).await?.ok_or_else(|| {
        ApiError::forbidden(
            "PROJECT_ACCESS_DENIED",
            "You are not a member of this project",
        )
    })?;
    Ok((project, role))
}

/// Refuses a MEMBER (403 `FORBIDDEN`).
pub(crate) fn require_manager(role: Role) -> ApiResult<()> {
    if role.can_manage() {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "FORBIDDEN",
            "Only an owner or admin of the project can do this",
        ))
    }
}

/// Refuses writes to a disabled project (403 `PROJECT_DISABLED`).
pub(crate) fn require_enabled(project: &Project) -> ApiResult<()> {
    if project.disabled {
        let reason = project.disabled_reason.clone().unwrap_or_default();
        return Err(ApiError::forbidden(
            "PROJECT_DISABLED",
            format!("This project is disabled. {reason}"),
        ));
    }
    Ok(())
}

fn parse_role(raw: Option<&str>, default: Option<Role>) -> ApiResult<Role> {
    match (raw, default) {
        (None, Some(d)) => Ok(d),
        (None, None) => Err(ApiError::field("role", "role is required", "required")),
        (Some(r), _) => Role::parse(r).map_err(|_| {
            ApiError::field(
                "role",
                format!("role must be {}", Role::EXPECTED),
                "invalid_enum",
            )
        }),
    }
}

impl From<MemberError> for ApiError {
    fn from(e: MemberError) -> Self {
        match e {
            MemberError::NotManager => ApiError::forbidden(
                "FORBIDDEN",
                "Only an owner or admin of the project can do this",
            ),
            MemberError::OwnerOnly(action) => ApiError::forbidden("FORBIDDEN", action),
            MemberError::LastOwner => {
                ApiError::conflict("The last owner of a project can be neither removed nor demoted")
                    .with_suggestion("Make another member an owner first")
            }
            MemberError::NotFound => ApiError::not_found("NOT_FOUND", "Member"),
            MemberError::AlreadyMember => ApiError::conflict("This user is already a member"),
            MemberError::Confirmation { given: None } => ApiError::field(
                "confirmation",
                "confirmation is required: the project's name",
                "required",
            ),
            MemberError::Confirmation { given: Some(_) } => ApiError::field(
                "confirmation",
                "confirmation must be the project's name",
                "mismatch",
            ),
            MemberError::Store(e) => e.into(),
        }
    }
}

/// Members of the project with their roles.
#[utoipa::path(get, path = "/projects/{id}/members", tag = "account", params(("id" = String, Path)),
    responses((status = 200, body = Vec<MemberResponse>), (status = 403), (status = 404)))]
async fn list_members(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<MemberResponse>>> {
    let (project, role) = project_access(&state, auth.user, &id).await?;
    let members = state.engine.project_members(role, project.id).await?;
    Ok(Json(members.iter().map(MemberResponse::from).collect()))
}

/// Adds an existing user at once (201), or mails an invitation to a new address (202).
#[utoipa::path(post, path = "/projects/{id}/members", tag = "account", params(("id" = String, Path)),
    request_body = InviteRequest,
    responses((status = 201, body = MemberResponse), (status = 202, body = InvitationResponse),
        (status = 403), (status = 404), (status = 409), (status = 422)))]
async fn invite_member(
    State(state): State<AppState>,
    auth: UserAuth,
    lang: RequestLanguage,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<InviteRequest>,
) -> ApiResult<Response> {
    Ok(match invite(&state, auth.user, &id, body, lang.0).await? {
        Invited::Joined(member) => {
            (StatusCode::CREATED, Json(MemberResponse::from(&member))).into_response()
        }
        Invited::Mailed { email, role } => (
            StatusCode::ACCEPTED,
            Json(InvitationResponse {
                email,
                role,
                invited: true,
            }),
        )
            .into_response(),
    })
}

/// What an invitation did: an existing user joined, or a new address was mailed a link.
pub enum Invited {
    Joined(Member),
    Mailed { email: String, role: Role },
}

/// Invites `body.email` into project `id` for `user` (the API and the dashboard's form).
pub async fn invite(
    state: &AppState,
    user: Uuid,
    id: &str,
    body: InviteRequest,
    lang: &'static herald_core::account_i18n::AccountStrings,
) -> ApiResult<Invited> {
    let (project, role) = project_access(state, user, id).await?;
    require_enabled(&project)?;
    let mut errors: Vec<FieldError> = Vec::new();
    let email = match body.email.as_deref().map(EmailAddress::parse) {
        Some(Ok(e)) => Some(e),
        Some(Err(e)) => {
            errors.push(FieldError::new("email", e.to_string(), "invalid_email"));
            None
        }
        None => {
            errors.push(FieldError::new("email", "email is required", "required"));
            None
        }
    };
    let new_role = parse_role(body.role.as_deref(), Some(Role::Member))
        .map_err(|e| errors.extend(e.errors))
        .ok();
    let (Some(email), Some(new_role)) = (email, new_role) else {
        return Err(ApiError::validation(errors));
    };
    let added = state
        .engine
        .add_member(role, project.id, &email, new_role)
        .await?;
    if let MemberAddition::Joined(member) = added {
        return Ok(Invited::Joined(member));
    }
    let whom = TokenFor {
        user: None,
        project: Some((project.id, new_role)),
    };
    send_token_mail(
        state,
        TokenKind::Invitation,
        &email,
        whom,
        Some(&project.name),
        // The inviter's language: Herald stores none per user.
        lang,
    )
    .await?;
    Ok(Invited::Mailed {
        email: email.into_string(),
        role: new_role,
    })
}

fn member_id(raw: &str) -> ApiResult<Uuid> {
    path_id(raw, "NOT_FOUND", "Member")
}

/// Changes a member's role.
#[utoipa::path(patch, path = "/projects/{id}/members/{userId}", tag = "account",
    params(("id" = String, Path), ("userId" = String, Path)), request_body = RoleRequest,
    responses((status = 200, body = MemberResponse), (status = 403), (status = 404), (status = 409), (status = 422)))]
async fn update_member(
    State(state): State<AppState>,
    auth: UserAuth,
    Path((id, user_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<RoleRequest>,
) -> ApiResult<Json<MemberResponse>> {
    let member = change_role(&state, auth.user, &id, &user_id, body).await?;
    Ok(Json(MemberResponse::from(&member)))
}

/// Changes a member's role in project `id` for `user` (the API and the dashboard).
pub async fn change_role(
    state: &AppState,
    user: Uuid,
    id: &str,
    user_id: &str,
    body: RoleRequest,
) -> ApiResult<Member> {
    let (project, role) = project_access(state, user, id).await?;
    require_enabled(&project)?;
    let new_role = parse_role(body.role.as_deref(), None)?;
    Ok(state
        .engine
        .set_member_role(role, project.id, member_id(user_id)?, new_role)
        .await?)
}

/// Removes a member from the project.
#[utoipa::path(delete, path = "/projects/{id}/members/{userId}", tag = "account",
    params(("id" = String, Path), ("userId" = String, Path)),
    responses((status = 204), (status = 403), (status = 404), (status = 409)))]
async fn remove_member(
    State(state): State<AppState>,
    auth: UserAuth,
    Path((id, user_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    remove(&state, auth.user, &id, &user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a member from project `id` for `user` (the API and the dashboard).
pub async fn remove(state: &AppState, user: Uuid, id: &str, user_id: &str) -> ApiResult<()> {
    let (project, role) = project_access(state, user, id).await?;
    require_enabled(&project)?;
    state
        .engine
        .remove_member(role, project.id, member_id(user_id)?)
        .await?;
    Ok(())
}
