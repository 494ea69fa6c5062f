//! Billing caps and consumption (DECISIONS.md "Billing"): `GET/PUT
//! /users/@me/projects/{id}/billing-limits` (any member reads; an owner or admin changes, not
//! on a disabled project) and `GET .../billing-consumption` (this calendar month in UTC, and
//! the project's subscription as the payment provider last reported it, or null).
//! Sends over a cap are refused with 402 where they are accepted (`/v1/send`, campaign send
//! and fan-out). Checkout, portal and invoices go through the configured payment provider
//! (`payments.rs`, 501 without one), its events arrive at `payment_webhook.rs`.

use axum::Json;
use axum::extract::{Path, State};
use herald_core::billing::{Category, LIMIT_MAX, Limits};
use herald_core::ids::Uuid;
use herald_core::time::iso;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::UserAuth;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::ApiJson;
use crate::routes::members::{project_access, require_enabled, require_manager};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_limits, put_limits))
        .routes(routes!(get_consumption))
}

/// Monthly caps per category: a number, or null for unlimited.
#[derive(Serialize, ToSchema)]
pub struct BillingLimits {
    pub transactional: Option<i64>,
    pub campaigns: Option<i64>,
    pub workflows: Option<i64>,
    pub inbound: Option<i64>,
}

impl From<Limits> for BillingLimits {
    fn from(l: Limits) -> Self {
        Self {
            transactional: l.transactional,
            campaigns: l.campaigns,
            workflows: l.workflows,
            inbound: l.inbound,
        }
    }
}

/// Body of PUT: the keys named change (null: unlimited); the others stay.
#[derive(Deserialize, ToSchema, Default)]
pub struct LimitsChange {
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<i64>)]
    pub transactional: Option<Option<serde_json::Value>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<i64>)]
    pub campaigns: Option<Option<serde_json::Value>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<i64>)]
    pub workflows: Option<Option<serde_json::Value>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<i64>)]
    pub inbound: Option<Option<serde_json::Value>>,
}

/// Tells a key sent as `null` (`Some(None)`) from one left out (`None`, by `default`).
fn nullable<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<serde_json::Value>>, D::Error> {
    Option::<serde_json::Value>::deserialize(d).map(Some)
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BillingConsumption {
    pub period_start: String,
    pub period_end: String,
    pub transactional: i64,
    pub campaigns: i64,
    pub workflows: i64,
    pub inbound: i64,
    /// The project's subscription at the payment provider; null before any checkout.
    pub subscription: Option<SubscriptionState>,
}

/// A project's standing with the payment provider, as its webhooks last reported it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionState {
    /// The provider's status (`active`, `trialing`, `past_due`, `canceled`, `unpaid`,
    /// `incomplete`, `incomplete_expired`, `paused`, `unknown`); null until an event says.
    pub status: Option<String>,
    pub customer_id: Option<String>,
    pub subscription_id: Option<String>,
    pub updated_at: String,
}

impl From<herald_store::payments::PaymentAccount> for SubscriptionState {
    fn from(a: herald_store::payments::PaymentAccount) -> Self {
        Self {
            status: a.status,
            customer_id: a.customer_id,
            subscription_id: a.subscription_id,
            updated_at: iso(a.updated_at),
        }
    }
}

/// The project's monthly caps.
#[utoipa::path(get, path = "/users/@me/projects/{id}/billing-limits", tag = "account",
    params(("id" = String, Path)),
    responses((status = 200, body = BillingLimits), (status = 403), (status = 404)))]
async fn get_limits(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<BillingLimits>> {
    let (project, _) = project_access(&state, auth.user, &id).await?;
    Ok(Json(state.store.billing_limits(project.id).await?.into()))
}

/// Changes the caps named in the body (owner or admin).
#[utoipa::path(put, path = "/users/@me/projects/{id}/billing-limits", tag = "account",
    params(("id" = String, Path)), request_body = LimitsChange,
    responses((status = 200, body = BillingLimits), (status = 403), (status = 404), (status = 422)))]
async fn put_limits(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<LimitsChange>,
) -> ApiResult<Json<BillingLimits>> {
    change_limits(&state, auth.user, &id, body).await.map(Json)
}

/// Changes the caps named in `body` (owner or admin): the route's and the dashboard's rule.
pub async fn change_limits(
    state: &AppState,
    user: Uuid,
    id: &str,
    body: LimitsChange,
) -> ApiResult<BillingLimits> {
    let (project, role) = project_access(state, user, id).await?;
    require_manager(role)?;
    require_enabled(&project)?;
    let mut limits = state.store.billing_limits(project.id).await?;
    let mut errors = Vec::new();
    for (category, given) in [
        (Category::Transactional, body.transactional),
        (Category::Campaigns, body.campaigns),
        (Category::Workflows, body.workflows),
        (Category::Inbound, body.inbound),
    ] {
        let Some(given) = given else { continue };
        match given {
            None => limits.set(category, None),
            Some(v) => match v.as_i64().filter(|n| (0..=LIMIT_MAX).contains(n)) {
                Some(n) => limits.set(category, Some(n)),
                None => errors.push(FieldError::new(
                    category.as_str(),
                    format!(
                        "{} is a whole number from 0 to {LIMIT_MAX}, or null for no limit",
                        category.as_str()
                    ),
                    "invalid_value",
                )),
            },
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    state
        .store
        .set_billing_limits(project.id, &limits, state.engine.now())
        .await?;
    Ok(limits.into())
}

/// Messages queued this calendar month (UTC), per category, and the subscription.
#[utoipa::path(get, path = "/users/@me/projects/{id}/billing-consumption", tag = "account",
    params(("id" = String, Path)),
    responses((status = 200, body = BillingConsumption), (status = 403), (status = 404)))]
async fn get_consumption(
    State(state): State<AppState>,
    auth: UserAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<BillingConsumption>> {
    consumption(&state, auth.user, &id).await.map(Json)
}

/// This month's consumption per category and the subscription (any member).
pub async fn consumption(state: &AppState, user: Uuid, id: &str) -> ApiResult<BillingConsumption> {
    let (project, _) = project_access(state, user, id).await?;
    let c = state
        .store
        .billing_consumption(project.id, state.engine.now())
        .await?;
    let subscription = state.store.payment_account(project.id).await?;
    let used = |k: Category| c.used.iter().find(|(c, _)| *c == k).map_or(0, |(_, n)| *n);
    Ok(BillingConsumption {
        period_start: iso(c.period_start),
        period_end: iso(c.period_end),
        transactional: used(Category::Transactional),
        campaigns: used(Category::Campaigns),
        workflows: used(Category::Workflows),
        inbound: used(Category::Inbound),
        subscription: subscription.map(Into::into),
    })
}
