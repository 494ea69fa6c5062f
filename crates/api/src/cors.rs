//! CORS: `POST /v1/track` is meant for browsers (the public key ships in page code), so it
//! answers any origin; every other route stays closed to cross-origin browsers.
//!
//! Invariants:
//! - Only the exact path [`TRACK_PATH`] ever carries `Access-Control-*` headers; no other
//!   response has them, so browsers refuse cross-origin reads and non-simple requests there.
//! - A preflight (`OPTIONS` with `Access-Control-Request-Method`) of `/v1/track` is answered
//!   here with 204, before authentication and rate limiting (a preflight carries no key).
//! - Every answer of `/v1/track` carries `Access-Control-Allow-Origin: *`, its errors (401,
//!   422, 429, ...) included, so page code can read why a call failed. Credentials (cookies)
//!   are never allowed cross-origin: `*` cannot be combined with them.
//!
//! This layer runs just inside the envelope (which adds `X-Request-Id` to every answer,
//! preflights included), outside authentication and rate limiting, so it sees their answers.
//!
//! Why not tower-http's `CorsLayer`: read in tower-http 0.7 (`cors/mod.rs`, `Cors::call`), it
//! answers every `OPTIONS` request itself, with or without `Access-Control-Request-Method`,
//! and with status 200, while the tested contract (`track::cors_is_open_on_v1_track_only`)
//! is a 204 preflight on the one path and no CORS header anywhere else, where an `OPTIONS`
//! must reach the router's own 405. Scoping it to one path and rewriting its status would
//! take as much code as this middleware, so the rule stays written out here.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

/// The one cross-origin route.
pub const TRACK_PATH: &str = "/v1/track";
/// Request headers a cross-origin caller may send.
pub const ALLOWED_HEADERS: &str = "Authorization, Content-Type, Idempotency-Key";
/// Response headers a cross-origin caller may read.
const EXPOSED_HEADERS: &str =
    "X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset";
/// How long a browser may cache a preflight answer, in seconds.
const MAX_AGE: &str = "86400";

/// The middleware: answers preflights of `/v1/track` and adds the headers to its answers.
pub async fn track_cors(req: Request, next: Next) -> Response {
    if req.uri().path() != TRACK_PATH {
        return next.run(req).await;
    }
    if req.method() == Method::OPTIONS
        && req
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        let mut res = Response::new(Body::empty());
        *res.status_mut() = StatusCode::NO_CONTENT;
        let h = res.headers_mut();
        allow_origin(h);
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("POST, OPTIONS"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(ALLOWED_HEADERS),
        );
        h.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(MAX_AGE),
        );
        return res;
    }
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    allow_origin(h);
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
    res
}

fn allow_origin(h: &mut HeaderMap) {
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
}
