//! The editor's live preview, rendered by the engine's `preview` (the rules of a send) for a
//! sample contact the user edits:
//! - `POST templates/preview`: the fragment beside the editor (rendered subject, the variables
//!   with their fallbacks and sample values, the plain-text part), swapped in by htmx as the
//!   user types;
//! - `POST templates/frame` and `GET templates/{id}/frame`: the rendered HTML as a document of
//!   its own for the page's `sandbox`ed iframe, with a policy of its own: no script at all,
//!   its inline styles and images allowed (an email's markup needs them), framed only by the
//!   dashboard.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use herald_api::AppState;
use herald_api::routes::templates::{template, template_id};
use herald_core::ids::Uuid;
use serde_json::{Map, Value};

use super::editor::Values;
use crate::form::FormData;
use crate::pages::not_found;
use crate::render::html;
use crate::session::ProjectPage;

/// The policy of the preview frame: nothing runs, nothing is sent, only the email's own
/// styles and images load, and only a dashboard page may frame it.
pub const FRAME_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; \
img-src https: data:; font-src https: data:; form-action 'none'; base-uri 'none'; \
frame-ancestors 'self'; sandbox";

/// The sample contact of the preview, as typed.
pub struct Sample {
    pub email: String,
    /// JSON object of the contact's data.
    pub data: String,
}

impl Default for Sample {
    fn default() -> Self {
        Sample {
            email: "ada@example.com".to_owned(),
            data: "{\n  \"firstName\": \"Ada\",\n  \"lastName\": \"Lovelace\"\n}".to_owned(),
        }
    }
}

impl Sample {
    pub fn from_form(form: &FormData) -> Self {
        Sample {
            email: form.get("sampleEmail"),
            data: form.get("sampleData"),
        }
    }

    /// The data as an object, or why it is not one.
    fn parsed(&self) -> Result<Map<String, Value>, String> {
        if self.data.trim().is_empty() {
            return Ok(Map::new());
        }
        match serde_json::from_str::<Value>(&self.data) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => {
                Err(r#"Sample data must be a JSON object, like {"firstName": "Ada"}"#.to_owned())
            }
            Err(e) => Err(format!("Sample data is not valid JSON: {e}")),
        }
    }
}

pub struct VariableRow {
    pub path: String,
    pub fallback: Option<String>,
    /// What the sample gives it.
    pub value: Option<String>,
}

/// What the fragment beside the editor shows.
pub struct PreviewView {
    pub subject: String,
    pub text: String,
    pub variables: Vec<VariableRow>,
    pub sample_error: Option<String>,
    pub marketing: bool,
}

impl PreviewView {
    /// `values` rendered for `sample` (an invalid sample renders with no data, and says why).
    pub fn render(state: &AppState, project: Uuid, values: &Values, sample: &Sample) -> Self {
        let (data, sample_error) = match sample.parsed() {
            Ok(d) => (d, None),
            Err(e) => (Map::new(), Some(e)),
        };
        let p = state
            .engine
            .preview(project, &values.subject, &values.body, &sample.email, &data);
        PreviewView {
            subject: p.subject,
            text: p.text,
            variables: p
                .variables
                .into_iter()
                .map(|v| VariableRow {
                    path: v.path,
                    fallback: v.fallback,
                    value: v.value,
                })
                .collect(),
            sample_error,
            marketing: values.kind.eq_ignore_ascii_case("MARKETING"),
        }
    }
}

#[derive(Template)]
#[template(path = "components/template_preview.html")]
struct Fragment {
    preview: PreviewView,
}

/// `POST templates/preview`: the fragment for the editor's current fields.
pub async fn fragment(State(state): State<AppState>, page: ProjectPage, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    let preview = PreviewView::render(
        &state,
        page.id(),
        &Values::from_form(&form),
        &Sample::from_form(&form),
    );
    html(StatusCode::OK, &Fragment { preview })
}

/// The rendered HTML as the frame's document, under [`FRAME_CSP`].
fn frame_response(html: String) -> Response {
    let mut res = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        html,
    )
        .into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(FRAME_CSP),
    );
    h.insert(
        header::X_FRAME_OPTIONS,
        HeaderValue::from_static("SAMEORIGIN"),
    );
    res
}

fn rendered_html(state: &AppState, project: Uuid, values: &Values, sample: &Sample) -> String {
    let data = sample.parsed().unwrap_or_default();
    state
        .engine
        .preview(project, &values.subject, &values.body, &sample.email, &data)
        .html
}

/// `POST templates/frame`: the editor's current body, rendered (the form's Refresh preview).
pub async fn frame(State(state): State<AppState>, page: ProjectPage, body: Bytes) -> Response {
    let form = FormData::parse(&body);
    frame_response(rendered_html(
        &state,
        page.id(),
        &Values::from_form(&form),
        &Sample::from_form(&form),
    ))
}

/// `GET templates/{id}/frame`: the saved template rendered for the default sample.
pub async fn saved_frame(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, raw)): Path<(String, String)>,
) -> Response {
    let t = match template_id(&raw) {
        Ok(id) => template(&state, page.id(), id).await,
        Err(e) => Err(e),
    };
    match t {
        Ok(t) => {
            let values = Values {
                name: t.name,
                subject: t.subject,
                body: t.body,
                kind: t.template_type.as_str().to_owned(),
                from: String::new(),
            };
            frame_response(rendered_html(
                &state,
                page.id(),
                &values,
                &Sample::default(),
            ))
        }
        Err(e) => not_found::api_error(&e),
    }
}
