//! Posted forms: their fields, and the API's refusal turned into messages beside them.

use axum::body::Bytes;
use herald_api::error::ApiError;

/// The fields of a `application/x-www-form-urlencoded` body, in order (a name may repeat).
pub struct FormData(pub Vec<(String, String)>);

impl FormData {
    pub fn parse(body: &Bytes) -> Self {
        FormData(form_urlencoded::parse(body).into_owned().collect())
    }

    /// The first value of `name`, or "".
    pub fn get(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    /// The value of `name` when present and not blank.
    pub fn opt(&self, name: &str) -> Option<String> {
        Some(self.get(name)).filter(|v| !v.trim().is_empty())
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// What a refused form shows: a message per field, and the messages of no field.
#[derive(Default, Debug)]
pub struct Errors {
    fields: Vec<(String, String)>,
    pub general: Vec<String>,
}

impl Errors {
    /// The API's refusal: its field errors under their field names, else its message.
    pub fn from_api(e: &ApiError) -> Self {
        let mut out = Errors::default();
        for f in &e.errors {
            out.fields.push((f.field.clone(), f.message.clone()));
        }
        if out.fields.is_empty() {
            out.general.push(e.message.clone());
        }
        out
    }

    pub fn general(message: impl Into<String>) -> Self {
        Errors {
            fields: Vec::new(),
            general: vec![message.into()],
        }
    }

    /// Adds the message of field `name` (a check of the page's own, e.g. a number field).
    pub fn push(&mut self, name: &str, message: &str) {
        self.fields.push((name.to_owned(), message.to_owned()));
    }

    /// Adds the messages of `other`.
    pub fn extend(&mut self, other: Errors) {
        self.fields.extend(other.fields);
        self.general.extend(other.general);
    }

    /// The first message of field `name` or of a field below it (`config.headers` for
    /// `config.headers.X-Team`).
    pub fn under(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name || k.strip_prefix(name).is_some_and(|r| r.starts_with('.')))
            .map(|(_, v)| v.as_str())
    }

    /// The message of field `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every message (the summary at the top of a form with several errors).
    pub fn all(&self) -> Vec<&str> {
        self.general
            .iter()
            .map(String::as_str)
            .chain(self.fields.iter().map(|(_, v)| v.as_str()))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.general.is_empty()
    }
}
