//! Validation of a `/v1/send` body: every problem is reported with its field path, limits are
//! those of SPEC.md (10 attachments, 10 MB decoded, 40 MB message). Subjects, display names,
//! addresses and custom headers follow the rules of `herald_core::rules` and
//! `herald_core::headers` (the ones templates and the MIME builder use), so nothing accepted
//! here can inject a header or fail at compose time for a header reason.

use herald_core::email::EmailAddress;
use herald_core::headers;
use herald_core::rules::{self, Violation};
use herald_engine::send::{AttachmentIn, Recipient};
use serde_json::Value;

use super::send_attachments::{AttachmentsField, Content};
use crate::error::{ApiError, FieldError};

pub const MAX_RECIPIENTS: usize = 50;
pub const MAX_ATTACHMENTS: usize = 10;
pub const MAX_ATTACHMENT_BYTES: usize = 10 * 1024 * 1024;
pub const MAX_MESSAGE_BYTES: usize = 40 * 1024 * 1024;

pub struct Problems(pub Vec<FieldError>);

impl Problems {
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>, code: &str) {
        self.0.push(FieldError::new(field, message, code));
    }

    /// Records a refused value under `field`.
    pub fn refused(&mut self, field: impl Into<String>, v: Violation) {
        self.0.push(FieldError::new(field, v.message, v.code));
    }

    /// True when `field` (or a field inside it, such as `from.email`) already has a problem.
    pub fn has(&self, field: &str) -> bool {
        self.0.iter().any(|e| {
            e.field
                .strip_prefix(field)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
    }
}

/// A display name (`herald_core::rules::display_name`); blank or `null` is none.
pub fn display_name(raw: Option<&Value>, field: &str, p: &mut Problems) -> Option<String> {
    match raw {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => rules::display_name(s)
            .map_err(|v| p.refused(field, v))
            .ok()
            .flatten(),
        Some(_) => {
            p.push(field, "must be a string", "invalid_type");
            None
        }
    }
}

/// An address (`herald_core::rules::address`).
pub fn address(raw: &str, field: &str, p: &mut Problems) -> Option<EmailAddress> {
    rules::address(raw).map_err(|v| p.refused(field, v)).ok()
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
    let email = address(&email, field, p)?;
    Some(Recipient { email, name })
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

/// A subject given in the request (`herald_core::rules::subject`); `None` when absent.
pub fn subject(raw: Option<&str>, p: &mut Problems) -> Option<String> {
    rules::subject(raw?)
        .map_err(|v| p.refused("subject", v))
        .ok()
}

/// Custom headers (`herald_core::headers::custom_header`), each problem under
/// `headers.<name>`.
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
        let checked = match value.as_str() {
            Some(v) => headers::custom_header(name, v).map(|()| v),
            None => headers::custom_header(name, "").and(Err(Violation::new(
                "invalid_type",
                "header values must be strings",
            ))),
        };
        match checked {
            Ok(v) => out.push((name.clone(), v.to_owned())),
            Err(v) => p.refused(format!("headers.{name}"), v),
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
                axum::body::Bytes::new()
            }
            Some(Content::Decoded(bytes)) => {
                total += bytes.len();
                axum::body::Bytes::from(bytes)
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
