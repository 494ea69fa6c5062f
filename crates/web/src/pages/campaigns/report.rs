//! The report of a campaign that was sent (SENDING, SENT, CANCELLED): while SENDING, its
//! progress (queued, sent, remaining) in a fragment htmx polls (`campaigns/{id}/progress`)
//! until the send ends; the stats of `routes::campaigns::stats` (sent, delivered, opened,
//! clicked, bounced, complained, unsubscribed, with rates of sent); opens and clicks over
//! time in the chart component; the most clicked links; the recipients by cursor pages with
//! each one's status, open and click. Cancel campaign while it sends.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::analytics::CampaignStatsResponse;
use herald_api::routes::campaigns::stats;
use herald_core::campaign::CampaignStatus;
use herald_core::ids::Uuid;
use herald_store::campaigns::Campaign;
use serde::Deserialize;

use super::editor::{Confirm, load};
use super::{status_badge, utc_words};
use crate::chart::{Chart, ChartKind, ChartView};
use crate::form::Errors;
use crate::format::{count, percent};
use crate::pages::contact::status_tone;
use crate::pages::not_found;
use crate::render::html;
use crate::session::ProjectPage;
use crate::shell::Shell;

const PAGE_SIZE: u32 = 50;
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// Hourly buckets up to this span, then days.
const HOURLY_SPAN: i64 = 72 * HOUR_MS;
const MAX_DAYS: i64 = 90;
const TOP_LINKS: u32 = 10;
/// How often the progress of a send is polled.
const POLL: &str = "every 2s";

#[derive(Deserialize, Default)]
pub struct ReportQuery {
    /// The recipients page after this message id.
    after: Option<String>,
    /// The `after` of the pages before, comma-separated (`first` for the first).
    #[serde(default)]
    back: String,
}

pub struct StatCard {
    pub label: &'static str,
    pub value: String,
    pub rate: String,
}

/// A send's progress and the stats, the fragment polled while SENDING.
pub struct Progress {
    pub sending: bool,
    pub poll_url: Option<String>,
    pub poll: &'static str,
    pub queued: String,
    pub sent: String,
    pub remaining: String,
    pub failed: i64,
    pub failed_words: String,
    pub done: i64,
    pub max: i64,
    pub percent: String,
    pub cards: Vec<StatCard>,
}

pub struct RecipientRow {
    pub href: Option<String>,
    pub email: String,
    pub status: &'static str,
    pub tone: &'static str,
    pub opened: bool,
    pub clicked: bool,
}

