//! A template's editor (`templates/new` and `templates/{id}`): name, subject, the HTML body in
//! a code editor, type and sender, the live preview beside it, Send test to a member's
//! address, and where the template is used. Saving a template an enabled workflow sends asks
//! first: the first Save answers with the warning, the second (with `confirm=yes`) saves.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::templates::{
    TemplateRequest, TemplateResponse, change, template, template_id, test_send::send_test, usage,
};
use herald_core::ids::parse_id;
use serde::Deserialize;

use super::preview::{PreviewView, Sample};
use super::type_options;
use crate::assets;
use crate::form::{Errors, FormData};
use crate::pages::not_found;
use crate::render::{html, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

/// The editor's fields as typed.
pub struct Values {
    pub name: String,
    pub subject: String,
    pub body: String,
    pub kind: String,
    pub from: String,
}

const STARTER_BODY: &str =
    "<h1>Hello {{firstName ?? \"there\"}}</h1>\n<p>Write your message here.</p>\n";

impl Values {
    /// A new template's starting point.
    pub fn new_template() -> Self {
        Values {
            name: String::new(),
            subject: String::new(),
            body: STARTER_BODY.to_owned(),
            kind: "TRANSACTIONAL".to_owned(),
            from: String::new(),
        }
    }

    pub fn from_form(form: &FormData) -> Self {
        Values {
            name: form.get("name"),
            subject: form.get("subject"),
            body: form.get("body"),
            kind: form.get("type"),
            from: form.get("from"),
        }
    }

    fn from_template(t: &TemplateResponse) -> Self {
        Values {
            name: t.name.clone(),
            subject: t.subject.clone(),
            body: t.body.clone(),
            kind: t.template_type.as_str().to_owned(),
            from: t.from.clone().unwrap_or_default(),
        }
    }

    /// The API's create or patch body (a blank From clears the sender).
    pub fn request(&self) -> TemplateRequest {
        TemplateRequest {
            name: Some(self.name.clone()),
            subject: Some(self.subject.clone()),
            body: Some(self.body.clone()),
            template_type: Some(self.kind.clone()),
            from: Some(Some(self.from.clone()).filter(|f| !f.trim().is_empty())),
            from_name: None,
            reply_to: None,
        }
    }
}

/// A workflow that sends the template (named, not linked: the workflow pages come with part 3
/// of the dashboard; link `workflows/{id}` then).
pub struct UsageRow {
    pub name: String,
    pub workflow_id: String,
    pub enabled: bool,
    pub steps: usize,
}

#[derive(Template)]
#[template(path = "pages/template.html")]
pub struct EditorPage {
    shell: Shell,
    editor_js: String,
    base: String,
    /// Where the form posts: `templates` (create) or `templates/{id}` (save).
    action: String,
    heading: String,
    /// The saved template's id (None on New template).
    id: Option<String>,
    values: Values,
    types: Vec<(&'static str, &'static str, bool)>,
    errors: Errors,
    sample: Sample,
    preview: PreviewView,
    frame_src: Option<String>,
    usage: Vec<UsageRow>,
    /// The enabled workflows that send it (the warning before a save).
    enabled: Vec<String>,
    /// The warning was shown: the next Save carries `confirm=yes`.
    confirming: bool,
    members: Vec<String>,
    test_email: String,
    test_errors: Errors,
    notice: Option<String>,
}

impl EditorPage {
    fn new(
        state: &AppState,
        page: &ProjectPage,
        values: Values,
        errors: Errors,
        sample: Sample,
    ) -> Self {
        let preview = PreviewView::render(state, page.id(), &values, &sample);
        EditorPage {
            shell: page.shell("Templates", "New template"),
            editor_js: assets::url("editor.js"),
            base: page.href("templates"),
            action: page.href("templates"),
            heading: "New template".to_owned(),
            id: None,
            types: type_options(&values.kind),
            values,
            errors,
            sample,
            preview,
            frame_src: None,
            usage: Vec::new(),
            enabled: Vec::new(),
            confirming: false,
            members: Vec::new(),
            test_email: String::new(),
            test_errors: Errors::default(),
            notice: None,
        }
    }
}

/// New template with `values` and `sample` (after a refused create: its errors, the typed
/// values).
pub fn render_new(
    state: &AppState,
    page: &ProjectPage,
    values: Values,
    sample: Sample,
    errors: Errors,
    status: StatusCode,
) -> Response {
    html(
        status,
        &EditorPage::new(state, page, values, errors, sample),
    )
}

/// What the page of a saved template shows besides its form.
struct Saved {
    usage: Vec<UsageRow>,
    enabled: Vec<String>,
    members: Vec<String>,
    name: String,
}

async fn saved(
    state: &AppState,
    page: &ProjectPage,
    id: herald_core::ids::Uuid,
) -> Result<(TemplateResponse, Saved), ApiError> {
    let t = template(state, page.id(), id).await?;
    let used = usage(state, page.id(), id).await?;
    let mut rows: Vec<UsageRow> = Vec::new();
    for step in used.workflow_steps {
        let Some(wid) = step.workflow_id.as_deref() else {
            continue;
        };
        if let Some(row) = rows.iter_mut().find(|r| r.workflow_id == wid) {
            row.steps += 1;
            continue;
        }
        let enabled = match parse_id(wid) {
            Some(w) => state
                .store
                .workflow(page.id(), w)
                .await?
                .is_some_and(|w| w.enabled),
            None => false,
        };
        rows.push(UsageRow {
            name: step.name,
            workflow_id: wid.to_owned(),
            enabled,
            steps: 1,
        });
    }
    let enabled = rows
        .iter()
        .filter(|r| r.enabled)
        .map(|r| r.name.clone())
        .collect();
    let members = state
        .store
        .list_members(page.id())
        .await?
        .into_iter()
        .map(|m| m.email)
        .collect();
    let name = t.name.clone();
    Ok((
        t,
        Saved {
            usage: rows,
            enabled,
            members,
            name,
        },
    ))
}

/// The editor of a saved template with `values` in its form.
/// `typed` values (a form sent back) are previewed as typed: the frame gets no `src` of the
/// saved template, and the script posts the form to it at load.
fn edit_page(
    state: &AppState,
    page: &ProjectPage,
    id: &str,
    form: (Values, Sample, bool),
    errors: Errors,
    saved: Saved,
) -> EditorPage {
    let base = page.href("templates");
    let (values, sample, typed) = form;
    let mut p = EditorPage::new(state, page, values, errors, sample);
    p.shell = page.shell("Templates", &saved.name);
    p.heading = saved.name;
    p.action = format!("{base}/{id}");
    p.frame_src = (!typed).then(|| format!("{base}/{id}/frame"));
    p.id = Some(id.to_owned());
    p.usage = saved.usage;
    p.enabled = saved.enabled;
    p.test_email = page.viewer.user.email.clone();
    p.members = saved.members;
    p
}

#[derive(Deserialize, Default)]
pub struct EditQuery {
    #[serde(default)]
    notice: String,
}

fn notice_words(code: &str) -> Option<String> {
    match code {
        "created" => Some("Template created".to_owned()),
        "saved" => Some("Saved".to_owned()),
        _ => code
            .strip_prefix("sent:")
            .map(|to| format!("Test sent to {to}")),
    }
}

/// `GET templates/{id}`.
pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
    Query(q): Query<EditQuery>,
) -> Response {
    let loaded = match template_id(&raw) {
        Ok(id) => saved(&state, &page, id).await,
        Err(e) => Err(e),
    };
    let (t, saved) = match loaded {
        Ok(x) => x,
        Err(e) => return not_found::api_error(&e),
    };
    let mut p = edit_page(
        &state,
        &page,
        &raw,
        (Values::from_template(&t), Sample::default(), false),
        Errors::default(),
        saved,
    );
    p.notice = notice_words(&q.notice);
    html(StatusCode::OK, &p)
}

