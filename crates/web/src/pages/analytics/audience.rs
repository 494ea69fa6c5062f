//! Audience: the project's contacts now (subscribed and unsubscribed), contacts over the
//! range by the UTC day they were added (a running total), and subscriptions and
//! unsubscriptions per day.

use herald_api::AppState;
use herald_api::error::ApiError;

use super::Range;
use crate::chart::{Chart, ChartKind, ChartView};
use crate::days::{DAY_MS, short_day};
use crate::format::{count, percent};
use crate::session::ProjectPage;

pub struct Audience {
    pub total: String,
    pub subscribed: String,
    pub subscribed_share: String,
    pub unsubscribed: String,
    pub added: String,
    pub growth: ChartView,
    pub changes: ChartView,
}

pub async fn build(state: &AppState, page: &ProjectPage, r: &Range) -> Result<Audience, ApiError> {
    let store = &state.store;
    let total = store.count_contacts(page.id(), None, None).await?;
    let subscribed = store.count_contacts(page.id(), None, Some(true)).await?;
    let unsubscribed = store.count_contacts(page.id(), None, Some(false)).await?;
    let days = ((r.to - r.from) / DAY_MS).clamp(1, 2000);
    let first_day = r.from.div_euclid(DAY_MS);
    let labels: Vec<String> = (0..days).map(|i| short_day(r.from + i * DAY_MS)).collect();
    let mut running = store.contacts_created_before(page.id(), r.from).await?;
    let mut added = vec![0i64; days as usize];
    for (day, n) in store
        .contacts_created_by_day(page.id(), r.from, r.to)
        .await?
    {
        if let Some(slot) = usize::try_from(day - first_day)
            .ok()
            .and_then(|i| added.get_mut(i))
        {
            *slot += n;
        }
    }
    let totals: Vec<f64> = added
        .iter()
        .map(|n| {
            running += n;
            running as f64
        })
        .collect();
    let mut subs = vec![0.0; days as usize];
    let mut unsubs = vec![0.0; days as usize];
    for d in store.subscription_days(page.id(), r.from, r.to).await? {
        if let Ok(i) = usize::try_from(d.day - first_day)
            && i < subs.len()
        {
            subs[i] += d.subscribed as f64;
            unsubs[i] += d.unsubscribed as f64;
        }
    }
    let growth = Chart::new("growth", ChartKind::Line, "Contacts over time")
        .labels(labels.clone())
        .series("Contacts", totals)
        .view();
    let changes = Chart::new(
        "subscriptions",
        ChartKind::Bar,
        "Subscriptions and unsubscriptions per day",
    )
    .labels(labels)
    .series("Subscribed", subs)
    .series("Unsubscribed", unsubs)
    .view();
    Ok(Audience {
        total: count(total),
        subscribed: count(subscribed),
        subscribed_share: percent(subscribed, total),
        unsubscribed: count(unsubscribed),
        added: count(added.iter().sum()),
        growth,
        changes,
    })
}
