//! Sign-in, the current user, and the user's projects with their keys (sign-up is in
//! [`super::signup`]).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_core::email::EmailAddress;
use herald_core::ids::{Uuid, new_id};
use herald_core::kinds::TrackingMode;
use herald_core::time::iso;
use herald_store::accounts::{Project, ProjectChanges, User};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::client_limit::ClientAddress;
use crate::auth::keys::NewKeys;
use crate::auth::login_throttle;
use crate::auth::session::SessionKeys;
use crate::auth::{MaybeSession, Role, UserAuth};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, path_id};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(logout))
        .routes(routes!(me))
        .routes(routes!(list_projects, create_project))
        .routes(routes!(update_project, delete_project))
        .routes(routes!(regenerate_keys))
        .routes(routes!(public_config))
}

#[derive(Deserialize, ToSchema)]
pub struct Credentials {
    #[schema(format = Email, required = true)]
    pub email: Option<String>,
    /// 8 to 256 characters.
    #[schema(min_length = 8, max_length = 256, required = true)]
    pub password: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserResponse {
    pub id: String,
    pub email: String,
    pub created_at: String,
}

impl From<&User> for UserResponse {
    fn from(u: &User) -> Self {
        Self {
            id: u.id.to_string(),
            email: u.email.clone(),
            created_at: iso(u.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectResponse {
    pub id: String,
    pub name: String,
    pub public_key: String,
    pub secret_key_prefix: String,
    /// Only in the answers of create and regenerate-keys: shown once, stored hashed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_key: Option<String>,
    /// ENABLED, DISABLED or MARKETING_ONLY.
    #[schema(value_type = String)]
    pub tracking: TrackingMode,
    pub language: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    /// OWNER, ADMIN or MEMBER.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub role: Option<Role>,
    pub created_at: String,
    pub updated_at: String,
}

impl ProjectResponse {
    fn new(p: &Project, secret_key: Option<String>, role: Option<Role>) -> Self {
        Self {
            id: p.id.to_string(),
            name: p.name.clone(),
            public_key: p.public_key.clone(),
            secret_key_prefix: p.secret_key_prefix.clone(),
            secret_key,
            tracking: p.tracking,
            language: p.language.clone(),
            disabled: p.disabled,
            disabled_reason: p.disabled_reason.clone(),
            role,
            created_at: iso(p.created_at),
            updated_at: iso(p.updated_at),
        }
    }
}

/// The error of a password outside 8 to 256 characters, under `field`.
pub(crate) fn password_error(field: &str, password: &str) -> Option<crate::error::FieldError> {
    (password.chars().count() < 8 || password.len() > 256).then(|| {
        crate::error::FieldError::new(
            field,
            "password must be 8 to 256 characters",
            "invalid_length",
        )
    })
}

pub(crate) fn with_cookie(status: StatusCode, cookie: String, body: impl Serialize) -> Response {
    (status, [(header::SET_COOKIE, cookie)], Json(body)).into_response()
}

/// Opens a server-side session for `user`; the `Set-Cookie` value carrying it.
pub async fn start_session(state: &AppState, user: Uuid) -> ApiResult<String> {
    let sid = SessionKeys::new_sid();
    let (token, expires_at) = state.sessions.issue(user, &sid)?;
    state
        .store
        .create_session(&sid, user, state.engine.now(), expires_at)
        .await?;
    Ok(state.sessions.set_cookie(&token))
}

/// Signs in; sets the session cookie. A wrong email and a wrong password answer alike.
#[utoipa::path(post, path = "/auth/login", tag = "account", request_body = Credentials,
    responses((status = 200, body = UserResponse), (status = 401, description = "INVALID_CREDENTIALS"),
        (status = 429, description = "RATE_LIMIT_EXCEEDED: too many sign-ins waiting for a password check")))]
async fn login(
    State(state): State<AppState>,
    client: ClientAddress,
    ApiJson(body): ApiJson<Credentials>,
) -> ApiResult<Response> {
    let (user, cookie) = sign_in(&state, &client, body).await?;
    Ok(with_cookie(
        StatusCode::OK,
        cookie,
        UserResponse::from(&user),
    ))
}

/// Checks the credentials (with the per-account throttle and the verified-address rule) and
/// opens a session: the user and the `Set-Cookie` value (the API and the dashboard's form).
pub async fn sign_in(
    state: &AppState,
    client: &ClientAddress,
    body: Credentials,
) -> ApiResult<(User, String)> {
    let invalid = || ApiError::unauthorized("INVALID_CREDENTIALS", "Invalid email or password");
    let email = body
        .email
        .as_deref()
        .and_then(|e| EmailAddress::parse(e).ok());
    let password = body.password.unwrap_or_default();
    if let Some(e) = &email {
        login_throttle::check(state, e.as_str(), client).await?;
    }
    let user = match &email {
        Some(e) => state.store.user_by_email(e.as_str()).await?,
        None => None,
    };
    // A user without a password (signed up with OAuth) is checked like an unknown address:
    // refused, in the same time.
    let hash = user
        .as_ref()
        .filter(|u| u.has_password())
        .map(|u| u.password_hash.clone());
    let ok = state.passwords.verify(password, hash).await?;
    let Some(user) = user.filter(|_| ok) else {
        if let Some(e) = &email {
            login_throttle::failed(state, e.as_str(), client).await?;
        }
        return Err(invalid());
    };
    login_throttle::succeeded(state, user.email.as_str(), client).await?;
    if state.settings.require_email_verification && user.email_verified_at.is_none() {
        return Err(ApiError::forbidden(
            "EMAIL_VERIFICATION_REQUIRED",
            "Verify your email address before signing in",
        )
        .with_suggestion(
            "Follow the link in the verification mail, or POST /auth/request-verification",
        ));
    }
    let cookie = start_session(state, user.id).await?;
    Ok((user, cookie))
}

/// Ends the session server-side and clears the cookie.
#[utoipa::path(get, path = "/auth/logout", tag = "account", responses((status = 200)))]
async fn logout(State(state): State<AppState>, session: MaybeSession) -> ApiResult<Response> {
    if let Some(sid) = session.sid() {
        state.store.delete_session(sid).await?;
    }
    Ok(with_cookie(
        StatusCode::OK,
        state.sessions.clear_cookie(),
        serde_json::json!({"success": true}),
    ))
}

/// The signed-in user.
#[utoipa::path(get, path = "/users/@me", tag = "account", responses((status = 200, body = UserResponse)))]
async fn me(State(state): State<AppState>, auth: UserAuth) -> ApiResult<Json<UserResponse>> {
    let user =
        state.store.user_by_id(auth.user).await?.ok_or_else(|| {
            ApiError::unauthorized("UNAUTHORIZED", "This account no longer exists")
        })?;
    Ok(Json(UserResponse::from(&user)))
}

/// Projects the user is a member of.
#[utoipa::path(get, path = "/users/@me/projects", tag = "account", responses((status = 200, body = Vec<ProjectResponse>)))]
async fn list_projects(
    State(state): State<AppState>,
    auth: UserAuth,
) -> ApiResult<Json<Vec<ProjectResponse>>> {
    let list = state.store.projects_of_user(auth.user).await?;
    Ok(Json(
        list.iter()
            .map(|m| ProjectResponse::new(&m.project, None, Some(m.role)))
            .collect(),
    ))
}

#[derive(Deserialize, ToSchema)]
pub struct CreateProjectRequest {
    /// 1 to 100 characters (trimmed), no control characters.
    #[schema(required = true)]
    pub name: Option<String>,
}

fn project_name(name: Option<&str>, required: bool) -> ApiResult<Option<String>> {
    match name.map(str::trim) {
        None if required => Err(ApiError::field("name", "name is required", "required")),
        None => Ok(None),
        Some(n) if n.is_empty() || n.chars().count() > 100 || n.chars().any(char::is_control) => {
            Err(ApiError::field(
                "name",
                "name must be 1 to 100 characters without control characters",
                "invalid",
            ))
        }
        Some(n) => Ok(Some(n.to_owned())),
    }
}

/// Creates a project; the answer holds both keys (the secret one only this once).
#[utoipa::path(post, path = "/users/@me/projects", tag = "account", request_body = CreateProjectRequest,
    responses((status = 201, body = ProjectResponse)))]
async fn create_project(
    State(state): State<AppState>,
    auth: UserAuth,
    ApiJson(body): ApiJson<CreateProjectRequest>,
) -> ApiResult<(StatusCode, Json<ProjectResponse>)> {
    let (project, secret) = new_project(&state, auth.user, body).await?;
    Ok((
        StatusCode::CREATED,
        Json(ProjectResponse::new(
            &project,
            Some(secret),
            Some(Role::Owner),
        )),
    ))
}

/// Creates a project owned by `user`: the project and its secret key (shown this once).
pub async fn new_project(
    state: &AppState,
    user: Uuid,
    body: CreateProjectRequest,
) -> ApiResult<(Project, String)> {
    let name = project_name(body.name.as_deref(), true)?.unwrap_or_default();
    let keys = NewKeys::generate();
    let project = state
        .store
        .create_project(new_id(), &name, &keys.stored(), user, state.engine.now())
        .await?;
    Ok((project, keys.secret_key))
}

/// The user's role in a project; another user's project is not found.
async fn role_in(state: &AppState, user: Uuid, raw_id: &str) -> ApiResult<(Uuid, Role)> {
    let id = path_id(raw_id, "NOT_FOUND", "Project")?;
    let role = state
        .store
        .member_role(id, user)
        .await?
        .ok_or_else(|| ApiError::not_found("NOT_FOUND", "Project"))?;
    Ok((id, role))
}

/// A disabled project refuses writes on the account routes too (403 `PROJECT_DISABLED`).
async fn refuse_if_disabled(state: &AppState, id: Uuid) -> ApiResult<()> {
    match state.store.project_by_id(id).await? {
        Some(p) => crate::routes::members::require_enabled(&p),
        None => Err(ApiError::not_found("NOT_FOUND", "Project")),
    }
}

fn require_manager(role: Role) -> ApiResult<()> {
    if role.can_manage() {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "FORBIDDEN",
            "Only an owner or admin of the project can do this",
        ))
    }
}

