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
use herald_core::campaign::{AudienceType, CampaignStatus, test_subject};
use herald_core::email::EmailAddress;
use herald_core::fields::DataPatch;
use herald_core::ids::Uuid;
use herald_core::kinds::TemplateType;
use herald_core::time::parse_iso;
use herald_engine::campaigns::CampaignSendError;
use herald_engine::send::{Merged, Recipient, SendPlan};
use herald_store::audience::{Audience, member_of};
use herald_store::campaigns::{Campaign, Outcome};
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, parse_json, path_id};
use crate::query::{PageParams, Query, text};
use crate::routes::analytics::CampaignStatsResponse;
use crate::routes::segments::count_tree;
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
    campaign_of(state, auth.id(), raw).await
}

/// The project's campaign `raw` (an id as a path gives it); 404 when unknown or another
/// project's.
pub async fn campaign_of(state: &AppState, project_id: Uuid, raw: &str) -> ApiResult<Campaign> {
    let id = campaign_id(raw)?;
    state
        .store
        .campaign(project_id, id)
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
async fn require_sender(state: &AppState, project_id: Uuid, from: &str) -> ApiResult<()> {
    let from = EmailAddress::parse(from)
        .map_err(|_| ApiError::field("from", "from is not a valid address", "invalid_email"))?;
    state
        .engine
        .require_verified_sender(project_id, &from)
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
    let list = campaign_list(&state, auth.id(), status, paging.page(), paging.limit.get()).await?;
    Ok(Json(list))
}

/// The project's campaigns with `status` (all when `None`), newest first, page `page` (from 1)
/// of `page_size`.
pub async fn campaign_list(
    state: &AppState,
    project_id: Uuid,
    status: Option<CampaignStatus>,
    page: u32,
    page_size: u32,
) -> ApiResult<CampaignList> {
    let offset = u64::from(page.max(1) - 1) * u64::from(page_size);
    let found = state
        .store
        .list_campaigns(project_id, status, page_size, offset)
        .await?;
    let size = i64::from(page_size.max(1));
    Ok(CampaignList {
        campaigns: found.campaigns.into_iter().map(Into::into).collect(),
        page,
        page_size,
        total: found.total,
        total_pages: (found.total + size - 1) / size,
    })
}

/// Creates a DRAFT campaign.
#[utoipa::path(post, path = "/campaigns", tag = "campaigns", request_body = CampaignRequest,
    responses((status = 201, body = CampaignEnvelope), (status = 403), (status = 422)))]
async fn create_campaign(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<CampaignRequest>,
) -> ApiResult<(StatusCode, Json<CampaignEnvelope>)> {
    let c = create(&state, auth.id(), body).await?;
    Ok((StatusCode::CREATED, Json(c.into())))
}

/// Creates a DRAFT campaign from a request (the rules of `POST /campaigns`: every field
/// problem in one 422, then the sender's verified domain, 403).
pub async fn create(
    state: &AppState,
    project_id: Uuid,
    body: CampaignRequest,
) -> ApiResult<Campaign> {
    let content = rules::check(&state.store, project_id, body).await?;
    require_sender(state, project_id, &content.from_email).await?;
    Ok(state
        .store
        .create_campaign(project_id, &content, state.engine.now())
        .await?)
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
    Ok(Json(
        replace(&state, auth.id(), &current, body).await?.into(),
    ))
}

/// Replaces a DRAFT or SCHEDULED campaign with a request (the rules of `PUT /campaigns/:id`).
pub async fn replace(
    state: &AppState,
    project_id: Uuid,
    current: &Campaign,
    body: CampaignRequest,
) -> ApiResult<Campaign> {
    if !current.status.is_editable() {
        return Err(refused("edited", current.status));
    }
    let content = rules::check(&state.store, project_id, body).await?;
    require_sender(state, project_id, &content.from_email).await?;
    let outcome = state
        .store
        .replace_campaign(project_id, current.id, &content, state.engine.now())
        .await?;
    settle(outcome, "edited")
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
    let sent = send(&state, auth.id(), id, req.scheduled_for.as_deref()).await?;
    Ok(Json(sent.into()))
}

