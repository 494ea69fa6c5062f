//! The filter builder: one component for every page that edits a filter tree (segments; the
//! FILTERED audience of campaigns). Rows of field, operator and value inside nested AND / OR
//! groups, a plain form that works without JavaScript (add, remove and update are submit
//! buttons the page handles by re-rendering), enhanced by htmx (the same buttons re-render the
//! builder in place through [`builder_fragment`]; typing refreshes the live count through
//! [`count_fragment`]).
//!
//! Invariants:
//! - The count is the API's: the tree goes through `herald_api::routes::segments::count_tree`,
//!   which checks it as `POST /segments` does and counts it with the function behind
//!   `memberCount` (a rule lives once).
//! - A refusal is shown on the control whose form name is the API error's field path (the
//!   names are the API's paths below the tree's key, see [`model`]); what fits no control is
//!   listed at the top of the builder.

mod catalogue;
mod model;
#[cfg(test)]
mod tests;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::{ApiError, ApiResult};
use herald_api::routes::segments::count_tree;
use herald_core::ids::Uuid;
use serde::Deserialize;
use serde_json::Value;

pub use catalogue::{Catalogue, Input};
pub use model::{Group, Node, Row, from_form, from_tree, row_tree, to_tree};

use crate::form::{Errors, FormData};
use crate::format::count;
use crate::pages::not_found;
use crate::render::ok;
use crate::session::ProjectPage;

/// What the builder edits and how it counts.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Settings {
    /// The tree's key in the API request: `filters` (segments) or `audienceFilter`.
    #[serde(default)]
    pub prefix: String,
    /// The segment being edited (its own references are a cycle).
    #[serde(default, rename = "self")]
    pub self_id: Option<Uuid>,
    /// Count subscribed contacts only (campaign audiences).
    #[serde(default)]
    pub subscribed: bool,
}

impl Settings {
    /// The tree's key as the API names it (anything unknown is `filters`).
    pub fn key(&self) -> &'static str {
        match self.prefix.as_str() {
            "audienceFilter" => "audienceFilter",
            "condition" => "condition",
            _ => "filters",
        }
    }

    fn query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        q.append_pair("prefix", self.key());
        if let Some(id) = self.self_id {
            q.append_pair("self", &id.to_string());
        }
        if self.subscribed {
            q.append_pair("subscribed", "true");
        }
        q.finish()
    }
}

/// A builder ready to render: its tree, the project's field list, and the tree's count or the
/// API's refusal.
pub struct Builder {
    pub settings: Settings,
    pub root: Group,
    pub catalogue: Catalogue,
    /// `(field path, message, code)` of the API's refusal of the tree.
    errors: Vec<(String, String, String)>,
    /// A re-render after a button or a field change: a value not filled in yet is no error.
    pub quiet: bool,
    /// The general message of a refusal (shown where the count would be).
    pub refusal: Option<String>,
    pub count: Option<i64>,
    pub builder_url: String,
    pub count_url: String,
}

impl Builder {
    /// A builder for `root` in the project of `page`, counted now; `quiet` after a button or a
    /// field change (a value still to fill in is not marked as an error yet).
    pub async fn counted(
        state: &AppState,
        page: &ProjectPage,
        settings: Settings,
        root: Group,
        quiet: bool,
    ) -> ApiResult<Builder> {
        let mut b = Builder::load(state, page, settings, root).await?;
        b.quiet = quiet;
        b.count_now(state, page).await?;
        Ok(b)
    }

    /// A builder for `root` with the project's field list, not counted yet (a page about to
    /// save the tree, whose refusal it will show).
    pub async fn load(
        state: &AppState,
        page: &ProjectPage,
        settings: Settings,
        mut root: Group,
    ) -> ApiResult<Builder> {
        let mut catalogue = Catalogue::load(state, page.id(), settings.self_id).await?;
        keep_fields(&root, &mut catalogue);
        root.fit(&catalogue);
        let q = settings.query();
        Ok(Builder {
            builder_url: format!("{}?{q}", page.href("filter/builder")),
            count_url: format!("{}?{q}", page.href("filter/count")),
            settings,
            root,
            catalogue,
            errors: Vec::new(),
            quiet: false,
            refusal: None,
            count: None,
        })
    }

