//! The Domains resource: add a sender domain (answers the DNS records to publish), list a
//! project's domains with each record's state, verify now, delete; and the 403
//! `DOMAIN_NOT_VERIFIED` answer of every endpoint that checks a `from` address.
//!
//! A caller reaches a project's domains with its secret key, or as a member with a session
//! (the project from `X-Project-Id`, the path, the body's `projectId`, or the domain itself).
//! Another project's domain is 404, never 403. Adding and deleting need an owner or admin.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use herald_core::ids::{Uuid, parse_id};
use herald_core::time::iso;
use herald_engine::domains::{DomainError, DomainView, RecordStatus, SenderDomainError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ProjectAuth, ProjectOrUser};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, path_id};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(add_domain, own_domains))
        .routes(routes!(list_domains))
        .routes(routes!(verify_domain))
        .routes(routes!(delete_domain))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordResponse {
    /// `dkim`, `spf`, `dmarc` or `returnPath`.
    pub purpose: &'static str,
    /// `TXT` or `MX`.
    #[serde(rename = "type")]
    pub record_type: &'static str,
    pub name: String,
    pub value: String,
    /// Whether verification depends on it (DMARC and the return-path MX are suggestions).
    pub required: bool,
    /// At the last check: `found`, `missing`, `wrongValue`, or `unchecked`.
    pub state: &'static str,
    /// What was published instead, for `wrongValue`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainResponse {
    pub id: String,
    pub project_id: String,
    pub domain: String,
    /// `PENDING` or `VERIFIED`.
    pub status: &'static str,
    pub verified: bool,
    /// The DKIM selector: the key record lives at `<selector>._domainkey.<domain>`.
    pub selector: String,
    pub records: Vec<RecordResponse>,
    pub last_checked_at: Option<String>,
    /// Why the domain is not verified, as of the last check.
    pub last_error: Option<String>,
    pub verified_at: Option<String>,
    /// Set for reserved test domains (.test, .example, .invalid, .localhost).
    pub note: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<DomainView> for DomainResponse {
    fn from(v: DomainView) -> Self {
        let d = v.domain;
        let records = v
            .records
            .into_iter()
            .map(|r| {
                let (state, found) = match r.state {
                    RecordStatus::Found => ("found", None),
                    RecordStatus::Missing => ("missing", None),
                    RecordStatus::WrongValue { found } => ("wrongValue", Some(found)),
                    RecordStatus::Unchecked => ("unchecked", None),
                };
                RecordResponse {
                    purpose: r.purpose,
                    record_type: r.record_type,
                    name: r.name,
                    value: r.value,
                    required: r.required,
                    state,
                    found,
                }
            })
            .collect();
        Self {
            id: d.id.to_string(),
            project_id: d.project_id.to_string(),
            status: if d.verified { "VERIFIED" } else { "PENDING" },
            verified: d.verified,
            domain: d.domain,
            selector: d.selector,
            records,
            last_checked_at: d.last_checked_at.map(iso),
            last_error: d.last_error,
            verified_at: d.verified_at.map(iso),
            note: v.note,
            created_at: iso(d.created_at),
            updated_at: iso(d.updated_at),
        }
    }
}

impl From<DomainError> for ApiError {
    fn from(e: DomainError) -> Self {
        let message = e.to_string();
        match e {
            DomainError::InvalidName(m) => ApiError::field("domain", m, "invalid_domain"),
            DomainError::ReservedNeedsOutbox { .. } => ApiError::field("domain", message, "reserved_domain")
                .with_suggestion("Use a domain you own, or run without HERALD_SMTP_URL (local outbox) to test"),
            DomainError::AlreadyAdded { .. } => ApiError::conflict(message),
            DomainError::VerifiedElsewhere { .. } => ApiError::conflict(message)
                .with_suggestion("A domain can be verified by one project only; remove it from the other project first"),
            DomainError::NotFound => domain_not_found(),
            DomainError::InUse { users, .. } => {
                let named = |list: &[(Uuid, String)]| -> Vec<serde_json::Value> {
                    list.iter()
                        .map(|(id, name)| serde_json::json!({"id": id.to_string(), "name": name}))
                        .collect()
                };
                let details = serde_json::json!({
                    "campaigns": named(&users.campaigns),
                    "workflows": named(&users.workflows),
                });
                ApiError::new(StatusCode::CONFLICT, "DOMAIN_IN_USE", message)
                    .with_details(details)
                    .with_suggestion("Cancel the campaigns (POST /campaigns/:id/cancel) or disable the workflows sending from this domain, then delete it")
            }
            DomainError::DnsTimeout => ApiError::new(StatusCode::GATEWAY_TIMEOUT, "DNS_TIMEOUT", message)
                .with_suggestion("Try again later; if it persists, check the resolver set in HERALD_DNS_RESOLVER"),
            DomainError::Dns(_) => ApiError::new(StatusCode::BAD_GATEWAY, "DNS_ERROR", message)
                .with_suggestion("Try again later; if it persists, check the resolver set in HERALD_DNS_RESOLVER"),
            DomainError::Store(e) => e.into(),
            DomainError::Other(e) => e.into(),
        }
    }
}

impl From<SenderDomainError> for ApiError {
    fn from(e: SenderDomainError) -> Self {
        match e {
            SenderDomainError::NotVerified { ref domain } => {
                let suggestion = format!(
                    "Add and verify {domain} with POST /domains (publish the DNS records it returns, then \
                     GET /domains/:id/verify), or send from a verified domain of this project"
                );
                ApiError::forbidden("DOMAIN_NOT_VERIFIED", e.to_string())
                    .with_suggestion(suggestion)
            }
            SenderDomainError::Store(e) => e.into(),
        }
    }
}

fn domain_not_found() -> ApiError {
    ApiError::not_found("DOMAIN_NOT_FOUND", "Domain")
}

/// Adding and deleting domains: owners and admins of an enabled project (a key may do all).
pub fn ensure_can_manage(auth: &ProjectAuth) -> ApiResult<()> {
    if auth.project.disabled {
        let reason = auth.project.disabled_reason.clone().unwrap_or_default();
        return Err(ApiError::forbidden(
            "PROJECT_DISABLED",
            format!("This project is disabled. {reason}"),
        ));
    }
    match &auth.user {
        Some((_, role)) if !role.can_manage() => Err(ApiError::forbidden(
            "FORBIDDEN",
            "Only an owner or admin of the project can manage its domains",
        )),
        _ => Ok(()),
    }
}

/// The project of a domain the caller may reach; 404 for anything else.
async fn domain_scope(
    state: &AppState,
    auth: &ProjectOrUser,
    raw_id: &str,
) -> ApiResult<(ProjectAuth, Uuid)> {
    let id = path_id(raw_id, "DOMAIN_NOT_FOUND", "Domain")?;
    if let ProjectOrUser::Project(p @ ProjectAuth { user: None, .. }) = auth {
        return Ok((p.clone(), id));
    }
    let project = state
        .store
        .domain_project(id)
        .await?
        .ok_or_else(domain_not_found)?;
    let scope = auth
        .access(state, project)
        .await?
        .ok_or_else(domain_not_found)?;
    Ok((scope, id))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddDomainRequest {
    /// A host name such as `mail.example.com` (lower-cased; a trailing dot is ignored).
    #[schema(format = Hostname, required = true)]
    pub domain: Option<String>,
    /// The project, when calling with a session and no `X-Project-Id`.
    pub project_id: Option<String>,
}

/// Adds a sender domain with a new RSA-2048 DKIM key and answers the DNS records to publish.
/// Reserved test domains are verified at once while the transport is the local outbox.
#[utoipa::path(post, path = "/domains", tag = "domains", request_body = AddDomainRequest,
    responses((status = 201, body = DomainResponse), (status = 403), (status = 409), (status = 422)))]