/// Sends the campaign now, or schedules it at `scheduled_for` (ISO 8601; blank is now): the
/// rules of `POST /campaigns/:id/send` (status, a future time, the sender's verified domain,
/// the segment, the billing limit).
pub async fn send(
    state: &AppState,
    project_id: Uuid,
    id: Uuid,
    scheduled_for: Option<&str>,
) -> ApiResult<Campaign> {
    let at = match scheduled_for.filter(|s| !s.is_empty()) {
        None => None,
        Some(raw) => Some(parse_iso(raw).ok_or_else(|| {
            ApiError::field(
                "scheduledFor",
                "scheduledFor must be an ISO 8601 timestamp",
                "invalid_date",
            )
        })?),
    };
    Ok(state.engine.send_campaign(project_id, id, at).await?)
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
    Ok(Json(cancel(&state, auth.id(), id).await?.into()))
}

/// Cancels a SCHEDULED or SENDING campaign (409 otherwise).
pub async fn cancel(state: &AppState, project_id: Uuid, id: Uuid) -> ApiResult<Campaign> {
    let outcome = state
        .store
        .cancel_campaign(project_id, id, state.engine.now())
        .await?;
    settle(outcome, "cancelled")
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
    let data = test_send(&state, auth.id(), &c, body.email.as_deref().unwrap_or("")).await?;
    Ok(Json(TestResponse {
        success: true,
        data,
    }))
}

/// Sends the campaign's message once to `email`, subject marked "[Test]" (the rules of
/// `POST /campaigns/:id/test`).
pub async fn test_send(
    state: &AppState,
    project_id: Uuid,
    c: &Campaign,
    email: &str,
) -> ApiResult<TestSent> {
    if email.trim().is_empty() {
        return Err(ApiError::field("email", "email is required", "required"));
    }
    let to = herald_core::rules::address(email)
        .map_err(|v| ApiError::field("email", v.message, v.code))?;
    let from = EmailAddress::parse(&c.content.from_email)
        .map_err(|_| ApiError::field("from", "from is not a valid address", "invalid_email"))?;
    require_sender(state, project_id, &c.content.from_email).await?;
    let plan = SendPlan {
        project_id,
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
    Ok(TestSent {
        message_id: first.message_id.to_string(),
        email: first.email,
    })
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
    Ok(Json(stats(&state, auth.id(), &c).await?))
}

/// The campaign's recipients and the messages that reached each stage, with rates.
pub async fn stats(
    state: &AppState,
    project_id: Uuid,
    c: &Campaign,
) -> ApiResult<CampaignStatsResponse> {
    let counts = state.store.campaign_counts(project_id, c.id).await?;
    Ok(CampaignStatsResponse::new(c.id, &counts))
}

/// How many contacts an audience reaches now, as a send would count it (subscribed contacts
/// only): every contact (`ALL`), a segment's members (`SEGMENT`, the segment checked as create
/// checks it), or a tree (`FILTERED`, checked as create checks `audienceFilter`). The
/// dashboard's live recipient count.
pub async fn recipient_count(
    state: &AppState,
    project_id: Uuid,
    req: &CampaignRequest,
) -> ApiResult<i64> {
    let raw = req
        .audience_type
        .as_deref()
        .or(req.type_alias.as_deref())
        .unwrap_or("");
    let filter = match AudienceType::parse(raw) {
        Some(AudienceType::All) => None,
        Some(AudienceType::Segment) => {
            match rules::segment(&state.store, project_id, req.segment_id.as_deref()).await? {
                Ok(id) => Some(member_of(id)),
                Err(e) => return Err(ApiError::validation(vec![e])),
            }
        }
        Some(AudienceType::Filtered) => {
            let tree = req.audience_filter.clone().unwrap_or(Value::Null);
            return count_tree(state, project_id, "audienceFilter", &tree, None, true).await;
        }
        None => {
            return Err(ApiError::field(
                "audienceType",
                format!("audienceType must be {}", AudienceType::EXPECTED),
                "invalid_value",
            ));
        }
    };
    let n = state
        .store
        .count_matching(
            project_id,
            Audience::new(filter.as_ref(), true),
            state.engine.now(),
        )
        .await?;
    Ok(i64::try_from(n).unwrap_or(i64::MAX))
}
