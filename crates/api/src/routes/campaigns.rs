//! The Campaigns resource (SPEC.md "Campaign", "Campaigns"; DECISIONS.md "Campaigns"): CRUD,
//! duplicate, send now or scheduled, cancel, a test send to one address, and statistics.
//!
//! Create, duplicate and the actions (send, cancel, test) answer wrapped as
//! `{success: true, data}`; get, list, replace and stats answer the resource directly.
//! The sender must be on a verified domain of the project: checked on create, replace and
//! again on send (a domain can lose its verification). Sending itself happens in the
//! background (engine `campaigns`): the fan-out queues one message per subscribed recipient
//! through the send path.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use herald_core::campaign::{CampaignStatus, test_subject};
use herald_core::email::EmailAddress;
use herald_core::fields::DataPatch;
use herald_core::ids::Uuid;
use herald_core::kinds::TemplateType;
use herald_core::time::parse_iso;
use herald_engine::campaigns::CampaignSendError;
use herald_engine::send::{Merged, Recipient, SendPlan};
use herald_store::campaigns::{Campaign, Outcome};
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, parse_json, path_id};
use crate::query::{PageParams, Query, text};
use crate::routes::analytics::CampaignStatsResponse;
use crate::routes::templates::rules::copy_name;
use crate::state::AppState;

mod rules;
mod wire;

pub use wire::{
    CampaignEnvelope, CampaignList, CampaignRequest, CampaignResponse, CampaignSendRequest,
    CampaignSummary, CampaignTestRequest, TestResponse, TestSent,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_campaigns, create_campaign))
        .routes(routes!(get_campaign, replace_campaign, delete_campaign))
        .routes(routes!(duplicate_campaign))
        .routes(routes!(send_campaign))
        .routes(routes!(cancel_campaign))
        .routes(routes!(test_campaign))
        .routes(routes!(campaign_statistics))
}

fn not_found() -> ApiError {
    ApiError::not_found("CAMPAIGN_NOT_FOUND", "Campaign")
}

fn campaign_id(raw: &str) -> ApiResult<Uuid> {
    path_id(raw, "CAMPAIGN_NOT_FOUND", "Campaign")
}

async fn load(state: &AppState, auth: &ProjectAuth, raw: &str) -> ApiResult<Campaign> {
    let id = campaign_id(raw)?;
    state
        .store
        .campaign(auth.id(), id)
        .await?
        .ok_or_else(not_found)
}

/// A move the campaign's status does not allow: 409 naming the status.
fn refused(action: &str, status: CampaignStatus) -> ApiError {
    ApiError::conflict(format!("a {status} campaign cannot be {action}"))
}

/// The outcome of a status-dependent move, as an answer.
fn settle<T>(outcome: Outcome<T>, action: &str) -> ApiResult<T> {
    match outcome {
        Outcome::Done(v) => Ok(v),
        Outcome::NotFound => Err(not_found()),
        Outcome::Refused(status) => Err(refused(action, status)),
    }
}

/// Refuses a sender that is not on a verified domain of the project (403).
async fn require_sender(state: &AppState, auth: &ProjectAuth, from: &str) -> ApiResult<()> {
    let from = EmailAddress::parse(from)
        .map_err(|_| ApiError::field("from", "from is not a valid address", "invalid_email"))?;
    state
        .engine
        .require_verified_sender(auth.id(), &from)
        .await?;
    Ok(())
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct CampaignListQuery {
    /// DRAFT, SCHEDULED, SENDING, SENT or CANCELLED
    status: Option<String>,
}

/// Campaigns, newest first, by page.
#[utoipa::path(get, path = "/campaigns", tag = "campaigns", params(PageParams, CampaignListQuery),
    responses((status = 200, body = CampaignList), (status = 422)))]
async fn list_campaigns(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(paging): Query<PageParams>,
    Query(q): Query<CampaignListQuery>,
) -> ApiResult<Json<CampaignList>> {
    let page_size = paging.limit.get();
    let page = paging.page();
    let status = match text(&q.status) {
        None => None,
        Some(s) => Some(CampaignStatus::parse(s).ok_or_else(|| {
            ApiError::field(
                "status",
                format!("status must be {}", CampaignStatus::EXPECTED),
                "invalid_value",
            )
        })?),
    };
    let offset = u64::from(page - 1) * u64::from(page_size);
    let found = state
        .store
        .list_campaigns(auth.id(), status, page_size, offset)
        .await?;
    let size = i64::from(page_size);
    Ok(Json(CampaignList {
        campaigns: found.campaigns.into_iter().map(Into::into).collect(),
        page,
        page_size,
        total: found.total,
        total_pages: (found.total + size - 1) / size,
    }))
}