    /// Counts the tree as the API would (or takes its refusal).
    pub async fn count_now(&mut self, state: &AppState, page: &ProjectPage) -> ApiResult<()> {
        let tree = self.tree();
        match count_tree(
            state,
            page.id(),
            self.settings.key(),
            &tree,
            self.settings.self_id,
            self.settings.subscribed,
        )
        .await
        {
            Ok(n) => self.count = Some(n),
            Err(e) if e.status.is_client_error() => self.refuse(&e),
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// The API's filter tree of the form.
    pub fn tree(&self) -> Value {
        to_tree(&self.root, &self.catalogue)
    }

    /// Shows the API's refusal `e` (of this tree, or of the request that carried it) on the
    /// rows it concerns.
    pub fn refuse(&mut self, e: &ApiError) {
        let errors: Vec<(String, String, String)> = e
            .errors
            .iter()
            .filter(|f| self.owns(&f.field))
            .map(|f| (f.field.clone(), f.message.clone(), f.code.clone()))
            .collect();
        // A refusal of the request's other fields leaves the tree and its count alone.
        if errors.is_empty() {
            return;
        }
        self.errors = errors;
        self.count = None;
        let view = self.view();
        self.refusal = Some(
            view.first_error
                .unwrap_or_else(|| "Fill in the conditions to see the count.".to_owned()),
        );
    }

    /// Whether the refusal concerns the tree (a page shows the rest beside its own fields).
    pub fn owns(&self, field: &str) -> bool {
        let key = self.settings.key();
        field == key || field.starts_with(&format!("{key}."))
    }

    /// The messages of a refusal that belong to the page's own fields (the builder shows the
    /// tree's), or the API's message when it names no field.
    pub fn other_errors(&self, e: &ApiError) -> Errors {
        let mut errors = Errors::default();
        for f in e.errors.iter().filter(|f| !self.owns(&f.field)) {
            errors.push(&f.field, &f.message);
        }
        if e.errors.is_empty() {
            errors.general.push(e.message.clone());
        }
        errors
    }

    /// The count in words ("1,234 contacts match").
    pub fn count_text(&self) -> String {
        match self.count {
            Some(1) => "1 contact matches".to_owned(),
            Some(n) => format!("{} contacts match", count(n)),
            None => String::new(),
        }
    }

    /// The errors shown: all, or when quiet all but the values still to fill in.
    fn shown(&self) -> impl Iterator<Item = &(String, String, String)> {
        self.errors
            .iter()
            .filter(|(_, _, code)| !(self.quiet && code == "required"))
    }

    fn error_of(&self, names: &[String]) -> Option<String> {
        self.shown()
            .find(|(f, _, _)| names.contains(f))
            .map(|(_, m, _)| m.clone())
    }

    fn has_error(&self, name: &str) -> bool {
        self.shown().any(|(f, _, _)| f == name)
    }

    /// The rows and groups in document order, numbered, with their messages.
    pub fn view(&self) -> View {
        let mut view = View::default();
        let mut placed = Vec::new();
        let key = self.settings.key();
        self.walk(&self.root, key, 0, &mut view, &mut placed);
        view.general = self
            .shown()
            .filter(|(f, _, _)| !placed.contains(f))
            .map(|(_, m, _)| m.clone())
            .collect();
        if view.first_error.is_none() {
            view.first_error = view.general.first().cloned();
        }
        view
    }

    fn walk(&self, g: &Group, path: &str, depth: usize, view: &mut View, placed: &mut Vec<String>) {
        view.groups += 1;
        let names = [
            path.to_owned(),
            format!("{path}.operator"),
            format!("{path}.conditions"),
        ];
        let error = self.error_of(&names);
        placed.extend(names);
        let label = if depth == 0 {
            "All conditions".to_owned()
        } else {
            format!("Group {}", view.groups - 1)
        };
        if let (Some(e), None) = (&error, &view.first_error) {
            view.first_error = Some(format!("{label}: {e}"));
        }
        let head = GroupView {
            path: path.to_owned(),
            id: dom_id(path),
            and: g.op != "OR",
            depth,
            label,
            error,
        };
        view.items.push(Item::Open(head.clone()));
        for (i, child) in g.children.iter().enumerate() {
            let child_path = format!("{path}.conditions.{i}");
            match child {
                Node::Group(inner) => self.walk(inner, &child_path, depth + 1, view, placed),
                Node::Row(r) => {
                    view.rows += 1;
                    let row = self.row_view(r, &child_path, view.rows, placed);
                    if let (Some(e), None) = (&row.error, &view.first_error) {
                        view.first_error = Some(format!("Condition {}: {e}", row.number));
                    }
                    view.items.push(Item::Row(row));
                }
            }
        }
        view.items.push(Item::Close(head));
    }

    fn row_view(&self, r: &Row, path: &str, number: usize, placed: &mut Vec<String>) -> RowView {
        let names: Vec<String> = ["", ".field", ".operator", ".value", ".unit"]
            .iter()
            .map(|s| format!("{path}{s}"))
            .collect();
        let error = self.error_of(&names).filter(|_| !r.fresh);
        placed.extend(names);
        let kind = self.catalogue.kind_of(&r.field);
        let input = kind.input(&r.operator);
        let bad = |part: &str| error.is_some() && self.has_error(&format!("{path}.{part}"));
        RowView {
            path: path.to_owned(),
            id: dom_id(path),
            number,
            field: r.field.clone(),
            event: r.event.clone(),
            operator: r.operator.clone(),
            operators: kind.operators(),
            input: match input {
                Input::None => "none",
                Input::Span => "span",
                Input::Number => "number",
                Input::Boolean => "boolean",
                Input::Date => "date",
                Input::Text => "text",
            },
            date_type: if r.value.is_empty() || r.value.len() == 10 {
                "date"
            } else {
                "text"
            },
            value: r.value.clone(),
            unit: r.unit.clone(),
            bad_field: bad("field"),
            bad_operator: bad("operator"),
            bad_value: bad("value"),
            bad_unit: bad("unit"),
            error,
            focus: r.fresh,
        }
    }
}

/// `filters.conditions.0` → `fb-filters-conditions-0`.
fn dom_id(path: &str) -> String {
    format!("fb-{}", path.replace('.', "-"))
}

fn keep_fields(g: &Group, catalogue: &mut Catalogue) {
    for c in &g.children {
        match c {
            Node::Group(inner) => keep_fields(inner, catalogue),
            Node::Row(r) => catalogue.keep(&r.field),
        }
    }
}

#[derive(Default)]
pub struct View {
    pub items: Vec<Item>,
    /// Messages that fit no row or group.
    pub general: Vec<String>,
    /// The first message, with the condition it concerns (the count area shows it).
    pub first_error: Option<String>,
    rows: usize,
    groups: usize,
}

/// The builder in document order: a group opens, its rows and groups, the group closes (with
/// its add buttons). A flat list, so the template needs no recursion.
pub enum Item {
    Open(GroupView),
    Row(RowView),
    Close(GroupView),
}

#[derive(Clone)]
pub struct GroupView {
    pub path: String,
    pub id: String,
    pub and: bool,
    pub depth: usize,
    pub label: String,
    pub error: Option<String>,
}

pub struct RowView {
    pub path: String,
    pub id: String,
    pub number: usize,
    pub field: String,
    pub event: String,
    pub operator: String,
    pub operators: &'static [(&'static str, &'static str)],
    /// none, span, number, boolean, date or text.
    pub input: &'static str,
    /// `date` for a date (or none yet), `text` for a full timestamp.
    pub date_type: &'static str,
    pub value: String,
    pub unit: String,
    pub error: Option<String>,
    pub bad_field: bool,
    pub bad_operator: bool,
    pub bad_value: bool,
    pub bad_unit: bool,
    pub focus: bool,
}

#[derive(Template)]
#[template(path = "components/filter_builder.html")]
struct BuilderFragment {
    builder: Builder,
}

#[derive(Template)]
#[template(path = "components/filter_count.html")]
struct CountFragment {
    builder: Builder,
}

async fn posted(
    state: &AppState,
    page: &ProjectPage,
    settings: Settings,
    body: &Bytes,
    quiet: bool,
) -> ApiResult<Builder> {
    let form = FormData::parse(body);
    let root = from_form(&form, settings.key());
    Builder::counted(state, page, settings, root, quiet).await
}

/// `POST /app/p/{project}/filter/builder?prefix=&self=&subscribed=`: the builder re-rendered
/// from the posted form after its action (add a row or a group, remove, a field changed).
pub async fn builder_fragment(
    State(state): State<AppState>,
    page: ProjectPage,
    Query(settings): Query<Settings>,
    body: Bytes,
) -> Response {
    match posted(&state, &page, settings, &body, true).await {
        Ok(builder) => ok(&BuilderFragment { builder }),
        Err(e) => not_found::api_error(&e),
    }
}

/// `POST /app/p/{project}/filter/count?...`: the live count of the posted tree (or the API's
/// refusal), with each row's message swapped in beside it.
pub async fn count_fragment(
    State(state): State<AppState>,
    page: ProjectPage,
    Query(settings): Query<Settings>,
    body: Bytes,
) -> Response {
    match posted(&state, &page, settings, &body, false).await {
        Ok(builder) => ok(&CountFragment { builder }),
        Err(e) => not_found::api_error(&e),
    }
}
