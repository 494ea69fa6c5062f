//! Signed-out pages: log in, sign up, log out, forgot password, and the pages account mail
//! links open (reset password, verify email, accept an invitation). The forms call the API's
//! own functions (`sign_in`, `create_account`, `request_reset`, `reset_with_token`,
//! `apply_verification`), so their rules and limits are the API's. The pages of mail links
//! speak the mail's language (its `lang` parameter, carried by their forms), with the
//! strings the mail used (`herald_core::account_i18n`); a GET never spends a token.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use herald_api::AppState;
use herald_api::account_mail::token_hash;
use herald_api::auth::MaybeSession;
use herald_api::auth::client_limit::ClientAddress;
use herald_api::error::ApiError;
use herald_api::language::RequestLanguage;
use herald_api::routes::account_tokens::{
    EmailRequest, ResetRequest, apply_verification, request_reset, reset_with_token,
};
use herald_api::routes::accounts::{Credentials, sign_in};
use herald_api::routes::signup::{SignupRequest, create_account};
use herald_core::account_i18n::{self, AccountStrings};
use serde::Deserialize;

use crate::form::{Errors, FormData};
use crate::pages::not_found;
use crate::pages::projects::landing;
use crate::render::{html, ok, see_other_with_cookie};
use crate::session::safe_next;
use crate::shell::Shell;

#[derive(Deserialize, Default)]
pub struct AuthQuery {
    next: Option<String>,
    token: Option<String>,
    invitation: Option<String>,
    /// `reset` after a new password, `verify` after sign-up when sign-in waits for the mail.
    done: Option<String>,
}

/// An OAuth sign-in button.
pub struct OAuthButton {
    pub label: String,
    pub href: String,
}

fn oauth_buttons(state: &AppState) -> Vec<OAuthButton> {
    state
        .settings
        .oauth
        .configured()
        .iter()
        .map(|p| OAuthButton {
            label: format!("Continue with {}", p.name()),
            href: format!("/auth/oauth/{}", p.id()),
        })
        .collect()
}

#[derive(Template)]
#[template(path = "pages/login.html")]
struct LoginPage {
    shell: Shell,
    email: String,
    next: String,
    errors: Errors,
    notice: Option<&'static str>,
    oauth: Vec<OAuthButton>,
    signups: bool,
}

pub async fn login_page(State(state): State<AppState>, Query(q): Query<AuthQuery>) -> Response {
    let notice = match q.done.as_deref() {
        Some("reset") => Some("Your password is changed. Log in with the new one."),
        Some("deleted") => Some("Your account is deleted."),
        _ => None,
    };
    ok(&LoginPage {
        shell: Shell::bare("Log in"),
        email: String::new(),
        next: q.next.unwrap_or_default(),
        errors: Errors::default(),
        notice,
        oauth: oauth_buttons(&state),
        signups: !state.settings.disable_signups,
    })
}

pub async fn login_submit(
    State(state): State<AppState>,
    client: ClientAddress,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let next = form.get("next");
    let credentials = Credentials {
        email: Some(form.get("email")),
        password: Some(form.get("password")),
    };
    match sign_in(&state, &client, credentials).await {
        Ok((user, cookie)) => {
            let to = match safe_next(&next) {
                Some(n) => n.to_owned(),
                None => landing(&state, user.id, &headers).await,
            };
            see_other_with_cookie(&to, &cookie)
        }
        Err(e) => html(
            e.status,
            &LoginPage {
                shell: Shell::bare("Log in"),
                email: form.get("email"),
                next,
                errors: Errors::from_api(&e),
                notice: None,
                oauth: oauth_buttons(&state),
                signups: !state.settings.disable_signups,
            },
        ),
    }
}

#[derive(Template)]
#[template(path = "pages/signup.html")]
struct SignupPage {
    shell: Shell,
    email: String,
    /// The invitation of an invitation link, with the address it was mailed to.
    invitation: Option<Invitation>,
    t: &'static AccountStrings,
    errors: Errors,
    oauth: Vec<OAuthButton>,
    signups: bool,
}

struct Invitation {
    token: String,
    email: String,
    /// The mail's sentence naming the address.
    prompt: String,
}

