//! One contact: its email, subscription and data as typed fields (text, number, true/false,
//! date) saved through the API's patch; its events; the emails sent to it with their status,
//! opens and clicks; the segments it is in.

use std::collections::HashMap;

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::contacts::{PatchContactRequest, change_contact};
use herald_store::StoreResult;
use herald_store::audience::Audience;
use herald_store::contacts::Contact;
use herald_store::messages::MessageFilter;
use serde_json::{Map, Value};

use crate::form::{Errors, FormData};
use crate::format::ago;
use crate::pages::not_found;
use crate::render::{html, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

/// The input a data value gets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Number,
    Boolean,
    Date,
}

impl Kind {
    fn of(v: &Value) -> Kind {
        match v {
            Value::Number(_) => Kind::Number,
            Value::Bool(_) => Kind::Boolean,
            Value::String(s) if is_date(s) => Kind::Date,
            _ => Kind::Text,
        }
    }

    fn parse(raw: &str) -> Kind {
        match raw {
            "number" => Kind::Number,
            "boolean" => Kind::Boolean,
            "date" => Kind::Date,
            _ => Kind::Text,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Number => "number",
            Kind::Boolean => "boolean",
            Kind::Date => "date",
        }
    }
}

/// `YYYY-MM-DD`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

pub struct DataField {
    pub key: String,
    pub kind: Kind,
    pub value: String,
    pub error: Option<String>,
}

impl DataField {
    pub fn input_type(&self) -> &'static str {
        match self.kind {
            Kind::Number => "number",
            Kind::Date => "date",
            _ => "text",
        }
    }
}

pub struct EventRow {
    pub name: String,
    pub when: String,
    pub exact: String,
}

pub struct EmailRow {
    /// The message id: the row's anchor (`#email-<id>`), which Activity links to.
    pub id: String,
    pub subject: String,
    pub status: String,
    pub tone: &'static str,
    pub opens: i64,
    pub clicks: i64,
    pub when: String,
    pub exact: String,
}

#[derive(Template)]
#[template(path = "pages/contact.html")]
struct ContactPage {
    shell: Shell,
    action: String,
    back: String,
    email: String,
    subscribed: bool,
    fields: Vec<DataField>,
    new_key: String,
    new_value: String,
    new_kind: String,
    errors: Errors,
    events: Vec<EventRow>,
    emails: Vec<EmailRow>,
    segments: Vec<String>,
    saved: bool,
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

pub fn status_tone(status: &str) -> &'static str {
    match status {
        "SENT" | "DELIVERED" | "OPENED" | "CLICKED" => "success",
        "BOUNCED" | "FAILED" | "COMPLAINED" => "danger",
        "QUEUED" | "SENDING" => "warning",
        _ => "neutral",
    }
}

/// The contact's events, emails and segments.
async fn history(
    state: &AppState,
    page: &ProjectPage,
    contact: &Contact,
) -> StoreResult<(Vec<EventRow>, Vec<EmailRow>, Vec<String>)> {
    let now = state.engine.now();
    let events = state
        .store
        .events_of_contact(page.id(), contact.id, 200)
        .await?;
    let mut opens: HashMap<_, i64> = HashMap::new();
    let mut clicks: HashMap<_, i64> = HashMap::new();
    for e in &events {
        if let Some(m) = e.message_id {
            match e.name.as_str() {
                "email.open" => *opens.entry(m).or_default() += 1,
                "email.click" => *clicks.entry(m).or_default() += 1,
                _ => {}
            }
        }
    }
    let event_rows = events
        .iter()
        .take(50)
        .map(|e| {
            let (when, exact) = ago(e.created_at, now);
            EventRow {
                name: e.name.clone(),
                when,
                exact,
            }
        })
        .collect();
    let filter = MessageFilter {
        contact_id: Some(contact.id),
        ..MessageFilter::default()
    };
    let (messages, _) = state
        .store
        .list_messages(page.id(), &filter, 20, None)
        .await?;
    let emails = messages
        .into_iter()
        .map(|m| {
            let (when, exact) = ago(m.created_at, now);
            let status = m.status.as_str().to_owned();
            EmailRow {
                id: m.id.to_string(),
                subject: m.subject,
                tone: status_tone(&status),
                status,
                opens: opens.get(&m.id).copied().unwrap_or(0),
                clicks: clicks.get(&m.id).copied().unwrap_or(0),
                when,
                exact,
            }
        })
        .collect();
    let mut segments = Vec::new();
    for s in state
        .store
        .list_segments(page.id())
        .await?
        .into_iter()
        .take(100)
    {
        let Some(filter) = state.store.segment_filter(page.id(), &s).await? else {
            continue;
        };
        if state
            .store
            .contact_matches(
                page.id(),
                contact.id,
                Audience::new(Some(&filter), false),
                now,
            )
            .await?
        {
            segments.push(s.name);
        }
    }
    Ok((event_rows, emails, segments))
}

fn fields_of(data: &Map<String, Value>) -> Vec<DataField> {
    data.iter()
        .map(|(k, v)| DataField {
            key: k.clone(),
            kind: Kind::of(v),
            value: text_of(v),
            error: None,
        })
        .collect()
}

