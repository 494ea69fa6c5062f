//! Validation of a `/v1/send` body into a [`SendPlan`]: every problem is reported with its
//! field path, limits are those of SPEC.md (10 attachments, 10 MB decoded, 40 MB message),
//! and nothing that could inject a header (CR, LF) gets through.

use herald_core::email::EmailAddress;
use herald_engine::send::{AttachmentIn, Recipient};
use serde_json::Value;

use super::send_attachments::{AttachmentsField, Content};
use crate::error::{ApiError, FieldError};

pub const MAX_RECIPIENTS: usize = 50;
pub const MAX_ATTACHMENTS: usize = 10;
pub const MAX_ATTACHMENT_BYTES: usize = 10 * 1024 * 1024;
pub const MAX_MESSAGE_BYTES: usize = 40 * 1024 * 1024;
pub const MAX_SUBJECT: usize = 998;
pub const MAX_HEADER_VALUE: usize = 998;

/// Headers Herald writes itself; a request cannot set them.
const RESERVED_HEADERS: [&str; 12] = [
    "from",
    "to",
    "cc",
    "bcc",
    "subject",
    "date",
    "message-id",
    "reply-to",
    "mime-version",
    "content-type",
    "content-transfer-encoding",
    "dkim-signature",
];

pub struct Problems(pub Vec<FieldError>);

impl Problems {
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>, code: &str) {
        self.0.push(FieldError::new(field, message, code));
    }
}

fn has_line_break(s: &str) -> bool {
    s.contains(['\r', '\n'])
}

/// A display name: no line breaks or control characters, at most 200 characters.
pub fn display_name(raw: Option<&Value>, field: &str, p: &mut Problems) -> Option<String> {
    match raw {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) if s.chars().any(char::is_control) || s.chars().count() > 200 => {
            p.push(
                field,
                "names are at most 200 characters without line breaks",
                "invalid_name",
            );
            None
        }
        Some(Value::String(s)) => Some(s.trim().to_owned()),
        Some(_) => {
            p.push(field, "must be a string", "invalid_type");
            None
        }
    }
}

/// `"a@b.c"`, `"Name <a@b.c>"` or `{name, email}`.
pub fn mailbox(raw: &Value, field: &str, p: &mut Problems) -> Option<Recipient> {
    let (email, name) = match raw {
        Value::String(s) => match (s.rfind('<'), s.ends_with('>')) {
            (Some(i), true) => {
                let name = s[..i].trim().trim_matches('"').trim();
                let name = (!name.is_empty()).then(|| Value::String(name.to_owned()));
                (s[i + 1..s.len() - 1].to_owned(), name)
            }
            _ => (s.clone(), None),
        },
        Value::Object(o) => match o.get("email").and_then(Value::as_str) {
            Some(e) => (e.to_owned(), o.get("name").cloned()),
            None => {
                p.push(format!("{field}.email"), "email is required", "required");
                return None;
            }
        },
        _ => {
            p.push(
                field,
                "must be an email string or {name, email}",
                "invalid_type",
            );
            return None;
        }
    };
    let name = display_name(name.as_ref(), &format!("{field}.name"), p);
    match EmailAddress::parse(&email) {
        Ok(email) => Some(Recipient { email, name }),
        Err(e) => {
            p.push(field, e.to_string(), "invalid_email");
            None
        }
    }
}

pub fn recipients(raw: Option<&Value>, p: &mut Problems) -> Vec<Recipient> {
    let items: Vec<(String, &Value)> = match raw {
        None | Some(Value::Null) => {
            p.push("to", "to is required", "required");
            return Vec::new();
        }
        Some(Value::Array(a)) if a.is_empty() => {
            p.push("to", "to needs at least one recipient", "required");
            return Vec::new();
        }
        Some(Value::Array(a)) if a.len() > MAX_RECIPIENTS => {
            p.push(
                "to",
                format!("at most {MAX_RECIPIENTS} recipients per request"),
                "too_many",
            );
            return Vec::new();
        }
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("to.{i}"), v))
            .collect(),
        Some(v) => vec![("to".to_owned(), v)],
    };
    let mut out: Vec<Recipient> = Vec::new();
    for (field, v) in items {
        if let Some(r) = mailbox(v, &field, p)
            && !out.iter().any(|o| o.email == r.email)
        {
            out.push(r);
        }
    }
    out
}

pub fn subject(raw: Option<&str>, p: &mut Problems) -> Option<String> {
    let s = raw?;
    if s.is_empty() || s.chars().count() > MAX_SUBJECT {
        p.push(
            "subject",
            format!("subject must be 1 to {MAX_SUBJECT} characters"),
            "invalid_length",
        );
    } else if has_line_break(s) {
        p.push(
            "subject",
            "subject must not contain line breaks",
            "line_break",
        );
    } else {
        return Some(s.to_owned());
    }
    None
}

