//! The Templates resource: create, page-numbered list (type filter, search), get, patch,
//! delete, duplicate and usage; the service functions the dashboard calls too (`template_list`,
//! `create`, `template`, `change`, `usage`, `test_send::send_test`).
//!
//! A template's `from` must be on a verified domain of the project: checked on create and
//! whenever a PATCH gives a new `from` (a send checks again, since a domain can lose its
//! verification later). Every field problem of a request is reported in one 422.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use herald_core::email::EmailAddress;
use herald_core::ids::Uuid;

use herald_store::StoreError;
use herald_store::templates::{NewTemplate, TemplateFilter, TemplateUpdate};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, path_id};
use crate::query::{Limit, PageParams, Query, text};
use crate::state::AppState;

pub(crate) mod rules;
pub mod test_send;
mod wire;

use rules::{Checked, check, parse_type};
pub use wire::{TemplateList, TemplateRequest, TemplateResponse, TemplateUsage, TemplateUsageRef};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_templates, create_template))
        .routes(routes!(get_template, patch_template, delete_template))
        .routes(routes!(duplicate_template))
        .routes(routes!(template_usage))
}

/// Refuses a new `from` that is not on a verified domain of the project (403).
async fn require_sender(state: &AppState, project: Uuid, checked: &Checked) -> ApiResult<()> {
    if let Some(Some(from)) = &checked.from {
        state.engine.require_verified_sender(project, from).await?;
    }
    Ok(())
}

/// A template id from a path, or 404 `TEMPLATE_NOT_FOUND`.
pub fn template_id(raw: &str) -> ApiResult<Uuid> {
    path_id(raw, "TEMPLATE_NOT_FOUND", "Template")
}

fn template_not_found() -> ApiError {
    ApiError::not_found("TEMPLATE_NOT_FOUND", "Template")
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct TemplateListQuery {
    /// alias of `limit`
    #[serde(default)]
    #[param(inline)]
    page_size: Limit,
    /// TRANSACTIONAL, MARKETING or HEADLESS
    r#type: Option<String>,
    /// case-insensitive substring of name or subject
    search: Option<String>,
}

/// Templates, newest first, by page.
#[utoipa::path(get, path = "/templates", tag = "templates", params(PageParams, TemplateListQuery),
    responses((status = 200, body = TemplateList), (status = 422)))]
async fn list_templates(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(paging): Query<PageParams>,
    Query(q): Query<TemplateListQuery>,
) -> ApiResult<Json<TemplateList>> {
    let page_size = paging.limit.or_alias(q.page_size);
    let list = template_list(
        &state,
        auth.id(),
        paging.page(),
        page_size,
        text(&q.r#type),
        q.search.as_deref(),
    )
    .await?;
    Ok(Json(list))
}

/// Page `page` of the project's templates, newest first (`GET /templates` and the dashboard):
/// `template_type` as the API takes it, `search` a substring of name or subject.
pub async fn template_list(
    state: &AppState,
    project: Uuid,
    page: u32,
    page_size: u32,
    template_type: Option<&str>,
    search: Option<&str>,
) -> ApiResult<TemplateList> {
    let template_type = match template_type {
        Some(t) => Some(parse_type(t).map_err(|e| ApiError::validation(vec![e]))?),
        None => None,
    };
    let search = search.map(str::trim).filter(|s| !s.is_empty());
    if search.is_some_and(|s| s.chars().count() > rules::SUBJECT_MAX) {
        return Err(ApiError::field(
            "search",
            "search is at most 998 characters",
            "too_long",
        ));
    }
    let filter = TemplateFilter {
        template_type,
        search,
    };
    let offset = u64::from(page - 1) * u64::from(page_size);
    let found = state
        .store
        .list_templates(project, &filter, page_size, offset)
        .await?;
    let size = i64::from(page_size);
    Ok(TemplateList {
        templates: found
            .templates
            .into_iter()
            .map(TemplateResponse::from)
            .collect(),
        total: found.total,
        page,
        page_size,
        total_pages: (found.total + size - 1) / size,
    })
}

/// Creates a template; `from`, when given, must be on a verified domain of the project.
#[utoipa::path(post, path = "/templates", tag = "templates", request_body = TemplateRequest,
    responses((status = 201, body = TemplateResponse), (status = 403), (status = 422)))]
async fn create_template(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<TemplateRequest>,
) -> ApiResult<(StatusCode, Json<TemplateResponse>)> {
    let t = create(&state, auth.id(), body).await?;
    Ok((StatusCode::CREATED, Json(t)))
}

/// Creates a template by the rules of `POST /templates` (the API and the dashboard).
pub async fn create(
    state: &AppState,
    project: Uuid,
    body: TemplateRequest,
) -> ApiResult<TemplateResponse> {
    let checked = check(body, true)?;
    let (Some(name), Some(subject), Some(body), Some(template_type)) = (
        &checked.name,
        &checked.subject,
        &checked.body,
        checked.template_type,
    ) else {
        return Err(ApiError::internal(
            "a checked create lacks a required field",
        ));
    };
    require_sender(state, project, &checked).await?;
    let t = state
        .store
        .create_template(&NewTemplate {
            project_id: project,
            name,
            subject,
            body,
            template_type,
            from_email: checked
                .from
                .as_ref()
                .and_then(|f| f.as_ref())
                .map(EmailAddress::as_str),
            from_name: checked.from_name.as_ref().and_then(|f| f.as_deref()),
            reply_to: checked
                .reply_to
                .as_ref()
                .and_then(|f| f.as_ref())
                .map(EmailAddress::as_str),
            now: state.engine.now(),
        })
        .await?;
    Ok(t.into())
}

