//! The mailed-token endpoints of DECISIONS.md "Accounts": `POST /auth/verify-email`,
//! `/auth/request-verification`, `/auth/request-password-reset`, `/auth/reset-password`.
//!
//! Invariants:
//! - `request-*` answer 200 whatever the address (unknown, already verified, over its hourly
//!   mail limit), so they never reveal whether an address has an account.
//! - A token works once and only before it expires; an unknown, used, expired or
//!   other-kind token is the same 400 `INVALID_TOKEN`.
//! - A reset ends every session of the user (in the transaction that sets the password).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use herald_core::email::EmailAddress;
use herald_core::kinds::TokenKind;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::account_mail::{TokenFor, send_token_mail, token_hash};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::ApiJson;
use crate::language::RequestLanguage;
use crate::routes::accounts::password_error;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(verify_email))
        .routes(routes!(request_verification))
        .routes(routes!(request_password_reset))
        .routes(routes!(reset_password))
}

#[derive(Deserialize, ToSchema)]
pub struct TokenRequest {
    /// The token from the mailed link.
    #[schema(required = true)]
    pub token: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct EmailRequest {
    #[schema(format = Email, required = true)]
    pub email: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct ResetRequest {
    #[schema(required = true)]
    pub token: Option<String>,
    /// The new password, 8 to 256 characters.
    #[schema(min_length = 8, max_length = 256, required = true)]
    pub password: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Done {
    pub success: bool,
}

pub(crate) const DONE: Done = Done { success: true };

pub(crate) fn invalid_token() -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "INVALID_TOKEN",
        "This link is invalid, was already used, or has expired",
    )
    .with_suggestion("Ask for a new mail")
}

fn required_token(token: Option<String>) -> ApiResult<String> {
    match token.map(|t| t.trim().to_owned()) {
        Some(t) if !t.is_empty() && t.len() <= 256 => Ok(t),
        _ => Err(ApiError::field("token", "token is required", "required")),
    }
}

fn required_email(email: Option<String>) -> ApiResult<EmailAddress> {
    match email.as_deref().map(EmailAddress::parse) {
        Some(Ok(e)) => Ok(e),
        Some(Err(e)) => Err(ApiError::field("email", e.to_string(), "invalid_email")),
        None => Err(ApiError::field("email", "email is required", "required")),
    }
}

/// Marks the address of a verification token verified.
pub async fn apply_verification(state: &AppState, token: &str) -> ApiResult<()> {
    state
        .store
        .verify_email_with_token(&token_hash(token), state.engine.now())
        .await?
        .map(|_| ())
        .ok_or_else(invalid_token)
}

/// Sets a new password with a reset token; every session of the user ends.
pub async fn apply_reset(state: &AppState, token: &str, password: String) -> ApiResult<()> {
    if let Some(e) = password_error("password", &password) {
        return Err(ApiError::validation(vec![e]));
    }
    let hash = state.passwords.hash(password).await?;
    state
        .store
        .reset_password_with_token(&token_hash(token), &hash, state.engine.now())
        .await?
        .map(|_| ())
        .ok_or_else(invalid_token)
}

/// Verifies the email address with the token from the verification mail.
#[utoipa::path(post, path = "/auth/verify-email", tag = "account", request_body = TokenRequest,
    responses((status = 200, body = Done), (status = 400, description = "INVALID_TOKEN: unknown, used or expired"),
        (status = 422), (status = 429)))]
async fn verify_email(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<TokenRequest>,
) -> ApiResult<Json<Done>> {
    let token = required_token(body.token)?;
    apply_verification(&state, &token).await?;
    Ok(Json(DONE))
}

/// Mails a new verification link to an unverified account; 200 for any address.
#[utoipa::path(post, path = "/auth/request-verification", tag = "account", request_body = EmailRequest,
    responses((status = 200, body = Done), (status = 422), (status = 429)))]
async fn request_verification(
    State(state): State<AppState>,
    lang: RequestLanguage,
    ApiJson(body): ApiJson<EmailRequest>,
) -> ApiResult<Json<Done>> {
    let email = required_email(body.email)?;
    if let Some(user) = state.store.user_by_email(email.as_str()).await?
        && user.email_verified_at.is_none()
    {
        let whom = TokenFor {
            user: Some(user.id),
            project: None,
        };
        send_token_mail(&state, TokenKind::VerifyEmail, &email, whom, None, lang.0).await?;
    }
    Ok(Json(DONE))
}

/// Mails a password-reset link when the address has an account; 200 for any address.
#[utoipa::path(post, path = "/auth/request-password-reset", tag = "account", request_body = EmailRequest,
    responses((status = 200, body = Done), (status = 422), (status = 429)))]
async fn request_password_reset(
    State(state): State<AppState>,
    lang: RequestLanguage,
    ApiJson(body): ApiJson<EmailRequest>,
) -> ApiResult<Json<Done>> {
    request_reset(&state, body, lang.0).await?;
    Ok(Json(DONE))
}

/// Mails a password-reset link when the address has an account (the API and the dashboard's
/// form); nothing tells whether it has one.
pub async fn request_reset(
    state: &AppState,
    body: EmailRequest,
    lang: &'static herald_core::account_i18n::AccountStrings,
) -> ApiResult<()> {
    let email = required_email(body.email)?;
    if let Some(user) = state.store.user_by_email(email.as_str()).await? {
        let whom = TokenFor {
            user: Some(user.id),
            project: None,
        };
        send_token_mail(state, TokenKind::PasswordReset, &email, whom, None, lang).await?;
    }
    Ok(())
}

/// Sets a new password with the token from the reset mail; ends every session of the user.
#[utoipa::path(post, path = "/auth/reset-password", tag = "account", request_body = ResetRequest,
    responses((status = 200, body = Done), (status = 400, description = "INVALID_TOKEN: unknown, used or expired"),
        (status = 422), (status = 429)))]
async fn reset_password(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ResetRequest>,
) -> ApiResult<Json<Done>> {
    reset_with_token(&state, body).await?;
    Ok(Json(DONE))
}

/// Checks a reset request and sets the new password (the API and the dashboard's form).
pub async fn reset_with_token(state: &AppState, body: ResetRequest) -> ApiResult<()> {
    let mut errors: Vec<FieldError> = Vec::new();
    let token = required_token(body.token).map_err(|e| errors.extend(e.errors));
    let password = body.password.unwrap_or_default();
    errors.extend(password_error("password", &password));
    match token {
        Ok(t) if errors.is_empty() => apply_reset(state, &t, password).await,
        _ => Err(ApiError::validation(errors)),
    }
}
