//! Who is calling: resolved once per request by [`authenticate`] into a [`Principal`], then
//! required by handlers through the extractors [`ProjectAuth`] (secret key, or session plus
//! `X-Project-Id`), [`TrackAuth`] (any key) and [`UserAuth`] (a signed-in user).
//!
//! The middleware also applies the per-project rate limit and adds the `RateLimit-*` headers,
//! and refuses writes to a disabled project, and cross-site writes carrying the session cookie
//! ([`cross_site`]).

pub mod client_limit;
pub mod cross_site;
pub mod keys;
pub mod login_throttle;
pub mod password;
pub mod session;

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use herald_core::ids::Uuid;
use herald_store::accounts::Project;

use crate::error::ApiError;
use crate::rate_limit::Decision;
use crate::state::AppState;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Public,
    Secret,
}

/// A member's role, as `herald-core` defines it.
pub use herald_core::kinds::Role;

#[derive(Clone, Debug)]
pub enum Principal {
    Anonymous,
    /// Credentials were sent but are not valid; the error is what protected routes answer.
    Invalid(ApiError),
    Key {
        project: Arc<Project>,
        kind: KeyKind,
    },
    Session {
        user: Uuid,
        /// The server-side session (absent for none; logout ends it).
        sid: String,
        project: Option<(Arc<Project>, Role)>,
    },
    /// A valid session whose `X-Project-Id` names a project the user is not a member of (left
    /// it, or never joined): project routes answer `error`, account routes ignore the header.
    SessionWithoutProject {
        user: Uuid,
        sid: String,
        error: ApiError,
    },
}

impl Principal {
    fn project(&self) -> Option<&Project> {
        match self {
            Principal::Key { project, .. } => Some(project),
            Principal::Session {
                project: Some((p, _)),
                ..
            } => Some(p),
            _ => None,
        }
    }
}

/// Resolves the caller, applies the rate limit, and adds its headers.
pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    // Relay notifications carry their own signature and are never rate limited.
    if req.uri().path().starts_with("/webhooks/") {
        req.extensions_mut().insert(Principal::Anonymous);
        return next.run(req).await;
    }
    if let Some(key) = client_limit::key_of(&state, &req)
        && let Some(refusal) = client_limit::check(&state, key).await
    {
        return refusal;
    }
    let principal = match resolve(&state, req.method(), req.headers()).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let mut decision = None;
    if let Some(project) = principal.project() {
        if project.disabled && is_write(req.method()) {
            let reason = project.disabled_reason.clone().unwrap_or_default();
            return ApiError::forbidden(
                "PROJECT_DISABLED",
                format!("This project is disabled. {reason}"),
            )
            .into_response();
        }
        let now = u64::try_from(state.engine.now() / 1000).unwrap_or(0);
        let d = state.limiter.check(project.id, now).await;
        if !d.allowed {
            let mut res = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMIT_EXCEEDED",
                format!("Rate limit of {} requests per minute exceeded", d.limit),
            )
            .with_suggestion(format!("Retry after {} seconds", d.reset))
            .into_response();
            rate_headers(res.headers_mut(), &d);
            if let Ok(v) = HeaderValue::from_str(&d.reset.to_string()) {
                res.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return res;
        }
        decision = Some(d);
    }
    req.extensions_mut().insert(principal);
    let mut res = next.run(req).await;
    if let Some(d) = decision {
        rate_headers(res.headers_mut(), &d);
    }
    res
}

