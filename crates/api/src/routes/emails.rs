//! Messages a project sent or tried to send: cursor list with filters, one message with its
//! status history, and (local outbox only) the exact bytes that would have gone out.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use herald_core::time::iso;
use herald_engine::send::RawError;
use herald_store::messages::{Message, MessageFilter, MessageStatus, MessageSummary};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::contacts::{decode_cursor, encode_cursor};
use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::path_id;
use crate::query::{Limit, Query, text};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_emails))
        .routes(routes!(get_email))
        .routes(routes!(raw_email))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmailSummary {
    pub id: String,
    pub to: String,
    pub from: String,
    pub subject: String,
    #[schema(value_type = String)]
    pub status: MessageStatus,
    pub source: String,
    pub contact_id: Option<String>,
    pub template_id: Option<String>,
    pub campaign_id: Option<String>,
    pub created_at: String,
    pub sent_at: Option<String>,
}

impl From<MessageSummary> for EmailSummary {
    fn from(m: MessageSummary) -> Self {
        Self {
            id: m.id.to_string(),
            to: m.to_email,
            from: m.from_email,
            subject: m.subject,
            status: m.status,
            source: m.source,
            contact_id: m.contact_id.map(|c| c.to_string()),
            template_id: m.template_id.map(|c| c.to_string()),
            campaign_id: m.campaign_id.map(|c| c.to_string()),
            created_at: iso(m.created_at),
            sent_at: m.sent_at.map(iso),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmailList {
    pub data: Vec<EmailSummary>,
    pub cursor: Option<String>,
    pub has_more: bool,
    /// Only on the first page.
    pub total: i64,
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct EmailListQuery {
    #[serde(default)]
    #[param(inline)]
    limit: Limit,
    cursor: Option<String>,
    /// a message status (PENDING, SENT, DELIVERED, ...)
    status: Option<String>,
    contact_id: Option<String>,
    campaign_id: Option<String>,
    /// what queued the message: transactional, campaign or workflow
    source: Option<String>,
}

/// Messages, newest first; filters `status`, `contactId`, `campaignId`, `source`.
#[utoipa::path(get, path = "/emails", tag = "emails", params(EmailListQuery),
    responses((status = 200, body = EmailList)))]
async fn list_emails(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<EmailListQuery>,
) -> ApiResult<Json<EmailList>> {
    let limit = q.limit.get();
    let before = match text(&q.cursor) {
        Some(c) => Some(decode_cursor(auth.id(), c)?),
        None => None,
    };
    let id_param = |name: &str, value: &Option<String>| -> ApiResult<Option<uuid::Uuid>> {
        match text(value) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| ApiError::field(name, format!("{name} must be an id"), "invalid_id")),
        }
    };
    let status = match text(&q.status) {
        None => None,
        Some(s) => Some(
            s.to_ascii_uppercase()
                .parse::<MessageStatus>()
                .map_err(|_| {
                    let names: Vec<&str> = MessageStatus::ALL.iter().map(|s| s.as_str()).collect();
                    ApiError::field(
                        "status",
                        format!("status must be one of {}", names.join(", ")),
                        "invalid_enum",
                    )
                })?,
        ),
    };
    let filter = MessageFilter {
        status,
        contact_id: id_param("contactId", &q.contact_id)?,
        campaign_id: id_param("campaignId", &q.campaign_id)?,
        source: text(&q.source).map(str::to_owned),
    };
    let (rows, has_more) = state
        .store
        .list_messages(auth.id(), &filter, limit, before)
        .await?;
    let total = if before.is_none() {
        state.store.count_messages(auth.id(), &filter).await?
    } else {
        0
    };
    let cursor = match (has_more, rows.last()) {
        (true, Some(last)) => Some(encode_cursor(auth.id(), last.id)),
        _ => None,
    };
    Ok(Json(EmailList {
        data: rows.into_iter().map(EmailSummary::from).collect(),
        cursor,
        has_more,
        total,
    }))
}