async fn add_domain(
    State(state): State<AppState>,
    auth: ProjectOrUser,
    ApiJson(body): ApiJson<AddDomainRequest>,
) -> ApiResult<(StatusCode, Json<DomainResponse>)> {
    let denied = || {
        ApiError::forbidden(
            "PROJECT_ACCESS_DENIED",
            "You are not a member of this project",
        )
    };
    let project = match (&auth, body.project_id.as_deref()) {
        (_, Some(raw)) => parse_id(raw).ok_or_else(denied)?,
        (ProjectOrUser::Project(p), None) => p.id(),
        (ProjectOrUser::User(_), None) => {
            return Err(ApiError::field(
                "projectId",
                "projectId (or the X-Project-Id header) is required",
                "required",
            ));
        }
    };
    let scope = auth.access(&state, project).await?.ok_or_else(denied)?;
    ensure_can_manage(&scope)?;
    let raw = body
        .domain
        .ok_or_else(|| ApiError::field("domain", "domain is required", "required"))?;
    let view = state.engine.add_domain(scope.id(), &raw).await?;
    Ok((StatusCode::CREATED, Json(view.into())))
}

/// The project's verified and pending domains, each record with its state at the last check.
#[utoipa::path(get, path = "/domains/project/{projectId}", tag = "domains", params(("projectId" = String, Path)),
    responses((status = 200, body = Vec<DomainResponse>), (status = 404)))]
