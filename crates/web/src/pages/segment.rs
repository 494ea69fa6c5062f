//! One segment: its definition (name, description, tracked membership, and the filter builder
//! of a dynamic segment) saved through the API's `routes::segments::update`; its members by
//! cursor pages; a static segment's members added (found by search) and removed through
//! `add_by_email` / `remove_by_email`; delete after an in-page confirmation.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::contacts::contact_page;
use herald_api::routes::segments::{
    MembersRequest, SegmentRequest, add_by_email, count_filter, delete, remove_by_email,
    segment_of, update,
};
use herald_core::ids::Uuid;
use herald_core::segments::SegmentType;
use herald_store::audience::Audience;
use herald_store::segments::Segment;
use serde::Deserialize;

use crate::filter_builder::{Builder, Group, Item, Settings, from_form, from_tree};
use crate::form::{Errors, FormData};
use crate::format::count;
use crate::pages::not_found;
use crate::render::{html, ok, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

const PAGE_SIZE: u32 = 50;
const FOUND_MAX: u32 = 10;

#[derive(Deserialize, Default)]
pub struct SegmentQuery {
    /// The member page after this contact id.
    after: Option<String>,
    /// The `after` of the pages before this one, comma-separated (`first` for the first).
    #[serde(default)]
    back: String,
    /// A search for contacts to add (static segments).
    #[serde(default)]
    find: String,
    /// What the last action did: saved, added, already, removed.
    #[serde(default)]
    done: String,
}

pub struct Member {
    pub href: String,
    pub email: String,
    pub subscribed: bool,
}

pub struct Found {
    pub email: String,
    pub member: bool,
}

#[derive(Template)]
#[template(path = "pages/segment.html")]
struct SegmentPage {
    shell: Shell,
    base: String,
    back: String,
    name: String,
    description: String,
    is_static: bool,
    track: bool,
    member_total: String,
    errors: Errors,
    builder: Option<Builder>,
    members: Vec<Member>,
    previous: Option<String>,
    next: Option<String>,
    summary: String,
    find: String,
    found: Vec<Found>,
    member_errors: Errors,
    notice: Option<&'static str>,
}

/// The form's typed values, when a refused save or a builder button re-renders it.
struct Typed {
    name: String,
    description: String,
    track: bool,
    root: Group,
    /// Re-rendered for a builder button: values still to fill in are not errors yet.
    quiet: bool,
}

async fn load(state: &AppState, page: &ProjectPage, id: &str) -> Result<Segment, Response> {
    segment_of(state, page.id(), id).await.map_err(|e| {
        if e.status == StatusCode::NOT_FOUND {
            not_found::for_viewer(&page.viewer, StatusCode::NOT_FOUND)
        } else {
            not_found::api_error(&e)
        }
    })
}

/// `?after=&back=` links for the member pages.
fn pager(
    base: &str,
    q: &SegmentQuery,
    next_after: Option<Uuid>,
) -> (Option<String>, Option<String>) {
    crate::pager::links(base, "members", q.after.as_deref(), &q.back, next_after)
}

#[allow(clippy::too_many_arguments)]
async fn render(
    state: &AppState,
    page: &ProjectPage,
    s: &Segment,
    q: &SegmentQuery,
    status: StatusCode,
    typed: Option<Typed>,
    refusal: Option<&ApiError>,
    member_errors: Errors,
) -> Response {
    let is_static = s.segment_type == SegmentType::Static;
    let base = page.href(&format!("segments/{}", s.id));
    let (name, description, track, root, quiet) = match typed {
        Some(t) => (t.name, t.description, t.track, Some(t.root), t.quiet),
        None => (
            s.name.clone(),
            s.description.clone().unwrap_or_default(),
            s.track_membership,
            None,
            false,
        ),
    };
    let mut builder = None;
    let mut errors = Errors::default();
    if !is_static {
        let root = root.unwrap_or_else(|| {
            s.filters
                .as_ref()
                .map(from_tree)
                .unwrap_or_else(Group::starter)
        });
        let settings = Settings {
            self_id: Some(s.id),
            ..Settings::default()
        };
        let mut b = match Builder::counted(state, page, settings, root, quiet).await {
            Ok(b) => b,
            Err(e) => return not_found::api_error(&e),
        };
        if let Some(e) = refusal {
            b.refuse(e);
        }
        errors = refusal.map(|e| b.other_errors(e)).unwrap_or_default();
        builder = Some(b);
    } else if let Some(e) = refusal {
        errors = Errors::from_api(e);
    }
    // The members as saved (not as the form being edited shows them).
    let members = async {
        let filter = state.store.segment_filter(page.id(), s).await?;
        let Some(filter) = filter else {
            return Ok::<_, ApiError>((Vec::new(), 0));
        };
        let after = q.after.as_deref().and_then(|a| Uuid::parse_str(a).ok());
        let rows = state
            .store
            .matching_contacts_page(
                page.id(),
                Audience::new(Some(&filter), false),
                after,
                PAGE_SIZE + 1,
                state.engine.now(),
            )
            .await?;
        let total = count_filter(state, page.id(), &filter, false).await?;
        Ok((rows, total))
    }
    .await;
    let (mut rows, total) = match members {
        Ok(m) => m,
        Err(e) => return not_found::api_error(&e),
    };
    let more = rows.len() > PAGE_SIZE as usize;
    rows.truncate(PAGE_SIZE as usize);
    let (previous, next) = pager(&base, q, more.then(|| rows.last().map(|c| c.id)).flatten());
    let found = if is_static && !q.find.trim().is_empty() {
        match find(state, page, s, q.find.trim()).await {
            Ok(f) => f,
            Err(e) => return not_found::api_error(&e),
        }
    } else {
        Vec::new()
    };
    let noun = if total == 1 { "member" } else { "members" };
    let contacts = page.href("contacts");
    html(
        status,
        &SegmentPage {
            shell: page.shell("Segments", &s.name),
            back: page.href("segments"),
            name,
            description,
            is_static,
            track,
            member_total: format!("{} {noun}", count(total)),
            errors,
            builder,
            members: rows
                .into_iter()
                .map(|c| Member {
                    href: format!("{contacts}/{}", c.id),
                    email: c.email,
                    subscribed: c.subscribed,
                })
                .collect(),
            previous,
            summary: if q.after.as_deref().is_some_and(|a| !a.is_empty()) {
                format!("Page {}", crate::pager::page_number(&q.back))
            } else {
                format!("{} {noun}", count(total))
            },
            next,
            find: q.find.clone(),
            found,
            member_errors,
            notice: match q.done.as_str() {
                "saved" => Some("Saved"),
                "added" => Some("Added to the segment"),
                "already" => Some("Already a member; nothing changed"),
                "removed" => Some("Removed from the segment"),
                _ => None,
            },
            base,
        },
    )
}

/// Contacts whose email contains `search`, and whether each is a member already.
async fn find(
    state: &AppState,
    page: &ProjectPage,
    s: &Segment,
    search: &str,
) -> Result<Vec<Found>, ApiError> {
    let list = contact_page(state, page.id(), FOUND_MAX, None, Some(search), None).await?;
    let mut out = Vec::new();
    for c in list.data {
        let member = match Uuid::parse_str(&c.id) {
            Ok(id) => state.store.is_member(page.id(), s.id, id).await?,
            Err(_) => false,
        };
        out.push(Found {
            email: c.email,
            member,
        });
    }
    Ok(out)
}

/// `GET segments/{id}`.
pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    Query(q): Query<SegmentQuery>,
) -> Response {
    let s = match load(&state, &page, &id).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    render(
        &state,
        &page,
        &s,
        &q,
        StatusCode::OK,
        None,
        None,
        Errors::default(),
    )
    .await
}