#[derive(Deserialize, ToSchema)]
pub struct UpdateProjectRequest {
    pub name: Option<String>,
    /// ENABLED, DISABLED or MARKETING_ONLY.
    pub tracking: Option<String>,
    /// Default language of pages and footers, e.g. `en`.
    pub language: Option<String>,
}

/// Changes a project's name, tracking mode or language.
#[utoipa::path(patch, path = "/users/@me/projects/{id}", tag = "account", request_body = UpdateProjectRequest,
    params(("id" = String, Path)), responses((status = 200, body = ProjectResponse)))]
async fn update_project(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<UpdateProjectRequest>,
) -> ApiResult<Json<ProjectResponse>> {
    let (project, role) = change_project(&state, auth.user, &id, body).await?;
    Ok(Json(ProjectResponse::new(&project, None, Some(role))))
}

/// Changes a project's settings for `user` (owner or admin): the API's and the dashboard's.
pub async fn change_project(
    state: &AppState,
    user: Uuid,
    id: &str,
    body: UpdateProjectRequest,
) -> ApiResult<(Project, Role)> {
    let (id, role) = role_in(state, user, id).await?;
    require_manager(role)?;
    refuse_if_disabled(state, id).await?;
    let mut errors = Vec::new();
    let name = match project_name(body.name.as_deref(), false) {
        Ok(n) => n,
        Err(e) => {
            errors.extend(e.errors);
            None
        }
    };
    let tracking = match body.tracking.as_deref().map(TrackingMode::parse) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(_)) => {
            errors.push(crate::error::FieldError::new(
                "tracking",
                format!("tracking must be {}", TrackingMode::EXPECTED),
                "invalid_enum",
            ));
            None
        }
    };
    if let Some(l) = &body.language {
        let ok =
            (2..=10).contains(&l.len()) && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !ok {
            errors.push(crate::error::FieldError::new(
                "language",
                "language must be a language tag such as en or pt-BR",
                "invalid",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let changes = ProjectChanges {
        name,
        tracking,
        language: body.language,
    };
    let project = state
        .store
        .update_project(id, &changes, state.engine.now())
        .await?;
    Ok((project, role))
}

/// Deletes a project and everything in it (owner only).
#[utoipa::path(delete, path = "/users/@me/projects/{id}", tag = "account", params(("id" = String, Path)),
    responses((status = 204)))]
async fn delete_project(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    remove_project(&state, auth.user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes a project for `user` (its owner).
pub async fn remove_project(state: &AppState, user: Uuid, id: &str) -> ApiResult<()> {
    let (id, role) = role_in(state, user, id).await?;
    state.engine.delete_project(role, id).await?;
    Ok(())
}

/// Replaces both keys; the old ones stop working at once.
#[utoipa::path(post, path = "/users/@me/projects/{id}/regenerate-keys", tag = "account", params(("id" = String, Path)),
    responses((status = 200, body = ProjectResponse)))]
async fn regenerate_keys(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<ProjectResponse>> {
    let (project, role, secret) = replace_project_keys(&state, auth.user, &id).await?;
    Ok(Json(ProjectResponse::new(
        &project,
        Some(secret),
        Some(role),
    )))
}

/// Replaces both keys of a project for `user` (owner or admin): the project, the role and the
/// new secret key (shown this once).
pub async fn replace_project_keys(
    state: &AppState,
    user: Uuid,
    id: &str,
) -> ApiResult<(Project, Role, String)> {
    let (id, role) = role_in(state, user, id).await?;
    require_manager(role)?;
    refuse_if_disabled(state, id).await?;
    let keys = NewKeys::generate();
    let project = state
        .store
        .replace_keys(id, &keys.stored(), state.engine.now())
        .await?;
    Ok((project, role, keys.secret_key))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicConfig {
    pub signups_enabled: bool,
    /// Ids of the configured OAuth providers (`github`, `google`); see `/auth/oauth-config`.
    pub oauth_providers: Vec<String>,
    pub billing_enabled: bool,
    pub version: String,
}

/// Feature flags of this server; no authentication.
#[utoipa::path(get, path = "/config", tag = "account", responses((status = 200, body = PublicConfig)))]
async fn public_config(State(state): State<AppState>) -> Json<PublicConfig> {
    Json(PublicConfig {
        signups_enabled: !state.settings.disable_signups,
        oauth_providers: state
            .settings
            .oauth
            .configured()
            .iter()
            .map(|p| p.id().to_owned())
            .collect(),
        billing_enabled: false,
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })
}
