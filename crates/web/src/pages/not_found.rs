//! The 404 page (unknown paths, and projects the viewer is not a member of: both look the
//! same, so an id reveals nothing) and the plain error page.

use askama::Template;
use axum::http::StatusCode;
use axum::response::Response;

use crate::render::html;
use crate::session::Viewer;
use crate::shell::Shell;

#[derive(Template)]
#[template(path = "pages/not_found.html")]
struct NotFoundPage {
    shell: Shell,
}

#[derive(Template)]
#[template(path = "pages/error.html")]
struct ErrorPage {
    shell: Shell,
    message: String,
}

/// The 404 inside the layout of `viewer` (no project named, none of its data).
pub fn for_viewer(viewer: &Viewer, status: StatusCode) -> Response {
    html(
        status,
        &NotFoundPage {
            shell: Shell::new(viewer, None, "", "Not found"),
        },
    )
}

/// A failure of the store or the server, as a page that names no internals.
pub fn server_error(detail: &str) -> Response {
    tracing::error!(detail, "a dashboard page failed");
    html(
        StatusCode::INTERNAL_SERVER_ERROR,
        &ErrorPage {
            shell: Shell::bare("Something went wrong"),
            message: "Something went wrong on the server. Try again; if it persists, the server log has the details.".to_owned(),
        },
    )
}

/// An error of the API's functions that no form expects, as a page with its message.
pub fn api_error(e: &herald_api::error::ApiError) -> Response {
    if e.status.is_server_error() {
        return server_error(&e.message);
    }
    html(
        e.status,
        &ErrorPage {
            shell: Shell::bare("Not possible"),
            message: e.message.clone(),
        },
    )
}

/// `GET /app/{anything unknown}`: the 404 (signed out: log in first, then the 404).
pub async fn page(viewer: Result<Viewer, Response>) -> Response {
    match viewer {
        Ok(viewer) => for_viewer(&viewer, StatusCode::NOT_FOUND),
        Err(redirect) => redirect,
    }
}
