//! `POST /uploads/image`: an image for template bodies, checked by content (PNG, JPEG, GIF,
//! WebP), at most `upload_max_bytes` (413 beyond, from `Content-Length` and while streaming),
//! stored under its content-addressed name and served publicly at `{PUBLIC_URL}/uploads/<name>`
//! (outside authentication, since mail clients fetch it).

use axum::Json;
use axum::body::Body;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use herald_core::image_kind::ImageKind;
use herald_engine::uploads::{image_name, parse_image_name};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::routes::contact_jobs::file_part;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    // The configured limit is enforced by the body-budget guard (Content-Length) and while the
    // part streams; axum's fixed default limit would cut it first.
    OpenApiRouter::new()
        .routes(routes!(upload_image))
        .layer(DefaultBodyLimit::disable())
}

/// The public route serving stored images.
pub fn public_router() -> axum::Router<AppState> {
    axum::Router::new().route("/uploads/{name}", get(serve_image))
}

/// The multipart form of an upload: one part named `file` holding the image.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct UploadForm {
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadResponse {
    /// Public address of the image.
    pub url: String,
    /// Content-addressed name (SHA-256 of the bytes and the format's extension).
    pub name: String,
    pub content_type: String,
    pub size: usize,
}

/// Stores an image (PNG, JPEG, GIF or WebP by content) and answers its public URL.
#[utoipa::path(post, path = "/uploads/image", tag = "uploads",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 201, body = UploadResponse), (status = 413), (status = 422)))]
async fn upload_image(
    State(state): State<AppState>,
    _auth: ProjectAuth,
    multipart: Result<Multipart, MultipartRejection>,
) -> ApiResult<(StatusCode, Json<UploadResponse>)> {
    let bytes = file_part(multipart, state.engine.settings.upload_max_bytes).await?;
    let kind = ImageKind::sniff(&bytes).ok_or_else(|| {
        ApiError::field(
            "file",
            "the file is not a PNG, JPEG, GIF or WebP image",
            "invalid_image",
        )
    })?;
    let name = image_name(&bytes, kind);
    state
        .engine
        .uploads
        .put(&name, &bytes)
        .await
        .map_err(ApiError::internal)?;
    let base = state.settings.public_url.trim_end_matches('/');
    Ok((
        StatusCode::CREATED,
        Json(UploadResponse {
            url: format!("{base}/uploads/{name}"),
            name,
            content_type: kind.content_type().to_owned(),
            size: bytes.len(),
        }),
    ))
}

fn image_not_found() -> ApiError {
    ApiError::not_found("NOT_FOUND", "Image")
}

async fn serve_image(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    let Some(kind) = parse_image_name(&name) else {
        return image_not_found().into_response();
    };
    match state.engine.uploads.get(&name).await {
        Ok(Some(bytes)) => (
            [
                (header::CONTENT_TYPE, kind.content_type()),
                (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            Body::from(bytes),
        )
            .into_response(),
        Ok(None) => image_not_found().into_response(),
        Err(e) => ApiError::internal(e).into_response(),
    }
}
