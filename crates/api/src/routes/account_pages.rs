//! The addresses of account mail links sent before the links named the dashboard
//! (DECISIONS.md "Accounts"): `/verify-email?token=`, `/reset-password?token=`,
//! `/signup?invitation=`. A GET answers 303 to the same page under `/app` (herald-web), its
//! query (token, `lang`) kept, so mail already sent still works; a GET never spends a token.
//! The POSTs stay for forms of these pages loaded before the upgrade: their handlers run the
//! API's own code (`account_tokens::apply_*`, `signup::create_account` with the invitation
//! token, which verifies the address and joins the project) and answer a small page in the
//! form's `lang`. Not in the OpenAPI document.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use herald_core::account_i18n::{self, AccountStrings};

use crate::account_mail::token_hash;
use crate::error::ApiError;
use crate::language::RequestLanguage;
use crate::pages::{self, document, paragraph, status};
use crate::routes::account_tokens::{apply_reset, apply_verification};
use crate::routes::signup::{SignupRequest, create_account};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/verify-email", get(to_dashboard).post(verify_submit))
        .route("/reset-password", get(to_dashboard).post(reset_submit))
        .route("/signup", get(to_dashboard).post(signup_submit))
}

/// 303 to the dashboard's page of the same name, with the same query.
async fn to_dashboard(uri: Uri) -> Response {
    let to = match uri.query() {
        Some(q) => format!("/app{}?{q}", uri.path()),
        None => format!("/app{}", uri.path()),
    };
    Redirect::to(&to).into_response()
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
