//! The Activity page (`/app/p/{id}/activity`): the project's feed newest first, by kind and
//! UTC days, 50 a page by the API's cursor, each row linking to its contact, email, campaign
//! or workflow. The page reads through `routes::activity::activity_list`, the function behind
//! `GET /activity`. New entries arrive without a reload ([`stream`]); without JavaScript the
//! page is a plain list with its filter form.

pub mod rows;
pub mod stream;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::routes::activity::{ActivityParams, activity_list};

use crate::days::{BAD_DAY, DAY_MS, parse_day};
use crate::form::{Errors, FormData};
use crate::live::id_floor;
use crate::pager;
use crate::pages::not_found;
use crate::render::html;
use crate::session::ProjectPage;
use crate::shell::Shell;
use rows::Row;

const PAGE_SIZE: u32 = 50;

/// The page's filters as typed, and what they mean once read.
pub struct Filters {
    pub kind: String,
    pub from: String,
    pub to: String,
    pub since: Option<i64>,
    pub until: Option<i64>,
}

impl Filters {
    /// Reads `type`, `from` and `to`; a bad day is a message beside its field.
    pub fn read(q: &FormData, errors: &mut Errors) -> Self {
        let kind = q.get("type").trim().to_owned();
        let from = q.get("from").trim().to_owned();
        let to = q.get("to").trim().to_owned();
        let day = |raw: &str, name: &str, errors: &mut Errors| {
            if raw.is_empty() {
                return None;
            }
            let d = parse_day(raw);
            if d.is_none() {
                errors.push(name, BAD_DAY);
            }
            d
        };
        let since = day(&from, "from", errors);
        let until = day(&to, "to", errors).map(|d| d + DAY_MS);
        if let (Some(s), Some(u)) = (since, until)
            && u <= s
        {
            errors.push("to", "The end date is before the start date.");
        }
        Self {
            kind,
            from,
            to,
            since,
            until,
        }
    }

    /// The filters as query pairs, for links that keep them.
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        [
            ("type", self.kind.as_str()),
            ("from", self.from.as_str()),
            ("to", self.to.as_str()),
        ]
    }
}

/// How the page learns of new entries.
pub struct Live {
    pub stream: String,
    pub poll: String,
    /// The newest entry shown (or a floor at the page's time): what the stream starts after.
    pub after: String,
}

#[derive(Template)]
#[template(path = "pages/activity.html")]
struct ActivityPage {
    shell: Shell,
    activity_js: String,
    base: String,
    filters: Filters,
    /// The filter's kinds: (value, words).
    kinds: Vec<(String, String)>,
    errors: Errors,
    rows: Vec<Row>,
    live: Option<Live>,
    previous: Option<String>,
    next: Option<String>,
    summary: String,
}

pub fn query(raw: Option<String>) -> FormData {
    FormData::parse(&Bytes::from(raw.unwrap_or_default()))
}

/// `GET /app/p/{id}/activity?type&from&to&after&back`.
pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    RawQuery(raw): RawQuery,
) -> Response {
    let q = query(raw);
    let mut errors = Errors::default();
    let filters = Filters::read(&q, &mut errors);
    let after = q.opt("after").filter(|a| !a.is_empty());
    let back = q.get("back");
    let mut kinds: Vec<(String, String)> = rows::KINDS
        .iter()
        .map(|k| ((*k).to_owned(), rows::kind_words(k)))
        .collect();
    // A kind typed in the address (a segment's entries, say) stays selected.
    if !filters.kind.is_empty() && !kinds.iter().any(|(k, _)| *k == filters.kind) {
        kinds.push((filters.kind.clone(), filters.kind.clone()));
    }
    let base = page.href("activity");
    let mut list = None;
    if errors.is_empty() {
        let params = ActivityParams {
            limit: PAGE_SIZE,
            cursor: after.clone(),
            kind: Some(filters.kind.clone()),
            contact_id: None,
            since: filters.since,
            until: filters.until,
        };
        match activity_list(&state, page.id(), &params).await {
            Ok(l) => list = Some(l),
            Err(e) if e.status.is_client_error() => {
                errors = Errors::from_api(&e);
                if errors.get("cursor").is_some() {
                    errors = Errors::general(
                        "This page link is out of date: open the first page of the list.",
                    );
                }
            }
            Err(e) => return not_found::api_error(&e),
        }
    }
    let (entries, cursor) = list.map_or((Vec::new(), None), |l| (l.data, l.cursor));
    let rows = match rows::rows(&state, page.id(), &page.href(""), entries).await {
        Ok(r) => r,
        Err(e) => return not_found::server_error(&e.to_string()),
    };
    let now = state.engine.now();
    // New entries show only on the first page of a range that reaches today.
    let live = (errors.is_empty() && after.is_none() && filters.until.is_none_or(|u| u > now))
        .then(|| {
            let keep: Vec<(&str, &str)> = vec![("type", filters.kind.as_str())];
            let mut s = form_urlencoded::Serializer::new(String::new());
            for (k, v) in keep.iter().filter(|(_, v)| !v.is_empty()) {
                s.append_pair(k, v);
            }
            let qs = s.finish();
            let after = rows
                .first()
                .map_or_else(|| id_floor(system_millis()).to_string(), |r| r.id.clone());
            Live {
                stream: format!("{base}/stream?{qs}"),
                poll: format!("{base}/live?{qs}"),
                after,
            }
        });
    let (previous, next) = pager::links_keeping(
        &base,
        &filters.pairs(),
        "activity-heading",
        after.as_deref(),
        &back,
        cursor,
    );
    let summary = if after.is_some() {
        format!("Page {}", pager::page_number(&back))
    } else {
        String::new()
    };
    let status = if errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    html(
        status,
        &ActivityPage {
            shell: page.shell("Activity", "Activity"),
            activity_js: crate::assets::url("activity.js"),
            base,
            filters,
            kinds,
            errors,
            rows,
            live,
            previous,
            next,
            summary,
        },
    )
}

/// The system's time in milliseconds: ids (UUID v7) carry it, not the `Clock`'s.
pub fn system_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
