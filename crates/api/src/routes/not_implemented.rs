//! Routes of SPEC.md that this version does not implement yet: each answers 501
//! `NOT_IMPLEMENTED` with what is missing (never a fake success). Not in the OpenAPI document
//! until they exist. See docs/accounts.md "Not done yet".

use axum::Router;
use axum::routing::get;

use crate::error::ApiError;
use crate::state::AppState;

async fn oauth() -> ApiError {
    ApiError::not_implemented("OAuth sign-in (GitHub, Google)")
        .with_suggestion("Sign in with email and password: POST /auth/login")
}

pub fn router() -> Router<AppState> {
    Router::new().route("/auth/oauth-config", get(oauth))
}