async fn render(
    state: &AppState,
    page: &ProjectPage,
    contact: &Contact,
    status: StatusCode,
    edited: Option<(FormData, Errors, Vec<DataField>)>,
    saved: bool,
) -> Response {
    let (events, emails, segments) = match history(state, page, contact).await {
        Ok(h) => h,
        Err(e) => return not_found::server_error(&e.to_string()),
    };
    let (email, subscribed, fields, new_key, new_value, new_kind, errors) = match edited {
        Some((form, errors, fields)) => (
            form.get("email"),
            form.get("subscribed") == "true",
            fields,
            form.get("new_key"),
            form.get("new_value"),
            form.get("new_type"),
            errors,
        ),
        None => (
            contact.email.clone(),
            contact.subscribed,
            fields_of(&contact.data),
            String::new(),
            String::new(),
            "text".to_owned(),
            Errors::default(),
        ),
    };
    html(
        status,
        &ContactPage {
            shell: page.shell("Contacts", &contact.email),
            action: page.href(&format!("contacts/{}", contact.id)),
            back: page.href("contacts"),
            email,
            subscribed,
            fields,
            new_key,
            new_value,
            new_kind,
            errors,
            events,
            emails,
            segments,
            saved,
        },
    )
}

async fn load(state: &AppState, page: &ProjectPage, raw: &str) -> Result<Contact, Response> {
    let Some(id) = herald_core::ids::parse_id(raw) else {
        return Err(not_found::for_viewer(&page.viewer, StatusCode::NOT_FOUND));
    };
    match state.store.contact(page.id(), id).await {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(not_found::for_viewer(&page.viewer, StatusCode::NOT_FOUND)),
        Err(e) => Err(not_found::server_error(&e.to_string())),
    }
}

pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let contact = match load(&state, &page, &id).await {
        Ok(c) => c,
        Err(res) => return res,
    };
    let saved = q.contains_key("saved");
    render(&state, &page, &contact, StatusCode::OK, None, saved).await
}

/// The typed value of one posted data field, or why it is not one.
fn typed(kind: Kind, raw: &str) -> Result<Value, &'static str> {
    let raw = raw.trim();
    match kind {
        Kind::Text => Ok(Value::String(raw.to_owned())),
        Kind::Date if raw.is_empty() || is_date(raw) => Ok(Value::String(raw.to_owned())),
        Kind::Date => Err("Enter a date as YYYY-MM-DD"),
        Kind::Boolean => match raw {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err("Choose true or false"),
        },
        Kind::Number => raw
            .parse::<serde_json::Number>()
            .map(Value::Number)
            .map_err(|_| "Enter a number"),
    }
}

/// `POST contacts/{id}`: email, subscription and data in one patch through the API.
pub async fn save(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let contact = match load(&state, &page, &id).await {
        Ok(c) => c,
        Err(res) => return res,
    };
    let form = FormData::parse(&body);
    let mut data = Map::new();
    let mut fields = Vec::new();
    let mut errors = Errors::default();
    for key in contact.data.keys() {
        let kind = Kind::parse(&form.get(&format!("type.{key}")));
        let raw = form.get(&format!("data.{key}"));
        let mut error = None;
        if form.get(&format!("remove.{key}")) == "true" {
            data.insert(key.clone(), Value::Null);
        } else {
            match typed(kind, &raw) {
                Ok(v) => {
                    data.insert(key.clone(), v);
                }
                Err(m) => error = Some(m.to_owned()),
            }
        }
        fields.push(DataField {
            key: key.clone(),
            kind,
            value: raw,
            error,
        });
    }
    let new_key = form.get("new_key").trim().to_owned();
    if !new_key.is_empty() {
        match typed(Kind::parse(&form.get("new_type")), &form.get("new_value")) {
            Ok(v) => {
                data.insert(new_key.clone(), v);
            }
            Err(m) => errors.push("new_value", m),
        }
    }
    for f in &fields {
        if let Some(e) = &f.error {
            errors.push(&format!("data.{}", f.key), e);
        }
    }
    if !errors.is_empty() {
        return render(
            &state,
            &page,
            &contact,
            StatusCode::UNPROCESSABLE_ENTITY,
            Some((form, errors, fields)),
            false,
        )
        .await;
    }
    let request = PatchContactRequest {
        email: Some(form.get("email")),
        subscribed: Some(form.get("subscribed") == "true"),
        data: Some(Value::Object(data)),
    };
    match change_contact(&state, page.id(), contact.id, request).await {
        Ok(_) => see_other(&format!(
            "{}?saved=1",
            page.href(&format!("contacts/{}", contact.id))
        )),
        Err(e) if e.status.is_client_error() => {
            let errors = refusal(&e, &mut fields);
            render(
                &state,
                &page,
                &contact,
                e.status,
                Some((form, errors, fields)),
                false,
            )
            .await
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// The API's refusal, its `data.<key>` messages set beside their data fields.
fn refusal(e: &ApiError, fields: &mut [DataField]) -> Errors {
    let errors = Errors::from_api(e);
    for f in fields.iter_mut() {
        if let Some(m) = errors.get(&format!("data.{}", f.key)) {
            f.error = Some(m.to_owned());
        }
    }
    errors
}
