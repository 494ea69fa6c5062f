//! The field rules of a template, shared by create and patch. Parsing yields [`Checked`]:
//! trimmed names, lower-cased addresses, a canonical type, or every problem at once. Subject,
//! display name and address follow the rules of `herald_core::rules`, the same functions
//! `/v1/send` calls, so both answer the same input with the same code and message.

use herald_core::email::EmailAddress;
use herald_core::kinds::TemplateType;
use herald_core::rules::{self, Violation};

use super::TemplateRequest;
use crate::error::{ApiError, ApiResult, FieldError};

pub const NAME_MAX: usize = 200;
/// The longest subject in characters (the rule of `herald_core::rules::subject`).
pub const SUBJECT_MAX: usize = rules::SUBJECT_MAX;
/// The largest body in bytes.
pub const BODY_MAX_BYTES: usize = 1024 * 1024;
const COPY_SUFFIX: &str = " (copy)";

/// A request's fields after validation: `None` when not given, `Some(None)` when cleared.
#[derive(Debug, Default)]
pub struct Checked {
    pub name: Option<String>,
    pub subject: Option<String>,
    pub body: Option<String>,
    pub template_type: Option<TemplateType>,
    pub from: Option<Option<EmailAddress>>,
    pub from_name: Option<Option<String>>,
    pub reply_to: Option<Option<EmailAddress>>,
}

/// A template type from a request (case-insensitive), or the one 422 message for it.
pub fn parse_type(raw: &str) -> Result<TemplateType, FieldError> {
    TemplateType::parse(raw).map_err(|_| {
        let message = format!("type must be {}", TemplateType::EXPECTED);
        FieldError::new("type", message, "invalid_value")
    })
}

/// The name of a copy: "<name> (copy)", the original cut so the result stays within bounds.
pub fn copy_name(name: &str) -> String {
    let keep = NAME_MAX - COPY_SUFFIX.chars().count();
    let mut out: String = name.chars().take(keep).collect();
    out.push_str(COPY_SUFFIX);
    out
}

/// Applies the rules to the fields given; `create` makes name, subject, body and type required.
pub fn check(req: TemplateRequest, create: bool) -> ApiResult<Checked> {
    let mut errors = Vec::new();
    let required = |field: &str, value: Option<String>, errors: &mut Vec<FieldError>| {
        if create && value.is_none() {
            errors.push(FieldError::new(
                field,
                format!("{field} is required"),
                "required",
            ));
        }
        value
    };
    let name = required("name", req.name, &mut errors);
    let subject = required("subject", req.subject, &mut errors);
    let body = required("body", req.body, &mut errors);
    let template_type = required("type", req.template_type, &mut errors);
    let checked = Checked {
        name: name.and_then(|v| checked_name(v, &mut errors)),
        subject: subject.and_then(|v| checked_subject(v, &mut errors)),
        body: body.and_then(|v| checked_body(v, &mut errors)),
        template_type: template_type.and_then(|v| parse_type(&v).map_err(|e| errors.push(e)).ok()),
        from: req.from.map(|v| optional_email(v, "from", &mut errors)),
        from_name: req.from_name.map(|v| checked_from_name(v, &mut errors)),
        reply_to: req
            .reply_to
            .map(|v| optional_email(v, "replyTo", &mut errors)),
    };
    if errors.is_empty() {
        Ok(checked)
    } else {
        Err(ApiError::validation(errors))
    }
}

fn blank(field: &str, errors: &mut Vec<FieldError>) -> Option<String> {
    errors.push(FieldError::new(
        field,
        format!("{field} must not be empty"),
        "required",
    ));
    None
}

fn too_long(field: &str, max: usize, unit: &str, errors: &mut Vec<FieldError>) -> Option<String> {
    let message = format!("{field} is at most {max} {unit}");
    errors.push(FieldError::new(field, message, "too_long"));
    None
}

pub(crate) fn checked_name(v: String, errors: &mut Vec<FieldError>) -> Option<String> {
    let v = v.trim();
    if v.is_empty() {
        blank("name", errors)
    } else if v.chars().count() > NAME_MAX {
        too_long("name", NAME_MAX, "characters", errors)
    } else {
        Some(v.to_owned())
    }
}

pub(crate) fn refused(field: &str, v: Violation, errors: &mut Vec<FieldError>) {
    errors.push(FieldError::new(field, v.message, v.code));
}

pub(crate) fn checked_subject(v: String, errors: &mut Vec<FieldError>) -> Option<String> {
    rules::subject(&v)
        .map_err(|e| refused("subject", e, errors))
        .ok()
}

pub(crate) fn checked_body(v: String, errors: &mut Vec<FieldError>) -> Option<String> {
    if v.trim().is_empty() {
        blank("body", errors)
    } else if v.len() > BODY_MAX_BYTES {
        too_long("body", BODY_MAX_BYTES, "bytes", errors)
    } else {
        Some(v)
    }
}

/// An optional address: `null` or blank clears it, anything else must parse.
pub(crate) fn optional_email(
    v: Option<String>,
    field: &str,
    errors: &mut Vec<FieldError>,
) -> Option<EmailAddress> {
    let raw = v.filter(|s| !s.trim().is_empty())?;
    rules::address(&raw)
        .map_err(|e| refused(field, e, errors))
        .ok()
}

/// A display name (`null` or blank clears it), by the rule of `herald_core::rules`.
pub(crate) fn checked_from_name(v: Option<String>, errors: &mut Vec<FieldError>) -> Option<String> {
    rules::display_name(v.as_deref().unwrap_or(""))
        .map_err(|e| refused("fromName", e, errors))
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(v: serde_json::Value) -> TemplateRequest {
        serde_json::from_value(v).expect("request")
    }

    #[test]
    fn types_are_canonicalised() {
        assert_eq!(parse_type("marketing").ok(), Some(TemplateType::Marketing));
        assert_eq!(parse_type("HEADLESS").ok(), Some(TemplateType::Headless));
        assert_eq!(
            parse_type("BULK").map_err(|e| e.code).err().as_deref(),
            Some("invalid_value")
        );
    }

    #[test]
    fn a_copy_name_stays_within_the_name_limit() {
        assert_eq!(copy_name("Welcome"), "Welcome (copy)");
        let long = "é".repeat(NAME_MAX);
        assert_eq!(copy_name(&long).chars().count(), NAME_MAX);
    }

    #[test]
    fn patch_tells_null_from_absent() {
        let c = check(
            request(serde_json::json!({"from": null, "fromName": "  "})),
            false,
        )
        .expect("valid");
        assert!(matches!(c.from, Some(None)));
        assert!(matches!(c.from_name, Some(None)));
        assert!(c.reply_to.is_none());
        assert!(c.name.is_none());
    }

    #[test]
    fn create_reports_every_problem() {
        let e = check(
            request(serde_json::json!({"subject": "a\nb", "replyTo": "nope"})),
            true,
        )
        .expect_err("invalid");
        let fields: Vec<&str> = e.errors.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["name", "body", "type", "subject", "replyTo"]);
    }
}
