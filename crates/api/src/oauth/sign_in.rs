//! Which Herald user a provider account signs in as: `Engine::oauth_sign_in` decides (the
//! linked identity; else the account with the provider-verified address, taken over when that
//! address was never verified; else a new user without a password, joining the address's
//! invitations). Here: the provider's answer in, the API's errors out. `DISABLE_SIGNUPS`
//! refuses a new user; an account whose provider reports no verified address signs in only
//! through an identity linked before.

use axum::http::StatusCode;
use herald_core::email::EmailAddress;
use herald_engine::accounts::{OAuthSignInError, ProviderIdentity};
use herald_store::accounts::User;

use super::Provider;
use super::provider_api::ProviderAccount;
use crate::error::{ApiError, ApiResult};
use crate::routes::signup::signups_disabled;
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

/// The user `account` signs in as (created, linked or taken over if need be).
pub async fn user_for(
    state: &AppState,
    provider: Provider,
    account: &ProviderAccount,
) -> ApiResult<User> {
    let email = account
        .verified_email
        .as_deref()
        .and_then(|e| EmailAddress::parse(e).ok());
    let identity = ProviderIdentity {
        provider: provider.id(),
        subject: &account.subject,
        verified_email: email.as_ref(),
    };
    let signups_open = !state.settings.disable_signups;
    match state.engine.oauth_sign_in(identity, signups_open).await {
        Ok(user) => Ok(user),
        Err(OAuthSignInError::NoVerifiedEmail) => Err(unverified(provider)),
        Err(OAuthSignInError::SignUpsDisabled) => Err(signups_disabled()),
        Err(OAuthSignInError::Store(e)) => Err(e.into()),
    }
}
