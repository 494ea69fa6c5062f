//! The sections of the navigation whose pages come with parts 2 and 3 of the dashboard
//! (workflows, activity, analytics): a page that says so and
//! names the API endpoints that do the work today. Any other section is the 404.

use askama::Template;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;

use crate::pages::not_found;
use crate::render::ok;
use crate::session::ProjectPage;
use crate::shell::Shell;

const SECTIONS: [(&str, &str, &str); 1] =
    [("workflows", "Workflows", "GET /workflows, POST /workflows")];

#[derive(Template)]
#[template(path = "pages/later.html")]
struct LaterPage {
    shell: Shell,
    title: &'static str,
    endpoints: &'static str,
}

pub async fn page(page: ProjectPage, Path((_, section)): Path<(String, String)>) -> Response {
    let Some((_, title, endpoints)) = SECTIONS.iter().find(|(s, _, _)| *s == section) else {
        return not_found::for_viewer(&page.viewer, StatusCode::NOT_FOUND);
    };
    ok(&LaterPage {
        shell: page.shell(title, title),
        title,
        endpoints,
    })
}
