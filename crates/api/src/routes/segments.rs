//! The Segments resource (SPEC.md "Segments", DECISIONS.md "Segments and filters"): CRUD,
//! the live contacts of a segment by page, static members, `compute` (membership rows and
//! entry/exit events of tracked dynamic segments) and `refresh` (cached count only).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use herald_core::email::EmailAddress;
use herald_core::fields::DataPatch;
use herald_core::filter::Filter;
use herald_core::ids::Uuid;
use herald_core::segments::{MEMBERS_MAX, SegmentType};
use herald_store::audience::Audience;
use herald_store::contacts::ContactUpsert;
use herald_store::segments::{
    NewSegment, Segment, SegmentUpdate, add_members, recount_members, remove_members,
};
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, path_id};
use crate::query::{LaterQuery, Limit, PageNumber};
use crate::routes::contacts::ContactResponse;
use crate::state::AppState;

pub(crate) mod rules;
mod wire;

pub use wire::{
    ComputeResponse, MembersRequest, MembersResponse, RemoveMembersRequest, SegmentContacts,
    SegmentRequest, SegmentResponse,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_segments, create_segment))
        .routes(routes!(get_segment, patch_segment, delete_segment))
        .routes(routes!(segment_contacts))
        .routes(routes!(add_segment_members, remove_segment_members))
        .routes(routes!(compute_segment))
        .routes(routes!(refresh_segment))
}

fn not_found() -> ApiError {
    ApiError::not_found("SEGMENT_NOT_FOUND", "Segment")
}

async fn load(state: &AppState, auth: &ProjectAuth, raw: &str) -> ApiResult<Segment> {
    segment_of(state, auth.id(), raw).await
}

/// The segment `raw` (an id as the path gives it) of the project; 404 when unknown or another
/// project's.
pub async fn segment_of(state: &AppState, project_id: Uuid, raw: &str) -> ApiResult<Segment> {
    let id = path_id(raw, "SEGMENT_NOT_FOUND", "Segment")?;
    state
        .store
        .segment(project_id, id)
        .await?
        .ok_or_else(not_found)
}

/// How many contacts of the project `filter` matches now (`subscribed_only`: a campaign
/// audience). The one count behind `memberCount`, `GET /segments/:id/contacts`'s total and the
/// dashboard builder's live count.
pub async fn count_filter(
    state: &AppState,
    project_id: Uuid,
    filter: &Filter,
    subscribed_only: bool,
) -> ApiResult<i64> {
    let n = state
        .store
        .count_matching(
            project_id,
            Audience::new(Some(filter), subscribed_only),
            state.engine.now(),
        )
        .await?;
    Ok(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Checks a tree sent under `key` (`filters`, `condition`, `audienceFilter`) exactly as create
/// and PATCH check it (for the segment `self_id`, none when new), then counts it: the 422 of an
/// unsaved tree and the count its segment would have.
pub async fn count_tree(
    state: &AppState,
    project_id: Uuid,
    key: &'static str,
    raw: &Value,
    self_id: Option<Uuid>,
    subscribed_only: bool,
) -> ApiResult<i64> {
    let tree = rules::Tree { key, raw };
    let filter = rules::check_tree(&state.store, project_id, &tree, self_id).await?;
    count_filter(state, project_id, &filter, subscribed_only).await
}

/// The cached count as of now: live count of the tree, or the membership rows.
async fn live_count(state: &AppState, project_id: Uuid, s: &Segment) -> ApiResult<i64> {
    let Some(filter) = state.store.segment_filter(project_id, s).await? else {
        return Ok(0);
    };
    count_filter(state, project_id, &filter, false).await
}

/// All segments of the project, oldest first (no pagination).
#[utoipa::path(get, path = "/segments", tag = "segments",
    responses((status = 200, body = Vec<SegmentResponse>)))]
async fn list_segments(
    State(state): State<AppState>,
    auth: ProjectAuth,
) -> ApiResult<Json<Vec<SegmentResponse>>> {
    let all = state.store.list_segments(auth.id()).await?;
    Ok(Json(all.into_iter().map(SegmentResponse::from).collect()))
}

/// Creates a segment; a dynamic one's `memberCount` is counted now.
#[utoipa::path(post, path = "/segments", tag = "segments", request_body = SegmentRequest,
    responses((status = 201, body = SegmentResponse), (status = 422)))]
