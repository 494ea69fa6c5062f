//! The account page: the signed-in address and its projects, a password change, the live
//! sessions (this one marked, the others ended one by one or all at once) and the deletion of
//! the account, all through the API's own functions (`password::set_password`,
//! `account_sessions::*`), so the rules (other sessions end on a password change; no shared
//! project left without an owner) live once.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::auth::UserAuth;
use herald_api::auth::client_limit::ClientAddress;
use herald_api::error::ApiError;
use herald_api::routes::account_sessions::{
    account_deletion, delete_account, list_sessions, revoke_other_sessions, revoke_session,
};
use herald_api::routes::password::{PasswordChange, set_password};
use serde::Deserialize;

use crate::form::{Errors, FormData};
use crate::format::ago;
use crate::pages::not_found;
use crate::render::{html, see_other, see_other_with_cookie};
use crate::session::Viewer;
use crate::shell::Shell;

pub struct ProjectRow {
    pub name: String,
    pub href: String,
    pub role: &'static str,
}

pub struct SessionRow {
    pub handle: String,
    pub started: String,
    pub started_exact: String,
    pub expires: String,
    pub current: bool,
}

#[derive(Template)]
#[template(path = "pages/account.html")]
struct AccountPage {
    shell: Shell,
    email: String,
    verified: bool,
    projects: Vec<ProjectRow>,
    sessions: Vec<SessionRow>,
    /// Projects deleted with the account (only this user is a member).
    deleted_with_account: Vec<String>,
    /// Projects that block the deletion (this user their only owner, others members).
    blocking: Vec<String>,
    /// The question of the confirmation dialog, with its consequence.
    delete_question: String,
    errors: Errors,
    delete_errors: Errors,
    toast: Option<&'static str>,
}

#[derive(Deserialize, Default)]
pub struct AccountQuery {
    #[serde(default)]
    saved: String,
}

fn auth_of(viewer: &Viewer) -> UserAuth {
    UserAuth {
        user: viewer.user.id,
        sid: viewer.sid.clone(),
    }
}

/// The page, with `errors` under the password form and `delete_errors` under the deletion.
async fn render(
    state: &AppState,
    viewer: &Viewer,
    status: StatusCode,
    errors: Errors,
    delete_errors: Errors,
    toast: Option<&'static str>,
) -> Response {
    let auth = auth_of(viewer);
    let (sessions, plan) = match (
        list_sessions(state, &auth).await,
        account_deletion(state, viewer.user.id).await,
    ) {
        (Ok(s), Ok(p)) => (s, p),
        (Err(e), _) | (_, Err(e)) => return not_found::api_error(&e),
    };
    let now = state.engine.now();
    let deleted_with_account: Vec<String> = plan.deleted.into_iter().map(|p| p.name).collect();
    let delete_question = if deleted_with_account.is_empty() {
        format!(
            "Delete the account {}? This cannot be undone.",
            viewer.user.email
        )
    } else {
        format!(
            "Delete the account {} and the projects {}, with everything in them? This cannot be undone.",
            viewer.user.email,
            deleted_with_account.join(", ")
        )
    };
    let page = AccountPage {
        shell: Shell::new(viewer, None, "", "Account"),
        email: viewer.user.email.clone(),
        verified: viewer.user.email_verified_at.is_some(),
        projects: viewer
            .projects
            .iter()
            .map(|m| ProjectRow {
                name: m.project.name.clone(),
                href: format!("/app/p/{}/", m.project.id),
                role: m.role.as_str(),
            })
            .collect(),
        sessions: sessions
            .into_iter()
            .map(|s| {
                let (started, started_exact) = ago(s.created_at, now);
                SessionRow {
                    handle: s.handle,
                    started,
                    started_exact,
                    expires: day_and_minute(&ago(s.expires_at, now).1),
                    current: s.current,
                }
            })
            .collect(),
        deleted_with_account,
        delete_question,
        blocking: plan.blocking.into_iter().map(|p| p.name).collect(),
        errors,
        delete_errors,
        toast,
    };
    html(status, &page)
}

/// `2026-12-04 08:15 UTC` of an ISO time.
fn day_and_minute(iso: &str) -> String {
    match iso.get(..16) {
        Some(head) => format!("{} UTC", head.replacen('T', " ", 1)),
        None => iso.to_owned(),
    }
}

pub async fn page(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(q): Query<AccountQuery>,
) -> Response {
    let toast = match q.saved.as_str() {
        "password" | "1" => Some("Password changed"),
        "session" => Some("Session ended"),
        "sessions" => Some("Other sessions ended"),
        _ => None,
    };
    render(
        &state,
        &viewer,
        StatusCode::OK,
        Errors::default(),
        Errors::default(),
        toast,
    )
    .await
}

/// `POST /app/account/password`.
pub async fn change_password(
    State(state): State<AppState>,
    viewer: Viewer,
    client: ClientAddress,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let request = PasswordChange {
        current_password: Some(form.get("currentPassword")),
        new_password: Some(form.get("newPassword")),
    };
    match set_password(&state, &auth_of(&viewer), &client, request).await {
        Ok(()) => see_other("/app/account?saved=password"),
        Err(e) => refused(&state, &viewer, e, false).await,
    }
}

/// A refusal of the API's function shown on the page (beside the password form, or the
/// deletion's when `delete`); a server failure is the error page.
async fn refused(state: &AppState, viewer: &Viewer, e: ApiError, delete: bool) -> Response {
    if !e.status.is_client_error() {
        return not_found::api_error(&e);
    }
    let errors = Errors::from_api(&e);
    let (password, deletion) = if delete {
        (Errors::default(), errors)
    } else {
        (errors, Errors::default())
    };
    render(state, viewer, e.status, password, deletion, None).await
}

/// `POST /app/account/sessions/{handle}/revoke`: ends one other session.
pub async fn revoke(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(handle): Path<String>,
) -> Response {
    match revoke_session(&state, &auth_of(&viewer), &handle).await {
        Ok(()) => see_other("/app/account?saved=session#sessions"),
        Err(e) => refused(&state, &viewer, e, false).await,
    }
}

/// `POST /app/account/sessions/revoke-others`: ends every session but this one.
pub async fn revoke_others(State(state): State<AppState>, viewer: Viewer) -> Response {
    match revoke_other_sessions(&state, &auth_of(&viewer)).await {
        Ok(_) => see_other("/app/account?saved=sessions#sessions"),
        Err(e) => refused(&state, &viewer, e, false).await,
    }
}

/// `POST /app/account/delete`: the typed address is the confirmation (the second step
/// without JavaScript; with it, a dialog asks first). Signed out after.
pub async fn delete(State(state): State<AppState>, viewer: Viewer, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    match delete_account(&state, &auth_of(&viewer), &form.get("confirmation")).await {
        Ok(()) => see_other_with_cookie("/app/login?done=deleted", &state.sessions.clear_cookie()),
        Err(e) => refused(&state, &viewer, e, true).await,
    }
}