/// `POST templates/{id}`: Save, through the API's patch; asks first when an enabled workflow
/// sends the template.
pub async fn save(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let values = Values::from_form(&form);
    let loaded = match template_id(&raw) {
        Ok(id) => saved(&state, &page, id).await.map(|s| (id, s)),
        Err(e) => Err(e),
    };
    let (id, (_, saved)) = match loaded {
        Ok(x) => x,
        Err(e) => return not_found::api_error(&e),
    };
    if !saved.enabled.is_empty() && form.get("confirm") != "yes" {
        let typed = (values, Sample::from_form(&form), true);
        let mut p = edit_page(&state, &page, &raw, typed, Errors::default(), saved);
        p.confirming = true;
        return html(StatusCode::CONFLICT, &p);
    }
    match change(&state, page.id(), id, values.request()).await {
        Ok(_) => see_other(&format!("{}/{raw}?notice=saved", page.href("templates"))),
        Err(e) if e.status.is_client_error() => {
            let typed = (values, Sample::from_form(&form), true);
            let p = edit_page(&state, &page, &raw, typed, Errors::from_api(&e), saved);
            html(e.status, &p)
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// `POST templates/{id}/test`: Send test of the saved template to a member's address.
pub async fn test(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let form = FormData::parse(&body);
    let email = form.get("email");
    let loaded = match template_id(&raw) {
        Ok(id) => saved(&state, &page, id).await.map(|s| (id, s)),
        Err(e) => Err(e),
    };
    let (id, (t, saved)) = match loaded {
        Ok(x) => x,
        Err(e) => return not_found::api_error(&e),
    };
    match send_test(&state, page.id(), id, &email).await {
        Ok(sent) => {
            let notice: String =
                form_urlencoded::byte_serialize(format!("sent:{}", sent.email).as_bytes())
                    .collect();
            see_other(&format!("{}/{raw}?notice={notice}", page.href("templates")))
        }
        Err(e) if e.status.is_client_error() => {
            let saved_form = (Values::from_template(&t), Sample::default(), false);
            let mut p = edit_page(&state, &page, &raw, saved_form, Errors::default(), saved);
            p.test_email = email;
            p.test_errors = test_errors(&e);
            html(e.status, &p)
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// A refused test send: messages about the address beside the address, the rest (no sender,
/// an unverified domain, the billing limit) at the top of the test form.
fn test_errors(e: &ApiError) -> Errors {
    let mut out = Errors::default();
    for f in &e.errors {
        if f.field == "email" {
            out.push("email", &f.message);
        } else {
            out.general.push(f.message.clone());
        }
    }
    if e.errors.is_empty() {
        out.general.push(e.message.clone());
    }
    out
}