async fn create_segment(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<SegmentRequest>,
) -> ApiResult<(StatusCode, Json<SegmentResponse>)> {
    let s = create(&state, auth.id(), &body).await?;
    Ok((StatusCode::CREATED, Json(SegmentResponse::from(s))))
}

/// Creates a segment from a request (the rules of `POST /segments`), its count taken now.
pub async fn create(
    state: &AppState,
    project_id: Uuid,
    body: &SegmentRequest,
) -> ApiResult<Segment> {
    let name = rules::name(body.name.as_deref(), true)?.unwrap_or_default();
    let description = rules::description(body.description.as_deref())?;
    let tree = rules::tree(body);
    let kind = match (rules::segment_type(body.segment_type.as_deref())?, &tree) {
        (Some(SegmentType::Static), Some(t)) => {
            return Err(ApiError::field(
                t.key,
                "a STATIC segment takes no filter tree",
                "not_allowed",
            ));
        }
        (Some(SegmentType::Static), None) => SegmentType::Static,
        (_, None) => {
            return Err(ApiError::field(
                "filters",
                "a DYNAMIC segment needs a filter tree (filters or condition)",
                "required",
            ));
        }
        (_, Some(_)) => SegmentType::Dynamic,
    };
    if let Some(t) = &tree {
        rules::check_tree(&state.store, project_id, t, None).await?;
    }
    let s = state
        .store
        .create_segment(&NewSegment {
            project_id,
            name: &name,
            description: description.as_deref(),
            segment_type: kind,
            filters: tree.as_ref().map(|t| t.raw),
            track_membership: body.track_membership.unwrap_or(false),
            member_count: 0,
            now: state.engine.now(),
        })
        .await?;
    let count = live_count(state, project_id, &s).await?;
    state
        .store
        .set_member_count(project_id, s.id, count)
        .await?;
    Ok(Segment {
        member_count: count,
        ..s
    })
}

/// One segment, with its cached `memberCount`.
#[utoipa::path(get, path = "/segments/{id}", tag = "segments", params(("id" = String, Path)),
    responses((status = 200, body = SegmentResponse), (status = 404)))]
async fn get_segment(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<SegmentResponse>> {
    Ok(Json(load(&state, &auth, &id).await?.into()))
}

/// Changes `name`, `description`, the tree (dynamic only) and `trackMembership`.
#[utoipa::path(patch, path = "/segments/{id}", tag = "segments", params(("id" = String, Path)),
    request_body = SegmentRequest,
    responses((status = 200, body = SegmentResponse), (status = 404), (status = 422)))]
async fn patch_segment(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SegmentRequest>,
) -> ApiResult<Json<SegmentResponse>> {
    let cur = load(&state, &auth, &id).await?;
    Ok(Json(update(&state, auth.id(), &cur, &body).await?.into()))
}

/// Changes a segment by a request (the rules of `PATCH /segments/:id`); its count taken now.
pub async fn update(
    state: &AppState,
    project_id: Uuid,
    cur: &Segment,
    body: &SegmentRequest,
) -> ApiResult<Segment> {
    let name = rules::name(body.name.as_deref(), false)?;
    let description = rules::description(body.description.as_deref())?;
    if let Some(t) = rules::segment_type(body.segment_type.as_deref())?
        && t != cur.segment_type
    {
        return Err(ApiError::field(
            "type",
            "the type of a segment cannot change",
            "immutable",
        ));
    }
    let tree = rules::tree(body);
    if let Some(t) = &tree {
        if cur.segment_type == SegmentType::Static {
            return Err(ApiError::field(
                t.key,
                "a STATIC segment takes no filter tree",
                "not_allowed",
            ));
        }
        rules::check_tree(&state.store, project_id, t, Some(cur.id)).await?;
    }
    let now = state.engine.now();
    let updated = state
        .store
        .update_segment(
            project_id,
            cur.id,
            &SegmentUpdate {
                name: name.as_deref(),
                description: description.as_deref().map(Some),
                filters: tree.as_ref().map(|t| t.raw),
                track_membership: body.track_membership,
                member_count: None,
            },
            now,
        )
        .await?
        .ok_or_else(not_found)?;
    let count = live_count(state, project_id, &updated).await?;
    state
        .store
        .set_member_count(project_id, updated.id, count)
        .await?;
    Ok(Segment {
        member_count: count,
        ..updated
    })
}

