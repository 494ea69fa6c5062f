//! The Contacts resource: keyset list, upsert, get, patch, delete, lookup.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_core::email::EmailAddress;
use herald_core::fields::DataPatch;
use herald_core::ids::Uuid;
use herald_core::time::iso;
use herald_store::StoreError;
use herald_store::contact_search::ContactCount;
use herald_store::contacts::{Contact, ContactUpdate, ContactUpsert};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::{ApiJson, path_id};
use crate::query::{Limit, Query, text};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_contacts, upsert_contact))
        .routes(routes!(get_contact, patch_contact, delete_contact))
        .routes(routes!(lookup_contacts))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactResponse {
    pub id: String,
    pub email: String,
    pub subscribed: bool,
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Contact> for ContactResponse {
    fn from(c: Contact) -> Self {
        Self {
            id: c.id.to_string(),
            email: c.email,
            subscribed: c.subscribed,
            data: c.data,
            created_at: iso(c.created_at),
            updated_at: iso(c.updated_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpsertMeta {
    pub is_new: bool,
    pub is_update: bool,
}

#[derive(Serialize, ToSchema)]
pub struct UpsertResponse {
    #[serde(flatten)]
    pub contact: ContactResponse,
    pub _meta: UpsertMeta,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactList {
    pub data: Vec<ContactResponse>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub cursor: Option<String>,
    pub has_more: bool,
    /// Only on the first page (no cursor); 0 on later pages.
    pub total: i64,
}

/// A cursor names the project and the last id seen, so it cannot be replayed elsewhere.
pub(crate) fn encode_cursor(project: Uuid, last: Uuid) -> String {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(project.as_bytes());
    bytes.extend_from_slice(last.as_bytes());
    URL_SAFE_NO_PAD.encode(bytes)
}

pub(crate) fn decode_cursor(project: Uuid, cursor: &str) -> ApiResult<Uuid> {
    let invalid = || {
        ApiError::field(
            "cursor",
            "cursor is not valid for this list",
            "invalid_cursor",
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    if bytes.len() != 32 || bytes[..16] != project.as_bytes()[..] {
        return Err(invalid());
    }
    Uuid::from_slice(&bytes[16..]).map_err(|_| invalid())
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ContactListQuery {
    #[serde(default)]
    #[param(inline)]
    limit: Limit,
    cursor: Option<String>,
    /// case-insensitive substring of the email
    search: Option<String>,
    /// only subscribed (true) or unsubscribed (false) contacts
    subscribed: Option<bool>,
}

/// Contacts, newest first, by cursor.
#[utoipa::path(get, path = "/contacts", tag = "contacts", params(ContactListQuery),
    responses((status = 200, body = ContactList)))]
async fn list_contacts(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Query(q): Query<ContactListQuery>,
) -> ApiResult<Json<ContactList>> {
    let page = contact_page(
        &state,
        auth.id(),
        q.limit.get(),
        text(&q.cursor),
        q.search.as_deref(),
        q.subscribed,
    )
    .await?;
    Ok(Json(page))
}

/// How a contact page's `total` is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Total {
    /// Every match counted (the API's answer).
    Exact,
    /// Estimated from a sample when a search's term is common (`herald_store::contact_search`):
    /// the dashboard, which says "about".
    Estimate,
}

/// One page of a project's contacts, newest first, with the exact total (the API's list).
pub async fn contact_page(
    state: &AppState,
    project: Uuid,
    limit: u32,
    cursor: Option<&str>,
    search: Option<&str>,
    subscribed: Option<bool>,
) -> ApiResult<ContactList> {
    let (list, _) = contact_page_with(
        state,
        project,
        limit,
        cursor,
        search,
        subscribed,
        Total::Exact,
    )
    .await?;
    Ok(list)
}

/// [`contact_page`] with its total counted as `total` says; true when the total is exact.
pub async fn contact_page_with(
    state: &AppState,
    project: Uuid,
    limit: u32,
    cursor: Option<&str>,
    search: Option<&str>,
    subscribed: Option<bool>,
    total: Total,
) -> ApiResult<(ContactList, bool)> {
    let before = match cursor {
        Some(c) => Some(decode_cursor(project, c)?),
        None => None,
    };
    let search = search.map(str::trim).filter(|s| !s.is_empty());
    if search.is_some_and(|s| s.len() > 254) {
        return Err(ApiError::field(
            "search",
            "search is at most 254 characters",
            "too_long",
        ));
    }
    let page = state
        .store
        .list_contacts(project, limit, before, search, subscribed)
        .await?;
    let counted = match (before, total) {
        (Some(_), _) => ContactCount {
            count: 0,
            exact: true,
        },
        (None, Total::Exact) => ContactCount {
            count: state
                .store
                .count_contacts(project, search, subscribed)
                .await?,
            exact: true,
        },
        (None, Total::Estimate) => {
            state
                .store
                .estimate_contacts(project, search, subscribed)
                .await?
        }
    };
    let cursor = match (page.has_more, page.contacts.last()) {
        (true, Some(last)) => Some(encode_cursor(project, last.id)),
        _ => None,
    };
    let list = ContactList {
        data: page
            .contacts
            .into_iter()
            .map(ContactResponse::from)
            .collect(),
        cursor,
        has_more: page.has_more,
        total: counted.count,
    };
    Ok((list, counted.exact))
}

#[derive(Deserialize, ToSchema)]
pub struct UpsertContactRequest {
    #[schema(format = Email, required = true)]
    pub email: Option<String>,
    pub subscribed: Option<bool>,
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
}

/// Parses an email field, collecting the problem under `field`.
pub(crate) fn email_field(
    raw: Option<&str>,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Option<EmailAddress> {
    match raw.map(EmailAddress::parse) {
        Some(Ok(e)) => Some(e),
        Some(Err(e)) => {
            errors.push(FieldError::new(field, e.to_string(), "invalid_email"));
            None
        }
        None => {
            errors.push(FieldError::new(
                field,
                format!("{field} is required"),
                "required",
            ));
            None
        }
    }
}

/// Parses a `data` payload with the custom-field rules, collecting the problem under `data`.
pub(crate) fn data_field(raw: Option<&Value>, errors: &mut Vec<FieldError>) -> DataPatch {
    DataPatch::parse(raw).unwrap_or_else(|p| {
        let field = if p.key.is_empty() {
            "data".to_owned()
        } else {
            format!("data.{}", p.key)
        };
        errors.push(FieldError::new(field, p.message, p.code));
        DataPatch::default()
    })
}

/// Creates or updates a contact by email (201 when new, 200 when it existed).
#[utoipa::path(post, path = "/contacts", tag = "contacts", request_body = UpsertContactRequest,
    responses((status = 201, body = UpsertResponse), (status = 200, body = UpsertResponse), (status = 422)))]
async fn upsert_contact(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<UpsertContactRequest>,
) -> ApiResult<(StatusCode, Json<UpsertResponse>)> {
    let out = save_contact(&state, auth.id(), body).await?;
    let status = if out.is_new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(UpsertResponse {
            contact: out.contact.into(),
            _meta: UpsertMeta {
                is_new: out.is_new,
                is_update: !out.is_new,
            },
        }),
    ))
}

/// Creates or updates a contact by email after the API's checks (the API and the dashboard).
pub async fn save_contact(
    state: &AppState,
    project: Uuid,
    body: UpsertContactRequest,
) -> ApiResult<herald_store::contacts::UpsertOutcome> {
    let mut errors = Vec::new();
    let email = email_field(body.email.as_deref(), "email", &mut errors);
    let patch = data_field(body.data.as_ref(), &mut errors);
    let Some(email) = email.filter(|_| errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    Ok(state
        .store
        .upsert_contact(&ContactUpsert {
            project_id: project,
            email: email.as_str(),
            subscribed: body.subscribed,
            default_subscribed: true,
            patch: &patch,
            now: state.engine.now(),
        })
        .await?)
}

fn contact_id(raw: &str) -> ApiResult<Uuid> {
    path_id(raw, "CONTACT_NOT_FOUND", "Contact")
}

fn contact_not_found() -> ApiError {
    ApiError::not_found("CONTACT_NOT_FOUND", "Contact")
}

/// One contact.
#[utoipa::path(get, path = "/contacts/{id}", tag = "contacts", params(("id" = String, Path)),
    responses((status = 200, body = ContactResponse), (status = 404)))]
async fn get_contact(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<ContactResponse>> {
    let id = contact_id(&id)?;
    let c = state
        .store
        .contact(auth.id(), id)
        .await?
        .ok_or_else(contact_not_found)?;
    Ok(Json(c.into()))
}

#[derive(Deserialize, ToSchema)]
pub struct PatchContactRequest {
    #[schema(format = Email)]
    pub email: Option<String>,
    pub subscribed: Option<bool>,
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
}

/// Changes email, subscription or data (patch semantics); a flip of `subscribed` records
/// `contact.subscribed` or `contact.unsubscribed`.
#[utoipa::path(patch, path = "/contacts/{id}", tag = "contacts", params(("id" = String, Path)), request_body = PatchContactRequest,
    responses((status = 200, body = ContactResponse), (status = 404), (status = 409)))]
async fn patch_contact(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PatchContactRequest>,
) -> ApiResult<Json<ContactResponse>> {
    let id = contact_id(&id)?;
    Ok(Json(
        change_contact(&state, auth.id(), id, body).await?.into(),
    ))
}

/// Changes a contact's email, subscription or data after the API's checks (the API and the
/// dashboard's contact page).
pub async fn change_contact(
    state: &AppState,
    project: Uuid,
    id: Uuid,
    body: PatchContactRequest,
) -> ApiResult<Contact> {
    let mut errors = Vec::new();
    let email = match body.email.as_deref() {
        None => None,
        raw => email_field(raw, "email", &mut errors),
    };
    let patch = data_field(body.data.as_ref(), &mut errors);
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let change = ContactUpdate {
        email: email.as_ref().map(EmailAddress::as_str),
        subscribed: body.subscribed,
        patch: &patch,
        now: state.engine.now(),
        cause: Default::default(),
    };
    match state.store.update_contact(project, id, &change).await {
        Ok(c) => Ok(c),
        Err(StoreError::NotFound) => Err(contact_not_found()),
        Err(StoreError::Conflict(_)) => Err(ApiError::conflict(
            "Another contact in this project has this email",
        )),
        Err(e) => Err(e.into()),
    }
}

/// Deletes a contact and its events.
#[utoipa::path(delete, path = "/contacts/{id}", tag = "contacts", params(("id" = String, Path)),
    responses((status = 204), (status = 404)))]
