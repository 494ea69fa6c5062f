//! `POST /auth/signup` and the sign-up of the invitation page: one path,
//! [`create_account`], around the engine's `Engine::create_user`. An invitation token proves
//! the address (verified, the invitation's project joined at once); without one, the
//! verification link is mailed and no project is joined until the address is verified.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use herald_core::account_i18n::AccountStrings;
use herald_core::email::EmailAddress;
use herald_core::kinds::TokenKind;
use herald_engine::accounts::{AddressProof, NewUser, SignUpError};
use herald_store::accounts::User;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::account_mail::{TokenFor, send_token_mail, token_hash};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::language::RequestLanguage;
use crate::routes::accounts::{UserResponse, password_error, start_session, with_cookie};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(signup))
}

#[derive(Deserialize, ToSchema)]
pub struct SignupRequest {
    #[schema(format = Email, required = true)]
    pub email: Option<String>,
    /// 8 to 256 characters.
    #[schema(min_length = 8, max_length = 256, required = true)]
    pub password: Option<String>,
    /// The token of an invitation link (`/signup?invitation=<token>`), for the invited
    /// address: it proves the mailbox, so the account is verified and joins the project at
    /// once. Without it, a sign-up joins no project until its address is verified.
    pub invitation: Option<String>,
}

pub fn parse_signup(c: SignupRequest) -> ApiResult<(EmailAddress, String, Option<String>)> {
    let mut errors = Vec::new();
    let email = match c.email.as_deref().map(EmailAddress::parse) {
        Some(Ok(e)) => Some(e),
        Some(Err(e)) => {
            errors.push(crate::error::FieldError::new(
                "email",
                e.to_string(),
                "invalid_email",
            ));
            None
        }
        None => {
            errors.push(crate::error::FieldError::new(
                "email",
                "email is required",
                "required",
            ));
            None
        }
    };
    let password = c.password.unwrap_or_default();
    errors.extend(password_error("password", &password));
    let invitation = match c.invitation.map(|t| t.trim().to_owned()) {
        Some(t) if t.is_empty() || t.len() > 256 => {
            errors.push(crate::error::FieldError::new(
                "invitation",
                "invitation must be the token of an invitation link",
                "invalid",
            ));
            None
        }
        other => other,
    };
    match email {
        Some(e) if errors.is_empty() => Ok((e, password, invitation)),
        _ => Err(ApiError::validation(errors)),
    }
}

/// Creates an account and signs it in (unless sign-in waits for a verified address). With an
/// invitation token, the account joins the invitation's project at once.
#[utoipa::path(post, path = "/auth/signup", tag = "account", request_body = SignupRequest,
    responses((status = 201, body = UserResponse),
        (status = 400, description = "INVALID_TOKEN: the invitation is unknown, used or expired"),
        (status = 403, description = "Sign-ups disabled"), (status = 409),
        (status = 422, description = "VALIDATION_ERROR, or an invitation for another address"),
        (status = 429, description = "RATE_LIMIT_EXCEEDED: too many sign-ins waiting for a password check")))]
async fn signup(
    State(state): State<AppState>,
    lang: RequestLanguage,
    ApiJson(body): ApiJson<SignupRequest>,
) -> ApiResult<Response> {
    let (user, cookie) = create_account(&state, body, lang.0).await?;
    Ok(match cookie {
        Some(c) => with_cookie(StatusCode::CREATED, c, UserResponse::from(&user)),
        None => (StatusCode::CREATED, Json(UserResponse::from(&user))).into_response(),
    })
}

/// Sign-up (the API and the invitation page), through `Engine::create_user`: an invitation
/// token proves the address (verified, its project joined); without one, the verification
/// link is mailed (in `lang`) and nothing is joined until it is followed. Opens a session
/// unless sign-in waits for a verified address.
pub async fn create_account(
    state: &AppState,
    body: SignupRequest,
    lang: &'static AccountStrings,
) -> ApiResult<(User, Option<String>)> {
    refuse_if_signups_disabled(state)?;
    let (email, password, invitation) = parse_signup(body)?;
    let invitation_hash = invitation.as_deref().map(token_hash);
    let proof = match &invitation_hash {
        Some(h) => AddressProof::Invitation { token_hash: h },
        None => AddressProof::Unproven,
    };
    let password_hash = state.passwords.hash(password).await?;
    let created = state
        .engine
        .create_user(NewUser {
            email: &email,
            password_hash,
            proof,
        })
        .await?;
    let user = created.user;
    if user.email_verified_at.is_none() {
        send_token_mail(
            state,
            TokenKind::VerifyEmail,
            &email,
            TokenFor {
                user: Some(user.id),
                project: None,
            },
            None,
            lang,
        )
        .await?;
        if state.settings.require_email_verification {
            // No session until the address is proven.
            return Ok((user, None));
        }
    }
    let cookie = start_session(state, user.id).await?;
    Ok((user, Some(cookie)))
}

impl From<SignUpError> for ApiError {
    fn from(e: SignUpError) -> Self {
        match e {
            SignUpError::EmailTaken => {
                ApiError::conflict("An account with this email already exists")
            }
            SignUpError::InvalidInvitation => crate::routes::account_tokens::invalid_token(),
            SignUpError::InvitationForAnotherAddress => ApiError::field(
                "invitation",
                "this invitation is for another email address",
                "invitation_mismatch",
            )
            .with_suggestion("Sign up with the address the invitation was mailed to"),
            SignUpError::Store(e) => e.into(),
        }
    }
}

/// 403 `FORBIDDEN` when `DISABLE_SIGNUPS` is set (sign-up and the invitation page).
fn refuse_if_signups_disabled(state: &AppState) -> ApiResult<()> {
    if state.settings.disable_signups {
        return Err(signups_disabled());
    }
    Ok(())
}

/// The refusal of a sign-up (API, invitation page, or OAuth sign-in of an address with no
/// account) under `DISABLE_SIGNUPS`.
pub(crate) fn signups_disabled() -> ApiError {
    ApiError::forbidden("FORBIDDEN", "Sign-ups are disabled on this server")
}
