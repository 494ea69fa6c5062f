//! Routes of SPEC.md that this version does not implement yet: each answers 501
//! `NOT_IMPLEMENTED` with what is missing (never a fake success). Not in the OpenAPI document
//! until they exist. See docs/accounts.md "Not done yet".

use axum::Router;
use axum::routing::{get, post};

use crate::error::ApiError;
use crate::state::AppState;

async fn billing() -> ApiError {
    ApiError::not_implemented("Payments (checkout, billing portal, invoices)").with_suggestion(
        "No payment provider can be configured in this version; monthly limits work \
             without one: GET/PUT /users/@me/projects/{id}/billing-limits",
    )
}

async fn payments_webhook() -> ApiError {
    ApiError::not_implemented("The payment provider webhook")
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/users/@me/projects/{id}/billing-invoices", get(billing))
        .route("/users/@me/projects/{id}/checkout", post(billing))
        .route("/users/@me/projects/{id}/billing-portal", post(billing))
        .route("/webhooks/incoming/payments", post(payments_webhook))
}
