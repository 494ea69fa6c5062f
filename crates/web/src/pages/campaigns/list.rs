//! `campaigns`: the project's campaigns by page with their status (a status filter), New
//! campaign (`campaigns/new`, the editor empty) and its create.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::routes::campaigns::{campaign_list, create};
use herald_core::campaign::CampaignStatus;
use serde::Deserialize;

use super::editor::{Form, builder_settings, render, use_template};
use super::{status_badge, utc_words};
use crate::filter_builder::Builder;
use crate::form::FormData;
use crate::format::{ago, count};
use crate::pages::not_found;
use crate::render::{html, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

const PAGE_SIZE: u32 = 50;

#[derive(Deserialize, Default)]
pub struct ListQuery {
    /// "", or a status (DRAFT, SCHEDULED, SENDING, SENT, CANCELLED).
    #[serde(default)]
    status: String,
    page: Option<u32>,
}

pub struct Row {
    pub href: String,
    pub name: String,
    pub subject: String,
    pub status_words: &'static str,
    pub status_tone: &'static str,
    pub audience: &'static str,
    pub recipients: String,
    /// When it was scheduled for, started or created, in words.
    pub when: String,
    pub when_exact: String,
}

#[derive(Template)]
#[template(path = "pages/campaigns.html")]
struct ListPage {
    shell: Shell,
    base: String,
    rows: Vec<Row>,
    status: String,
    statuses: Vec<(&'static str, &'static str)>,
    summary: String,
    previous: Option<String>,
    next: Option<String>,
}

fn page_href(base: &str, status: &str, page: u32) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    if !status.is_empty() {
        s.append_pair("status", status);
    }
    if page > 1 {
        s.append_pair("page", &page.to_string());
    }
    let q = s.finish();
    if q.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{q}")
    }
}

/// `GET campaigns`.
pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Query(q): Query<ListQuery>,
) -> Response {
    let base = page.href("campaigns");
    let status = CampaignStatus::parse(q.status.trim());
    let number = q.page.unwrap_or(1).max(1);
    let list = match campaign_list(&state, page.id(), status, number, PAGE_SIZE).await {
        Ok(l) => l,
        Err(e) => return not_found::api_error(&e),
    };
    let now = state.engine.now();
    let rows = list
        .campaigns
        .into_iter()
        .map(|c| {
            let s = CampaignStatus::parse(&c.status).unwrap_or(CampaignStatus::Draft);
            let (status_words, status_tone) = status_badge(s);
            let scheduled = c
                .scheduled_at
                .as_deref()
                .and_then(herald_core::time::parse_iso);
            let created = herald_core::time::parse_iso(&c.created_at).unwrap_or(now);
            let (when, when_exact) = match (s, scheduled) {
                (CampaignStatus::Scheduled, Some(at)) => {
                    (format!("for {}", utc_words(at)), herald_core::time::iso(at))
                }
                _ => {
                    let (w, e) = ago(created, now);
                    (format!("created {w}"), e)
                }
            };
            Row {
                href: format!("{base}/{}", c.id),
                name: c.name,
                subject: c.subject,
                status_words,
                status_tone,
                audience: match c.audience.as_str() {
                    "SEGMENT" => "Segment",
                    "FILTERED" => "Filtered",
                    _ => "All contacts",
                },
                recipients: if s == CampaignStatus::Draft || s == CampaignStatus::Scheduled {
                    "—".to_owned()
                } else {
                    count(c.total_recipients)
                },
                when,
                when_exact,
            }
        })
        .collect();
    let status_value = status.map(|s| s.as_str()).unwrap_or("").to_owned();
    let noun = if list.total == 1 {
        "campaign"
    } else {
        "campaigns"
    };
    let summary = if list.total_pages > 1 {
        format!(
            "{} {noun}, page {number} of {}",
            count(list.total),
            list.total_pages
        )
    } else {
        format!("{} {noun}", count(list.total))
    };
    let previous = (number > 1).then(|| page_href(&base, &status_value, number - 1));
    let next =
        (i64::from(number) < list.total_pages).then(|| page_href(&base, &status_value, number + 1));
    html(
        StatusCode::OK,
        &ListPage {
            shell: page.shell("Campaigns", "Campaigns"),
            base,
            rows,
            statuses: CampaignStatus::ALL
                .into_iter()
                .map(|s| (s.as_str(), status_badge(s).0))
                .collect(),
            status: status_value,
            summary,
            previous,
            next,
        },
    )
}

/// `GET campaigns/new`: the editor, empty.
pub async fn new_page(State(state): State<AppState>, page: ProjectPage) -> Response {
    render(
        &state,
        &page,
        Form::new_campaign(),
        None,
        None,
        StatusCode::OK,
    )
    .await
}

/// `POST campaigns`: a builder button or Use template re-renders the form; otherwise Create
/// campaign, through the API's create (its rules, its messages beside their fields).
pub async fn create_submit(
    State(state): State<AppState>,
    page: ProjectPage,
    body: Bytes,
) -> Response {
    let data = FormData::parse(&body);
    let mut form = Form::posted(&data);
    if data.get("do") == "use-template" {
        if let Err(e) = use_template(&state, &page, &data, &mut form.values).await {
            let status = e.status;
            return render(&state, &page, form, None, Some(&e), status).await;
        }
        form.quiet = true;
        return render(&state, &page, form, None, None, StatusCode::OK).await;
    }
    if form.quiet {
        return render(&state, &page, form, None, None, StatusCode::OK).await;
    }
    let tree = match Builder::load(&state, &page, builder_settings(), form.root.clone()).await {
        Ok(b) => b.tree(),
        Err(e) => return not_found::api_error(&e),
    };
    match create(&state, page.id(), form.values.request(Some(tree))).await {
        Ok(c) => see_other(&format!(
            "{}/{}?notice=created",
            page.href("campaigns"),
            c.id
        )),
        Err(e) if e.status.is_client_error() => {
            let status = e.status;
            render(&state, &page, form, None, Some(&e), status).await
        }
        Err(e) => not_found::api_error(&e),
    }
}