/// One template of the project, or 404 `TEMPLATE_NOT_FOUND`.
pub async fn template(state: &AppState, project: Uuid, id: Uuid) -> ApiResult<TemplateResponse> {
    let t = state
        .store
        .template(project, id)
        .await?
        .ok_or_else(template_not_found)?;
    Ok(t.into())
}

/// One template.
#[utoipa::path(get, path = "/templates/{id}", tag = "templates", params(("id" = String, Path)),
    responses((status = 200, body = TemplateResponse), (status = 404)))]
async fn get_template(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<TemplateResponse>> {
    let id = template_id(&id)?;
    Ok(Json(template(&state, auth.id(), id).await?))
}

/// Changes the fields given, with the rules of create; a new `from` is checked again.
#[utoipa::path(patch, path = "/templates/{id}", tag = "templates", params(("id" = String, Path)),
    request_body = TemplateRequest,
    responses((status = 200, body = TemplateResponse), (status = 403), (status = 404), (status = 422)))]
async fn patch_template(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<TemplateRequest>,
) -> ApiResult<Json<TemplateResponse>> {
    let id = template_id(&id)?;
    Ok(Json(change(&state, auth.id(), id, body).await?))
}

/// Changes the fields given by the rules of `PATCH /templates/{id}` (the API and the dashboard).
pub async fn change(
    state: &AppState,
    project: Uuid,
    id: Uuid,
    body: TemplateRequest,
) -> ApiResult<TemplateResponse> {
    let checked = check(body, false)?;
    require_sender(state, project, &checked).await?;
    let change = TemplateUpdate {
        name: checked.name.as_deref(),
        subject: checked.subject.as_deref(),
        body: checked.body.as_deref(),
        template_type: checked.template_type,
        from_email: checked
            .from
            .as_ref()
            .map(|f| f.as_ref().map(EmailAddress::as_str)),
        from_name: checked.from_name.as_ref().map(|f| f.as_deref()),
        reply_to: checked
            .reply_to
            .as_ref()
            .map(|f| f.as_ref().map(EmailAddress::as_str)),
        now: state.engine.now(),
    };
    match state.store.update_template(project, id, &change).await {
        Ok(t) => Ok(t.into()),
        Err(StoreError::NotFound) => Err(template_not_found()),
        Err(e) => Err(e.into()),
    }
}

/// Deletes a template.
#[utoipa::path(delete, path = "/templates/{id}", tag = "templates", params(("id" = String, Path)),
    responses((status = 204), (status = 404), (status = 409)))]
async fn delete_template(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = template_id(&id)?;
    let used = state.store.template_workflow_steps(auth.id(), id).await?;
    if let Some((_, workflow, _)) = used.first() {
        return Err(ApiError::conflict(format!(
            "the template is sent by {} workflow step(s) (first in workflow \"{workflow}\"); \
             change or delete those steps first (GET /templates/{id}/usage)",
            used.len()
        )));
    }
    if state.store.delete_template(auth.id(), id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(template_not_found())
    }
}

/// Copies a template as "<name> (copy)" and returns the new template, `id` included.
#[utoipa::path(post, path = "/templates/{id}/duplicate", tag = "templates", params(("id" = String, Path)),
    responses((status = 201, body = TemplateResponse), (status = 404)))]
async fn duplicate_template(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<TemplateResponse>)> {
    let id = template_id(&id)?;
    let copy = state
        .store
        .duplicate_template(auth.id(), id, rules::copy_name, state.engine.now())
        .await?
        .ok_or_else(template_not_found)?;
    Ok((StatusCode::CREATED, Json(copy.into())))
}

/// Campaigns and workflow steps that send the template. Campaigns carry their own subject and
/// body (they name no template), so that list is always empty; `workflowSteps` lists the
/// SEND_EMAIL steps (`id` the step, `name` its workflow's name).
#[utoipa::path(get, path = "/templates/{id}/usage", tag = "templates", params(("id" = String, Path)),
    responses((status = 200, body = TemplateUsage), (status = 404)))]
async fn template_usage(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<TemplateUsage>> {
    let id = template_id(&id)?;
    Ok(Json(usage(&state, auth.id(), id).await?))
}

/// Where template `id` is used (`GET /templates/{id}/usage` and the dashboard).
pub async fn usage(state: &AppState, project: Uuid, id: Uuid) -> ApiResult<TemplateUsage> {
    state
        .store
        .template(project, id)
        .await?
        .ok_or_else(template_not_found)?;
    let steps = state.store.template_workflow_steps(project, id).await?;
    Ok(TemplateUsage {
        campaigns: Vec::new(),
        workflow_steps: steps
            .into_iter()
            .map(|(workflow_id, name, step_id)| TemplateUsageRef {
                id: step_id.to_string(),
                name,
                workflow_id: Some(workflow_id.to_string()),
            })
            .collect(),
    })
}
