//! The merge of a send request with its template: the rule `/v1/send` applies today and
//! campaigns and workflows will call, so a template means the same thing wherever it is used.
//!
//! Rules (DECISIONS.md "/v1/send", docs/templates.md):
//! - subject, body and reply-to: the request's value when given, else the template's;
//! - sender: the request's `from` (with its display name) when given, else the template's
//!   `from` with its `fromName`; the deprecated request field `name` names the sender only
//!   when the chosen sender has no name;
//! - the template's type travels with the result; a MARKETING template skips unsubscribed
//!   contacts ([`Merged::skips_unsubscribed`]);
//! - subject, body and sender are required: each one neither side gives is a [`Missing`].
//!
//! Values arrive validated (the request by the API, the template when it was written); the
//! merge adds no validation of its own.

use herald_core::email::EmailAddress;
use herald_core::ids::Uuid;
use herald_core::kinds::TemplateType;
use herald_store::templates::Template;

use super::accept::Recipient;

/// What a request gives; `None` for a field it left out.
#[derive(Clone, Debug, Default)]
pub struct SendOverrides {
    pub subject: Option<String>,
    pub body: Option<String>,
    pub from: Option<Recipient>,
    /// The deprecated sender name of `/v1/send` (`name`).
    pub fallback_from_name: Option<String>,
    pub reply_to: Option<EmailAddress>,
}

/// The message every recipient gets (subject and body still to render).
#[derive(Clone, Debug)]
pub struct Merged {
    pub subject: String,
    pub body: String,
    pub from: EmailAddress,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub template_id: Option<Uuid>,
    pub template_type: Option<TemplateType>,
}

impl Merged {
    /// MARKETING mail is not sent to unsubscribed contacts.
    pub fn skips_unsubscribed(&self) -> bool {
        self.template_type == Some(TemplateType::Marketing)
    }
}

/// A required field that neither the request nor the template gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// The request's field name (`subject`, `body`, `from`).
    pub field: &'static str,
    pub message: &'static str,
}

/// Applies the template (if any) under the request's values.
pub fn merge_with_template(
    request: SendOverrides,
    template: Option<&Template>,
) -> Result<Merged, Vec<Missing>> {
    let template_from = template.and_then(|t| {
        let email = EmailAddress::parse(t.from_email.as_deref()?).ok()?;
        Some(Recipient {
            email,
            name: t.from_name.clone(),
        })
    });
    let subject = request
        .subject
        .or_else(|| template.map(|t| t.subject.clone()));
    let body = request.body.or_else(|| template.map(|t| t.body.clone()));
    let from = request.from.or(template_from);
    let mut missing = Vec::new();
    if subject.is_none() {
        missing.push(Missing {
            field: "subject",
            message: "subject is required unless a template is given",
        });
    }
    if body.is_none() {
        missing.push(Missing {
            field: "body",
            message: "body is required unless a template is given",
        });
    }
    if from.is_none() {
        missing.push(Missing {
            field: "from",
            message: "from is required unless the template has a sender",
        });
    }
    let (Some(subject), Some(body), Some(from)) = (subject, body, from) else {
        return Err(missing);
    };
    Ok(Merged {
        subject,
        body,
        from: from.email,
        from_name: from.name.or(request.fallback_from_name),
        reply_to: request
            .reply_to
            .map(EmailAddress::into_string)
            .or_else(|| template.and_then(|t| t.reply_to.clone())),
        template_id: template.map(|t| t.id),
        template_type: template.map(|t| t.template_type),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(kind: TemplateType) -> Template {
        Template {
            id: herald_core::ids::new_id(),
            name: "T".into(),
            subject: "Template subject".into(),
            body: "<p>Template</p>".into(),
            template_type: kind,
            from_email: Some("news@example.com".into()),
            from_name: Some("News".into()),
            reply_to: Some("help@example.com".into()),
            created_at: 0,
            updated_at: 0,
        }
    }

    fn addr(s: &str) -> EmailAddress {
        EmailAddress::parse(s).expect("address")
    }

    #[test]
    fn template_fills_what_the_request_leaves_out() {
        let t = template(TemplateType::Marketing);
        let m = merge_with_template(SendOverrides::default(), Some(&t)).expect("merged");
        assert_eq!(m.subject, "Template subject");
        assert_eq!(m.body, "<p>Template</p>");
        assert_eq!(m.from.as_str(), "news@example.com");
        assert_eq!(m.from_name.as_deref(), Some("News"));
        assert_eq!(m.reply_to.as_deref(), Some("help@example.com"));
        assert_eq!(m.template_id, Some(t.id));
        assert!(m.skips_unsubscribed());
    }

    #[test]
    fn the_request_overrides_the_template() {
        let t = template(TemplateType::Transactional);
        let request = SendOverrides {
            subject: Some("Mine".into()),
            body: None,
            from: Some(Recipient {
                email: addr("me@example.com"),
                name: None,
            }),
            fallback_from_name: Some("Legacy".into()),
            reply_to: Some(addr("r@example.com")),
        };
        let m = merge_with_template(request, Some(&t)).expect("merged");
        assert_eq!(m.subject, "Mine");
        assert_eq!(m.body, "<p>Template</p>");
        assert_eq!(m.from.as_str(), "me@example.com");
        assert_eq!(
            m.from_name.as_deref(),
            Some("Legacy"),
            "the template's name is not mixed in"
        );
        assert_eq!(m.reply_to.as_deref(), Some("r@example.com"));
        assert!(!m.skips_unsubscribed());
    }

    #[test]
    fn without_a_template_everything_is_required() {
        let missing = merge_with_template(SendOverrides::default(), None).expect_err("missing");
        let fields: Vec<&str> = missing.iter().map(|m| m.field).collect();
        assert_eq!(fields, ["subject", "body", "from"]);
        let mut t = template(TemplateType::Headless);
        t.from_email = None;
        let missing = merge_with_template(SendOverrides::default(), Some(&t)).expect_err("from");
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].field, "from");
    }
}
