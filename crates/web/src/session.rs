//! Who is looking: the API's session (through its own [`UserAuth`] extractor), and the project
//! of a `/app/p/{project}/...` page, which must be one the user is a member of.

use std::collections::HashMap;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{StatusCode, Uri};
use axum::response::{Redirect, Response};
use herald_api::AppState;
use herald_api::auth::{Role, UserAuth};
use herald_core::ids::Uuid;
use herald_store::accounts::{Membership, Project, User};

use crate::pages::not_found;
use crate::shell::Shell;

/// Name of the cookie remembering the last project opened (sign-in lands there).
pub const LAST_PROJECT: &str = "herald_project";

/// A signed-in user.
pub struct Viewer {
    pub user: User,
    pub sid: String,
    pub projects: Vec<Membership>,
}

/// `/app/login?next=<this page>`: where a signed-out visit goes.
pub fn login_redirect(uri: &Uri) -> Response {
    let here = uri
        .path_and_query()
        .map_or("/app/", |p| p.as_str())
        .to_owned();
    let next: String = form_urlencoded::byte_serialize(here.as_bytes()).collect();
    axum::response::IntoResponse::into_response(Redirect::to(&format!("/app/login?next={next}")))
}

/// A `next` parameter that stays inside the dashboard (never another site).
pub fn safe_next(next: &str) -> Option<&str> {
    (next.starts_with("/app/") && !next.starts_with("//") && !next.contains('\\')).then_some(next)
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let Ok(auth) = UserAuth::from_request_parts(parts, state).await else {
            return Err(login_redirect(&parts.uri));
        };
        let user = match state.store.user_by_id(auth.user).await {
            Ok(Some(u)) => u,
            Ok(None) => return Err(login_redirect(&parts.uri)),
            Err(e) => return Err(not_found::server_error(&e.to_string())),
        };
        let projects = match state.store.projects_of_user(user.id).await {
            Ok(p) => p,
            Err(e) => return Err(not_found::server_error(&e.to_string())),
        };
        Ok(Viewer {
            user,
            sid: auth.sid,
            projects,
        })
    }
}

/// A page of one project the viewer is a member of.
pub struct ProjectPage {
    pub viewer: Viewer,
    pub project: Project,
    pub role: Role,
}

impl ProjectPage {
    pub fn id(&self) -> Uuid {
        self.project.id
    }

    /// The layout around this project's page, with `current` the navigation entry shown.
    pub fn shell(&self, current: &str, title: &str) -> Shell {
        Shell::new(&self.viewer, Some(&self.project), current, title)
    }

    /// `/app/p/{id}/{rest}`.
    pub fn href(&self, rest: &str) -> String {
        format!("/app/p/{}/{rest}", self.project.id)
    }

    pub fn can_manage(&self) -> bool {
        self.role.can_manage()
    }
}

impl FromRequestParts<AppState> for ProjectPage {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let viewer = Viewer::from_request_parts(parts, state).await?;
        let params = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map(|p| p.0)
            .unwrap_or_default();
        let id = params
            .get("project")
            .and_then(|raw| herald_core::ids::parse_id(raw));
        // Membership decides; an unknown id and another team's project look the same.
        let found = id.and_then(|id| {
            viewer
                .projects
                .iter()
                .find(|m| m.project.id == id)
                .map(|m| (m.project.clone(), m.role))
        });
        match found {
            Some((project, role)) => Ok(ProjectPage {
                viewer,
                project,
                role,
            }),
            None => Err(not_found::for_viewer(&viewer, StatusCode::NOT_FOUND)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::safe_next;

    #[test]
    fn next_stays_inside_the_dashboard() {
        assert_eq!(safe_next("/app/p/x/contacts"), Some("/app/p/x/contacts"));
        for bad in [
            "https://evil.example/",
            "//evil.example",
            "/app\\..\\x",
            "",
            "/v1/send",
        ] {
            assert_eq!(safe_next(bad), None, "{bad}");
        }
    }
}
