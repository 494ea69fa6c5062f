//! `/app/` (where a signed-in user lands) and `/app/projects/new`.

use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use herald_api::AppState;
use herald_api::routes::accounts::{CreateProjectRequest, new_project};
use herald_core::ids::Uuid;

use crate::form::{Errors, FormData};
use crate::pages::not_found;
use crate::render::{html, ok, see_other};
use crate::session::{LAST_PROJECT, Viewer};
use crate::shell::Shell;

/// The last project's home (the `herald_project` cookie) if the user is still a member, else
/// the first project's, else `/app/projects/new`.
pub async fn landing(state: &AppState, user: Uuid, headers: &HeaderMap) -> String {
    let projects = match state.store.projects_of_user(user).await {
        Ok(p) => p,
        Err(_) => return "/app/projects/new".to_owned(),
    };
    let last = last_project(headers);
    let chosen = projects
        .iter()
        .find(|m| Some(m.project.id) == last)
        .or_else(|| projects.first());
    match chosen {
        Some(m) => format!("/app/p/{}/", m.project.id),
        None => "/app/projects/new".to_owned(),
    }
}

fn last_project(headers: &HeaderMap) -> Option<Uuid> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == LAST_PROJECT)
        .and_then(|(_, v)| herald_core::ids::parse_id(v))
}

pub async fn start(
    State(state): State<AppState>,
    viewer: Result<Viewer, Response>,
    headers: HeaderMap,
) -> Response {
    match viewer {
        Ok(v) => see_other(&landing(&state, v.user.id, &headers).await),
        Err(to_login) => to_login,
    }
}

#[derive(Template)]
#[template(path = "pages/project_new.html")]
struct NewProjectPage {
    shell: Shell,
    name: String,
    errors: Errors,
}

pub async fn new_page(viewer: Viewer) -> Response {
    ok(&NewProjectPage {
        shell: Shell::new(&viewer, None, "", "New project"),
        name: String::new(),
        errors: Errors::default(),
    })
}

#[derive(Template)]
#[template(path = "pages/project_created.html")]
struct CreatedPage {
    shell: Shell,
    home: String,
    public_key: String,
    secret_key: String,
}

pub async fn create(State(state): State<AppState>, viewer: Viewer, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    let request = CreateProjectRequest {
        name: Some(form.get("name")),
    };
    match new_project(&state, viewer.user.id, request).await {
        Ok((project, secret)) => {
            let mut viewer = viewer;
            match state.store.projects_of_user(viewer.user.id).await {
                Ok(p) => viewer.projects = p,
                Err(e) => return not_found::server_error(&e.to_string()),
            }
            ok(&CreatedPage {
                shell: Shell::new(&viewer, Some(&project), "Home", "Project created"),
                home: format!("/app/p/{}/", project.id),
                public_key: project.public_key.clone(),
                secret_key: secret,
            })
        }
        Err(e) if e.status.is_client_error() => html(
            e.status,
            &NewProjectPage {
                shell: Shell::new(&viewer, None, "", "New project"),
                name: form.get("name"),
                errors: Errors::from_api(&e),
            },
        ),
        Err(e) => not_found::api_error(&e),
    }
}
