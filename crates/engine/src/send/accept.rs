//! Accepting a send: per recipient, upsert the contact (custom-field rules, subscription
//! events), render subject and body, and insert the message with its send job — all in one
//! transaction, so the answer is given only once everything it names is durably queued.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use herald_core::email::EmailAddress;
use herald_core::fields::DataPatch;
use herald_core::ids::{Uuid, new_id};
use herald_core::template::{Escape, Template};
use herald_store::contacts::{ContactUpsert, upsert_contact};
use herald_store::messages::{self, NewMessage, PENDING, SUPPRESSED};
use herald_store::{StoreError, jobs};
use serde_json::{Map, Value, json};

use crate::Engine;

/// Job kind of deliveries.
pub const SEND_JOB: &str = "send";
/// How long an `Idempotency-Key` is remembered.
pub const IDEMPOTENCY_WINDOW_MS: i64 = 24 * 3600 * 1000;

#[derive(Clone, Debug)]
pub struct Recipient {
    pub email: EmailAddress,
    pub name: Option<String>,
}

#[derive(Clone, Debug)]
pub struct AttachmentIn {
    pub filename: String,
    pub content_type: String,
    /// The decoded bytes (base64 is decoded once, while the request is read).
    pub content: Vec<u8>,
    pub content_id: Option<String>,
    pub inline: bool,
}

/// A validated send request.
#[derive(Clone, Debug)]
pub struct SendPlan {
    pub project_id: Uuid,
    pub recipients: Vec<Recipient>,
    /// Template sources of subject and body.
    pub subject: String,
    pub body: String,
    pub from: EmailAddress,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub template_id: Option<Uuid>,
    /// MARKETING mail is not sent to unsubscribed contacts.
    pub marketing: bool,
    pub subscribed: Option<bool>,
    pub data: DataPatch,
    pub headers: Vec<(String, String)>,
    pub attachments: Vec<AttachmentIn>,
    pub idempotency_key: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Accepted {
    pub contact_id: Uuid,
    pub email: String,
    pub message_id: Uuid,
    /// Why the recipient was skipped, if it was.
    pub skipped: Option<&'static str>,
}

#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error("this Idempotency-Key was already used in the last 24 hours")]
    IdempotencyKeyReused,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The variables of one render: the contact's data (with this request's transient values) and
/// the built-in names of DECISIONS.md "Templates and rendering".
pub fn render_vars(contact_id: Uuid, email: &str, data: &Map<String, Value>) -> Map<String, Value> {
    let mut vars = data.clone();
    vars.insert("data".into(), Value::Object(data.clone()));
    for k in ["email", "svc_email"] {
        vars.insert(k.into(), Value::String(email.to_owned()));
    }
    for k in ["id", "svc_id"] {
        vars.insert(k.into(), Value::String(contact_id.to_string()));
    }
    vars
}

/// A rendered subject can never carry a line break into the header.
fn one_line(s: String) -> String {
    if s.contains(['\r', '\n']) {
        s.replace(['\r', '\n'], " ")
    } else {
        s
    }
}

impl Engine {
    pub async fn accept_send(&self, plan: &SendPlan) -> Result<Vec<Accepted>, AcceptError> {
        let subject_t = Template::parse(&plan.subject);
        let body_t = Template::parse(&plan.body);
        let headers: Map<String, Value> = plan
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let headers = Value::Object(headers);
        let attachments = Value::Array(
            plan.attachments
                .iter()
                .map(|a| {
                    json!({"filename": a.filename, "contentType": a.content_type, "content": STANDARD.encode(&a.content),
                        "contentId": a.content_id, "disposition": if a.inline { "inline" } else { "attachment" }})
                })
                .collect(),
        );
        let now = self.now();
        let mut tx = self.store.begin().await?;
        if let Some(key) = &plan.idempotency_key
            && !messages::claim_idempotency_key(
                &mut tx,
                plan.project_id,
                key,
                now,
                IDEMPOTENCY_WINDOW_MS,
            )
            .await?
        {
            return Err(AcceptError::IdempotencyKeyReused);
        }
        let mut accepted = Vec::with_capacity(plan.recipients.len());
        for r in &plan.recipients {
            let out = upsert_contact(
                &mut tx,
                &ContactUpsert {
                    project_id: plan.project_id,
                    email: r.email.as_str(),
                    subscribed: plan.subscribed,
                    default_subscribed: false,
                    patch: &plan.data,
                    now,
                },
            )
            .await?;
            let contact = out.contact;
            let vars = render_vars(
                contact.id,
                &contact.email,
                &plan.data.render_data(&contact.data),
            );
            let id = new_id();
            let skipped = (plan.marketing && !contact.subscribed).then_some("unsubscribed");
            let subject = one_line(subject_t.render(&vars, Escape::None));
            let html = body_t.render(&vars, Escape::Html);
            let message_id_header = format!("{id}@{}", plan.from.domain());
            messages::insert(
                &mut tx,
                &NewMessage {
                    id,
                    project_id: plan.project_id,
                    contact_id: Some(contact.id),
                    template_id: plan.template_id,
                    source: "transactional",
                    status: if skipped.is_some() {
                        SUPPRESSED
                    } else {
                        PENDING
                    },
                    from_email: plan.from.as_str(),
                    from_name: plan.from_name.as_deref(),
                    reply_to: plan.reply_to.as_deref(),
                    to_email: &contact.email,
                    to_name: r.name.as_deref(),
                    subject: &subject,
                    html: &html,
                    headers: &headers,
                    attachments: &attachments,
                    message_id_header: &message_id_header,
                    detail: skipped.map(|_| "contact is unsubscribed from marketing mail"),
                    now,
                },
            )
            .await?;
            if skipped.is_none() {
                let max = i32::try_from(self.settings.send_max_attempts).unwrap_or(i32::MAX);
                jobs::enqueue(
                    &mut tx,
                    Some(plan.project_id),
                    SEND_JOB,
                    &json!({"messageId": id}),
                    now,
                    max,
                )
                .await?;
            }
            accepted.push(Accepted {
                contact_id: contact.id,
                email: contact.email,
                message_id: id,
                skipped,
            });
        }
        tx.commit().await?;
        self.wake.notify_one();
        Ok(accepted)
    }
}
