//! Herald's HTTP API: routers per resource, authentication, the error envelope, rate limiting
//! and the OpenAPI document generated from the handlers' annotations.
#![forbid(unsafe_code)]

pub mod auth;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod rate_limit;
pub mod routes;
pub mod state;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

pub use state::{ApiSettings, AppState};

#[derive(OpenApi)]
#[openapi(info(title = "Herald API", description = "Self-hosted email delivery and audience platform"))]
struct ApiDoc;

/// Every documented route, and the OpenAPI document describing exactly them.
pub fn documented() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(routes::health::router())
        .merge(routes::accounts::router())
        .merge(routes::contacts::router())
        .merge(routes::fields::router())
        .merge(routes::events::router())
        .split_for_parts()
}

/// The whole application.
pub fn router(state: AppState) -> Router {
    let (api, mut doc) = documented();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    let doc_json = doc.to_json().unwrap_or_else(|_| "{}".to_owned());
    let max_body = state.settings.max_body_bytes;
    api.route(
        "/openapi.json",
        get(move || async move { ([("content-type", "application/json")], doc_json) }),
    )
    .fallback(envelope::not_found_fallback)
    .method_not_allowed_fallback(envelope::method_not_allowed_fallback)
    .layer(middleware::from_fn_with_state(state.clone(), auth::authenticate))
    .layer(DefaultBodyLimit::max(max_body))
    .layer(CatchPanicLayer::custom(envelope::panic_response))
    .layer(middleware::from_fn(envelope::envelope))
    .with_state(state)
}