#[derive(Template)]
#[template(path = "pages/campaign_report.html")]
struct ReportPage {
    shell: Shell,
    base: String,
    id: String,
    status_words: &'static str,
    status_tone: &'static str,
    subject: String,
    from: String,
    audience: String,
    times: Vec<(&'static str, String)>,
    stopped: Option<String>,
    progress: Progress,
    chart: ChartView,
    links: Vec<(String, String)>,
    recipients: Vec<RecipientRow>,
    previous: Option<String>,
    next: Option<String>,
    summary: String,
    can_cancel: bool,
    confirm: Option<Confirm>,
    errors: Errors,
    notice: Option<String>,
}

#[derive(Template)]
#[template(path = "components/campaign_progress.html")]
struct ProgressFragment {
    progress: Progress,
}

fn cards(s: &CampaignStatsResponse) -> Vec<StatCard> {
    let of_sent = |n: i64| {
        if s.sent == 0 {
            String::new()
        } else {
            format!("{} of sent", percent(n, s.sent))
        }
    };
    [
        ("Sent", s.sent),
        ("Delivered", s.delivered),
        ("Opened", s.opened),
        ("Clicked", s.clicked),
        ("Bounced", s.bounced),
        ("Complained", s.complained),
        ("Unsubscribed", s.unsubscribed),
    ]
    .into_iter()
    .map(|(label, n)| StatCard {
        label,
        value: count(n),
        rate: if label == "Sent" {
            format!("of {} recipients", count(s.total_recipients))
        } else {
            of_sent(n)
        },
    })
    .collect()
}

async fn progress(
    state: &AppState,
    page: &ProjectPage,
    c: &Campaign,
) -> Result<Progress, ApiError> {
    let s = stats(state, page.id(), c).await?;
    let sending = c.status == CampaignStatus::Sending;
    // Only a send under way shows its progress (a scan of the campaign's messages).
    let statuses = if sending {
        state.store.campaign_statuses(page.id(), c.id).await?
    } else {
        Vec::new()
    };
    let (mut sent, mut remaining, mut failed) = (0, 0, 0);
    for (status, n) in statuses {
        if status.went_out() {
            sent += n;
        } else if status.is_done() {
            failed += n;
        } else {
            remaining += n;
        }
    }
    let queued = c.total_recipients.max(sent + failed + remaining);
    let done = sent + failed;
    Ok(Progress {
        sending,
        poll_url: sending.then(|| format!("{}/{}/progress", page.href("campaigns"), c.id)),
        poll: POLL,
        queued: count(queued),
        sent: count(sent),
        remaining: count(remaining),
        failed,
        failed_words: count(failed),
        done,
        max: queued.max(1),
        percent: percent(done, queued),
        cards: cards(&s),
    })
}

/// Opens and clicks per hour (per day past three days) from the send's start.
async fn activity_chart(
    state: &AppState,
    page: &ProjectPage,
    c: &Campaign,
) -> Result<ChartView, ApiError> {
    let rows = state.store.campaign_activity(page.id(), c.id).await?;
    let start_ms = c.started_at.unwrap_or(c.created_at);
    let first = rows
        .iter()
        .map(|(h, _, _)| *h)
        .min()
        .unwrap_or(start_ms / HOUR_MS)
        .min(start_ms / HOUR_MS);
    // Up to the last event, and on to now for a day after the start (no empty future hours);
    // two points at least.
    let now_hour = state.engine.now() / HOUR_MS;
    let last = rows
        .iter()
        .map(|(h, _, _)| *h)
        .max()
        .unwrap_or(first)
        .max(now_hour.min(first + 23))
        .max(first + 1);
    let hourly = (last - first) * HOUR_MS <= HOURLY_SPAN;
    let (step, first, mut n) = if hourly {
        (HOUR_MS, first * HOUR_MS, last - first + 1)
    } else {
        let first_day = first * HOUR_MS / DAY_MS;
        let last_day = last * HOUR_MS / DAY_MS;
        (DAY_MS, first_day * DAY_MS, last_day - first_day + 1)
    };
    let mut first = first;
    if n > MAX_DAYS && !hourly {
        first += (n - MAX_DAYS) * step;
        n = MAX_DAYS;
    }
    let len = usize::try_from(n).unwrap_or(0);
    let mut opens = vec![0.0; len];
    let mut clicks = vec![0.0; len];
    for (hour, name, k) in rows {
        let at = hour * HOUR_MS;
        if at < first {
            continue;
        }
        let Ok(i) = usize::try_from((at - first) / step) else {
            continue;
        };
        let cell = match name.as_str() {
            "email.open" => opens.get_mut(i),
            "email.click" => clicks.get_mut(i),
            _ => None,
        };
        if let Some(cell) = cell {
            *cell += k as f64;
        }
    }
    let fmt = if hourly { "%b %-d %H:00" } else { "%b %-d" };
    let labels = (0..n).map(|i| {
        herald_core::time::to_datetime(first + i * step)
            .format(fmt)
            .to_string()
    });
    let title = if hourly {
        "Opens and clicks per hour (UTC)"
    } else {
        "Opens and clicks per day (UTC)"
    };
    Ok(Chart::new("campaign-activity", ChartKind::Line, title)
        .labels(labels)
        .series("Opens", opens)
        .series("Clicks", clicks)
        .view())
}

fn audience_words(c: &Campaign, segment: Option<String>) -> String {
    match c.content.audience_type {
        herald_core::campaign::AudienceType::All => "All subscribed contacts".to_owned(),
        herald_core::campaign::AudienceType::Segment => format!(
            "Segment {}",
            segment.unwrap_or_else(|| "(deleted)".to_owned())
        ),
        herald_core::campaign::AudienceType::Filtered => {
            "Subscribed contacts matching conditions".to_owned()
        }
    }
}

async fn report_page(
    state: &AppState,
    page: &ProjectPage,
    c: &Campaign,
    q: &ReportQuery,
) -> Result<ReportPage, ApiError> {
    let base = page.href("campaigns");
    let progress = progress(state, page, c).await?;
    let chart = activity_chart(state, page, c).await?;
    let links = state
        .store
        .campaign_top_links(page.id(), c.id, TOP_LINKS)
        .await?
        .into_iter()
        .map(|(u, n)| (u, count(n)))
        .collect();
    let after = q.after.as_deref().and_then(|a| Uuid::parse_str(a).ok());
    let mut rows = state
        .store
        .campaign_recipients(page.id(), c.id, after, PAGE_SIZE + 1)
        .await?;
    let more = rows.len() > PAGE_SIZE as usize;
    rows.truncate(PAGE_SIZE as usize);
    let here = format!("{base}/{}", c.id);
    let (previous, next) = crate::pager::links(
        &here,
        "recipients",
        q.after.as_deref(),
        &q.back,
        more.then(|| rows.last().map(|r| r.message_id)).flatten(),
    );
    let contacts_href = page.href("contacts");
    let recipients = rows
        .into_iter()
        .map(|r| RecipientRow {
            href: r.contact_id.map(|id| format!("{contacts_href}/{id}")),
            email: r.email,
            status: r.status.as_str(),
            tone: status_tone(r.status.as_str()),
            opened: r.opened,
            clicked: r.clicked,
        })
        .collect();
    let segment = match c.content.segment_id {
        Some(id) => state.store.segment(page.id(), id).await?.map(|s| s.name),
        None => None,
    };
    let mut times = vec![("Created", utc_words(c.created_at))];
    if let Some(at) = c.started_at {
        times.push(("Started", utc_words(at)));
    }
    if let Some(at) = c.finished_at {
        times.push(("Finished", utc_words(at)));
    }
    if let Some(at) = c.cancelled_at {
        times.push(("Cancelled", utc_words(at)));
    }
    let (status_words, status_tone) = status_badge(c.status);
    let from = match &c.content.from_name {
        Some(n) => format!("{n} <{}>", c.content.from_email),
        None => c.content.from_email.clone(),
    };
    Ok(ReportPage {
        shell: page.shell("Campaigns", &c.content.name),
        id: c.id.to_string(),
        status_words,
        status_tone,
        subject: c.content.subject.clone(),
        from,
        audience: audience_words(c, segment),
        times,
        stopped: c.stopped_reason.map(|r| {
            let why = match r.as_str() {
                "BILLING_LIMIT" => "The send stopped at the project's monthly campaigns limit",
                "AUDIENCE_ERROR" => "The send stopped: its audience could not be resolved",
                _ => "The send stopped on an error",
            };
            match &c.fanout_error {
                Some(detail) => format!("{why} ({detail}). What was queued went out."),
                None => format!("{why}. What was queued went out."),
            }
        }),
        summary: if q.after.as_deref().is_some_and(|a| !a.is_empty()) {
            format!("Page {}", crate::pager::page_number(&q.back))
        } else {
            format!("{} recipients", progress.queued)
        },
        progress,
        chart,
        links,
        recipients,
        previous,
        next,
        can_cancel: c.status == CampaignStatus::Sending,
        confirm: None,
        errors: Errors::default(),
        notice: None,
        base,
    })
}

/// The report page of `c`.
pub async fn render(
    state: &AppState,
    page: &ProjectPage,
    c: &Campaign,
    q: &ReportQuery,
    notice: Option<String>,
) -> Response {
    match report_page(state, page, c, q).await {
        Ok(mut p) => {
            p.notice = notice;
            html(StatusCode::OK, &p)
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// The report with Cancel campaign's second step (no script), or the API's refusal of it.
pub async fn render_confirm(
    state: &AppState,
    page: &ProjectPage,
    c: &Campaign,
    confirm: Option<Confirm>,
    refusal: Option<&ApiError>,
) -> Response {
    match report_page(state, page, c, &ReportQuery::default()).await {
        Ok(mut p) => {
            p.confirm = confirm;
            let status = match refusal {
                Some(e) => {
                    p.errors = Errors::from_api(e);
                    e.status
                }
                None => StatusCode::OK,
            };
            html(status, &p)
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// `GET campaigns/{id}/progress`: the progress and stats fragment (polled while SENDING).
pub async fn progress_fragment(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
) -> Response {
    let c = match load(&state, &page, &raw).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    match progress(&state, &page, &c).await {
        Ok(progress) => html(StatusCode::OK, &ProgressFragment { progress }),
        Err(e) => not_found::api_error(&e),
    }
}