async fn delete_contact(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = contact_id(&id)?;
    if state
        .store
        .delete_contact(auth.id(), id, state.engine.now())
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(contact_not_found())
    }
}

/// Most emails one lookup may name.
pub const LOOKUP_MAX: usize = 500;

#[derive(Deserialize, ToSchema)]
pub struct LookupRequest {
    /// At most 500 addresses; each must be a valid email address.
    #[schema(schema_with = lookup_emails_schema, required = true)]
    pub emails: Option<Vec<Value>>,
}

/// What the handler accepts: `emails` is required, an array of at most [`LOOKUP_MAX`] email
/// strings (the type says `Value` so that a wrong item is a 422 naming it, not a 400).
fn lookup_emails_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Email))),
        )
        .max_items(Some(LOOKUP_MAX))
        .build()
}

#[derive(Serialize, ToSchema)]
pub struct LookupFound {
    pub email: String,
    pub id: String,
}

#[derive(Serialize, ToSchema)]
pub struct LookupResponse {
    pub found: Vec<LookupFound>,
    pub missing: Vec<String>,
}

/// Which of up to 500 emails are contacts of the project.
#[utoipa::path(post, path = "/contacts/lookup", tag = "contacts", request_body = LookupRequest,
    responses((status = 200, body = LookupResponse), (status = 422)))]