fn is_write(m: &Method) -> bool {
    matches!(
        *m,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

pub(crate) fn rate_headers(h: &mut HeaderMap, d: &Decision) {
    for (name, value) in [
        ("ratelimit-limit", d.limit as u64),
        ("ratelimit-remaining", d.remaining as u64),
        ("ratelimit-reset", d.reset),
    ] {
        h.insert(name, HeaderValue::from(value));
    }
}

async fn resolve(
    state: &AppState,
    method: &Method,
    headers: &HeaderMap,
) -> Result<Principal, ApiError> {
    if let Some(auth) = headers.get(header::AUTHORIZATION) {
        return resolve_key(state, bearer_token(auth)).await;
    }
    let Some(token) = headers
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(session::token_from_cookie)
    else {
        return Ok(Principal::Anonymous);
    };
    if is_write(method) {
        let public = cross_site::origin_of(&state.settings.public_url);
        if let Some(why) = cross_site::refusal(headers, &public) {
            return Err(ApiError::forbidden("FORBIDDEN", why).with_suggestion(
                "Call the API from the dashboard's own origin, or use an API key from a server",
            ));
        }
    }
    let Some((user, sid)) = live_session(state, token).await? else {
        return Ok(Principal::Invalid(ApiError::unauthorized(
            "UNAUTHORIZED",
            "The session has expired or is invalid; sign in again",
        )));
    };
    let project = match headers.get("x-project-id") {
        None => None,
        Some(v) => {
            let denied = || {
                ApiError::forbidden(
                    "PROJECT_ACCESS_DENIED",
                    "You are not a member of this project",
                )
            };
            let without = || Principal::SessionWithoutProject {
                user,
                sid: sid.clone(),
                error: denied(),
            };
            let Some(id) = v.to_str().ok().and_then(herald_core::ids::parse_id) else {
                return Ok(without());
            };
            let Some(role) = state.store.member_role(id, user).await? else {
                return Ok(without());
            };
            let Some(project) = state.store.project_by_id(id).await? else {
                return Ok(without());
            };
            Some((Arc::new(project), role))
        }
    };
    Ok(Principal::Session { user, sid, project })
}

/// The user and session of a token whose signature, expiry and server-side session row are
/// all valid.
async fn live_session(state: &AppState, token: &str) -> Result<Option<(Uuid, String)>, ApiError> {
    let Some((user, sid)) = state.sessions.verify(token) else {
        return Ok(None);
    };
    let live = state
        .store
        .session_is_live(&sid, user, state.engine.now())
        .await?;
    Ok(live.then_some((user, sid)))
}

/// The project of a secret key in `Authorization: Bearer`, for a service mounted beside the
/// API (the MCP endpoint): exactly what [`ProjectAuth`] accepts from a key, so a public key, a
/// wrong key or none is the same 401 as on the API. Sessions are not accepted here.
pub async fn secret_key_project(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Arc<Project>, ApiError> {
    let Some(auth) = headers.get(header::AUTHORIZATION) else {
        return Err(
            ApiError::unauthorized("MISSING_AUTH", "Authentication required")
                .with_suggestion("Send Authorization: Bearer <secret key>"),
        );
    };
    let token = bearer_token(auth);
    if !keys::looks_like_key(token, "sk_") && !keys::looks_like_key(token, "pk_") {
        return Err(ApiError::unauthorized("INVALID_API_KEY", "Invalid API key"));
    }
    let mut parts = axum::http::Request::new(()).into_parts().0;
    parts.extensions.insert(resolve_key(state, token).await?);
    ProjectAuth::from_request_parts(&mut parts, &())
        .await
        .map(|a| a.project)
}

/// The token of an `Authorization: Bearer` header (either case of the scheme), or "".
fn bearer_token(auth: &HeaderValue) -> &str {
    auth.to_str()
        .ok()
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .unwrap_or("")
}

async fn resolve_key(state: &AppState, token: &str) -> Result<Principal, ApiError> {
    let invalid =
        || Principal::Invalid(ApiError::unauthorized("INVALID_API_KEY", "Invalid API key"));
    let (project, kind) = if keys::looks_like_key(token, "pk_") {
        (
            state.store.project_by_public_key(token).await?,
            KeyKind::Public,
        )
    } else if keys::looks_like_key(token, "sk_") {
        (
            state
                .store
                .project_by_secret_hash(&keys::hash_secret(token))
                .await?,
            KeyKind::Secret,
        )
    } else if let Some((user, sid)) = live_session(state, token).await? {
        // A session token as a bearer token: for scripts that signed in without cookies.
        return Ok(Principal::Session {
            user,
            sid,
            project: None,
        });
    } else {
        return Ok(invalid());
    };
    Ok(match project {
        Some(p) => Principal::Key {
            project: Arc::new(p),
            kind,
        },
        None => invalid(),
    })
}

fn principal(parts: &Parts) -> Principal {
    parts
        .extensions
        .get::<Principal>()
        .cloned()
        .unwrap_or(Principal::Anonymous)
}

fn missing_auth() -> ApiError {
    ApiError::unauthorized("MISSING_AUTH", "Authentication required").with_suggestion(
        "Send Authorization: Bearer <secret key>, or sign in and send X-Project-Id",
    )
}

/// The project of a dashboard or secret-key request.
#[derive(Clone, Debug)]
pub struct ProjectAuth {
    pub project: Arc<Project>,
    /// `None` for a secret key (full access to its project).
    pub user: Option<(Uuid, Role)>,
}

impl ProjectAuth {
    pub fn id(&self) -> Uuid {
        self.project.id
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ProjectAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match principal(parts) {
            Principal::Key {
                project,
                kind: KeyKind::Secret,
            } => Ok(ProjectAuth {
                project,
                user: None,
            }),
            Principal::Key { .. } => Err(ApiError::unauthorized(
                "INVALID_API_KEY",
                "A public key can only be used on POST /v1/track",
            )
            .with_suggestion("Use the project's secret key (sk_...) on the server")),
            Principal::Session {
                user,
                project: Some((project, role)),
                ..
            } => Ok(ProjectAuth {
                project,
                user: Some((user, role)),
            }),
            Principal::Session { project: None, .. } => Err(ApiError::bad_request(
                "Header X-Project-Id is required with a session",
            )),
            Principal::SessionWithoutProject { error, .. } | Principal::Invalid(error) => {
                Err(error)
            }
            Principal::Anonymous => Err(missing_auth()),
        }
    }
}

/// A project caller ([`ProjectAuth`]), or a signed-in user without `X-Project-Id` who names the
/// project in the path or body instead (the domain endpoints: `POST /domains {projectId}`,
/// `GET /domains/project/:projectId`).
#[derive(Clone, Debug)]
pub enum ProjectOrUser {
    Project(ProjectAuth),
    User(Uuid),
}

impl<S: Send + Sync> FromRequestParts<S> for ProjectOrUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        match principal(parts) {
            Principal::Session {
                user,
                project: None,
                ..
            } => Ok(ProjectOrUser::User(user)),
            _ => ProjectAuth::from_request_parts(parts, s)
                .await
                .map(ProjectOrUser::Project),
        }
    }
}

impl ProjectOrUser {
    /// The caller's access to `project_id`: a key reaches its own project only, a user every
    /// project they are a member of. `None` when there is no access.
    pub async fn access(
        &self,
        state: &AppState,
        project_id: Uuid,
    ) -> Result<Option<ProjectAuth>, ApiError> {
        let user = match self {
            ProjectOrUser::Project(p) if p.id() == project_id => return Ok(Some(p.clone())),
            ProjectOrUser::Project(ProjectAuth { user: None, .. }) => return Ok(None),
            ProjectOrUser::Project(ProjectAuth {
                user: Some((user, _)),
                ..
            })
            | ProjectOrUser::User(user) => *user,
        };
        let Some(role) = state.store.member_role(project_id, user).await? else {
            return Ok(None);
        };
        Ok(state
            .store
            .project_by_id(project_id)
            .await?
            .map(|project| ProjectAuth {
                project: Arc::new(project),
                user: Some((user, role)),
            }))
    }
}

/// Any key of a project (public or secret), or a session with a project: `/v1/track`.
#[derive(Clone, Debug)]
pub struct TrackAuth {
    pub project: Arc<Project>,
}

impl<S: Send + Sync> FromRequestParts<S> for TrackAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, ApiError> {
        if let Principal::Key { project, .. } = principal(parts) {
            return Ok(TrackAuth { project });
        }
        ProjectAuth::from_request_parts(parts, s)
            .await
            .map(|p| TrackAuth { project: p.project })
    }
}

