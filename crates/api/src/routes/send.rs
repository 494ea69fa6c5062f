//! `POST /v1/send`: validates the request (`send_parse`), merges it with its template (the
//! engine's `merge_with_template`, the rule campaigns and workflows share), and hands a
//! [`SendPlan`] to the engine's `submit_send` (the sender-domain rule, then the acceptance,
//! as SMTP submission uses them), which answers once every message is durably queued.

use axum::Json;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use herald_core::time::iso;
use herald_engine::send::{AcceptError, SendOverrides, SendPlan, SubmitError, merge_with_template};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::contacts::data_field;
use super::send_attachments::AttachmentsField;
use super::send_parse::{self as parse, Problems};
use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, path_id};
use crate::state::AppState;

/// Largest `/v1/send` body: the largest message (40 MB). Attachments and HTML grow from the
/// request into the message (base64 stays, HTML is encoded), so only unusual JSON escaping
/// or a huge `data` could make a larger request fit. A declared length over it is refused
/// before the body is read.
pub const SEND_BODY_LIMIT: usize = parse::MAX_MESSAGE_BYTES;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(send))
        .layer(DefaultBodyLimit::max(SEND_BODY_LIMIT))
}

#[derive(Deserialize, ToSchema)]
pub struct SendRequest {
    /// `"a@b.c"`, `{name, email}`, or an array of either (at most 50).
    #[schema(value_type = Object)]
    pub to: Option<Value>,
    pub subject: Option<String>,
    /// HTML.
    pub body: Option<String>,
    /// Template id; its subject, body, from and reply-to apply unless given here.
    pub template: Option<String>,
    /// `"a@b.c"`, `"Name <a@b.c>"` or `{name, email}`.
    #[schema(value_type = Option<Object>)]
    pub from: Option<Value>,
    /// Deprecated sender name, used when `from` is a string without a name.
    pub name: Option<String>,
    pub subscribed: Option<bool>,
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub headers: Option<Value>,
    /// Reply-To address.
    pub reply: Option<String>,
    /// `[{filename, content (base64), contentType, contentId?, disposition?}]`, at most 10.
    #[schema(value_type = Option<Vec<Object>>)]
    pub attachments: Option<AttachmentsField>,
}

#[derive(Serialize, ToSchema)]
pub struct SentContact {
    pub id: String,
    pub email: String,
}

#[derive(Serialize, ToSchema)]
pub struct SentEmail {
    pub contact: SentContact,
    /// The message id (see `GET /emails/{id}`).
    pub email: String,
    /// Present when the recipient was skipped (e.g. `unsubscribed` for MARKETING templates).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct SendData {
    pub emails: Vec<SentEmail>,
    pub timestamp: String,
}

#[derive(Serialize, ToSchema)]
pub struct SendResponse {
    pub success: bool,
    pub data: SendData,
}

/// The optional `Idempotency-Key` header of `/v1/send` and `/v1/track`.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let Some(v) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    match v.to_str() {
        Ok(k)
            if (1..=255).contains(&k.len())
                && k.bytes().all(|b| b.is_ascii_graphic() || b == b' ') =>
        {
            Ok(Some(k.to_owned()))
        }
        _ => Err(ApiError::field(
            "Idempotency-Key",
            "Idempotency-Key must be 1 to 255 printable ASCII characters",
            "invalid_header",
        )),
    }
}

/// The answer to a refused acceptance (`/v1/send`, `/v1/track`).
pub(crate) fn accept_error(e: AcceptError) -> ApiError {
    match e {
        AcceptError::IdempotencyKeyReused => ApiError::new(
            StatusCode::CONFLICT,
            "IDEMPOTENCY_KEY_REUSED",
            e.to_string(),
        )
        .with_suggestion("Use a new Idempotency-Key for a new request"),
        AcceptError::BillingLimit(_) => ApiError::new(
            StatusCode::PAYMENT_REQUIRED,
            "BILLING_LIMIT_EXCEEDED",
            e.to_string(),
        )
        .with_suggestion("Raise the limit: PUT /users/@me/projects/{id}/billing-limits"),
        AcceptError::Store(s) => s.into(),
    }
}

/// Sends a transactional email to each recipient (contacts are created or updated).
#[utoipa::path(post, path = "/v1/send", tag = "public", request_body = SendRequest,
    params(("Idempotency-Key" = Option<String>, Header, pattern = r"^[!-~]([ -~]{0,253}[!-~])?$",
        description = "1 to 255 printable ASCII characters")),
    responses((status = 200, body = SendResponse), (status = 403, description = "DOMAIN_NOT_VERIFIED"),
        (status = 404, description = "TEMPLATE_NOT_FOUND"), (status = 409, description = "IDEMPOTENCY_KEY_REUSED"),
        (status = 413), (status = 422)))]
