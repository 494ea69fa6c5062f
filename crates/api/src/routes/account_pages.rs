//! The small server-rendered pages the links of account mail open (DECISIONS.md "Accounts"):
//! `GET|POST /verify-email?token=`, `GET|POST /reset-password?token=`,
//! `GET|POST /signup?invitation=`. Their forms post back to the same path, whose handler runs
//! the API's own code (`account_tokens::apply_*`, `signup::create_account` with the
//! invitation token, which verifies the address and joins the project); no JavaScript.
//! Same look and languages as the list pages ([`crate::pages`]): the page's `lang` parameter
//! (the mail's link carries the mail's language), else `Accept-Language`, else English
//! ([`crate::language`]); the forms carry it in a hidden `lang` field to the page they post to.
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

use herald_core::account_i18n::{self, AccountStrings};

use crate::account_mail::token_hash;
use crate::error::ApiError;
use crate::language::RequestLanguage;
use crate::pages::{self, button_form, document, paragraph, password_form, status};
use crate::routes::account_tokens::{apply_reset, apply_verification};
use crate::routes::signup::{SignupRequest, create_account};
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

fn page(lang: &AccountStrings, code: StatusCode, title: &str, main: String) -> Response {
    pages::respond(code, document(lang.code, title, &main))
}

/// The error of a submitted form, as a page in `lang` (the API's own message for errors no
/// form of these pages expects).
fn error_page(lang: &AccountStrings, e: &ApiError) -> Response {
    let text = match e.code {
        "INVALID_TOKEN" => lang.token_invalid.to_owned(),
        "VALIDATION_ERROR" => lang.password_invalid.to_owned(),
        "CONFLICT" => lang.account_exists.to_owned(),
        "FORBIDDEN" => lang.signups_disabled.to_owned(),
        _ => match e.errors.first() {
            Some(f) => f.message.clone(),
            None => e.message.clone(),
        },
    };
    page(lang, e.status, lang.error_title, paragraph(&text, ""))
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

/// The language of a posted form: its `lang` field if supported, else the request's.
fn form_language(fields: &[(String, String)], request: RequestLanguage) -> &'static AccountStrings {
    herald_core::list_i18n::supported(&field(fields, "lang"))
        .map_or(request.0, |s| account_i18n::for_code(s.code))
}

fn missing_link(lang: &AccountStrings) -> Response {
    page(
        lang,
        StatusCode::BAD_REQUEST,
        lang.incomplete_title,
        paragraph(lang.incomplete_body, ""),
    )
}

async fn verify_page(
    RequestLanguage(lang): RequestLanguage,
    Query(q): Query<TokenQuery>,
) -> Response {
    let Some(token) = q.token.filter(|t| !t.is_empty()) else {
        return missing_link(lang);
    };
    page(
        lang,
        StatusCode::OK,
        lang.verify_title,
        [
            paragraph(lang.verify_prompt, ""),
            button_form(
                "/verify-email",
                lang.verify_button,
                &[("token", &token), ("lang", lang.code)],
            ),
        ]
        .concat(),
    )
}

async fn verify_submit(
    State(state): State<AppState>,
    request: RequestLanguage,
    body: Bytes,
) -> Response {
    let fields = form_fields(&body);
    let lang = form_language(&fields, request);
    match apply_verification(&state, &field(&fields, "token")).await {
        Ok(()) => page(
            lang,
            StatusCode::OK,
            lang.verified_title,
            status(lang.verified_body, ""),
        ),
        Err(e) => error_page(lang, &e),
    }
}

async fn reset_page(
    RequestLanguage(lang): RequestLanguage,
    Query(q): Query<TokenQuery>,
) -> Response {
    let Some(token) = q.token.filter(|t| !t.is_empty()) else {
        return missing_link(lang);
    };
    page(
        lang,
        StatusCode::OK,
        lang.reset_title,
        password_form(
            "/reset-password",
            lang.reset_label,
            lang.reset_button,
            &[("token", &token), ("lang", lang.code)],
        ),
    )
}

async fn reset_submit(
    State(state): State<AppState>,
    request: RequestLanguage,
    body: Bytes,
) -> Response {
    let fields = form_fields(&body);
    let lang = form_language(&fields, request);
    let token = field(&fields, "token");
    match apply_reset(&state, &token, field(&fields, "password")).await {
        Ok(()) => page(
            lang,
            StatusCode::OK,
            lang.reset_done_title,
            status(lang.reset_done_body, ""),
        ),
        Err(e) => error_page(lang, &e),
    }
}

async fn signup_page(
    State(state): State<AppState>,
    RequestLanguage(lang): RequestLanguage,
    Query(q): Query<TokenQuery>,
) -> Response {
    let Some(token) = q.invitation.filter(|t| !t.is_empty()) else {
        return missing_link(lang);
    };
    let invitation = match state
        .store
        .invitation_by_token(&token_hash(&token), state.engine.now())
        .await
    {
        Ok(Some(i)) => i,
        Ok(None) => return error_page(lang, &crate::routes::account_tokens::invalid_token()),
        Err(e) => return error_page(lang, &ApiError::from(e)),
    };
    page(
        lang,
        StatusCode::OK,
        lang.invite_title,
        [
            paragraph(lang.invite_prompt, &invitation.email),
            password_form(
                "/signup",
                lang.invite_label,
                lang.invite_button,
                &[("invitation", &token), ("lang", lang.code)],
            ),
        ]
        .concat(),
    )
}

async fn signup_submit(
    State(state): State<AppState>,
    request: RequestLanguage,
    body: Bytes,
) -> Response {
    let fields = form_fields(&body);
    let lang = form_language(&fields, request);
    let token = field(&fields, "invitation");
    let invitation = match state
        .store
        .invitation_by_token(&token_hash(&token), state.engine.now())
        .await
    {
        Ok(Some(i)) => i,
        Ok(None) => return error_page(lang, &crate::routes::account_tokens::invalid_token()),
        Err(e) => return error_page(lang, &ApiError::from(e)),
    };
    // The token goes along: it is what proves the mailbox and joins the project.
    let signup = SignupRequest {
        email: Some(invitation.email.clone()),
        password: Some(field(&fields, "password")),
        invitation: Some(token),
    };
    match create_account(&state, signup, lang).await {
        Ok((_, cookie)) => {
            let mut res = page(
                lang,
                StatusCode::CREATED,
                lang.welcome_title,
                status(lang.welcome_body, &invitation.email),
            );
            if let Some(c) = cookie
                && let Ok(v) = c.parse()
            {
                res.headers_mut().insert(header::SET_COOKIE, v);
            }
            res.into_response()
        }
        Err(e) => error_page(lang, &e),
    }
}
