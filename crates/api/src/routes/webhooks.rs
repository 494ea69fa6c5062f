//! `POST /webhooks/notifications`: delivery, bounce and complaint notifications from the relay
//! (Amazon SES through SNS, or the generic signed JSON format). No API key: the signature is
//! the credential, so nothing is read before it is verified (see `herald_engine::feedback`).
//! Never rate limited by the project limiter; bodies are bounded ([`MAX_BODY`]).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use herald_engine::feedback::{NotificationError, Outcome};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Largest notification body: SNS messages are at most 256 KB plus their envelope.
pub const MAX_BODY: usize = 512 * 1024;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(notifications))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// The generic format (with header `Herald-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "<t>.<raw body>">`). Amazon SNS posts its own JSON (header `x-amz-sns-message-type`).
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // documents the body; the engine parses the raw bytes after the signature
pub struct NotificationRequest {
    /// `delivery`, `bounce`, `complaint`, `open` or `click`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Herald's message id.
    pub message_id: String,
    /// `permanent` (default) or `transient`.
    pub bounce_type: Option<String>,
    pub diagnostic: Option<String>,
    /// The clicked URL (`click`).
    pub url: Option<String>,
    /// When it happened (ISO 8601); informative.
    pub occurred_at: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct NotificationResponse {
    pub success: bool,
}

/// Applies a notification. Known message (or a replay, which changes nothing): 200; unknown
/// message: 404; malformed body or an unknown SNS signature version: 400; bad or missing
/// signature, stale timestamp, no `HERALD_FEEDBACK_SECRET`, or an SNS certificate URL that is
/// not Amazon's: 401; an SNS topic not in `HERALD_SNS_TOPIC_ARNS` (or the list unset): 403.
#[utoipa::path(post, path = "/webhooks/notifications", tag = "webhooks",
    params(("Herald-Signature" = Option<String>, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256>"),
        ("x-amz-sns-message-type" = Option<String>, Header, description = "Set by Amazon SNS")),
    request_body = NotificationRequest,
    responses((status = 200, body = NotificationResponse), (status = 400), (status = 401), (status = 403), (status = 404), (status = 502)))]
async fn notifications(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<NotificationResponse>> {
    let outcome = match headers.get("x-amz-sns-message-type") {
        Some(kind) => {
            let kind = kind
                .to_str()
                .map_err(|_| ApiError::bad_request("x-amz-sns-message-type is not text"))?;
            state.engine.sns_notification(kind, &body).await
        }
        None => {
            let signature = headers
                .get("herald-signature")
                .and_then(|v| v.to_str().ok());
            state.engine.generic_notification(signature, &body).await
        }
    };
    match outcome.map_err(refusal)? {
        Outcome::UnknownMessage => Err(ApiError::not_found("NOT_FOUND", "Message")),
        Outcome::Applied | Outcome::Replayed | Outcome::Confirmed | Outcome::Ignored => {
            Ok(Json(NotificationResponse { success: true }))
        }
    }
}

fn refusal(e: NotificationError) -> ApiError {
    match e {
        NotificationError::Unauthorized(m) => ApiError::unauthorized("UNAUTHORIZED", m),
        NotificationError::Forbidden(m) => ApiError::forbidden("FORBIDDEN", m),
        NotificationError::Malformed(m) => ApiError::bad_request(m),
        NotificationError::Invalid { field, message } => {
            ApiError::field(field, message, "invalid_enum")
        }
        NotificationError::Upstream(m) => {
            ApiError::new(StatusCode::BAD_GATEWAY, "UPSTREAM_ERROR", m)
        }
        NotificationError::Store(e) => e.into(),
    }
}
