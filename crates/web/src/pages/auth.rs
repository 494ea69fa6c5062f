//! Signed-out pages: log in, sign up, log out, forgot password, reset password. The forms
//! call the API's own functions (`sign_in`, `create_account`, `request_reset`,
//! `reset_with_token`), so their rules and limits are the API's.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use herald_api::AppState;
use herald_api::auth::MaybeSession;
use herald_api::auth::client_limit::ClientAddress;
use herald_api::language::RequestLanguage;
use herald_api::routes::account_tokens::{
    EmailRequest, ResetRequest, request_reset, reset_with_token,
};
use herald_api::routes::accounts::{Credentials, sign_in};
use herald_api::routes::signup::{SignupRequest, create_account};
use serde::Deserialize;

use crate::form::{Errors, FormData};
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
    invitation: String,
    errors: Errors,
    oauth: Vec<OAuthButton>,
    signups: bool,
}

pub async fn signup_page(State(state): State<AppState>, Query(q): Query<AuthQuery>) -> Response {
    ok(&SignupPage {
        shell: Shell::bare("Sign up"),
        email: String::new(),
        invitation: q.invitation.unwrap_or_default(),
        errors: Errors::default(),
        oauth: oauth_buttons(&state),
        signups: !state.settings.disable_signups,
    })
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
    let request = SignupRequest {
        email: Some(form.get("email")),
        password: Some(form.get("password")),
        invitation: form.opt("invitation"),
    };
    match create_account(&state, request, lang).await {
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
        Err(e) => html(
            e.status,
            &SignupPage {
                shell: Shell::bare("Sign up"),
                email: form.get("email"),
                invitation: form.get("invitation"),
                errors: Errors::from_api(&e),
                oauth: oauth_buttons(&state),
                signups: !state.settings.disable_signups,
            },
        ),
    }
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
    token: String,
    errors: Errors,
}

/// The form of the reset link; a GET never spends the token.
pub async fn reset_page(Query(q): Query<AuthQuery>) -> Response {
    let token = q.token.unwrap_or_default();
    let errors = if token.is_empty() {
        Errors::general("This link is incomplete. Ask for a new one below.")
    } else {
        Errors::default()
    };
    let status = if token.is_empty() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    html(
        status,
        &ResetPage {
            shell: Shell::bare("Choose a new password"),
            token,
            errors,
        },
    )
}

pub async fn reset_submit(State(state): State<AppState>, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    let request = ResetRequest {
        token: Some(form.get("token")),
        password: Some(form.get("password")),
    };
    match reset_with_token(&state, request).await {
        Ok(()) => crate::render::see_other("/app/login?done=reset"),
        Err(e) => html(
            e.status,
            &ResetPage {
                shell: Shell::bare("Choose a new password"),
                token: form.get("token"),
                errors: Errors::from_api(&e),
            },
        ),
    }
}