/// Deletes a segment; 409 while an active campaign uses it.
#[utoipa::path(delete, path = "/segments/{id}", tag = "segments", params(("id" = String, Path)),
    responses((status = 204), (status = 404), (status = 409)))]
async fn delete_segment(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let s = load(&state, &auth, &id).await?;
    delete(&state, auth.id(), &s).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes a segment (the rule of `DELETE /segments/:id`): 409 while an active campaign uses it.
pub async fn delete(state: &AppState, project_id: Uuid, s: &Segment) -> ApiResult<()> {
    if state.store.segment_in_use(project_id, s.id).await? {
        return Err(ApiError::conflict(
            "an active campaign uses this segment; cancel it or wait until it has sent",
        ));
    }
    if state.store.delete_segment(project_id, s.id).await? {
        Ok(())
    } else {
        Err(not_found())
    }
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct SegmentContactsQuery {
    #[serde(default)]
    #[param(inline)]
    page: PageNumber,
    #[serde(default)]
    #[param(inline)]
    page_size: Limit,
}

/// The contacts of a segment by page (live for dynamic segments), ordered by id.
#[utoipa::path(get, path = "/segments/{id}/contacts", tag = "segments",
    params(("id" = String, Path), SegmentContactsQuery),
    responses((status = 200, body = SegmentContacts), (status = 404), (status = 422)))]
async fn segment_contacts(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    q: LaterQuery<SegmentContactsQuery>,
) -> ApiResult<Json<SegmentContacts>> {
    let s = load(&state, &auth, &id).await?;
    let q = q.parse()?;
    let page = q.page.get();
    let page_size = q.page_size.get();
    let now = state.engine.now();
    let filter = state.store.segment_filter(auth.id(), &s).await?;
    let (contacts, total) = match &filter {
        Some(f) => {
            let audience = Audience::new(Some(f), false);
            let offset = u64::from(page - 1) * u64::from(page_size);
            let rows = state
                .store
                .matching_contacts_offset(auth.id(), audience, offset, page_size, now)
                .await?;
            (rows, count_filter(&state, auth.id(), f, false).await?)
        }
        None => (Vec::new(), 0),
    };
    let size = i64::from(page_size);
    Ok(Json(SegmentContacts {
        contacts: contacts.into_iter().map(ContactResponse::from).collect(),
        total,
        page,
        page_size,
        total_pages: (total + size - 1) / size,
    }))
}

fn static_only(s: &Segment) -> ApiResult<()> {
    if s.segment_type == SegmentType::Static {
        Ok(())
    } else {
        Err(ApiError::conflict(
            "members are added and removed on STATIC segments only; a DYNAMIC segment's members follow its filter",
        ))
    }
}

fn parse_emails(emails: &[String]) -> ApiResult<Vec<EmailAddress>> {
    if emails.is_empty() || emails.len() > MEMBERS_MAX {
        return Err(ApiError::field(
            "emails",
            format!("emails holds 1 to {MEMBERS_MAX} addresses"),
            "invalid_value",
        ));
    }
    emails
        .iter()
        .enumerate()
        .map(|(i, e)| {
            EmailAddress::parse(e.trim()).map_err(|err| {
                ApiError::field(format!("emails.{i}"), err.to_string(), "invalid_email")
            })
        })
        .collect()
}

/// Adds contacts to a static segment by email; `createMissing` creates unknown ones (with
/// `subscribed`, default true). Each new member gets a `segment.<slug>.entry` event.
#[utoipa::path(post, path = "/segments/{id}/members", tag = "segments", params(("id" = String, Path)),
    request_body = MembersRequest,
    responses((status = 200, body = MembersResponse), (status = 404), (status = 409), (status = 422)))]
async fn add_segment_members(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<MembersRequest>,
) -> ApiResult<Json<MembersResponse>> {
    let s = load(&state, &auth, &id).await?;
    Ok(Json(add_by_email(&state, auth.id(), &s, &body).await?))
}

