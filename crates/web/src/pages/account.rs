//! The account page: the signed-in address, its projects, and a password change through the
//! API's own function (which ends the account's other sessions).

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::response::Response;
use herald_api::AppState;
use herald_api::auth::UserAuth;
use herald_api::auth::client_limit::ClientAddress;
use herald_api::routes::password::{PasswordChange, set_password};
use serde::Deserialize;

use crate::form::{Errors, FormData};
use crate::pages::not_found;
use crate::render::{html, ok, see_other};
use crate::session::Viewer;
use crate::shell::Shell;

pub struct ProjectRow {
    pub name: String,
    pub href: String,
    pub role: &'static str,
}

#[derive(Template)]
#[template(path = "pages/account.html")]
struct AccountPage {
    shell: Shell,
    email: String,
    verified: bool,
    projects: Vec<ProjectRow>,
    errors: Errors,
    saved: bool,
}

#[derive(Deserialize, Default)]
pub struct AccountQuery {
    #[serde(default)]
    saved: String,
}

fn account_page(viewer: &Viewer, errors: Errors, saved: bool) -> AccountPage {
    AccountPage {
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
        errors,
        saved,
    }
}

pub async fn page(viewer: Viewer, Query(q): Query<AccountQuery>) -> Response {
    ok(&account_page(
        &viewer,
        Errors::default(),
        !q.saved.is_empty(),
    ))
}

/// `POST /app/account/password`.
pub async fn change_password(
    State(state): State<AppState>,
    viewer: Viewer,
    client: ClientAddress,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let auth = UserAuth {
        user: viewer.user.id,
        sid: viewer.sid.clone(),
    };
    let request = PasswordChange {
        current_password: Some(form.get("currentPassword")),
        new_password: Some(form.get("newPassword")),
    };
    match set_password(&state, &auth, &client, request).await {
        Ok(()) => see_other("/app/account?saved=1"),
        Err(e) if e.status.is_client_error() => html(
            e.status,
            &account_page(&viewer, Errors::from_api(&e), false),
        ),
        Err(e) => not_found::api_error(&e),
    }
}
