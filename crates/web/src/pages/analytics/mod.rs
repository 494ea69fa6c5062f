//! The Analytics page (`/app/p/{id}/analytics?tab&range&from&to`): tabs Overview (mail per
//! day, open and click rates), Engagement (top campaigns, links, tracked events),
//! Deliverability (bounce and complaint rates against the thresholds) and Audience (contacts
//! over time, subscriptions); ranges of 7, 30 or 90 UTC days ending today, or custom days.
//!
//! The figures come from the API's own functions (`routes::analytics::series`,
//! `campaigns_top`, `events_top`) and the store reads the home page uses, so the page shows
//! what `GET /analytics/*` answers for the same range. A bad custom day is a message beside
//! its field (422), never a 500.

mod audience;
mod deliverability;
mod engagement;
mod overview;

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::analytics::{SeriesParams, SeriesPoint, series};
use herald_core::time::iso;

use crate::days::{BAD_DAY, DAY_MS, day, day_start, parse_day, short_day};
use crate::deliverability::Alert;
use crate::form::{Errors, FormData};
use crate::pages::activity::query;
use crate::pages::not_found;
use crate::render::html;
use crate::session::ProjectPage;
use crate::shell::Shell;

pub use audience::Audience;
pub use deliverability::Health;
pub use engagement::Engagement;
pub use overview::Overview;

const TABS: [(&str, &str); 4] = [
    ("overview", "Overview"),
    ("engagement", "Engagement"),
    ("deliverability", "Deliverability"),
    ("audience", "Audience"),
];
const PRESETS: [&str; 3] = ["7", "30", "90"];

/// The range asked for: a preset of days ending today, or custom days (inclusive, UTC).
pub struct Range {
    /// `7`, `30`, `90` or `custom`.
    pub range: String,
    pub from_day: String,
    pub to_day: String,
    /// `[from, to)` in milliseconds, once read without error.
    pub from: i64,
    pub to: i64,
    /// "Last 30 days: Oct 29 – Nov 27, UTC".
    pub words: String,
}

impl Range {
    fn read(q: &FormData, now: i64, errors: &mut Errors) -> Self {
        let from_day = q.get("from").trim().to_owned();
        let to_day = q.get("to").trim().to_owned();
        let asked = q.get("range");
        let range = if asked == "custom" || (asked.is_empty() && !from_day.is_empty()) {
            "custom".to_owned()
        } else if PRESETS.contains(&asked.as_str()) {
            asked
        } else {
            "30".to_owned()
        };
        let end = day_start(now) + DAY_MS;
        if range != "custom" {
            let days: i64 = range.parse().unwrap_or(30);
            let from = end - days * DAY_MS;
            return Range {
                words: format!(
                    "Last {days} days: {} – {}, UTC",
                    short_day(from),
                    short_day(end - DAY_MS)
                ),
                from_day: day(from),
                to_day: day(end - DAY_MS),
                range,
                from,
                to: end,
            };
        }
        let from = if from_day.is_empty() {
            errors.push("from", "Enter the first day of the range.");
            None
        } else {
            let d = parse_day(&from_day);
            if d.is_none() {
                errors.push("from", BAD_DAY);
            }
            d
        };
        let to = if to_day.is_empty() {
            Some(end)
        } else {
            let d = parse_day(&to_day).map(|d| d + DAY_MS);
            if d.is_none() {
                errors.push("to", BAD_DAY);
            }
            d
        };
        if let (Some(f), Some(t)) = (from, to)
            && t <= f
        {
            errors.push("to", "The end date is before the start date.");
        }
        let (from, to) = (from.unwrap_or(end - 30 * DAY_MS), to.unwrap_or(end));
        Range {
            words: format!(
                "{} – {}, UTC",
                short_day(from),
                short_day((to - DAY_MS).max(from))
            ),
            range,
            from_day,
            to_day,
            from,
            to,
        }
    }

