//! The sign-in slow-down of DECISIONS.md "Accounts": after
//! [`account::LOGIN_FAILURES_ALLOWED`] failed sign-ins for one address within
//! [`account::LOGIN_FAILURE_WINDOW_MS`], its sign-in answers 429 with `Retry-After` until the
//! oldest failure leaves the window (the right password included); a success resets the count.
//! Failures are stored, so every node and a restart see the same count.

use axum::http::StatusCode;
use herald_core::account;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Refuses the sign-in while the address is slowed down.
pub async fn check(state: &AppState, email: &str) -> ApiResult<()> {
    let now = state.engine.now();
    let (count, oldest) = state
        .store
        .login_failures_since(email, now - account::LOGIN_FAILURE_WINDOW_MS)
        .await?;
    if count < account::LOGIN_FAILURES_ALLOWED {
        return Ok(());
    }
    let until = oldest.unwrap_or(now) + account::LOGIN_FAILURE_WINDOW_MS;
    let secs = ((until - now).max(0) + 999) / 1000;
    Err(ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RATE_LIMIT_EXCEEDED",
        "Too many failed sign-ins for this account",
    )
    .with_suggestion(format!("Retry after {secs} seconds"))
    .with_retry_after(secs.max(1) as u64))
}

pub async fn failed(state: &AppState, email: &str) -> ApiResult<()> {
    Ok(state
        .store
        .record_login_failure(email, state.engine.now())
        .await?)
}

pub async fn succeeded(state: &AppState, email: &str) -> ApiResult<()> {
    Ok(state.store.clear_login_failures(email).await?)
}
