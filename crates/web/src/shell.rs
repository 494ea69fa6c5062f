//! What the layout around every signed-in page needs: asset URLs, the user, the `Project`
//! switcher and the main navigation with its current entry.

use herald_store::accounts::Project;

use crate::assets;
use crate::session::Viewer;

pub struct NavLink {
    pub label: &'static str,
    pub href: String,
    pub current: bool,
    /// The `d` of the link's 24×24 icon path.
    pub icon: &'static str,
}

pub struct ProjectLink {
    pub name: String,
    pub href: String,
    pub current: bool,
}

pub struct Shell {
    pub title: String,
    /// The page's language (`<html lang>`): English, except the pages of account mail links,
    /// which speak the mail's.
    pub lang: &'static str,
    pub css: String,
    pub js: String,
    pub htmx: String,
    /// The favicon (browsers ask for one on every origin; without it, a 404 each time).
    pub icon: String,
    pub email: String,
    /// The current project's name, if the page belongs to one.
    pub project_name: Option<String>,
    pub projects: Vec<ProjectLink>,
    pub nav: Vec<NavLink>,
}

/// The nine sections of DECISIONS "Dashboard", with their path and icon.
const SECTIONS: [(&str, &str, &str); 9] = [
    ("Home", "", "M3 11l9-8 9 8v10h-6v-6H9v6H3z"),
    (
        "Contacts",
        "contacts",
        "M16 11a4 4 0 1 0-8 0 4 4 0 0 0 8 0zM4 21a8 8 0 0 1 16 0",
    ),
    ("Segments", "segments", "M4 5h16M7 12h10M10 19h4"),
    ("Templates", "templates", "M4 4h16v16H4zM4 9h16M9 9v11"),
    ("Campaigns", "campaigns", "M3 11l18-8-8 18-2-8z"),
    (
        "Workflows",
        "workflows",
        "M6 3v6m0 6v6M6 9a3 3 0 1 0 0 6 3 3 0 0 0 0-6zm12-6v18",
    ),
    ("Activity", "activity", "M3 12h4l3-8 4 16 3-8h4"),
    ("Analytics", "analytics", "M4 20V10m6 10V4m6 16v-7m4 7H2"),
    (
        "Settings",
        "settings",
        "M12 15a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM19 12l2-1-2-4-2 1-2-2V4h-6v2L7 8 5 7l-2 4 2 1v0l-2 1 2 4 2-1 2 2v2h6v-2l2-2 2 1 2-4z",
    ),
];

impl Shell {
    /// The layout for `viewer`, on `project`'s page `current` (a section label) or on an
    /// account page (`project` None).
    pub fn new(viewer: &Viewer, project: Option<&Project>, current: &str, title: &str) -> Self {
        let nav = match project {
            Some(p) => SECTIONS
                .iter()
                .map(|(label, path, icon)| NavLink {
                    label,
                    href: format!("/app/p/{}/{path}", p.id),
                    current: *label == current,
                    icon,
                })
                .collect(),
            None => Vec::new(),
        };
        Shell {
            title: title.to_owned(),
            email: viewer.user.email.clone(),
            project_name: project.map(|p| p.name.clone()),
            projects: viewer
                .projects
                .iter()
                .map(|m| ProjectLink {
                    name: m.project.name.clone(),
                    href: format!("/app/p/{}/", m.project.id),
                    current: project.is_some_and(|p| p.id == m.project.id),
                })
                .collect(),
            nav,
            ..Shell::bare(title)
        }
    }

    /// The same layout in language `code` (a page of an account mail link).
    pub fn in_language(self, code: &'static str) -> Self {
        Shell { lang: code, ..self }
    }

    /// The layout of the signed-out pages (no navigation).
    pub fn bare(title: &str) -> Self {
        Shell {
            title: title.to_owned(),
            lang: "en",
            css: assets::url("app.css"),
            js: assets::url("app.js"),
            htmx: assets::url("htmx.min.js"),
            icon: assets::url("icon.svg"),
            email: String::new(),
            project_name: None,
            projects: Vec::new(),
            nav: Vec::new(),
        }
    }
}
