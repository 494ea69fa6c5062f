//! Memory of request bodies in flight: a declared `Content-Length` over the route's limit is
//! answered 413 before any of the body is read, and large bodies share one byte budget.
//!
//! Invariants (DECISIONS.md "Envelopes and errors"):
//! - A request whose `Content-Length` exceeds its route's limit ([`route_limit`]) is refused
//!   with 413 `PAYLOAD_TOO_LARGE` without reading its body; bodies without a length are still
//!   cut at the limit while being read (`DefaultBodyLimit`).
//! - A request whose body may exceed [`LARGE_BODY_BYTES`] (its declared length, or the route's
//!   limit when it declares none) holds that many bytes of the budget from before its body is
//!   read until its response is produced. Requests that do not fit wait their turn (first
//!   come, first served); one that waited [`BUDGET_WAIT`] answers 503 `SERVICE_UNAVAILABLE`
//!   with `Retry-After`. A body larger than the whole budget runs alone.
//!   Small bodies never wait.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::envelope::payload_too_large;
use crate::error::ApiError;
use crate::routes::contact_jobs::{IMPORT_BODY_LIMIT, MULTIPART_OVERHEAD};
use crate::routes::send::SEND_BODY_LIMIT;
use crate::state::AppState;

/// Bodies up to this size are not counted against the budget.
pub const LARGE_BODY_BYTES: usize = 64 * 1024;
/// How long a large request waits for room in the budget.
pub const BUDGET_WAIT: Duration = Duration::from_secs(30);
const UNIT: usize = 1024;

/// The shared budget, counted in KiB.
pub struct BodyBudget {
    units: Arc<Semaphore>,
    total: u32,
}

impl BodyBudget {
    pub fn new(bytes: usize) -> BodyBudget {
        let total = u32::try_from(bytes.div_ceil(UNIT))
            .unwrap_or(u32::MAX >> 4)
            .clamp(1, u32::MAX >> 4);
        BodyBudget {
            units: Arc::new(Semaphore::new(total as usize)),
            total,
        }
    }

    /// Units a body of `bytes` takes: never more than the whole budget.
    fn units_for(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.div_ceil(UNIT)).map_or(self.total, |u| u.min(self.total))
    }
}

/// The largest body `path` accepts (`upload` is the configured image limit).
pub fn route_limit(path: &str, default: usize, upload: usize) -> usize {
    match path {
        "/v1/send" => SEND_BODY_LIMIT,
        "/contacts/import" => IMPORT_BODY_LIMIT,
        "/uploads/image" => upload.saturating_add(MULTIPART_OVERHEAD),
        _ => default,
    }
}

/// The middleware enforcing both rules.
pub async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let upload = state.engine.settings.upload_max_bytes;
    let limit = route_limit(req.uri().path(), state.settings.max_body_bytes, upload);
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let weight = match declared {
        Some(len) if len > limit as u64 => return payload_too_large().into_response(),
        Some(len) => usize::try_from(len).unwrap_or(limit),
        None if req.headers().contains_key(header::TRANSFER_ENCODING) => limit,
        None => 0,
    };
    if weight <= LARGE_BODY_BYTES {
        return next.run(req).await;
    }
    let budget = &state.body_budget;
    let wait = budget
        .units
        .clone()
        .acquire_many_owned(budget.units_for(weight));
    match tokio::time::timeout(BUDGET_WAIT, wait).await {
        Ok(Ok(_permit)) => next.run(req).await,
        _ => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "SERVICE_UNAVAILABLE",
            "Too many large requests are being read right now",
        )
        .with_suggestion("Retry in a few seconds")
        .with_retry_after(5)
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_capped_by_the_whole_budget() {
        let b = BodyBudget::new(10 * 1024);
        assert_eq!(b.total, 10);
        assert_eq!(b.units_for(1), 1);
        assert_eq!(b.units_for(4 * 1024 + 1), 5);
        assert_eq!(b.units_for(1 << 40), 10);
        assert_eq!(BodyBudget::new(0).total, 1);
    }

    #[test]
    fn send_import_and_uploads_have_their_own_limits() {
        assert_eq!(route_limit("/v1/send", 1024, 10), SEND_BODY_LIMIT);
        assert_eq!(route_limit("/contacts/import", 1024, 10), IMPORT_BODY_LIMIT);
        assert_eq!(
            route_limit("/uploads/image", 1024, 10),
            10 + MULTIPART_OVERHEAD
        );
        assert_eq!(route_limit("/contacts", 1024, 10), 1024);
    }
}
