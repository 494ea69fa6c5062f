//! Deliverability: the bounce and complaint rates of the range's messages against the
//! thresholds (warning and critical, in colour and words), bounces per day, and the
//! thresholds themselves. The rates are `Store::delivery_counts_between`, the figures the
//! home page and the security check read.

use herald_api::AppState;
use herald_api::error::ApiError;
use herald_core::security::Level;

use super::{Range, daily};
use crate::chart::{Chart, ChartKind, ChartView};
use crate::days::DAY_MS;
use crate::deliverability::{Alert, Rate, THRESHOLDS, alerts, rates, threshold};
use crate::session::ProjectPage;

pub struct Threshold {
    pub what: &'static str,
    pub warning: String,
    pub critical: String,
    pub now: String,
    pub state: &'static str,
    pub tone: &'static str,
}

pub struct Health {
    /// When the security check disables a project (its own, configured thresholds).
    pub disable_note: String,
    pub rates: Vec<Rate>,
    pub thresholds: Vec<Threshold>,
    pub bounces: ChartView,
}

fn pct(f: f64) -> String {
    threshold(f)
}

/// The alerts of the last 30 days (the home page's span), for the top of every tab.
pub async fn alerts_30_days(
    state: &AppState,
    page: &ProjectPage,
) -> herald_store::StoreResult<Vec<Alert>> {
    let now = state.engine.now();
    let c = state
        .store
        .delivery_counts(page.id(), now - 30 * DAY_MS)
        .await?;
    Ok(alerts(&rates(&c, &THRESHOLDS, "30 days")))
}

pub async fn build(state: &AppState, page: &ProjectPage, r: &Range) -> Result<Health, ApiError> {
    let c = state
        .store
        .delivery_counts_between(page.id(), r.from, r.to)
        .await?;
    let t = THRESHOLDS;
    let rates = rates(&c, &t, "this range");
    let state_of = |rate: &Rate| match rate.level {
        Level::Ok => ("Healthy", "success"),
        Level::Warning => ("Warning", "warning"),
        Level::Critical => ("Critical", "danger"),
    };
    let (b_state, b_tone) = state_of(&rates[0]);
    let (c_state, c_tone) = state_of(&rates[1]);
    let thresholds = vec![
        Threshold {
            what: "Bounce rate",
            warning: pct(t.bounce_warning),
            critical: pct(t.bounce_critical),
            now: rates[0].value.clone(),
            state: b_state,
            tone: b_tone,
        },
        Threshold {
            what: "Complaint rate",
            warning: pct(t.complaint_warning),
            critical: pct(t.complaint_critical),
            now: rates[1].value.clone(),
            state: c_state,
            tone: c_tone,
        },
    ];
    let points = daily(state, page, r).await?;
    let bounces = Chart::new("bounces", ChartKind::Bar, "Bounces per day")
        .labels(Range::labels(&points))
        .series("Bounces", points.iter().map(|p| p.bounced as f64))
        .view();
    let r = state.engine.settings.reputation;
    let disable_note = format!(
        "Separately, Herald disables a project that sent at least {} emails in 7 days once its 7-day bounce rate reaches {} or its complaint rate {}.",
        r.min_messages,
        threshold(r.bounce),
        threshold(r.complaint)
    );
    Ok(Health {
        disable_note,
        rates: rates.into(),
        thresholds,
        bounces,
    })
}
