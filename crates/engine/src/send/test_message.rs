//! A stored message for the send module's unit tests.

use herald_core::ids::new_id;
use herald_core::kinds::TemplateType;
use herald_store::messages::MessageStatus;
use sqlx::types::Json;

use herald_store::messages::Message;

/// A PENDING message of `kind` with `html` and `attachments`, from `a@acme.example`.
pub(crate) fn message(kind: TemplateType, html: &str, attachments: serde_json::Value) -> Message {
    Message {
        id: new_id(),
        project_id: new_id(),
        contact_id: Some(new_id()),
        template_id: None,
        campaign_id: None,
        source: "transactional".into(),
        template_type: kind,
        status: MessageStatus::Pending,
        from_email: "a@acme.example".into(),
        from_name: None,
        reply_to: None,
        to_email: "b@example.org".into(),
        to_name: None,
        subject: "S".into(),
        html: html.into(),
        headers: Json(serde_json::json!({})),
        attachments: Json(attachments),
        message_id_header: "x@acme.example".into(),
        attempts: 0,
        last_error: None,
        sent_at: None,
        created_at: 0,
        updated_at: 0,
        body_purged_at: None,
        simulated: false,
        relay_message_id: None,
        blobs: Vec::new(),
    }
}
