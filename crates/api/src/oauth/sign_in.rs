//! Which Herald user a provider account signs in as.
//!
//! In order: the user its identity is linked to; else the user with its verified address,
//! linking the identity (the provider proved the address, so it is marked verified too); else
//! a new user without a password, created the way sign-up creates one (`DISABLE_SIGNUPS`
//! refuses it; invitations to the address become memberships). An account whose provider
//! reports no verified address signs in only through an identity linked before.

use axum::http::StatusCode;
use herald_core::email::EmailAddress;
use herald_store::StoreError;
use herald_store::accounts::User;

use super::Provider;
use super::provider_api::ProviderAccount;
use crate::error::{ApiError, ApiResult};
use crate::routes::accounts::{insert_user, refuse_if_signups_disabled};
use crate::state::AppState;

fn unverified(provider: Provider) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "OAUTH_EMAIL_NOT_VERIFIED",
        format!(
            "Your {} account has no verified primary email address",
            provider.name()
        ),
    )
    .with_suggestion(format!(
        "Verify your primary email address at {}, then sign in again",
        provider.name()
    ))
}

/// The user `account` signs in as (created or linked if need be).
pub async fn user_for(
    state: &AppState,
    provider: Provider,
    account: &ProviderAccount,
) -> ApiResult<User> {
    let now = state.engine.now();
    if let Some(user) = state
        .store
        .sign_in_oauth_identity(provider.id(), &account.subject, now)
        .await?
    {
        return Ok(user);
    }
    let email = account
        .verified_email
        .as_deref()
        .and_then(|e| EmailAddress::parse(e).ok())
        .ok_or_else(|| unverified(provider))?;
    let user = match state.store.user_by_email(email.as_str()).await? {
        Some(u) => u,
        None => {
            refuse_if_signups_disabled(state)?;
            match insert_user(state, &email, User::NO_PASSWORD.to_owned()).await {
                Ok(u) => u,
                // Created by a concurrent sign-in or sign-up meanwhile: link to that one.
                Err(StoreError::Conflict(_)) => state
                    .store
                    .user_by_email(email.as_str())
                    .await?
                    .ok_or_else(|| ApiError::internal("user vanished after a conflict"))?,
                Err(e) => return Err(e.into()),
            }
        }
    };
    state
        .store
        .link_oauth_identity(
            provider.id(),
            &account.subject,
            user.id,
            email.as_str(),
            now,
        )
        .await?;
    Ok(user)
}