/// A signed-in user (account endpoints).
#[derive(Clone, Debug)]
pub struct UserAuth {
    pub user: Uuid,
    /// The caller's server-side session.
    pub sid: String,
}

impl<S: Send + Sync> FromRequestParts<S> for UserAuth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match principal(parts) {
            // Account routes ignore X-Project-Id, even one naming a project the user left.
            Principal::Session { user, sid, .. } => Ok(UserAuth { user, sid }),
            Principal::SessionWithoutProject { user, sid, .. } => Ok(UserAuth { user, sid }),
            Principal::Invalid(e) => Err(e),
            Principal::Key { .. } => Err(ApiError::unauthorized(
                "INVALID_API_KEY",
                "Account endpoints need a signed-in user, not an API key",
            )
            .with_suggestion("Sign in with POST /auth/login and send the session cookie")),
            Principal::Anonymous => Err(ApiError::unauthorized("UNAUTHORIZED", "Sign in first")
                .with_suggestion("POST /auth/login sets the session cookie")),
        }
    }
}

/// The caller's session, if the request carries a live one (logout needs no sign-in).
#[derive(Clone, Debug)]
pub struct MaybeSession(Option<(Uuid, String)>);

impl MaybeSession {
    pub fn sid(&self) -> Option<&str> {
        self.0.as_ref().map(|(_, s)| s.as_str())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for MaybeSession {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Ok(MaybeSession(match principal(parts) {
            Principal::Session { user, sid, .. }
            | Principal::SessionWithoutProject { user, sid, .. } => Some((user, sid)),
            _ => None,
        }))
    }
}
