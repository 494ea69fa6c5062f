//! The contacts page: search by email, subscribed filter, cursor pages, New contact, bulk
//! subscribe / unsubscribe / delete (selected rows or all that match) through the API's bulk
//! job, and CSV import through its import job, both with their progress.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Multipart, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::contact_jobs::{BulkRequest, file_part, queue_bulk, queue_import};
use herald_api::routes::contacts::{
    Total, UpsertContactRequest, contact_page, contact_page_with, save_contact,
};
use herald_core::contact_import::IMPORT_MAX_BYTES;
use herald_core::contact_jobs::{BULK_MAX_IDS, JobOperation};
use serde::Deserialize;
use serde_json::Value;

use crate::form::{Errors, FormData};
use crate::format::{about, ago, count};
use crate::pages::jobs::JobsQuery;
use crate::pages::not_found;
use crate::render::{html, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

const PAGE_SIZE: u32 = 50;
/// "All that match" changes at most this many contacts per action (100 bulk jobs).
const ALL_MAX: usize = 100 * BULK_MAX_IDS;

#[derive(Deserialize, Default)]
pub struct ListQuery {
    #[serde(default)]
    search: String,
    /// "", "true" or "false".
    #[serde(default)]
    subscribed: String,
    cursor: Option<String>,
    /// The cursors of the pages before this one, comma-separated ("" for the first page).
    #[serde(default)]
    back: String,
    /// Bulk jobs whose progress to show (comma-separated ids).
    #[serde(default)]
    bulk: String,
    /// An import job whose progress to show.
    #[serde(default)]
    import: String,
}

pub struct Row {
    pub id: String,
    pub href: String,
    pub email: String,
    pub subscribed: bool,
    pub created: String,
    pub created_exact: String,
}

#[derive(Template)]
#[template(path = "pages/contacts.html")]
struct ContactsPage {
    shell: Shell,
    base: String,
    rows: Vec<Row>,
    search: String,
    subscribed: String,
    summary: String,
    previous: Option<String>,
    next: Option<String>,
    /// Whether the list is filtered (the empty state says so).
    filtered: bool,
    new_email: String,
    new_subscribed: bool,
    new_errors: Errors,
    import_errors: Errors,
    /// The dialog to open at load (`new-contact` or `import` after a refused form).
    open_dialog: &'static str,
    jobs_href: Option<String>,
    notice: Option<String>,
}

fn subscribed_filter(raw: &str) -> Option<bool> {
    match raw {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

fn query_string(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if !v.is_empty() {
            s.append_pair(k, v);
        }
    }
    s.finish()
}

/// The page with `q`'s list; the new-contact and import forms as given.
async fn render(
    state: &AppState,
    page: &ProjectPage,
    q: &ListQuery,
    status: StatusCode,
    forms: Forms,
) -> Response {
    let search = q.search.trim();
    let subscribed = subscribed_filter(&q.subscribed);
    let cursor = q.cursor.as_deref().filter(|c| !c.is_empty());
    let (list, exact) = match contact_page_with(
        state,
        page.id(),
        PAGE_SIZE,
        cursor,
        Some(search).filter(|s| !s.is_empty()),
        subscribed,
        Total::Estimate,
    )
    .await
    {
        Ok(l) => l,
        Err(e) if e.status.is_client_error() => {
            // A stale or foreign cursor: back to the first page of the same filter.
            let to = format!(
                "{}?{}",
                page.href("contacts"),
                query_string(&[("search", search), ("subscribed", q.subscribed.as_str())])
            );
            return see_other(&to);
        }
        Err(e) => return not_found::api_error(&e),
    };
    let now = state.engine.now();
    let base = page.href("contacts");
    let rows = list
        .data
        .into_iter()
        .map(|c| {
            let created_ms = herald_core::time::parse_iso(&c.created_at).unwrap_or(now);
            let (created, created_exact) = ago(created_ms, now);
            Row {
                href: format!("{base}/{}", c.id),
                id: c.id,
                email: c.email,
                subscribed: c.subscribed,
                created,
                created_exact,
            }
        })
        .collect::<Vec<_>>();
    let back: Vec<&str> = q.back.split(',').filter(|s| !s.is_empty()).collect();
    let filter = [("search", search), ("subscribed", q.subscribed.as_str())];
    let next = list.cursor.as_deref().map(|c| {
        let mut trail = back.clone();
        trail.push(cursor.unwrap_or("first"));
        let trail = trail.join(",");
        format!(
            "{base}?{}",
            query_string(&[
                filter[0],
                filter[1],
                ("cursor", c),
                ("back", trail.as_str())
            ])
        )
    });
    let previous = cursor.map(|_| {
        let (prev, rest) = match back.split_last() {
            Some((p, rest)) => (*p, rest.join(",")),
            None => ("first", String::new()),
        };
        let prev = if prev == "first" { "" } else { prev };
        format!(
            "{base}?{}",
            query_string(&[
                filter[0],
                filter[1],
                ("cursor", prev),
                ("back", rest.as_str())
            ])
        )
    });
    let summary = if cursor.is_none() {
        let noun = if list.total == 1 {
            "contact"
        } else {
            "contacts"
        };
        if exact {
            format!("{} {noun}", count(list.total))
        } else {
            format!("About {} {noun}", count(about(list.total)))
        }
    } else {
        format!("Page {}", back.len() + 2)
    };
    let jobs_href = if !q.bulk.is_empty() || !q.import.is_empty() {
        Some(format!(
            "{base}/jobs?{}",
            query_string(&[("bulk", q.bulk.as_str()), ("import", q.import.as_str())])
        ))
    } else {
        None
    };
    let filtered = !search.is_empty() || subscribed.is_some();
    html(
        status,
        &ContactsPage {
            shell: page.shell("Contacts", "Contacts"),
            base,
            rows,
            search: search.to_owned(),
            subscribed: q.subscribed.clone(),
            summary,
            previous,
            next,
            filtered,
            new_email: forms.new_email,
            new_subscribed: forms.new_subscribed,
            new_errors: forms.new_errors,
            import_errors: forms.import_errors,
            open_dialog: forms.open_dialog,
            jobs_href,
            notice: forms.notice,
        },
    )
}

/// The state of the page's two forms.
struct Forms {
    new_email: String,
    new_subscribed: bool,
    new_errors: Errors,
    import_errors: Errors,
    open_dialog: &'static str,
    notice: Option<String>,
}

impl Default for Forms {
    fn default() -> Self {
        Forms {
            new_email: String::new(),
            new_subscribed: true,
            new_errors: Errors::default(),
            import_errors: Errors::default(),
            open_dialog: "",
            notice: None,
        }
    }
}

pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Query(q): Query<ListQuery>,
) -> Response {
    render(&state, &page, &q, StatusCode::OK, Forms::default()).await
}

/// `POST contacts`: New contact, through the API's upsert (its validation, its messages).
pub async fn create(State(state): State<AppState>, page: ProjectPage, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    let request = UpsertContactRequest {
        email: Some(form.get("email")),
        subscribed: Some(form.get("subscribed") == "true"),
        data: None,
    };
    match save_contact(&state, page.id(), request).await {
        Ok(out) => see_other(&page.href(&format!("contacts/{}", out.contact.id))),
        Err(e) if e.status.is_client_error() => {
            let forms = Forms {
                new_email: form.get("email"),
                new_subscribed: form.get("subscribed") == "true",
                new_errors: Errors::from_api(&e),
                open_dialog: "new-contact",
                ..Forms::default()
            };
            render(&state, &page, &ListQuery::default(), e.status, forms).await
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// `POST contacts/import` (multipart, part `file`): the API's import job.
pub async fn import(
    State(state): State<AppState>,
    page: ProjectPage,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Response {
    let queued = match file_part(multipart, IMPORT_MAX_BYTES).await {
        Ok(bytes) => queue_import(&state, page.id(), &bytes).await,
        Err(e) => Err(e),
    };
    match queued {
        Ok(id) => see_other(&format!("{}?import={id}", page.href("contacts"))),
        Err(e) if e.status.is_client_error() => {
            let forms = Forms {
                import_errors: Errors::from_api(&e),
                open_dialog: "import",
                ..Forms::default()
            };
            render(&state, &page, &ListQuery::default(), e.status, forms).await
        }
        Err(e) => not_found::api_error(&e),
    }
}

#[derive(Template)]
#[template(path = "pages/contacts_confirm.html")]
struct ConfirmPage {
    shell: Shell,
    base: String,
    question: String,
    fields: Vec<(String, String)>,
}

/// The ids a bulk form names: the ticked rows, or every contact matching its filter.
async fn chosen_ids(
    state: &AppState,
    page: &ProjectPage,
    form: &FormData,
) -> Result<Vec<String>, ApiError> {
    if form.get("all") != "true" {
        return Ok(form.all("ids"));
    }
    let search = form.opt("search");
    let subscribed = subscribed_filter(&form.get("subscribed"));
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let list = contact_page(
            state,
            page.id(),
            100,
            cursor.as_deref(),
            search.as_deref(),
            subscribed,
        )
        .await?;
        ids.extend(list.data.into_iter().map(|c| c.id));
        match list.cursor {
            Some(c) if ids.len() < ALL_MAX => cursor = Some(c),
            _ => break,
        }
    }
    ids.truncate(ALL_MAX);
    Ok(ids)
}

/// `POST contacts/bulk`: subscribe, unsubscribe or delete the chosen contacts (delete asks
/// first, in the page), one bulk job per 1,000 contacts; back to the list with their progress.
pub async fn bulk(State(state): State<AppState>, page: ProjectPage, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    let operation = match form.get("operation").as_str() {
        "subscribe" => JobOperation::Subscribe,
        "unsubscribe" => JobOperation::Unsubscribe,
        "delete" => JobOperation::Delete,
        _ => return not_found::api_error(&ApiError::bad_request("Choose an action")),
    };
    let ids = match chosen_ids(&state, &page, &form).await {
        Ok(ids) => ids,
        Err(e) => return not_found::api_error(&e),
    };
    let back = format!(
        "{}?{}",
        page.href("contacts"),
        query_string(&[
            ("search", &form.get("search")),
            ("subscribed", &form.get("subscribed"))
        ])
    );
    if ids.is_empty() {
        return see_other(&back);
    }
    if operation == JobOperation::Delete && form.get("confirm") != "yes" {
        let noun = if ids.len() == 1 {
            "contact"
        } else {
            "contacts"
        };
        let mut fields: Vec<(String, String)> = form
            .0
            .iter()
            .filter(|(k, _)| k != "confirm")
            .cloned()
            .collect();
        fields.push(("confirm".to_owned(), "yes".to_owned()));
        return crate::render::ok(&ConfirmPage {
            shell: page.shell("Contacts", "Delete contacts"),
            base: page.href("contacts"),
            question: format!(
                "Delete {} {noun} and their events? This cannot be undone.",
                count(ids.len() as i64)
            ),
            fields,
        });
    }
    let mut jobs = Vec::new();
    for chunk in ids.chunks(BULK_MAX_IDS) {
        let request = BulkRequest {
            contact_ids: Some(chunk.iter().cloned().map(Value::String).collect()),
        };
        match queue_bulk(&state, page.id(), request, operation).await {
            Ok(id) => jobs.push(id.to_string()),
            Err(e) => return not_found::api_error(&e),
        }
    }
    let sep = if back.contains('?') && !back.ends_with('?') {
        "&"
    } else {
        ""
    };
    see_other(&format!("{back}{sep}bulk={}", jobs.join(",")))
}

/// `GET contacts/jobs?bulk=&import=`: the progress fragment (polled by htmx while running).
pub async fn jobs(
    State(state): State<AppState>,
    page: ProjectPage,
    Query(q): Query<JobsQuery>,
) -> Response {
    crate::pages::jobs::fragment(&state, &page, &q).await
}