/// Creates a DRAFT campaign.
#[utoipa::path(post, path = "/campaigns", tag = "campaigns", request_body = CampaignRequest,
    responses((status = 201, body = CampaignEnvelope), (status = 403), (status = 422)))]
async fn create_campaign(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<CampaignRequest>,
) -> ApiResult<(StatusCode, Json<CampaignEnvelope>)> {
    let content = rules::check(&state.store, auth.id(), body).await?;
    require_sender(&state, &auth, &content.from_email).await?;
    let c = state
        .store
        .create_campaign(auth.id(), &content, state.engine.now())
        .await?;
    Ok((StatusCode::CREATED, Json(c.into())))
}

/// One campaign, with its progress while sending.
#[utoipa::path(get, path = "/campaigns/{id}", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = CampaignResponse), (status = 404)))]
async fn get_campaign(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<CampaignResponse>> {
    Ok(Json(load(&state, &auth, &id).await?.into()))
}

/// Replaces a DRAFT or SCHEDULED campaign (409 otherwise), with the rules of create.
#[utoipa::path(put, path = "/campaigns/{id}", tag = "campaigns", params(("id" = String, Path)),
    request_body = CampaignRequest,
    responses((status = 200, body = CampaignResponse), (status = 403), (status = 404), (status = 409), (status = 422)))]
async fn replace_campaign(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CampaignRequest>,
) -> ApiResult<Json<CampaignResponse>> {
    let current = load(&state, &auth, &id).await?;
    if !current.status.is_editable() {
        return Err(refused("edited", current.status));
    }
    let content = rules::check(&state.store, auth.id(), body).await?;
    require_sender(&state, &auth, &content.from_email).await?;
    let outcome = state
        .store
        .replace_campaign(auth.id(), current.id, &content, state.engine.now())
        .await?;
    Ok(Json(settle(outcome, "edited")?.into()))
}

/// Deletes a campaign that is not SCHEDULED or SENDING (409 then).
#[utoipa::path(delete, path = "/campaigns/{id}", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200), (status = 404), (status = 409)))]
async fn delete_campaign(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let id = campaign_id(&id)?;
    let outcome = state.store.delete_campaign(auth.id(), id).await?;
    settle(outcome, "deleted while it is active; cancel it first")?;
    Ok(Json(json!({"success": true})))
}

/// A DRAFT copy named "<name> (copy)".
#[utoipa::path(post, path = "/campaigns/{id}/duplicate", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 201, body = CampaignEnvelope), (status = 404)))]
async fn duplicate_campaign(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<CampaignEnvelope>)> {
    let id = campaign_id(&id)?;
    let copy = state
        .store
        .duplicate_campaign(auth.id(), id, copy_name, state.engine.now())
        .await?
        .ok_or_else(not_found)?;
    Ok((StatusCode::CREATED, Json(copy.into())))
}

/// Sends now (SENDING), or at `scheduledFor` (SCHEDULED; a past time is 422). A SCHEDULED
/// campaign may be sent again to send now or move its time.
#[utoipa::path(post, path = "/campaigns/{id}/send", tag = "campaigns", params(("id" = String, Path)),
    request_body(content = Option<CampaignSendRequest>),
    responses((status = 200, body = CampaignEnvelope), (status = 402), (status = 403), (status = 404), (status = 409), (status = 422)))]
