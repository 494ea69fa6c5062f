//! `GET /metrics` (Prometheus text format) and the middleware that counts every request.
//!
//! Invariants:
//! - The endpoint is off (404, like an unknown route) unless `HERALD_METRICS_TOKEN` is set;
//!   then it needs `Authorization: Bearer <token>` (401 otherwise). The token is compared in
//!   constant time (through SHA-256 digests).
//! - Requests are labelled by the matched route template (`/emails/{id}`, never the id), or
//!   `unmatched` for the fallback, so the series count is bounded.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::state::AppState;

/// Counts the request and its latency under its route template and final status.
pub async fn track_requests(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = req.method().as_str().to_owned();
    let started = Instant::now();
    let res = next.run(req).await;
    herald_engine::metrics::http_request(
        &route,
        &method,
        res.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    res
}

/// The scrape.
pub async fn scrape(State(state): State<AppState>, req: Request) -> Result<Response, ApiError> {
    let Some(token) = state.settings.metrics_token.as_deref() else {
        return Err(ApiError::not_found("NOT_FOUND", "Route"));
    };
    let sent = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let Some(sent) = sent else {
        return Err(
            ApiError::unauthorized("MISSING_AUTH", "The metrics token is required")
                .with_suggestion("Send Authorization: Bearer <HERALD_METRICS_TOKEN>"),
        );
    };
    if Sha256::digest(sent.as_bytes()) != Sha256::digest(token.as_bytes()) {
        return Err(ApiError::unauthorized(
            "UNAUTHORIZED",
            "The metrics token is not valid",
        ));
    }
    let body =
        herald_engine::metrics::render(&state.store, &state.engine.settings.node_name).await?;
    let mut res = body.into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(res)
}
