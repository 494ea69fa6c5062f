//! Herald's HTTP API: routers per resource, authentication, the error envelope, rate limiting
//! and the OpenAPI document generated from the handlers' annotations.
#![forbid(unsafe_code)]

pub mod account_mail;
pub mod auth;
pub mod body_budget;
pub mod cors;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod language;
pub mod metrics;
pub mod oauth;
pub mod openapi;
mod openapi_requests;
pub mod pages;
pub mod query;
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
#[openapi(
    info(
        title = "Herald API",
        description = "Self-hosted email delivery and audience platform"
    ),
    components(schemas(openapi::ErrorEnvelope, openapi::ErrorDetail, error::FieldError))
)]
struct ApiDoc;

/// Every documented route, and the OpenAPI document describing exactly them.
pub fn documented() -> (Router<AppState>, serde_json::Value) {
    let (router, doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(routes::health::router())
        .merge(routes::accounts::router())
        .merge(routes::signup::router())
        .merge(routes::account_tokens::router())
        .merge(routes::oauth::router())
        .merge(routes::members::router())
        .merge(routes::project_admin::router())
        .merge(routes::security::router())
        .merge(routes::contacts::router())
        .merge(routes::contact_jobs::router())
        .merge(routes::fields::router())
        .merge(routes::events::router())
        .merge(routes::domains::router())
        .merge(routes::activity::router())
        .merge(routes::templates::router())
        .merge(routes::segments::router())
        .merge(routes::campaigns::router())
        .merge(routes::billing::router())
        .merge(routes::payments::router())
        .merge(routes::workflows::router())
        .merge(routes::password::router())
        .merge(routes::send::router())
        .merge(routes::emails::router())
        .merge(routes::verify::router())
        .merge(routes::webhooks::router())
        .merge(routes::payment_webhook::router())
        .merge(routes::track::router())
        .merge(routes::analytics::router())
        .merge(routes::uploads::router())
        .split_for_parts();
    (router, openapi::finish(doc))
}

/// The public routes of the links in mail; not in the OpenAPI document.
fn public_links() -> Router<AppState> {
    Router::new()
        .merge(routes::tracking::router())
        .merge(routes::list_pages::router())
        .merge(routes::uploads::public_router())
        .method_not_allowed_fallback(envelope::method_not_allowed_fallback)
        .layer(middleware::from_fn(extract::refuse_nul_in_url))
}

/// The whole application.
pub fn router(state: AppState) -> Router {
    router_with(state, Router::new())
}

/// The whole application with `pages` (the dashboard, `herald-web`) mounted beside the API,
/// inside authentication so that its handlers use the same extractors and session.
pub fn router_with(state: AppState, pages: Router<AppState>) -> Router {
    let (api, mut doc) = documented();
    doc["info"]["version"] = serde_json::json!(env!("CARGO_PKG_VERSION"));
    let doc_json = doc.to_string();
    let max_body = state.settings.max_body_bytes;
    api.route(
        "/openapi.json",
        get(move || async move { ([("content-type", "application/json")], doc_json) }),
    )
    .route("/metrics", get(metrics::scrape))
    // The pages of account mail links: inside authentication for the per-client limit.
    .merge(routes::account_pages::router())
    .merge(pages)
    .fallback(envelope::not_found_fallback)
    .method_not_allowed_fallback(envelope::method_not_allowed_fallback)
    // Inside authentication: an unauthenticated request is a 401 whatever its URL holds.
    .layer(middleware::from_fn(extract::refuse_nul_in_url))
    // Inside authentication: only authenticated requests hold the large-body budget.
    .layer(middleware::from_fn_with_state(
        state.clone(),
        body_budget::guard,
    ))
    .layer(middleware::from_fn_with_state(
        state.clone(),
        auth::authenticate,
    ))
    // The links in mail (pixel, clicks, list pages): outside authentication, so no key,
    // session or rate limit ever applies to them (docs/tracking.md).
    .merge(public_links())
    .layer(DefaultBodyLimit::max(max_body))
    .layer(CatchPanicLayer::custom(envelope::panic_response))
    .layer(middleware::from_fn(metrics::track_requests))
    // Inside the envelope (X-Request-Id on preflights too), outside authentication.
    .layer(middleware::from_fn(cors::track_cors))
    .layer(middleware::from_fn(envelope::envelope))
    .with_state(state)
}

/// A `worker` node's HTTP (`herald serve --role worker`): `/health` and `/metrics` only, so a
/// load balancer can watch it; every other path is the 404 envelope.
pub fn worker_router(state: AppState) -> Router {
    let (health, _) = OpenApiRouter::<AppState>::new()
        .merge(routes::health::router())
        .split_for_parts();
    health
        .route("/metrics", get(metrics::scrape))
        .fallback(envelope::not_found_fallback)
        .method_not_allowed_fallback(envelope::method_not_allowed_fallback)
        .layer(CatchPanicLayer::custom(envelope::panic_response))
        .layer(middleware::from_fn(metrics::track_requests))
        .layer(middleware::from_fn(envelope::envelope))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use axum::body::{Body, to_bytes};
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    use super::*;

    async fn boom() -> &'static str {
        panic!("secret detail")
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_a_500_envelope_without_the_panic_message() {
        let app: Router = Router::new()
            .route("/boom", get(boom))
            .layer(CatchPanicLayer::custom(envelope::panic_response))
            .layer(middleware::from_fn(envelope::envelope));
        let req = Request::builder()
            .uri("/boom")
            .body(Body::empty())
            .expect("request");
        let res = app.oneshot(req).await.expect("infallible");
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let request_id = res
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .expect("X-Request-Id");
        assert_eq!(
            res.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("application/json")
        );
        let bytes = to_bytes(res.into_body(), 64 * 1024).await.expect("body");
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("secret detail"), "{text}");
        assert!(!text.contains("panicked"), "{text}");
        let body: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON body");
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "INTERNAL_SERVER_ERROR");
        assert_eq!(body["error"]["statusCode"], 500);
        assert_eq!(body["error"]["requestId"], request_id.as_str());
        assert_eq!(body["message"], body["error"]["message"]);
    }
}
