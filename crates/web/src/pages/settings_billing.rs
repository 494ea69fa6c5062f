//! The Billing tab of project settings, offered when a payment provider is configured
//! (DECISIONS.md "Dashboard", settings): this month's consumption against each category's
//! monthly cap, the caps (blank for none), the subscription as the provider last reported it,
//! the latest invoices, and buttons to the provider's checkout and billing portal. Every read
//! and change is the API's own function (`routes::billing`, `routes::payments`), so its role
//! rules and checks apply. The provider's page opens from a link the tab shows once the
//! provider gave its URL (the dashboard's `form-action 'self'` keeps a form from redirecting
//! to another site).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::billing::{LimitsChange, change_limits, consumption};
use herald_api::routes::payments::{InvoiceResponse, invoices_of, open_checkout, open_portal};
use herald_core::billing::Category;
use serde_json::Value;

use crate::form::{Errors, FormData};
use crate::format::count;
use crate::pages::settings::{Edit, after, render};
use crate::session::ProjectPage;

/// Invoices shown on the tab.
const INVOICES: u32 = 10;

/// One category's line: consumption, cap and how full it is.
pub struct UsageRow {
    pub label: &'static str,
    /// The API field (`transactional`, ...), the cap input's `name`.
    pub name: &'static str,
    /// The cap as typed or stored; empty for none.
    pub limit: String,
    /// "12,000 of 50,000" or "no limit".
    pub of: String,
    /// Width of the meter, 0 to 100.
    pub percent: i64,
    pub over: bool,
}

pub struct InvoiceRow {
    pub number: String,
    pub date: String,
    pub status: String,
    pub amount: String,
    pub url: Option<String>,
}

pub struct BillingView {
    /// "2026-11-01 to 2026-11-30" (UTC).
    pub period: String,
    pub rows: Vec<UsageRow>,
    /// The subscription's status in words, or None before any checkout.
    pub subscription: Option<String>,
    pub has_customer: bool,
    pub invoices: Vec<InvoiceRow>,
    /// Why invoices could not be listed (the provider's failure, a member's role).
    pub invoices_error: Option<String>,
}

const CATEGORIES: [(Category, &str); 4] = [
    (Category::Transactional, "Transactional"),
    (Category::Campaigns, "Campaigns"),
    (Category::Workflows, "Workflows"),
    (Category::Inbound, "Inbound"),
];

/// The tab's data; `typed` keeps the caps a refused form held.
pub async fn load(
    state: &AppState,
    page: &ProjectPage,
    typed: Option<&FormData>,
) -> Result<BillingView, ApiError> {
    let user = page.viewer.user.id;
    let id = page.id().to_string();
    let used = consumption(state, user, &id).await?;
    let limits = state.store.billing_limits(page.id()).await?;
    let rows = CATEGORIES
        .iter()
        .map(|(category, label)| {
            let n = match category {
                Category::Transactional => used.transactional,
                Category::Campaigns => used.campaigns,
                Category::Workflows => used.workflows,
                Category::Inbound => used.inbound,
            };
            let cap = limits.get(*category);
            let name = category.as_str();
            UsageRow {
                label,
                name,
                limit: match typed {
                    Some(f) => f.get(name),
                    None => cap.map(|c| c.to_string()).unwrap_or_default(),
                },
                of: match cap {
                    Some(c) => format!("{} of {}", count(n), count(c)),
                    None => format!("{} (no limit)", count(n)),
                },
                percent: match cap {
                    Some(0) => 100,
                    Some(c) => (n.saturating_mul(100) / c).clamp(0, 100),
                    None => 0,
                },
                over: cap.is_some_and(|c| n >= c),
            }
        })
        .collect();
    let (invoices, invoices_error) = match invoices_of(state, user, &id, INVOICES).await {
        Ok(list) => (list.into_iter().map(invoice_row).collect(), None),
        Err(e) => (Vec::new(), Some(e.message)),
    };
    let subscription = used.subscription.as_ref();
    Ok(BillingView {
        period: format!(
            "{} to {} (UTC)",
            day(&used.period_start),
            day(&used.period_end)
        ),
        rows,
        subscription: subscription.map(|s| s.status.clone().unwrap_or_else(|| "pending".into())),
        has_customer: subscription.is_some_and(|s| s.customer_id.is_some()),
        invoices,
        invoices_error,
    })
}

fn day(iso: &str) -> &str {
    iso.get(..10).unwrap_or(iso)
}

fn invoice_row(i: InvoiceResponse) -> InvoiceRow {
    InvoiceRow {
        number: i.number.unwrap_or(i.id),
        date: day(&i.created_at).to_owned(),
        status: i.status.unwrap_or_default(),
        amount: format!(
            "{}.{:02} {}",
            i.amount_due / 100,
            (i.amount_due % 100).abs(),
            i.currency.to_uppercase()
        ),
        url: i.hosted_invoice_url.or(i.pdf_url),
    }
}

/// A cap as typed: blank is no limit (`null`), a whole number is itself, anything else goes to
/// the API as text so its own rule words the refusal.
fn cap(typed: String) -> Option<Option<Value>> {
    let t = typed.trim();
    Some(if t.is_empty() {
        None
    } else {
        Some(match t.replace([',', '_', ' '], "").parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => Value::String(t.to_owned()),
        })
    })
}

/// `POST settings/billing`: the monthly caps.
pub async fn save_limits(
    State(state): State<AppState>,
    page: ProjectPage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let change = LimitsChange {
        transactional: cap(form.get("transactional")),
        campaigns: cap(form.get("campaigns")),
        workflows: cap(form.get("workflows")),
        inbound: cap(form.get("inbound")),
    };
    let id = page.id().to_string();
    let result = change_limits(&state, page.viewer.user.id, &id, change)
        .await
        .map(|_| "limits");
    after(&state, &page, "billing", form, result).await
}

/// `POST settings/billing/checkout` and `.../portal`: the tab with a link to the provider's
/// page, or with the provider's refusal.
pub async fn provider_page(state: &AppState, page: &ProjectPage, portal: bool) -> Response {
    let id = page.id().to_string();
    let user = page.viewer.user.id;
    let opened = if portal {
        open_portal(state, user, &id).await
    } else {
        open_checkout(state, user, &id).await
    };
    match opened {
        Ok(url) => {
            let edit = Edit {
                provider_url: Some(url),
                ..Edit::default()
            };
            render(state, page, "billing", StatusCode::OK, None, edit).await
        }
        Err(e) => {
            let edit = Edit {
                errors: Errors::general(e.message.clone()),
                ..Edit::default()
            };
            let status = if e.status.is_server_error() {
                StatusCode::BAD_GATEWAY
            } else {
                e.status
            };
            render(state, page, "billing", status, None, edit).await
        }
    }
}

pub async fn checkout(State(state): State<AppState>, page: ProjectPage) -> Response {
    provider_page(&state, &page, false).await
}

pub async fn portal(State(state): State<AppState>, page: ProjectPage) -> Response {
    provider_page(&state, &page, true).await
}
