//! The sign-in slow-down of DECISIONS.md "Accounts": after
//! [`account::LOGIN_FAILURES_ALLOWED`] failed sign-ins for one account from one client address
//! within [`account::LOGIN_FAILURE_WINDOW_MS`], that account's sign-in from that address
//! answers 429 with `Retry-After` until the oldest failure leaves the window (the right
//! password included). Another client address is not affected, so guessing from one address
//! never locks the owner out; a success resets the count of its own pair. The client address
//! is the one of the per-client limits ([`ClientAddress`]). Failures are stored, so every node
//! and a restart see the same count.

use axum::http::StatusCode;
use herald_core::account;

use super::client_limit::ClientAddress;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Refuses the sign-in while the account is slowed down for this client address.
pub async fn check(state: &AppState, email: &str, client: &ClientAddress) -> ApiResult<()> {
    let now = state.engine.now();
    let (count, oldest) = state
        .store
        .login_failures_since(email, &client.key(), now - account::LOGIN_FAILURE_WINDOW_MS)
        .await?;
    if count < account::LOGIN_FAILURES_ALLOWED {
        return Ok(());
    }
    let until = oldest.unwrap_or(now) + account::LOGIN_FAILURE_WINDOW_MS;
    let secs = ((until - now).max(0) + 999) / 1000;
    Err(ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RATE_LIMIT_EXCEEDED",
        "Too many failed sign-ins for this account from your address",
    )
    .with_suggestion(format!("Retry after {secs} seconds"))
    .with_retry_after(secs.max(1) as u64))
}

pub async fn failed(state: &AppState, email: &str, client: &ClientAddress) -> ApiResult<()> {
    let now = state.engine.now();
    Ok(state
        .store
        .record_login_failure(
            email,
            &client.key(),
            now,
            now - account::LOGIN_FAILURE_WINDOW_MS,
        )
        .await?)
}

pub async fn succeeded(state: &AppState, email: &str, client: &ClientAddress) -> ApiResult<()> {
    Ok(state
        .store
        .clear_login_failures(email, &client.key())
        .await?)
}