async fn send(
    State(state): State<AppState>,
    auth: ProjectAuth,
    headers: HeaderMap,
    ApiJson(req): ApiJson<SendRequest>,
) -> ApiResult<(StatusCode, Json<SendResponse>)> {
    if auth.user.is_some() {
        // SPEC.md: /v1/send takes the secret key, not a dashboard session.
        return Err(ApiError::unauthorized(
            "INVALID_API_KEY",
            "POST /v1/send needs the project's secret key",
        )
        .with_suggestion("Send Authorization: Bearer sk_..."));
    }
    let idempotency_key = idempotency_key(&headers)?;
    let template = match &req.template {
        None => None,
        Some(raw) => {
            let id = path_id(raw, "TEMPLATE_NOT_FOUND", "Template")?;
            let t = state.store.template(auth.id(), id).await?;
            Some(t.ok_or_else(|| ApiError::not_found("TEMPLATE_NOT_FOUND", "Template"))?)
        }
    };
    let mut p = Problems(Vec::new());
    let recipients = parse::recipients(req.to.as_ref(), &mut p);
    let subject = parse::subject(req.subject.as_deref(), &mut p);
    let body = match req.body.as_deref() {
        Some(b) if b.trim().is_empty() => {
            p.push("body", "body must not be empty", "required");
            None
        }
        b => b.map(str::to_owned),
    };
    let from = req
        .from
        .as_ref()
        .and_then(|f| parse::mailbox(f, "from", &mut p));
    let fallback_from_name = parse::display_name(
        req.name.as_ref().map(|n| Value::String(n.clone())).as_ref(),
        "name",
        &mut p,
    );
    let reply_to = req
        .reply
        .as_deref()
        .and_then(|r| parse::address(r, "reply", &mut p));
    let custom_headers = parse::headers(req.headers.as_ref(), &mut p);
    let (attachments, attachment_bytes) = parse::attachments(req.attachments, &mut p)?;
    let data = data_field(req.data.as_ref(), &mut p.0);
    let overrides = SendOverrides {
        subject,
        body,
        from,
        fallback_from_name,
        reply_to,
    };
    let merged = match merge_with_template(overrides, template.as_ref()) {
        Ok(m) => Some(m),
        Err(missing) => {
            // A field already refused as given is not reported missing as well.
            for m in missing {
                if !p.has(m.field) {
                    p.push(m.field, m.message, "required");
                }
            }
            None
        }
    };
    if !p.0.is_empty() {
        return Err(ApiError::validation(p.0));
    }
    let Some(merged) = merged else {
        return Err(ApiError::bad_request("subject, body and from are required"));
    };
    let estimated = attachment_bytes * 4 / 3 + merged.body.len() * 2 + merged.subject.len() + 4096;
    if estimated > parse::MAX_MESSAGE_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!(
                "the message would be about {estimated} bytes; at most {} bytes",
                parse::MAX_MESSAGE_BYTES
            ),
        ));
    }
    let plan = SendPlan {
        project_id: auth.id(),
        recipients,
        message: merged,
        subscribed: req.subscribed,
        data,
        headers: custom_headers,
        attachments,
        idempotency_key,
        ignore_subscription: false,
    };
    // The sender-domain rule and the acceptance, as SMTP submission applies them.
    let accepted = state.engine.submit_send(&plan).await.map_err(|e| match e {
        SubmitError::Sender(s) => ApiError::from(s),
        SubmitError::Accept(a) => accept_error(a),
    })?;
    let emails = accepted
        .into_iter()
        .map(|a| SentEmail {
            contact: SentContact {
                id: a.contact_id.to_string(),
                email: a.email,
            },
            email: a.message_id.to_string(),
            skipped: a.skipped.map(str::to_owned),
        })
        .collect();
    Ok((
        StatusCode::OK,
        Json(SendResponse {
            success: true,
            data: SendData {
                emails,
                timestamp: iso(state.engine.now()),
            },
        }),
    ))
}

/// The one recipient of a test send, or its refusal when it was skipped (suppressed, or
/// unsubscribed from marketing mail): the campaign and the template test sends' rule.
pub fn only_recipient(
    accepted: Vec<herald_engine::send::accept::Accepted>,
) -> Result<herald_engine::send::accept::Accepted, ApiError> {
    let first = accepted
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::internal("a test send accepted no recipient"))?;
    if let Some(why) = &first.skipped {
        return Err(ApiError::field(
            "email",
            format!("the address was not sent to: {why}"),
            "suppressed",
        ));
    }
    Ok(first)
}