async fn lookup_contacts(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<LookupRequest>,
) -> ApiResult<Json<LookupResponse>> {
    let raw = body
        .emails
        .ok_or_else(|| ApiError::field("emails", "emails is required", "required"))?;
    if raw.len() > LOOKUP_MAX {
        return Err(ApiError::field(
            "emails",
            format!("at most {LOOKUP_MAX} emails per call (got {})", raw.len()),
            "too_many",
        ));
    }
    let mut errors = Vec::new();
    let mut emails: Vec<String> = Vec::with_capacity(raw.len());
    let mut seen = std::collections::HashSet::new();
    for (i, v) in raw.iter().enumerate() {
        let field = format!("emails.{i}");
        match v.as_str() {
            Some(s) => {
                if let Some(e) = email_field(Some(s), &field, &mut errors)
                    && seen.insert(e.as_str().to_owned())
                {
                    emails.push(e.into_string());
                }
            }
            None => errors.push(FieldError::new(field, "must be a string", "invalid_type")),
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let hits = state.store.lookup_contacts(auth.id(), &emails).await?;
    let missing = emails
        .iter()
        .filter(|e| !hits.iter().any(|(h, _)| h == *e))
        .cloned()
        .collect();
    Ok(Json(LookupResponse {
        found: hits
            .into_iter()
            .map(|(email, id)| LookupFound {
                email,
                id: id.to_string(),
            })
            .collect(),
        missing,
    }))
}