/// Adds contacts to a static segment by email (the rules of `POST /segments/:id/members`).
pub async fn add_by_email(
    state: &AppState,
    project_id: Uuid,
    s: &Segment,
    body: &MembersRequest,
) -> ApiResult<MembersResponse> {
    static_only(s)?;
    let emails = parse_emails(&body.emails)?;
    let now = state.engine.now();
    let create = body.create_missing.unwrap_or(false);
    let patch = DataPatch::default();
    let mut tx = state.store.begin().await?;
    let mut ids = Vec::new();
    let mut created = 0;
    let mut not_found = Vec::new();
    for email in &emails {
        if create {
            let out = herald_store::contacts::upsert_contact(
                &mut tx,
                &ContactUpsert {
                    project_id,
                    email: email.as_str(),
                    subscribed: None,
                    default_subscribed: body.subscribed.unwrap_or(true),
                    patch: &patch,
                    now,
                },
            )
            .await?;
            created += u64::from(out.is_new);
            ids.push(out.contact.id);
        } else {
            match state
                .store
                .contact_by_email(project_id, email.as_str())
                .await?
            {
                Some(c) => ids.push(c.id),
                None => not_found.push(email.as_str().to_owned()),
            }
        }
    }
    let added = add_members(&mut tx, project_id, s, &ids, now).await?;
    let member_count = recount_members(&mut tx, project_id, s.id, now).await?;
    tx.commit().await?;
    Ok(MembersResponse {
        changed: added.len() as u64,
        created,
        not_found,
        member_count,
    })
}

/// Removes contacts from a static segment by email; each leaving member gets a
/// `segment.<slug>.exit` event.
#[utoipa::path(delete, path = "/segments/{id}/members", tag = "segments", params(("id" = String, Path)),
    request_body = RemoveMembersRequest,
    responses((status = 200, body = MembersResponse), (status = 404), (status = 409), (status = 422)))]
async fn remove_segment_members(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<RemoveMembersRequest>,
) -> ApiResult<Json<MembersResponse>> {
    let s = load(&state, &auth, &id).await?;
    Ok(Json(
        remove_by_email(&state, auth.id(), &s, &body.emails).await?,
    ))
}

/// Removes contacts from a static segment by email (the rules of
/// `DELETE /segments/:id/members`).
pub async fn remove_by_email(
    state: &AppState,
    project_id: Uuid,
    s: &Segment,
    emails: &[String],
) -> ApiResult<MembersResponse> {
    static_only(s)?;
    let emails = parse_emails(emails)?;
    let now = state.engine.now();
    let mut ids = Vec::new();
    let mut not_found = Vec::new();
    for email in &emails {
        match state
            .store
            .contact_by_email(project_id, email.as_str())
            .await?
        {
            Some(c) => ids.push(c.id),
            None => not_found.push(email.as_str().to_owned()),
        }
    }
    let mut tx = state.store.begin().await?;
    let removed = remove_members(&mut tx, project_id, s, &ids, now).await?;
    let member_count = recount_members(&mut tx, project_id, s.id, now).await?;
    tx.commit().await?;
    Ok(MembersResponse {
        changed: removed.len() as u64,
        created: 0,
        not_found,
        member_count,
    })
}

/// Recomputes the membership rows of a tracked dynamic segment, recording
/// `segment.<slug>.entry` / `.exit` for each contact that entered or left.
#[utoipa::path(post, path = "/segments/{id}/compute", tag = "segments", params(("id" = String, Path)),
    responses((status = 200, body = ComputeResponse), (status = 404), (status = 409)))]
async fn compute_segment(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<ComputeResponse>> {
    let s = load(&state, &auth, &id).await?;
    if s.segment_type != SegmentType::Dynamic || !s.track_membership {
        return Err(ApiError::conflict(
            "compute applies to DYNAMIC segments with trackMembership: true (use refresh for the count)",
        ));
    }
    let out = state
        .store
        .compute_segment(auth.id(), &s, state.engine.now())
        .await?;
    Ok(Json(ComputeResponse {
        member_count: out.member_count,
        entered: out.entered,
        exited: out.exited,
    }))
}

/// Refreshes the cached `memberCount` only: no membership rows, no events.
#[utoipa::path(post, path = "/segments/{id}/refresh", tag = "segments", params(("id" = String, Path)),
    responses((status = 200, body = SegmentResponse), (status = 404)))]
async fn refresh_segment(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<SegmentResponse>> {
    let s = load(&state, &auth, &id).await?;
    let count = live_count(&state, auth.id(), &s).await?;
    state.store.set_member_count(auth.id(), s.id, count).await?;
    Ok(Json(SegmentResponse::from(Segment {
        member_count: count,
        ..s
    })))
}