async fn list_domains(
    State(state): State<AppState>,
    auth: ProjectOrUser,
    Path(project_id): Path<String>,
) -> ApiResult<Json<Vec<DomainResponse>>> {
    let not_found = || ApiError::not_found("NOT_FOUND", "Project");
    let project = parse_id(&project_id).ok_or_else(not_found)?;
    let scope = auth.access(&state, project).await?.ok_or_else(not_found)?;
    let views = state.engine.project_domains(scope.id()).await?;
    Ok(Json(views.into_iter().map(DomainResponse::from).collect()))
}

/// The domains of the caller's project (a secret key, or a session with `X-Project-Id`): the
/// same list as `GET /domains/project/{projectId}` without naming the project (the MCP tool
/// `list_domains` and the stdio bridge know only the key).
#[utoipa::path(get, path = "/domains", tag = "domains",
    responses((status = 200, body = Vec<DomainResponse>)))]
async fn own_domains(
    State(state): State<AppState>,
    auth: ProjectAuth,
) -> ApiResult<Json<Vec<DomainResponse>>> {
    let views = state.engine.project_domains(auth.id()).await?;
    Ok(Json(views.into_iter().map(DomainResponse::from).collect()))
}

/// Looks the domain's records up now and records the result. A resolver that does not answer
/// gives 504 `DNS_TIMEOUT` and changes nothing.
#[utoipa::path(get, path = "/domains/{id}/verify", tag = "domains", params(("id" = String, Path)),
    responses((status = 200, body = DomainResponse), (status = 404), (status = 502), (status = 504)))]
async fn verify_domain(
    State(state): State<AppState>,
    auth: ProjectOrUser,
    Path(id): Path<String>,
) -> ApiResult<Json<DomainResponse>> {
    let (scope, id) = domain_scope(&state, &auth, &id).await?;
    let view = state.engine.verify_domain(scope.id(), id).await?;
    Ok(Json(view.into()))
}

/// Removes a domain; 409 `DOMAIN_IN_USE` while a SCHEDULED or SENDING campaign, or an enabled
/// workflow's SEND_EMAIL step (through its template), sends from it, naming them.
#[utoipa::path(delete, path = "/domains/{id}", tag = "domains", params(("id" = String, Path)),
    responses((status = 204), (status = 404), (status = 409)))]
async fn delete_domain(
    State(state): State<AppState>,
    auth: ProjectOrUser,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let (scope, id) = domain_scope(&state, &auth, &id).await?;
    ensure_can_manage(&scope)?;
    state.engine.delete_domain(scope.id(), id).await?;
    Ok(StatusCode::NO_CONTENT)
}
