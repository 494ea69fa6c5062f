//! `POST /webhooks/incoming/payments`: the payment provider's events (Stripe). No API key: the
//! `Stripe-Signature` is the credential, so nothing of the body is read before it is verified
//! (`herald_core::payments`). A missing, malformed, forged or stale signature is a 400; an
//! event is applied once (a replay answers 200 and changes nothing); a type Herald does not act
//! on, or one naming no project of this server, answers 200 so the provider stops retrying.
//! Without a provider: 501. Never rate limited; bodies are bounded ([`MAX_BODY`]).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use herald_engine::payments::{PaymentError, WebhookRefusal};
use herald_store::payments::EventOutcome;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::{ApiError, ApiResult};
use crate::routes::payments::payment_error;
use crate::state::AppState;

/// Largest event body (Stripe's events are a few KB).
pub const MAX_BODY: usize = 512 * 1024;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(payments_webhook))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

#[derive(Serialize, ToSchema)]
pub struct PaymentWebhookResponse {
    pub received: bool,
    /// `applied`, `replayed` (seen before: nothing changed), `ignored` (a type Herald does
    /// not act on) or `unmatched` (names no project of this server).
    pub outcome: String,
}

/// A Stripe event (`checkout.session.completed`, `customer.subscription.created|updated|
/// deleted`, `invoice.payment_failed`; other types are acknowledged and ignored).
#[utoipa::path(post, path = "/webhooks/incoming/payments", tag = "webhooks",
    params(("Stripe-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\">")),
    request_body(content = Object, description = "A Stripe event: {id, type, created, data: {object}}"),
    responses((status = 200, body = PaymentWebhookResponse),
        (status = 400, description = "Missing, malformed, forged or stale signature, or not an event"),
        (status = 501, description = "No payment provider is configured")))]
async fn payments_webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<PaymentWebhookResponse>> {
    let signature = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    let outcome = state
        .engine
        .payment_webhook(signature, &body)
        .await
        .map_err(refusal)?;
    let outcome = match outcome {
        EventOutcome::Applied => "applied",
        EventOutcome::Replayed => "replayed",
        EventOutcome::Ignored => "ignored",
        EventOutcome::Unmatched => "unmatched",
    };
    Ok(Json(PaymentWebhookResponse {
        received: true,
        outcome: outcome.to_owned(),
    }))
}

fn refusal(e: PaymentError) -> ApiError {
    match e {
        PaymentError::Refused(WebhookRefusal::Signature(s)) => {
            ApiError::new(StatusCode::BAD_REQUEST, "INVALID_SIGNATURE", s.to_string())
        }
        PaymentError::NotConfigured => ApiError::not_implemented("The payment provider webhook")
            .with_suggestion(
                "No payment provider is configured on this server (HERALD_STRIPE_SECRET_KEY)",
            ),
        other => payment_error(other),
    }
}
