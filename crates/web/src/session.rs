//! Who is looking: the API's session (through its own [`UserAuth`] extractor), and the project
//! of a `/app/p/{project}/...` page, which must be one the user is a member of.

use std::collections::HashMap;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, Uri, header};
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

/// `/app/login?next=<page>`: where a signed-out visit goes. A GET comes back to itself; a
/// form post (whose route has no GET, or whose body is lost anyway) comes back to the page
/// the form was on ([`back_page`]).
pub fn login_redirect(parts: &Parts, public_url: &str) -> Response {
    let here = if parts.method == Method::GET || parts.method == Method::HEAD {
        parts
            .uri
            .path_and_query()
            .map_or("/app/", |p| p.as_str())
            .to_owned()
    } else {
        back_page(parts, public_url)
    };
    let next: String = form_urlencoded::byte_serialize(here.as_bytes()).collect();
    axum::response::IntoResponse::into_response(Redirect::to(&format!("/app/login?next={next}")))
}

/// The page to return to after a form post: the `Referer` when it is a dashboard page of this
/// origin (the public URL's, or the request's `Host`), else the page the route belongs to
/// ([`owner_page`]).
fn back_page(parts: &Parts, public_url: &str) -> String {
    let referer = parts
        .headers
        .get(header::REFERER)
        .and_then(|v| v.to_str().ok())
        .and_then(|r| r.parse::<Uri>().ok());
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok());
    let public = public_url.parse::<Uri>().ok();
    let same_origin = |r: &Uri| {
        let Some(authority) = r.authority().map(|a| a.as_str()) else {
            return false;
        };
        let public_ok = public.as_ref().is_some_and(|p| {
            p.scheme_str() == r.scheme_str() && p.authority().map(|a| a.as_str()) == Some(authority)
        });
        public_ok || host == Some(authority)
    };
    referer
        .filter(same_origin)
        .and_then(|r| r.path_and_query().map(|p| p.as_str().to_owned()))
        .filter(|p| safe_next(p).is_some())
        .unwrap_or_else(|| owner_page(parts.uri.path()))
}

/// The GET page a form route belongs to: `/app/p/{id}/{section}` for any route below a
/// project's section (`contacts/bulk` → the contacts page, `settings/domains/{d}/verify` →
/// settings), `/app/account` below the account, the new-project form below `/app/projects`,
/// else `/app/`.
fn owner_page(path: &str) -> String {
    let mut parts = path.trim_start_matches('/').split('/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("app"), Some("p"), Some(project), section) if !project.is_empty() => {
            match section.filter(|s| !s.is_empty()) {
                Some(section) => format!("/app/p/{project}/{section}"),
                None => format!("/app/p/{project}/"),
            }
        }
        (Some("app"), Some("account"), _, _) => "/app/account".to_owned(),
        (Some("app"), Some("projects"), _, _) => "/app/projects/new".to_owned(),
        _ => "/app/".to_owned(),
    }
}

/// A `next` parameter that stays inside the dashboard (never another site).
pub fn safe_next(next: &str) -> Option<&str> {
    (next.starts_with("/app/") && !next.starts_with("//") && !next.contains('\\')).then_some(next)
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let Ok(auth) = UserAuth::from_request_parts(parts, state).await else {
            return Err(login_redirect(parts, &state.settings.public_url));
        };
        let user = match state.store.user_by_id(auth.user).await {
            Ok(Some(u)) => u,
            Ok(None) => return Err(login_redirect(parts, &state.settings.public_url)),
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
    use super::{owner_page, safe_next};

    #[test]
    fn a_form_route_belongs_to_its_section_page() {
        let p = "/app/p/0193a1b2-0000-7000-8000-000000000001";
        for (route, page) in [
            (format!("{p}/contacts/bulk"), format!("{p}/contacts")),
            (
                format!("{p}/settings/domains/x/verify"),
                format!("{p}/settings"),
            ),
            (format!("{p}/settings"), format!("{p}/settings")),
            (format!("{p}/"), format!("{p}/")),
            (
                "/app/account/password".to_owned(),
                "/app/account".to_owned(),
            ),
            ("/app/logout".to_owned(), "/app/".to_owned()),
            (
                "/app/projects/new".to_owned(),
                "/app/projects/new".to_owned(),
            ),
        ] {
            assert_eq!(owner_page(&route), page, "{route}");
        }
    }

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