/// The invitation of `token` (unknown, used or expired: `None`).
async fn invitation(
    state: &AppState,
    token: &str,
    t: &AccountStrings,
) -> Result<Option<Invitation>, Response> {
    match state
        .store
        .invitation_by_token(&token_hash(token), state.engine.now())
        .await
    {
        Ok(found) => Ok(found.map(|i| Invitation {
            token: token.to_owned(),
            prompt: t.invite_prompt.replace("{email}", &i.email),
            email: i.email,
        })),
        Err(e) => Err(not_found::server_error(&e.to_string())),
    }
}

/// `/app/signup`, and `?invitation=` from an invitation mail: the invited address is fixed
/// (the token proves it), in the mail's language.
pub async fn signup_page(
    State(state): State<AppState>,
    RequestLanguage(t): RequestLanguage,
    Query(q): Query<AuthQuery>,
) -> Response {
    let mut page = SignupPage {
        shell: Shell::bare("Sign up"),
        email: String::new(),
        invitation: None,
        t,
        errors: Errors::default(),
        oauth: oauth_buttons(&state),
        signups: !state.settings.disable_signups,
    };
    let Some(token) = q.invitation.filter(|t| !t.is_empty()) else {
        return ok(&page);
    };
    page.shell = Shell::bare(t.invite_title).in_language(t.code);
    match invitation(&state, &token, t).await {
        Ok(Some(i)) => {
            page.invitation = Some(i);
            ok(&page)
        }
        Ok(None) => link_error(t, Errors::general(t.token_invalid)),
        Err(res) => res,
    }
}

#[derive(Template)]
#[template(path = "pages/message.html")]
struct MessagePage {
    shell: Shell,
    heading: &'static str,
    text: String,
    link: (&'static str, &'static str),
}

pub async fn signup_submit(
    State(state): State<AppState>,
    RequestLanguage(lang): RequestLanguage,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let t = form_language(&form, lang);
    let request = SignupRequest {
        email: Some(form.get("email")),
        password: Some(form.get("password")),
        invitation: form.opt("invitation"),
    };
    match create_account(&state, request, t).await {
        Ok((user, Some(cookie))) => {
            let to = landing(&state, user.id, &headers).await;
            see_other_with_cookie(&to, &cookie)
        }
        Ok((user, None)) => ok(&MessagePage {
            shell: Shell::bare("Check your inbox"),
            heading: "Check your inbox",
            text: format!(
                "We sent a link to {} to verify the address. Follow it, then log in.",
                user.email
            ),
            link: ("/app/login", "Log in"),
        }),
        Err(e) => {
            let invited = match form.opt("invitation") {
                Some(token) => match invitation(&state, &token, t).await {
                    Ok(i) => i,
                    Err(res) => return res,
                },
                None => None,
            };
            let (shell, errors) = match &invited {
                Some(_) => (
                    Shell::bare(t.invite_title).in_language(t.code),
                    link_errors(t, &e),
                ),
                None => (Shell::bare("Sign up"), Errors::from_api(&e)),
            };
            html(
                e.status,
                &SignupPage {
                    shell,
                    email: form.get("email"),
                    invitation: invited,
                    t,
                    errors,
                    oauth: oauth_buttons(&state),
                    signups: !state.settings.disable_signups,
                },
            )
        }
    }
}

