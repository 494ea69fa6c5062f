//! `templates`: the project's templates by page (search by name or subject, type filter),
//! with New template (`templates/new`, the editor empty) and its create.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::routes::templates::template_list;
use serde::Deserialize;

use super::editor::{self, Values};
use super::preview::Sample;
use super::type_badge;
use crate::form::{Errors, FormData};
use crate::format::{ago, count};
use crate::pages::not_found;
use crate::render::{html, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

const PAGE_SIZE: u32 = 50;

#[derive(Deserialize, Default)]
pub struct ListQuery {
    #[serde(default)]
    search: String,
    /// "", or TRANSACTIONAL, MARKETING, HEADLESS.
    #[serde(default)]
    r#type: String,
    page: Option<u32>,
}

pub struct Row {
    pub href: String,
    pub name: String,
    pub subject: String,
    pub type_words: &'static str,
    pub type_tone: &'static str,
    pub updated: String,
    pub updated_exact: String,
}

#[derive(Template)]
#[template(path = "pages/templates.html")]
struct ListPage {
    shell: Shell,
    base: String,
    rows: Vec<Row>,
    search: String,
    kind: String,
    filtered: bool,
    summary: String,
    previous: Option<String>,
    next: Option<String>,
    errors: Errors,
}

fn page_href(base: &str, search: &str, kind: &str, page: u32) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    if !search.is_empty() {
        s.append_pair("search", search);
    }
    if !kind.is_empty() {
        s.append_pair("type", kind);
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

/// `GET templates`.
pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Query(q): Query<ListQuery>,
) -> Response {
    let base = page.href("templates");
    let search = q.search.trim().to_owned();
    let kind = q.r#type.trim().to_ascii_uppercase();
    let number = q.page.unwrap_or(1).max(1);
    let kind_filter = Some(kind.as_str()).filter(|k| !k.is_empty());
    let (list, errors, status) = match template_list(
        &state,
        page.id(),
        number,
        PAGE_SIZE,
        kind_filter,
        Some(search.as_str()),
    )
    .await
    {
        Ok(l) => (Some(l), Errors::default(), StatusCode::OK),
        Err(e) if e.status.is_client_error() => (None, Errors::from_api(&e), e.status),
        Err(e) => return not_found::api_error(&e),
    };
    let now = state.engine.now();
    let (rows, total, pages) = match list {
        Some(l) => {
            let rows = l
                .templates
                .into_iter()
                .map(|t| {
                    let at = herald_core::time::parse_iso(&t.updated_at).unwrap_or(now);
                    let (updated, updated_exact) = ago(at, now);
                    let (type_words, type_tone) = type_badge(t.template_type);
                    Row {
                        href: format!("{base}/{}", t.id),
                        name: t.name,
                        subject: t.subject,
                        type_words,
                        type_tone,
                        updated,
                        updated_exact,
                    }
                })
                .collect();
            (rows, l.total, l.total_pages)
        }
        None => (Vec::new(), 0, 0),
    };
    let noun = if total == 1 { "template" } else { "templates" };
    let summary = if pages > 1 {
        format!("{} {noun}, page {number} of {pages}", count(total))
    } else {
        format!("{} {noun}", count(total))
    };
    let previous = (number > 1).then(|| page_href(&base, &search, &kind, number - 1));
    let next = (i64::from(number) < pages).then(|| page_href(&base, &search, &kind, number + 1));
    html(
        status,
        &ListPage {
            shell: page.shell("Templates", "Templates"),
            filtered: !search.is_empty() || !kind.is_empty(),
            base,
            rows,
            search,
            kind,
            summary,
            previous,
            next,
            errors,
        },
    )
}

/// `GET templates/new`: the editor, empty.
pub async fn new_page(State(state): State<AppState>, page: ProjectPage) -> Response {
    editor::render_new(
        &state,
        &page,
        Values::new_template(),
        Sample::default(),
        Errors::default(),
        StatusCode::OK,
    )
}

/// `POST templates`: Create template, through the API's create (its rules, its messages).
pub async fn create(State(state): State<AppState>, page: ProjectPage, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    let values = Values::from_form(&form);
    match herald_api::routes::templates::create(&state, page.id(), values.request()).await {
        Ok(t) => see_other(&format!(
            "{}/{}?notice=created",
            page.href("templates"),
            t.id
        )),
        Err(e) if e.status.is_client_error() => {
            let sample = Sample::from_form(&form);
            editor::render_new(
                &state,
                &page,
                values,
                sample,
                Errors::from_api(&e),
                e.status,
            )
        }
        Err(e) => not_found::api_error(&e),
    }
}
