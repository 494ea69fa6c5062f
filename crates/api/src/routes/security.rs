//! `GET /projects/{id}/security` and `GET /users/@me/projects/{id}/security` (any member): the
//! project's bounce and complaint rates over the last 7 days and all time, with the warning
//! and critical thresholds of the configuration and the level of the 7-day rates
//! (`herald_core::security`), and whether the project is disabled and why.

use axum::Json;
use axum::extract::{Path, State};
use herald_core::security::{Level, level, rate};
use herald_store::security::DeliveryCounts;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::UserAuth;
use crate::error::ApiResult;
use crate::routes::members::project_access;
use crate::state::{AppState, SecurityThresholds};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(project_security))
        .routes(routes!(account_project_security))
        .routes(routes!(enable_project))
}

#[derive(Serialize, ToSchema)]
pub struct EnableResponse {
    /// False when the project was not disabled.
    pub enabled: bool,
}

/// Re-enables a project disabled for its bounce or complaint rate (owner only).
#[utoipa::path(post, path = "/users/@me/projects/{id}/enable", tag = "account", params(("id" = String, Path)),
    responses((status = 200, body = EnableResponse), (status = 403), (status = 404)))]
async fn enable_project(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<EnableResponse>> {
    let (project, role) = project_access(&state, auth.user, &id).await?;
    if role != herald_core::kinds::Role::Owner {
        return Err(crate::error::ApiError::forbidden(
            "FORBIDDEN",
            "Only an owner can re-enable the project",
        ));
    }
    let enabled = state
        .store
        .enable_project(project.id, state.engine.now())
        .await?;
    Ok(Json(EnableResponse { enabled }))
}

const WEEK_MS: i64 = 7 * 24 * 3600 * 1000;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rates {
    /// Messages handed to the relay (simulated ones excluded).
    pub sent: i64,
    pub bounced: i64,
    pub complained: i64,
    pub bounce_rate: f64,
    pub complaint_rate: f64,
}

impl From<DeliveryCounts> for Rates {
    fn from(c: DeliveryCounts) -> Self {
        Self {
            sent: c.sent,
            bounced: c.bounced,
            complained: c.complained,
            bounce_rate: rate(c.bounced, c.sent),
            complaint_rate: rate(c.complained, c.sent),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityResponse {
    pub last_7_days: Rates,
    pub all_time: Rates,
    pub thresholds: SecurityThresholds,
    /// OK, WARNING or CRITICAL, for the 7-day bounce rate.
    #[schema(value_type = String)]
    pub bounce_level: Level,
    /// OK, WARNING or CRITICAL, for the 7-day complaint rate.
    #[schema(value_type = String)]
    pub complaint_level: Level,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
}

async fn report(state: &AppState, user: UserAuth, id: &str) -> ApiResult<Json<SecurityResponse>> {
    let (project, _) = project_access(state, user.user, id).await?;
    let now = state.engine.now();
    let week: Rates = state
        .store
        .delivery_counts(project.id, now - WEEK_MS)
        .await?
        .into();
    let all: Rates = state.store.delivery_counts(project.id, 0).await?.into();
    let t = state.settings.security;
    Ok(Json(SecurityResponse {
        bounce_level: level(week.bounce_rate, t.bounce_warning, t.bounce_critical),
        complaint_level: level(
            week.complaint_rate,
            t.complaint_warning,
            t.complaint_critical,
        ),
        last_7_days: week,
        all_time: all,
        thresholds: t,
        disabled: project.disabled,
        disabled_reason: project.disabled_reason.clone(),
    }))
}

/// Bounce and complaint rates of the project.
#[utoipa::path(get, path = "/projects/{id}/security", tag = "account", params(("id" = String, Path)),
    responses((status = 200, body = SecurityResponse), (status = 403), (status = 404)))]
async fn project_security(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<SecurityResponse>> {
    report(&state, auth, &id).await
}

/// Bounce and complaint rates of the project (account route).
#[utoipa::path(get, path = "/users/@me/projects/{id}/security", tag = "account", params(("id" = String, Path)),
    responses((status = 200, body = SecurityResponse), (status = 403), (status = 404)))]
async fn account_project_security(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<SecurityResponse>> {
    report(&state, auth, &id).await
}