/// The language of a posted form of a mail link: its `lang` field if supported, else the
/// request's.
fn form_language(form: &FormData, request: &'static AccountStrings) -> &'static AccountStrings {
    herald_core::list_i18n::supported(&form.get("lang"))
        .map_or(request, |s| account_i18n::for_code(s.code))
}

/// The API's refusal on a mail link's page, in the mail's words where the mail has them.
fn link_errors(t: &AccountStrings, e: &ApiError) -> Errors {
    match e.code {
        "INVALID_TOKEN" => Errors::general(t.token_invalid),
        "CONFLICT" => Errors::general(t.account_exists),
        "FORBIDDEN" => Errors::general(t.signups_disabled),
        "VALIDATION_ERROR" if e.errors.iter().all(|f| f.field == "password") => {
            let mut out = Errors::default();
            out.push("password", t.password_invalid);
            out
        }
        _ => Errors::from_api(e),
    }
}

#[derive(Template)]
#[template(path = "pages/link_error.html")]
struct LinkErrorPage {
    shell: Shell,
    t: &'static AccountStrings,
    errors: Errors,
}

/// A mail link that cannot be used (incomplete, or its token unknown, used or expired): 400.
fn link_error(t: &'static AccountStrings, errors: Errors) -> Response {
    html(
        StatusCode::BAD_REQUEST,
        &LinkErrorPage {
            shell: Shell::bare(t.incomplete_title).in_language(t.code),
            t,
            errors,
        },
    )
}

/// Ends the session server-side (as `GET /auth/logout` does) and clears the cookie.
pub async fn logout(State(state): State<AppState>, session: MaybeSession) -> Response {
    if let Some(sid) = session.sid()
        && let Err(e) = state.store.delete_session(sid).await
    {
        tracing::warn!(error = %e, "ending a session failed");
    }
    see_other_with_cookie("/app/login", &state.sessions.clear_cookie())
}

#[derive(Template)]
#[template(path = "pages/forgot.html")]
struct ForgotPage {
    shell: Shell,
    email: String,
    errors: Errors,
}

pub async fn forgot_page() -> Response {
    ok(&ForgotPage {
        shell: Shell::bare("Reset your password"),
        email: String::new(),
        errors: Errors::default(),
    })
}

pub async fn forgot_submit(
    State(state): State<AppState>,
    RequestLanguage(lang): RequestLanguage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let request = EmailRequest {
        email: Some(form.get("email")),
    };
    match request_reset(&state, request, lang).await {
        Ok(()) => ok(&MessagePage {
            shell: Shell::bare("Check your inbox"),
            heading: "Check your inbox",
            text: "If an account uses this address, a link to choose a new password is on its way. It works for one hour.".to_owned(),
            link: ("/app/login", "Back to log in"),
        }),
        Err(e) => html(
            e.status,
            &ForgotPage {
                shell: Shell::bare("Reset your password"),
                email: form.get("email"),
                errors: Errors::from_api(&e),
            },
        ),
    }
}

#[derive(Template)]
#[template(path = "pages/reset.html")]
struct ResetPage {
    shell: Shell,
    t: &'static AccountStrings,
    token: String,
    errors: Errors,
}

fn reset_form(t: &'static AccountStrings, token: String, errors: Errors) -> ResetPage {
    ResetPage {
        shell: Shell::bare(t.reset_title).in_language(t.code),
        t,
        token,
        errors,
    }
}

/// The form of the reset link; a GET never spends the token.
pub async fn reset_page(
    RequestLanguage(t): RequestLanguage,
    Query(q): Query<AuthQuery>,
) -> Response {
    match q.token.filter(|t| !t.is_empty()) {
        Some(token) => ok(&reset_form(t, token, Errors::default())),
        None => html(
            StatusCode::BAD_REQUEST,
            &reset_form(t, String::new(), Errors::general(t.incomplete_body)),
        ),
    }
}

pub async fn reset_submit(
    State(state): State<AppState>,
    RequestLanguage(lang): RequestLanguage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let t = form_language(&form, lang);
    let request = ResetRequest {
        token: Some(form.get("token")),
        password: Some(form.get("password")),
    };
    match reset_with_token(&state, request).await {
        Ok(()) => crate::render::see_other("/app/login?done=reset"),
        Err(e) => html(
            e.status,
            &reset_form(t, form.get("token"), link_errors(t, &e)),
        ),
    }
}

#[derive(Template)]
#[template(path = "pages/verify.html")]
struct VerifyPage {
    shell: Shell,
    t: &'static AccountStrings,
    token: String,
    errors: Errors,
}

/// `/app/verify-email?token=` from the verification mail: a button that verifies (a GET
/// never spends the token: mail scanners follow links).
pub async fn verify_page(
    RequestLanguage(t): RequestLanguage,
    Query(q): Query<AuthQuery>,
) -> Response {
    let Some(token) = q.token.filter(|t| !t.is_empty()) else {
        return link_error(t, Errors::general(t.incomplete_body));
    };
    ok(&VerifyPage {
        shell: Shell::bare(t.verify_title).in_language(t.code),
        t,
        token,
        errors: Errors::default(),
    })
}

/// Spends the verification token through the API's `apply_verification`.
pub async fn verify_submit(
    State(state): State<AppState>,
    RequestLanguage(lang): RequestLanguage,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let t = form_language(&form, lang);
    match apply_verification(&state, &form.get("token")).await {
        Ok(()) => ok(&MessagePage {
            shell: Shell::bare(t.verified_title).in_language(t.code),
            heading: t.verified_title,
            text: t.verified_body.to_owned(),
            link: ("/app/", "Continue to Herald"),
        }),
        Err(e) if e.status.is_client_error() => link_error(t, link_errors(t, &e)),
        Err(e) => not_found::api_error(&e),
    }
}