    /// The days of the range (the series' buckets) as chart labels.
    fn labels(points: &[SeriesPoint]) -> Vec<String> {
        points
            .iter()
            .map(|p| {
                herald_core::time::parse_iso(&p.at)
                    .map(short_day)
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The query of this range, for the tab links.
    fn query(&self) -> String {
        let mut s = form_urlencoded::Serializer::new(String::new());
        s.append_pair("range", &self.range);
        if self.range == "custom" {
            s.append_pair("from", &self.from_day);
            s.append_pair("to", &self.to_day);
        }
        s.finish()
    }
}

pub struct Tab {
    pub label: &'static str,
    pub href: String,
    pub current: bool,
}

pub struct Preset {
    pub label: String,
    pub href: String,
    pub current: bool,
}

#[derive(Template)]
#[template(path = "pages/analytics.html")]
struct AnalyticsPage {
    shell: Shell,
    base: String,
    tab: &'static str,
    tabs: Vec<Tab>,
    presets: Vec<Preset>,
    range: Range,
    /// The series' bounds (ISO 8601): what `GET /analytics/timeseries` is asked for.
    from_iso: String,
    to_iso: String,
    errors: Errors,
    alerts: Vec<Alert>,
    overview: Option<Overview>,
    engagement: Option<Engagement>,
    health: Option<Health>,
    audience: Option<Audience>,
}

/// The series of `[from, to)` by UTC day, through the API's function.
async fn daily(
    state: &AppState,
    page: &ProjectPage,
    r: &Range,
) -> Result<Vec<SeriesPoint>, ApiError> {
    let params = SeriesParams {
        from: Some(iso(r.from)),
        to: Some(iso(r.to)),
        interval: Some("day".to_owned()),
        tz: None,
    };
    series(state, page.id(), &params).await
}

/// `GET /app/p/{id}/analytics`.
pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    RawQuery(raw): RawQuery,
) -> Response {
    let q = query(raw);
    let tab = TABS
        .iter()
        .map(|(t, _)| *t)
        .find(|t| *t == q.get("tab"))
        .unwrap_or("overview");
    let now = state.engine.now();
    let mut errors = Errors::default();
    let range = Range::read(&q, now, &mut errors);
    let base = page.href("analytics");
    let mut view = AnalyticsPage {
        shell: page.shell("Analytics", "Analytics"),
        tabs: TABS
            .iter()
            .map(|(t, label)| Tab {
                label,
                href: format!("{base}?tab={t}&{}", range.query()),
                current: *t == tab,
            })
            .collect(),
        presets: PRESETS
            .iter()
            .map(|p| Preset {
                label: format!("{p} days"),
                href: format!("{base}?tab={tab}&range={p}"),
                current: range.range == *p,
            })
            .collect(),
        from_iso: iso(range.from),
        to_iso: iso(range.to),
        base,
        tab,
        range,
        errors,
        alerts: Vec::new(),
        overview: None,
        engagement: None,
        health: None,
        audience: None,
    };
    // The alerts of the last 30 days show on every tab, as on the home page.
    match deliverability::alerts_30_days(&state, &page).await {
        Ok(a) => view.alerts = a,
        Err(e) => return not_found::server_error(&e.to_string()),
    }
    if !view.errors.is_empty() {
        return html(StatusCode::UNPROCESSABLE_ENTITY, &view);
    }
    let built = match tab {
        "engagement" => engagement::build(&state, &page)
            .await
            .map(|e| view.engagement = Some(e)),
        "deliverability" => deliverability::build(&state, &page, &view.range)
            .await
            .map(|h| view.health = Some(h)),
        "audience" => audience::build(&state, &page, &view.range)
            .await
            .map(|a| view.audience = Some(a)),
        _ => overview::build(&state, &page, &view.range)
            .await
            .map(|o| view.overview = Some(o)),
    };
    match built {
        Ok(()) => html(StatusCode::OK, &view),
        Err(e) if e.status.is_client_error() => {
            // The API's range rules (from before to, at most 2000 days) beside their field.
            view.errors = Errors::from_api(&e);
            html(StatusCode::UNPROCESSABLE_ENTITY, &view)
        }
        Err(e) => not_found::api_error(&e),
    }
}