pub fn headers(raw: Option<&Value>, p: &mut Problems) -> Vec<(String, String)> {
    let obj = match raw {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Object(o)) => o,
        Some(_) => {
            p.push(
                "headers",
                "headers must be an object of strings",
                "invalid_type",
            );
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for (name, value) in obj {
        let field = format!("headers.{name}");
        let valid_name = !name.is_empty()
            && name.len() <= 100
            && name.bytes().all(|b| b.is_ascii_graphic() && b != b':');
        if !valid_name {
            p.push(
                field,
                "header names are printable ASCII without ':' or line breaks",
                "invalid_header_name",
            );
            continue;
        }
        if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            p.push(
                field,
                format!("{name} is set by Herald; use the request's own field"),
                "reserved_header",
            );
            continue;
        }
        match value.as_str() {
            None => p.push(field, "header values must be strings", "invalid_type"),
            Some(v) if has_line_break(v) => p.push(
                field,
                "header values must not contain CR or LF",
                "line_break",
            ),
            Some(v) if v.chars().count() > MAX_HEADER_VALUE => p.push(
                field,
                format!("header values are at most {MAX_HEADER_VALUE} characters"),
                "too_long",
            ),
            Some(v) => out.push((name.clone(), v.to_owned())),
        }
    }
    out
}

/// Attachments; `Err` is a 413 when the decoded total is over the limit. The decoded bytes
/// move into the [`AttachmentIn`]s: no copy is made.
pub fn attachments(
    raw: Option<AttachmentsField>,
    p: &mut Problems,
) -> Result<(Vec<AttachmentIn>, usize), ApiError> {
    let items = match raw {
        None => return Ok((Vec::new(), 0)),
        Some(AttachmentsField::Items(a)) => a,
        Some(AttachmentsField::NotArray) => {
            p.push(
                "attachments",
                "attachments must be an array",
                "invalid_type",
            );
            return Ok((Vec::new(), 0));
        }
    };
    if items.len() > MAX_ATTACHMENTS {
        p.push(
            "attachments",
            format!("at most {MAX_ATTACHMENTS} attachments"),
            "too_many",
        );
        return Ok((Vec::new(), 0));
    }
    let mut out = Vec::new();
    let mut total = 0usize;
    for (i, item) in items.into_iter().enumerate() {
        let f = |k: &str| format!("attachments.{i}.{k}");
        let text = |v: &Option<Value>| v.as_ref().and_then(Value::as_str).map(str::to_owned);
        let filename = match text(&item.filename) {
            Some(n) if !n.is_empty() && n.len() <= 255 && !n.chars().any(char::is_control) => n,
            _ => {
                p.push(
                    f("filename"),
                    "filename is required: 1 to 255 characters without line breaks",
                    "invalid",
                );
                continue;
            }
        };
        let content_type =
            text(&item.content_type).unwrap_or_else(|| "application/octet-stream".to_owned());
        let ct_ok = content_type.split_once('/').is_some_and(|(a, b)| {
            !a.is_empty() && !b.is_empty() && content_type.bytes().all(|c| c.is_ascii_graphic())
        });
        if !ct_ok {
            p.push(
                f("contentType"),
                "contentType must be a MIME type such as application/pdf",
                "invalid",
            );
            continue;
        }
        let content = match item.content {
            None | Some(Content::NotString) => {
                p.push(f("content"), "content (base64) is required", "required");
                continue;
            }
            Some(Content::InvalidBase64) => {
                p.push(
                    f("content"),
                    "content is not valid base64",
                    "invalid_base64",
                );
                continue;
            }
            Some(Content::Dropped(n)) => {
                total += n;
                Vec::new()
            }
            Some(Content::Decoded(bytes)) => {
                total += bytes.len();
                bytes
            }
        };
        let inline = match text(&item.disposition).as_deref() {
            None | Some("attachment") => false,
            Some("inline") => true,
            Some(_) => {
                p.push(
                    f("disposition"),
                    "disposition is attachment or inline",
                    "invalid_enum",
                );
                continue;
            }
        };
        let content_id = text(&item.content_id);
        if inline
            && content_id.as_deref().is_none_or(|c| {
                c.is_empty()
                    || c.chars()
                        .any(|ch| ch.is_control() || ch == '<' || ch == '>')
            })
        {
            p.push(
                f("contentId"),
                "inline attachments need a contentId (without <>)",
                "required",
            );
            continue;
        }
        out.push(AttachmentIn {
            filename,
            content_type,
            content,
            content_id,
            inline,
        });
    }
    if total > MAX_ATTACHMENT_BYTES {
        return Err(ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!("attachments total {total} bytes; at most {MAX_ATTACHMENT_BYTES} bytes"),
        ));
    }
    Ok((out, total))
}
