//! Contact jobs over HTTP: `POST /contacts/import` (multipart CSV), the bulk operations, and
//! polling either by `jobId` (DECISIONS.md "Jobs"). A job is created with its queue job in one
//! transaction and answered 202 `{jobId, message}`; the engine's contact-job worker runs it.

use axum::Json;
use axum::extract::multipart::{Field, MultipartError};
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::StatusCode;
use herald_core::contact_import::{IMPORT_MAX_BYTES, read_header};
use herald_core::contact_jobs::{BULK_MAX_IDS, JobOperation};
use herald_core::ids::Uuid;
use herald_store::contact_jobs::ContactJob;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::envelope::payload_too_large;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::{ApiJson, path_id};
use crate::state::AppState;

/// Room for the multipart framing around the file.
pub const MULTIPART_OVERHEAD: usize = 64 * 1024;
/// The largest body `POST /contacts/import` reads.
pub const IMPORT_BODY_LIMIT: usize = IMPORT_MAX_BYTES + MULTIPART_OVERHEAD;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(import_contacts))
        .layer(DefaultBodyLimit::max(IMPORT_BODY_LIMIT))
        .routes(routes!(get_import))
        .routes(routes!(bulk_subscribe))
        .routes(routes!(bulk_unsubscribe))
        .routes(routes!(bulk_delete))
        .routes(routes!(get_bulk))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobAccepted {
    pub job_id: String,
    pub message: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobResponse {
    pub id: String,
    /// `waiting`, `active`, `completed` or `failed`.
    pub state: String,
    /// 0-100.
    pub progress: i32,
    /// Import: `{created, updated, skipped, errors: [{row, error}]}`; bulk: `{operation,
    /// totalRequested, successCount, unchangedCount, failureCount, errors: [{contactId, error}]}`;
    /// null until the job has done something.
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    pub failed_reason: Option<String>,
}

impl From<ContactJob> for JobResponse {
    fn from(j: ContactJob) -> Self {
        let empty = j.result.as_object().is_some_and(serde_json::Map::is_empty);
        Self {
            id: j.id.to_string(),
            state: j.state.as_str().to_owned(),
            progress: j.progress,
            result: (!empty).then_some(j.result),
            failed_reason: j.failed_reason,
        }
    }
}

/// The multipart form of an import: one part named `file` holding the CSV.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ImportForm {
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

/// The 202 answer of a queued job.
fn accepted(id: Uuid, operation: JobOperation) -> (StatusCode, Json<JobAccepted>) {
    (
        StatusCode::ACCEPTED,
        Json(JobAccepted {
            job_id: id.to_string(),
            message: format!("{} job queued", operation.as_str()),
        }),
    )
}

/// Queues a contact job of `project` and wakes the worker: the job's id.
async fn queue_job(
    state: &AppState,
    project: Uuid,
    operation: JobOperation,
    input: &[u8],
) -> ApiResult<Uuid> {
    let engine = &state.engine;
    let max_attempts = i32::try_from(engine.settings.send_max_attempts).unwrap_or(8);
    let mut tx = state.store.begin().await?;
    let id = herald_store::contact_jobs::create(
        &mut tx,
        project,
        operation,
        input,
        engine.now(),
        max_attempts,
    )
    .await?;
    tx.commit().await?;
    engine.contact_jobs_queued();
    Ok(id)
}

/// Checks a CSV file's header and queues its import (the API and the dashboard's form).
pub async fn queue_import(state: &AppState, project: Uuid, bytes: &[u8]) -> ApiResult<Uuid> {
    // A file whose header is unusable is refused now; row problems are the job's to report.
    read_header(bytes).map_err(|p| ApiError::field("file", p.0, p.1.code()))?;
    queue_job(state, project, JobOperation::Import, bytes).await
}

/// Checks a bulk request and queues it (the API and the dashboard's bulk actions).
pub async fn queue_bulk(
    state: &AppState,
    project: Uuid,
    body: BulkRequest,
    operation: JobOperation,
) -> ApiResult<Uuid> {
    let ids = bulk_ids(body)?;
    let input = serde_json::to_vec(&ids).map_err(ApiError::internal)?;
    queue_job(state, project, operation, &input).await
}

/// A job of `project` by its raw id (`bulk` for the bulk operations, else imports).
pub async fn job_status(
    state: &AppState,
    project: Uuid,
    raw: &str,
    bulk: bool,
) -> ApiResult<JobResponse> {
    let id = path_id(raw, "JOB_NOT_FOUND", "Job")?;
    let job = state
        .store
        .contact_job(project, id, bulk)
        .await?
        .ok_or_else(job_not_found)?;
    Ok(job.into())
}

fn multipart_error(e: &MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        payload_too_large()
    } else {
        ApiError::field("file", e.body_text(), "invalid_multipart")
    }
}