async fn load(state: &AppState, auth: &ProjectAuth, raw: &str) -> ApiResult<Message> {
    let id = path_id(raw, "NOT_FOUND", "Email")?;
    state
        .store
        .project_message(auth.id(), id)
        .await?
        .ok_or_else(|| ApiError::not_found("NOT_FOUND", "Email"))
}

/// One message: rendered subject and HTML, headers, attachments (metadata), status history.
/// Once retention purged the body: `html` null and `bodyPurgedAt` set.
#[utoipa::path(get, path = "/emails/{id}", tag = "emails", params(("id" = String, Path)),
    responses((status = 200, body = Object), (status = 404)))]
async fn get_email(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let m = load(&state, &auth, &id).await?;
    let mut history: Vec<Value> = Vec::new();
    if m.status != MessageStatus::Suppressed {
        // Queued messages start PENDING at creation (not stored as a row of its own).
        history.push(json!({"status": "PENDING", "detail": null, "at": iso(m.created_at)}));
    }
    history.extend(
        state
            .store
            .message_history(m.id)
            .await?
            .into_iter()
            .map(|h| json!({"status": h.status, "detail": h.detail, "at": iso(h.created_at)})),
    );
    let attachments: Vec<Value> = m
        .attachments
        .0
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| {
                    // `size` since attachments are blobs; older rows carry base64 `content`.
                    let size = x["size"].as_u64().unwrap_or_else(|| {
                        x["content"].as_str().map_or(0, |c| c.len() as u64 / 4 * 3)
                    });
                    json!({"filename": x["filename"], "contentType": x["contentType"], "contentId": x["contentId"],
                        "disposition": x["disposition"], "size": size})
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Json(json!({
        "id": m.id.to_string(),
        "messageId": format!("<{}>", m.message_id_header),
        "status": m.status,
        "source": m.source,
        "from": m.from_email,
        "fromName": m.from_name,
        "replyTo": m.reply_to,
        "to": m.to_email,
        "toName": m.to_name,
        "subject": m.subject,
        // After the retention period the body and attachments are gone: `html` is null and
        // `bodyPurgedAt` says when (attachment metadata stays).
        "html": m.body_purged_at.is_none().then_some(m.html),
        "bodyPurgedAt": m.body_purged_at.map(iso),
        "headers": m.headers.0,
        "attachments": attachments,
        "contactId": m.contact_id.map(|c| c.to_string()),
        "templateId": m.template_id.map(|c| c.to_string()),
        "campaignId": m.campaign_id.map(|c| c.to_string()),
        "attempts": m.attempts,
        "lastError": m.last_error,
        // A mailbox-simulator message (never handed to a transport, not counted in rates).
        "simulated": m.simulated,
        // The relay's own id from its 250 reply (what Amazon SES notifications name).
        "relayMessageId": m.relay_message_id,
        "createdAt": iso(m.created_at),
        "updatedAt": iso(m.updated_at),
        "sentAt": m.sent_at.map(iso),
        "history": history,
    })))
}

/// The exact DKIM-signed bytes (local outbox transport only), as `message/rfc822`.
#[utoipa::path(get, path = "/emails/{id}/raw", tag = "emails", params(("id" = String, Path)),
    responses((status = 200, content_type = "message/rfc822", body = String), (status = 404)))]
async fn raw_email(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let m = load(&state, &auth, &id).await?;
    match state.engine.raw_message(m.id).await {
        Ok(bytes) => Ok(([(header::CONTENT_TYPE, "message/rfc822")], bytes).into_response()),
        Err(RawError::NotKept) => Err(ApiError::not_found("NOT_FOUND", "Raw message")
            .with_suggestion("Raw messages are kept only by the local outbox transport")),
        Err(RawError::NotFound) => Err(ApiError::not_found("NOT_FOUND", "Raw message")
            .with_suggestion(format!(
                "The message is {}; its bytes exist once it is sent",
                m.status
            ))),
        Err(e @ RawError::Io(_)) => Err(ApiError::internal(e)),
    }
}
