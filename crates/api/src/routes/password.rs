//! `POST /users/@me/password {currentPassword, newPassword}`: a signed-in user changes their
//! password. The current password is checked (on the hashing pool, like a login; a wrong one
//! counts as a failed login of the account from the caller's address, for the slow-down), the
//! new one follows the signup rule,
//! and every other session of the user ends server-side (DECISIONS.md "Accounts": a password
//! change invalidates sessions); the caller's own session stays.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::UserAuth;
use crate::auth::client_limit::ClientAddress;
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::ApiJson;
use crate::routes::account_tokens::Done;
use crate::routes::accounts::password_error;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(change_password))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordChange {
    #[schema(required = true)]
    pub current_password: Option<String>,
    /// 8 to 256 characters.
    #[schema(required = true, min_length = 8, max_length = 256)]
    pub new_password: Option<String>,
}

/// Changes the caller's password; other sessions end.
#[utoipa::path(post, path = "/users/@me/password", tag = "account", request_body = PasswordChange,
    responses((status = 200, body = Done), (status = 401), (status = 422), (status = 429)))]
async fn change_password(
    State(state): State<AppState>,
    auth: UserAuth,
    client: ClientAddress,
    ApiJson(body): ApiJson<PasswordChange>,
) -> ApiResult<Json<Done>> {
    set_password(&state, &auth, &client, body).await?;
    Ok(Json(Done { success: true }))
}

/// Changes the signed-in user's password after checking the current one; ends their other
/// sessions (the API and the dashboard's account page).
pub async fn set_password(
    state: &AppState,
    auth: &UserAuth,
    client: &ClientAddress,
    body: PasswordChange,
) -> ApiResult<()> {
    let new = body.new_password.unwrap_or_default();
    if let Some(e) = password_error("newPassword", &new) {
        return Err(ApiError::validation(vec![e]));
    }
    let user =
        state.store.user_by_id(auth.user).await?.ok_or_else(|| {
            ApiError::unauthorized("UNAUTHORIZED", "The account no longer exists")
        })?;
    crate::auth::login_throttle::check(state, user.email.as_str(), client).await?;
    let ok = state
        .passwords
        .verify(
            body.current_password.unwrap_or_default(),
            Some(user.password_hash.clone()),
        )
        .await?;
    if !ok {
        crate::auth::login_throttle::failed(state, user.email.as_str(), client).await?;
        return Err(ApiError::validation(vec![FieldError::new(
            "currentPassword",
            "the current password is not right",
            "invalid_credentials",
        )]));
    }
    let hash = state.passwords.hash(new).await?;
    state
        .store
        .change_password(auth.user, &hash, &auth.sid, state.engine.now())
        .await?;
    Ok(())
}
