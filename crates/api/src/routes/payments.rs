//! Payments through the configured provider (docs/accounts.md "Payments"): `POST
//! /users/@me/projects/{id}/checkout` (a hosted checkout of the configured plan; the project's
//! customer is created at the first one), `POST .../billing-portal` (the customer's portal; 409
//! `NO_BILLING_CUSTOMER` before any checkout) and `GET .../billing-invoices`.
//!
//! Only an owner or admin calls them (a MEMBER: 403 `FORBIDDEN`); checkout and portal are
//! writes, refused on a disabled project. With no provider configured they answer 501
//! `NOT_IMPLEMENTED`; a provider failure (an error answer, no answer within 10 s) is a 502
//! `PAYMENT_PROVIDER_ERROR` carrying the provider's message.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use herald_core::ids::Uuid;
use herald_core::time::iso;
use herald_engine::payments::{Invoice, PaymentError};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::UserAuth;
use crate::error::{ApiError, ApiResult};
use crate::query::{Bounded, LaterQuery};
use crate::routes::members::{project_access, require_enabled, require_manager};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(checkout))
        .routes(routes!(billing_portal))
        .routes(routes!(billing_invoices))
}

/// A page of the provider to send the user to.
#[derive(Serialize, ToSchema)]
pub struct SessionUrlResponse {
    pub url: String,
}

/// An invoice; amounts in the currency's smallest unit (cents).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvoiceResponse {
    pub id: String,
    pub number: Option<String>,
    /// `draft`, `open`, `paid`, `uncollectible` or `void`.
    pub status: Option<String>,
    pub amount_due: i64,
    pub amount_paid: i64,
    /// ISO 4217, lower case (`usd`).
    pub currency: String,
    pub created_at: String,
    pub hosted_invoice_url: Option<String>,
    pub pdf_url: Option<String>,
}

impl From<Invoice> for InvoiceResponse {
    fn from(i: Invoice) -> Self {
        Self {
            id: i.id,
            number: i.number,
            status: i.status,
            amount_due: i.amount_due,
            amount_paid: i.amount_paid,
            currency: i.currency,
            created_at: iso(i.created_at),
            hosted_invoice_url: i.hosted_invoice_url,
            pdf_url: i.pdf_url,
        }
    }
}

/// The answer to a failed payment operation.
pub(crate) fn payment_error(e: PaymentError) -> ApiError {
    match e {
        PaymentError::NotConfigured => {
            ApiError::not_implemented("Payments (checkout, billing portal, invoices)")
                .with_suggestion(
                    "No payment provider is configured on this server: set \
                     HERALD_STRIPE_SECRET_KEY, HERALD_STRIPE_WEBHOOK_SECRET and \
                     HERALD_STRIPE_PRICE_ID. Monthly limits work without one: GET/PUT \
                     /users/@me/projects/{id}/billing-limits",
                )
        }
        PaymentError::NoCustomer => ApiError::new(
            StatusCode::CONFLICT,
            "NO_BILLING_CUSTOMER",
            "This project has no billing account yet",
        )
        .with_suggestion("Subscribe first: POST /users/@me/projects/{id}/checkout"),
        PaymentError::Provider(p) => {
            ApiError::new(StatusCode::BAD_GATEWAY, "PAYMENT_PROVIDER_ERROR", p.0)
        }
        PaymentError::Refused(r) => ApiError::bad_request(r.to_string()),
        PaymentError::Store(s) => s.into(),
    }
}

/// Opens a hosted checkout of the configured plan (owner or admin); the project's customer at
/// the provider is created at its first checkout.
#[utoipa::path(post, path = "/users/@me/projects/{id}/checkout", tag = "account",
    params(("id" = String, Path)),
    responses((status = 201, body = SessionUrlResponse), (status = 403), (status = 404),
        (status = 501, description = "No payment provider is configured"),
        (status = 502, description = "The payment provider failed (PAYMENT_PROVIDER_ERROR)")))]
async fn checkout(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<SessionUrlResponse>)> {
    let url = open_checkout(&state, auth.user, &id).await?;
    Ok((StatusCode::CREATED, Json(SessionUrlResponse { url })))
}

/// The provider's checkout page for the project (owner or admin): the route's and the
/// dashboard's rule.
pub async fn open_checkout(state: &AppState, user: Uuid, id: &str) -> ApiResult<String> {
    let (project, role) = project_access(state, user, id).await?;
    require_manager(role)?;
    require_enabled(&project)?;
    state
        .engine
        .checkout(project.id, &project.name)
        .await
        .map_err(payment_error)
}

/// Opens the billing portal of the project's customer (owner or admin).
#[utoipa::path(post, path = "/users/@me/projects/{id}/billing-portal", tag = "account",
    params(("id" = String, Path)),
    responses((status = 200, body = SessionUrlResponse), (status = 403), (status = 404),
        (status = 409, description = "No checkout yet (NO_BILLING_CUSTOMER)"),
        (status = 501, description = "No payment provider is configured"),
        (status = 502, description = "The payment provider failed (PAYMENT_PROVIDER_ERROR)")))]
async fn billing_portal(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<SessionUrlResponse>> {
    let url = open_portal(&state, auth.user, &id).await?;
    Ok(Json(SessionUrlResponse { url }))
}

/// The provider's billing portal of the project's customer (owner or admin).
pub async fn open_portal(state: &AppState, user: Uuid, id: &str) -> ApiResult<String> {
    let (project, role) = project_access(state, user, id).await?;
    require_manager(role)?;
    require_enabled(&project)?;
    state
        .engine
        .billing_portal(project.id)
        .await
        .map_err(payment_error)
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct InvoicesQuery {
    #[serde(default)]
    #[param(inline)]
    limit: Bounded<1, 100, 10>,
}

/// The project's latest invoices, newest first (owner or admin); empty before any checkout.
#[utoipa::path(get, path = "/users/@me/projects/{id}/billing-invoices", tag = "account",
    params(("id" = String, Path), InvoicesQuery),
    responses((status = 200, body = Vec<InvoiceResponse>), (status = 403), (status = 404),
        (status = 422), (status = 501, description = "No payment provider is configured"),
        (status = 502, description = "The payment provider failed (PAYMENT_PROVIDER_ERROR)")))]
async fn billing_invoices(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
    q: LaterQuery<InvoicesQuery>,
) -> ApiResult<Json<Vec<InvoiceResponse>>> {
    let limit = q.parse()?.limit.get();
    invoices_of(&state, auth.user, &id, limit).await.map(Json)
}

/// The project's latest `limit` invoices, newest first (owner or admin).
pub async fn invoices_of(
    state: &AppState,
    user: Uuid,
    id: &str,
    limit: u32,
) -> ApiResult<Vec<InvoiceResponse>> {
    let (project, role) = project_access(state, user, id).await?;
    require_manager(role)?;
    let invoices = state
        .engine
        .invoices(project.id, limit)
        .await
        .map_err(payment_error)?;
    Ok(invoices.into_iter().map(Into::into).collect())
}