/// `POST segments/{id}`: a builder button re-renders the form; otherwise Save.
pub async fn save(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let s = match load(&state, &page, &id).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let form = FormData::parse(&body);
    let typed = Typed {
        name: form.get("name"),
        description: form.get("description"),
        track: form.get("trackMembership") == "true",
        root: from_form(&form, Settings::default().key()),
        quiet: form.opt("builder").is_some(),
    };
    let q = SegmentQuery::default();
    if form.opt("builder").is_some() {
        return render(
            &state,
            &page,
            &s,
            &q,
            StatusCode::OK,
            Some(typed),
            None,
            Errors::default(),
        )
        .await;
    }
    let filters = if s.segment_type == SegmentType::Dynamic {
        let settings = Settings {
            self_id: Some(s.id),
            ..Settings::default()
        };
        match Builder::load(&state, &page, settings, typed.root.clone()).await {
            Ok(b) => Some(b.tree()),
            Err(e) => return not_found::api_error(&e),
        }
    } else {
        None
    };
    let request = SegmentRequest {
        name: Some(typed.name.clone()),
        description: Some(typed.description.clone()),
        filters,
        track_membership: Some(typed.track),
        ..SegmentRequest::default()
    };
    match update(&state, page.id(), &s, &request).await {
        Ok(_) => see_other(&format!(
            "{}?done=saved",
            page.href(&format!("segments/{}", s.id))
        )),
        Err(e) if e.status.is_client_error() => {
            render(
                &state,
                &page,
                &s,
                &q,
                e.status,
                Some(typed),
                Some(&e),
                Errors::default(),
            )
            .await
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// `POST segments/{id}/members` (`email`, `find`): adds one contact to a static segment.
pub async fn add_member(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    member_change(state, page, id, body, true).await
}

/// `POST segments/{id}/members/remove` (`email`): removes one contact from a static segment.
pub async fn remove_member(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    member_change(state, page, id, body, false).await
}

async fn member_change(
    state: AppState,
    page: ProjectPage,
    id: String,
    body: Bytes,
    add: bool,
) -> Response {
    let s = match load(&state, &page, &id).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let form = FormData::parse(&body);
    let emails = vec![form.get("email")];
    let out = if add {
        let request = MembersRequest {
            emails,
            create_missing: Some(false),
            subscribed: None,
        };
        add_by_email(&state, page.id(), &s, &request).await
    } else {
        remove_by_email(&state, page.id(), &s, &emails).await
    };
    match out {
        Ok(r) => {
            let done = match (add, r.changed) {
                (true, 0) => "already",
                (true, _) => "added",
                (false, _) => "removed",
            };
            let mut q = form_urlencoded::Serializer::new(String::new());
            q.append_pair("done", done);
            if let Some(find) = form.opt("find") {
                q.append_pair("find", &find);
            }
            see_other(&format!(
                "{}?{}",
                page.href(&format!("segments/{}", s.id)),
                q.finish()
            ))
        }
        Err(e) if e.status.is_client_error() => {
            let q = SegmentQuery {
                find: form.get("find"),
                ..SegmentQuery::default()
            };
            render(
                &state,
                &page,
                &s,
                &q,
                e.status,
                None,
                None,
                Errors::from_api(&e),
            )
            .await
        }
        Err(e) => not_found::api_error(&e),
    }
}

#[derive(Template)]
#[template(path = "pages/segment_delete.html")]
struct DeletePage {
    shell: Shell,
    base: String,
    question: String,
}

/// `POST segments/{id}/delete`: asks first (the dialog sends `confirm=yes`; without
/// JavaScript, a second page asks), then deletes through the API's rule (409 while an active
/// campaign uses it).
pub async fn delete_submit(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let s = match load(&state, &page, &id).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let base = page.href(&format!("segments/{}", s.id));
    if FormData::parse(&body).get("confirm") != "yes" {
        return ok(&DeletePage {
            shell: page.shell("Segments", "Delete segment"),
            question: format!(
                "Delete the segment {}? Its contacts stay; campaigns and conditions that name it match nobody.",
                s.name
            ),
            base,
        });
    }
    match delete(&state, page.id(), &s).await {
        Ok(()) => see_other(&page.href("segments")),
        Err(e) => not_found::api_error(&e),
    }
}