/// Reads a part to its end, refusing more than `max` bytes while it streams (413).
pub(crate) async fn read_part(mut field: Field<'_>, max: usize) -> ApiResult<Vec<u8>> {
    let mut bytes = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(|e| multipart_error(&e))? {
        if bytes.len() + chunk.len() > max {
            return Err(payload_too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The bytes of the part named `file` of a multipart body.
pub async fn file_part(
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
    max: usize,
) -> ApiResult<Vec<u8>> {
    let mut multipart = multipart.map_err(|e| {
        ApiError::field(
            "file",
            format!("a multipart/form-data body with a part named file is required ({e})"),
            "invalid_multipart",
        )
    })?;
    // Other parts are read (and dropped) within the framing allowance, so a body without a
    // declared length is bounded on every route, whatever its parts.
    let mut other = 0;
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| multipart_error(&e))?
    {
        if field.name() == Some("file") {
            return read_part(field, max).await;
        }
        other += read_part(field, MULTIPART_OVERHEAD - other).await?.len();
    }
    Err(ApiError::field(
        "file",
        "a part named file is required",
        "required",
    ))
}

/// Queues the import of a CSV file (at most 5 MB; header row with an `email` column).
#[utoipa::path(post, path = "/contacts/import", tag = "contacts",
    request_body(content = ImportForm, content_type = "multipart/form-data"),
    responses((status = 202, body = JobAccepted), (status = 413), (status = 422)))]
async fn import_contacts(
    State(state): State<AppState>,
    auth: ProjectAuth,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> ApiResult<(StatusCode, Json<JobAccepted>)> {
    let bytes = file_part(multipart, IMPORT_MAX_BYTES).await?;
    let id = queue_import(&state, auth.id(), &bytes).await?;
    Ok(accepted(id, JobOperation::Import))
}

fn job_not_found() -> ApiError {
    ApiError::not_found("JOB_NOT_FOUND", "Job")
}

async fn poll(
    state: &AppState,
    auth: &ProjectAuth,
    raw: &str,
    bulk: bool,
) -> ApiResult<Json<JobResponse>> {
    Ok(Json(job_status(state, auth.id(), raw, bulk).await?))
}

/// An import job's state, progress and result.
#[utoipa::path(get, path = "/contacts/import/{jobId}", tag = "contacts", params(("jobId" = String, Path)),
    responses((status = 200, body = JobResponse), (status = 404)))]
async fn get_import(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(job_id): Path<String>,
) -> ApiResult<Json<JobResponse>> {
    poll(&state, &auth, &job_id, false).await
}

/// A bulk job's state, progress and result.
#[utoipa::path(get, path = "/contacts/bulk/{jobId}", tag = "contacts", params(("jobId" = String, Path)),
    responses((status = 200, body = JobResponse), (status = 404)))]
async fn get_bulk(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(job_id): Path<String>,
) -> ApiResult<Json<JobResponse>> {
    poll(&state, &auth, &job_id, true).await
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkRequest {
    /// 1 to 1,000 contact ids.
    #[schema(value_type = Vec<String>, min_items = 1, max_items = 1000, required = true)]
    pub contact_ids: Option<Vec<Value>>,
}

/// The ids of a bulk request: 1 to [`BULK_MAX_IDS`] strings.
fn bulk_ids(body: BulkRequest) -> ApiResult<Vec<String>> {
    let raw = body
        .contact_ids
        .ok_or_else(|| ApiError::field("contactIds", "contactIds is required", "required"))?;
    if raw.is_empty() || raw.len() > BULK_MAX_IDS {
        return Err(ApiError::field(
            "contactIds",
            format!(
                "1 to {BULK_MAX_IDS} contact ids per call (got {})",
                raw.len()
            ),
            "out_of_range",
        ));
    }
    let mut errors = Vec::new();
    let mut ids = Vec::with_capacity(raw.len());
    for (i, v) in raw.into_iter().enumerate() {
        match v {
            Value::String(s) => ids.push(s),
            _ => errors.push(FieldError::new(
                format!("contactIds.{i}"),
                "must be a string",
                "invalid_type",
            )),
        }
    }
    if errors.is_empty() {
        Ok(ids)
    } else {
        Err(ApiError::validation(errors))
    }
}

async fn bulk(
    state: AppState,
    auth: ProjectAuth,
    body: BulkRequest,
    operation: JobOperation,
) -> ApiResult<(StatusCode, Json<JobAccepted>)> {
    let id = queue_bulk(&state, auth.id(), body, operation).await?;
    Ok(accepted(id, operation))
}

/// Queues subscribing up to 1,000 contacts (each change records `contact.subscribed`).
#[utoipa::path(post, path = "/contacts/bulk-subscribe", tag = "contacts", request_body = BulkRequest,
    responses((status = 202, body = JobAccepted), (status = 422)))]
async fn bulk_subscribe(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<BulkRequest>,
) -> ApiResult<(StatusCode, Json<JobAccepted>)> {
    bulk(state, auth, body, JobOperation::Subscribe).await
}

/// Queues unsubscribing up to 1,000 contacts (each change records `contact.unsubscribed`).
#[utoipa::path(post, path = "/contacts/bulk-unsubscribe", tag = "contacts", request_body = BulkRequest,
    responses((status = 202, body = JobAccepted), (status = 422)))]
async fn bulk_unsubscribe(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<BulkRequest>,
) -> ApiResult<(StatusCode, Json<JobAccepted>)> {
    bulk(state, auth, body, JobOperation::Unsubscribe).await
}

/// Queues deleting up to 1,000 contacts (their events go with them).
#[utoipa::path(post, path = "/contacts/bulk-delete", tag = "contacts", request_body = BulkRequest,
    responses((status = 202, body = JobAccepted), (status = 422)))]
async fn bulk_delete(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<BulkRequest>,
) -> ApiResult<(StatusCode, Json<JobAccepted>)> {
    bulk(state, auth, body, JobOperation::Delete).await
}
