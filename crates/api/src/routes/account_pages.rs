//! The small server-rendered pages the links of account mail open (DECISIONS.md "Accounts"):
//! `GET|POST /verify-email?token=`, `GET|POST /reset-password?token=`,
//! `GET|POST /signup?invitation=`. Their forms post back to the same path, whose handler runs
//! the API's own code (`account_tokens::apply_*`, `accounts::create_account`); no JavaScript.
//! Same look as the list pages ([`crate::pages`]); English only for now (there is no contact
//! locale or project language to choose from before sign-in).
//!
//! A GET never changes anything (mail scanners follow links); a token is spent only by the
//! POST. Not in the OpenAPI document.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

use crate::account_mail::token_hash;
use crate::error::ApiError;
use crate::pages::{self, button_form, document, paragraph, password_form, status};
use crate::routes::account_tokens::{apply_reset, apply_verification};
use crate::routes::accounts::{Credentials, create_account};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/verify-email", get(verify_page).post(verify_submit))
        .route("/reset-password", get(reset_page).post(reset_submit))
        .route("/signup", get(signup_page).post(signup_submit))
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
    invitation: Option<String>,
}

fn page(code: StatusCode, title: &str, main: String) -> Response {
    pages::respond(code, document("en", title, &main))
}

/// The error of a submitted form, as a page.
fn error_page(e: &ApiError) -> Response {
    let text = match e.errors.first() {
        Some(f) => f.message.clone(),
        None => e.message.clone(),
    };
    page(e.status, "Something went wrong", paragraph(&text, ""))
}

fn form_fields(body: &Bytes) -> Vec<(String, String)> {
    form_urlencoded::parse(body).into_owned().collect()
}

fn field(fields: &[(String, String)], name: &str) -> String {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

fn missing_link() -> Response {
    page(
        StatusCode::BAD_REQUEST,
        "Invalid link",
        paragraph(
            "This link is incomplete. Open the link from the mail again.",
            "",
        ),
    )
}

async fn verify_page(Query(q): Query<TokenQuery>) -> Response {
    let Some(token) = q.token.filter(|t| !t.is_empty()) else {
        return missing_link();
    };
    page(
        StatusCode::OK,
        "Verify your email address",
        [
            paragraph("Confirm that this address is yours.", ""),
            button_form("/verify-email", "Verify email", &[("token", &token)]),
        ]
        .concat(),
    )
}

async fn verify_submit(State(state): State<AppState>, body: Bytes) -> Response {
    let token = field(&form_fields(&body), "token");
    match apply_verification(&state, &token).await {
        Ok(()) => page(
            StatusCode::OK,
            "Email verified",
            status("Your email address is verified.", ""),
        ),
        Err(e) => error_page(&e),
    }
}

async fn reset_page(Query(q): Query<TokenQuery>) -> Response {
    let Some(token) = q.token.filter(|t| !t.is_empty()) else {
        return missing_link();
    };
    page(
        StatusCode::OK,
        "Choose a new password",
        password_form(
            "/reset-password",
            "New password (8 to 256 characters)",
            "Set password",
            &[("token", &token)],
        ),
    )
}

async fn reset_submit(State(state): State<AppState>, body: Bytes) -> Response {
    let fields = form_fields(&body);
    let token = field(&fields, "token");
    match apply_reset(&state, &token, field(&fields, "password")).await {
        Ok(()) => page(
            StatusCode::OK,
            "Password changed",
            status(
                "Your password is changed and every session was signed out. Sign in with the new password.",
                "",
            ),
        ),
        Err(e) => error_page(&e),
    }
}

async fn signup_page(State(state): State<AppState>, Query(q): Query<TokenQuery>) -> Response {
    let Some(token) = q.invitation.filter(|t| !t.is_empty()) else {
        return missing_link();
    };
    let invitation = match state
        .store
        .invitation_by_token(&token_hash(&token), state.engine.now())
        .await
    {
        Ok(Some(i)) => i,
        Ok(None) => return error_page(&crate::routes::account_tokens::invalid_token()),
        Err(e) => return error_page(&ApiError::from(e)),
    };
    page(
        StatusCode::OK,
        "Accept the invitation",
        [
            paragraph(
                "Create the account {email} to join the project.",
                &invitation.email,
            ),
            password_form(
                "/signup",
                "Password (8 to 256 characters)",
                "Create account",
                &[("invitation", &token)],
            ),
        ]
        .concat(),
    )
}

async fn signup_submit(State(state): State<AppState>, body: Bytes) -> Response {
    let fields = form_fields(&body);
    let token = field(&fields, "invitation");
    let invitation = match state
        .store
        .invitation_by_token(&token_hash(&token), state.engine.now())
        .await
    {
        Ok(Some(i)) => i,
        Ok(None) => return error_page(&crate::routes::account_tokens::invalid_token()),
        Err(e) => return error_page(&ApiError::from(e)),
    };
    let credentials = Credentials {
        email: Some(invitation.email.clone()),
        password: Some(field(&fields, "password")),
    };
    match create_account(&state, credentials).await {
        Ok((_, cookie)) => {
            let mut res = page(
                StatusCode::CREATED,
                "Welcome to Herald",
                status(
                    "Your account {email} was created and joined the project.",
                    &invitation.email,
                ),
            );
            if let Some(c) = cookie
                && let Ok(v) = c.parse()
            {
                res.headers_mut().insert(header::SET_COOKIE, v);
            }
            res.into_response()
        }
        Err(e) => error_page(&e),
    }
}