async fn send_campaign(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<CampaignEnvelope>> {
    let id = campaign_id(&id)?;
    let req: CampaignSendRequest = if body.iter().all(u8::is_ascii_whitespace) {
        CampaignSendRequest::default()
    } else {
        parse_json(&body)?
    };
    let at = match req.scheduled_for.as_deref().filter(|s| !s.is_empty()) {
        None => None,
        Some(raw) => Some(parse_iso(raw).ok_or_else(|| {
            ApiError::field(
                "scheduledFor",
                "scheduledFor must be an ISO 8601 timestamp",
                "invalid_date",
            )
        })?),
    };
    let sent = state.engine.send_campaign(auth.id(), id, at).await?;
    Ok(Json(sent.into()))
}

impl From<CampaignSendError> for ApiError {
    fn from(e: CampaignSendError) -> Self {
        let message = e.to_string();
        match e {
            CampaignSendError::NotFound => not_found(),
            CampaignSendError::Refused(status) => refused("sent", status),
            CampaignSendError::InThePast => ApiError::field("scheduledFor", message, "in_the_past"),
            CampaignSendError::InvalidSender => {
                ApiError::field("from", "from is not a valid address", "invalid_email")
            }
            CampaignSendError::Sender(e) => e.into(),
            CampaignSendError::SegmentDeleted => {
                ApiError::field("segmentId", message, "segment_not_found")
            }
            CampaignSendError::OverLimit { .. } => ApiError::new(
                StatusCode::PAYMENT_REQUIRED,
                "BILLING_LIMIT_EXCEEDED",
                message,
            )
            .with_suggestion("Raise the limit: PUT /users/@me/projects/{id}/billing-limits"),
            CampaignSendError::Store(e) => e.into(),
        }
    }
}

/// Cancels a SCHEDULED or SENDING campaign: nothing more is queued, and messages not yet
/// handed to the relay are not sent.
#[utoipa::path(post, path = "/campaigns/{id}/cancel", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = CampaignEnvelope), (status = 404), (status = 409)))]
async fn cancel_campaign(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<CampaignEnvelope>> {
    let id = campaign_id(&id)?;
    let outcome = state
        .store
        .cancel_campaign(auth.id(), id, state.engine.now())
        .await?;
    Ok(Json(settle(outcome, "cancelled")?.into()))
}

/// Sends the campaign's message once to `email`, subject marked "[Test]", whatever the
/// campaign's status. The address is upserted as a contact like any `/v1/send` recipient
/// (a new one is not subscribed, so it never joins an audience by this).
#[utoipa::path(post, path = "/campaigns/{id}/test", tag = "campaigns", params(("id" = String, Path)),
    request_body = CampaignTestRequest,
    responses((status = 200, body = TestResponse), (status = 403), (status = 404), (status = 422)))]
async fn test_campaign(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CampaignTestRequest>,
) -> ApiResult<Json<TestResponse>> {
    let c = load(&state, &auth, &id).await?;
    let raw = body
        .email
        .filter(|e| !e.trim().is_empty())
        .ok_or_else(|| ApiError::field("email", "email is required", "required"))?;
    let to = herald_core::rules::address(&raw)
        .map_err(|v| ApiError::field("email", v.message, v.code))?;
    let from = EmailAddress::parse(&c.content.from_email)
        .map_err(|_| ApiError::field("from", "from is not a valid address", "invalid_email"))?;
    require_sender(&state, &auth, &c.content.from_email).await?;
    let plan = SendPlan {
        project_id: auth.id(),
        recipients: vec![Recipient {
            email: to,
            name: None,
        }],
        message: Merged {
            subject: test_subject(&c.content.subject),
            body: c.content.body.clone(),
            from,
            from_name: c.content.from_name.clone(),
            reply_to: c.content.reply_to.clone(),
            template_id: None,
            template_type: Some(TemplateType::Marketing),
        },
        subscribed: None,
        data: DataPatch::default(),
        headers: Vec::new(),
        attachments: Vec::new(),
        idempotency_key: None,
        ignore_subscription: true,
    };
    let accepted = state
        .engine
        .accept_send(&plan)
        .await
        .map_err(crate::routes::send::accept_error)?;
    let first = crate::routes::send::only_recipient(accepted)?;
    Ok(Json(TestResponse {
        success: true,
        data: TestSent {
            message_id: first.message_id.to_string(),
            email: first.email,
        },
    }))
}

/// Recipients and how many messages reached each stage, with rates (fractions of `sent`).
#[utoipa::path(get, path = "/campaigns/{id}/stats", tag = "campaigns", params(("id" = String, Path)),
    responses((status = 200, body = CampaignStatsResponse), (status = 404)))]
async fn campaign_statistics(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<CampaignStatsResponse>> {
    let c = load(&state, &auth, &id).await?;
    let counts = state.store.campaign_counts(auth.id(), c.id).await?;
    Ok(Json(CampaignStatsResponse::new(c.id, &counts)))
}
