//! The segments list and New segment: name, description, type, tracked membership and, for a
//! dynamic segment, the filter builder with its live count; created through the API's
//! `routes::segments::create` (its rules, its messages beside their fields).

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::segments::{SegmentRequest, create};
use herald_core::segments::SegmentType;
use serde::Deserialize;

use crate::filter_builder::{Builder, Group, Item, Settings, from_form};
use crate::form::{Errors, FormData};
use crate::format::{ago, count};
use crate::pages::not_found;
use crate::render::{html, ok, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

const PAGE_SIZE: usize = 50;

pub struct SegmentRow {
    pub href: String,
    pub name: String,
    pub description: String,
    pub dynamic: bool,
    pub members: String,
    pub tracked: bool,
    pub updated: String,
    pub updated_exact: String,
}

#[derive(Template)]
#[template(path = "pages/segments.html")]
struct SegmentsPage {
    shell: Shell,
    new_href: String,
    rows: Vec<SegmentRow>,
    summary: String,
    previous: Option<String>,
    next: Option<String>,
}

#[derive(Deserialize, Default)]
pub struct ListQuery {
    /// Rows to skip (the API lists every segment; the page shows 50 at a time).
    #[serde(default)]
    from: usize,
}

/// `GET segments`: every segment, oldest first, 50 per page.
pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Query(q): Query<ListQuery>,
) -> Response {
    let all = match state.store.list_segments(page.id()).await {
        Ok(all) => all,
        Err(e) => return not_found::api_error(&ApiError::from(e)),
    };
    let now = state.engine.now();
    let total = all.len();
    let from = q.from.min(total.saturating_sub(1) / PAGE_SIZE * PAGE_SIZE);
    let base = page.href("segments");
    let rows = all
        .into_iter()
        .skip(from)
        .take(PAGE_SIZE)
        .map(|s| {
            let (updated, updated_exact) = ago(s.updated_at, now);
            SegmentRow {
                href: format!("{base}/{}", s.id),
                name: s.name,
                description: s.description.unwrap_or_default(),
                dynamic: s.segment_type == SegmentType::Dynamic,
                members: count(s.member_count),
                tracked: s.track_membership,
                updated,
                updated_exact,
            }
        })
        .collect();
    let noun = if total == 1 { "segment" } else { "segments" };
    ok(&SegmentsPage {
        shell: page.shell("Segments", "Segments"),
        new_href: page.href("segments/new"),
        rows,
        summary: format!("{} {noun}", count(total as i64)),
        previous: (from > 0).then(|| format!("{base}?from={}", from.saturating_sub(PAGE_SIZE))),
        next: (from + PAGE_SIZE < total).then(|| format!("{base}?from={}", from + PAGE_SIZE)),
    })
}

#[derive(Template)]
#[template(path = "pages/segment_new.html")]
struct NewPage {
    shell: Shell,
    action: String,
    back: String,
    name: String,
    description: String,
    is_static: bool,
    track: bool,
    errors: Errors,
    builder: Builder,
}

/// The typed values of the New segment form.
struct Typed {
    name: String,
    description: String,
    is_static: bool,
    track: bool,
}

async fn render(
    state: &AppState,
    page: &ProjectPage,
    status: StatusCode,
    typed: Typed,
    root: Group,
    refusal: Option<&ApiError>,
    quiet: bool,
) -> Response {
    let mut builder = match Builder::counted(state, page, Settings::default(), root, quiet).await {
        Ok(b) => b,
        Err(e) => return not_found::api_error(&e),
    };
    let mut errors = Errors::default();
    if let Some(e) = refusal {
        builder.refuse(e);
        errors = builder.other_errors(e);
    }
    html(
        status,
        &NewPage {
            shell: page.shell("Segments", "New segment"),
            action: page.href("segments/new"),
            back: page.href("segments"),
            name: typed.name,
            description: typed.description,
            is_static: typed.is_static,
            track: typed.track,
            errors,
            builder,
        },
    )
}

/// `GET segments/new`.
pub async fn new_page(State(state): State<AppState>, page: ProjectPage) -> Response {
    let typed = Typed {
        name: String::new(),
        description: String::new(),
        is_static: false,
        track: false,
    };
    render(
        &state,
        &page,
        StatusCode::OK,
        typed,
        Group::starter(),
        None,
        false,
    )
    .await
}

/// `POST segments/new`: a builder button (add, remove, update) re-renders the form; otherwise
/// Create segment.
pub async fn create_submit(
    State(state): State<AppState>,
    page: ProjectPage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let root = from_form(&form, Settings::default().key());
    let typed = Typed {
        name: form.get("name"),
        description: form.get("description"),
        is_static: form.get("type") == "STATIC",
        track: form.get("trackMembership") == "true",
    };
    if form.opt("builder").is_some() {
        return render(&state, &page, StatusCode::OK, typed, root, None, true).await;
    }
    let catalogue_tree = match Builder::load(&state, &page, Settings::default(), root.clone()).await
    {
        Ok(b) => b.tree(),
        Err(e) => return not_found::api_error(&e),
    };
    let request = SegmentRequest {
        name: Some(typed.name.clone()),
        description: Some(typed.description.clone()).filter(|d| !d.trim().is_empty()),
        segment_type: Some(if typed.is_static { "STATIC" } else { "DYNAMIC" }.to_owned()),
        filters: (!typed.is_static).then_some(catalogue_tree),
        track_membership: Some(typed.track),
        ..SegmentRequest::default()
    };
    match create(&state, page.id(), &request).await {
        Ok(s) => see_other(&page.href(&format!("segments/{}", s.id))),
        Err(e) if e.status.is_client_error() => {
            render(&state, &page, e.status, typed, root, Some(&e), false).await
        }
        Err(e) => not_found::api_error(&e),
    }
}
