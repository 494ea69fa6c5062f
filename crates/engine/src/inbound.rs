//! Inbound mail (DECISIONS.md "SMTP: submission and inbound mail", Inbound): a message the MX
//! listener (or an SES receipt notification) accepted for addresses on verified domains.
//!
//! A message is written through the acceptance batcher ([`crate::send::batch`]): messages that
//! arrive together share one commit, and a message is answered only after the commit holding
//! its rows. Invariants, per message (nothing half-recorded: a failing message is undone alone):
//! - A verified domain belongs to one project (the store's partial unique index), so each
//!   recipient has at most one project; recipients on no verified domain never get here (the
//!   listener refuses them at RCPT, `550 5.1.1`).
//! - Per project: the sender is upserted as a contact (an existing one's subscription is left
//!   as it is; a new one is not subscribed), the raw message is stored once (a content-addressed
//!   blob, listed as the message's `message.eml` attachment and purged with message bodies),
//!   one message row (source `inbound`, status RECEIVED) names the project's first recipient,
//!   and one `email.received` event, whatever the number of the project's recipients; the event
//!   goes through the events outbox, so workflows trigger on it like on any event.
//! - The message is parsed and authenticated by the caller: the engine holds no MIME parser.

use herald_core::email::EmailAddress;
use herald_core::fields::DataPatch;
use herald_core::ids::{Uuid, new_id};
use herald_core::kinds::TemplateType;
use herald_mail::inbound::InboundParts;
use herald_store::blobs::{self, AttachmentRef};
use herald_store::contacts::{ContactUpsert, upsert_contact};
use herald_store::events::{Links, insert_linked_event};
use herald_store::messages::{self, MessageStatus, NewMessage};
use herald_store::{StoreError, StoreResult, Tx};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::Engine;
use crate::send::accept::AcceptError;
use crate::send::batch::{Done, Work, mismatch};

/// The `source` of inbound message rows.
pub const INBOUND_SOURCE: &str = "inbound";
/// The event recorded for each received message.
pub const RECEIVED_EVENT: &str = "email.received";
/// The most text the event carries, in bytes.
pub const EVENT_TEXT_MAX: usize = 64 * 1024;

/// An accepted message and what was read from it.
#[derive(Clone, Debug)]
pub struct InboundMessage {
    pub raw: Vec<u8>,
    /// Sender, subject, text, Message-ID ([`herald_mail::inbound::read_inbound`]).
    pub parts: InboundParts,
    /// The recipients (RCPT, or SES's); those on no verified domain are skipped.
    pub recipients: Vec<EmailAddress>,
    /// `pass`, `fail`, `softfail`, `neutral`, `none`, `temperror`, `permerror`.
    pub spf: String,
    pub dkim: String,
    pub dmarc: String,
}

/// One project's record of a received message.
#[derive(Clone, Debug)]
pub struct ReceivedIn {
    pub project_id: Uuid,
    pub message_id: Uuid,
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Engine {
    /// The project that receives mail for `address` (the one that verified its domain).
    pub async fn inbound_project(&self, address: &EmailAddress) -> StoreResult<Option<Uuid>> {
        let domain = address.ascii_domain_form();
        let domain = domain
            .rsplit_once('@')
            .map_or("", |(_, d)| d)
            .to_lowercase();
        Ok(self
            .store
            .verified_domain_in_any_project(&domain)
            .await?
            .map(|d| d.project_id))
    }

    /// Records `m` for every project among its recipients, in one transaction (shared with the
    /// other messages, sends and events written at the same moment). With a `receipt` (source,
    /// id) of a notification, a replay records nothing (empty answer).
    pub async fn receive_inbound(
        &self,
        m: &InboundMessage,
        receipt: Option<(&str, &str)>,
    ) -> StoreResult<Vec<ReceivedIn>> {
        let mut groups: Vec<(Uuid, Vec<EmailAddress>)> = Vec::new();
        for r in &m.recipients {
            let Some(project) = self.inbound_project(r).await? else {
                continue;
            };
            match groups.iter_mut().find(|(p, _)| *p == project) {
                Some((_, rs)) => rs.push(r.clone()),
                None => groups.push((project, vec![r.clone()])),
            }
        }
        if groups.is_empty() {
            return Ok(Vec::new());
        }
        let plan = InboundPlan {
            message: m.clone(),
            groups,
            receipt: receipt.map(|(s, id)| (s.to_owned(), id.to_owned())),
        };
        match self
            .acceptor
            .submit_work(Work::Inbound(Box::new(plan)))
            .await
        {
            Ok(Done::Received(out)) => Ok(out),
            Ok(_) => Err(store_error(mismatch())),
            Err(e) => Err(store_error(e)),
        }
    }
}

/// The store error behind a refused write (an inbound message is refused by nothing else).
fn store_error(e: AcceptError) -> StoreError {
    match e {
        AcceptError::Store(e) => e,
        other => StoreError::Other(anyhow::anyhow!("{other}")),
    }
}

/// A received message with its recipients grouped by project, ready to be written.
pub(crate) struct InboundPlan {
    message: InboundMessage,
    groups: Vec<(Uuid, Vec<EmailAddress>)>,
    receipt: Option<(String, String)>,
}

impl InboundPlan {
    /// Messages this plan writes (one per project).
    pub(crate) fn recipients(&self) -> usize {
        self.groups.len()
    }

    /// Raw bytes this plan stores.
    pub(crate) fn blob_bytes(&self) -> usize {
        self.message.raw.len()
    }

    /// (project, sender) of each contact this plan upserts.
    pub(crate) fn senders(&self) -> impl Iterator<Item = (Uuid, &str)> {
        let from = self.message.parts.from.as_str();
        self.groups.iter().map(move |(p, _)| (*p, from))
    }

    /// Writes the plan's rows in `tx`.
    pub(crate) async fn stage(&self, tx: &mut Tx, now: i64) -> StoreResult<Vec<ReceivedIn>> {
        let m = &self.message;
        if let Some((source, id)) = &self.receipt
            && !herald_store::feedback::claim_receipt(tx, source, id, now).await?
        {
            return Ok(Vec::new());
        }
        let sha256 = hex::encode(Sha256::digest(&m.raw));
        let p = &m.parts;
        let text = prefix(&p.text, EVENT_TEXT_MAX);
        let attachments = json!([{"filename": "message.eml", "contentType": "message/rfc822",
            "contentId": null, "disposition": "attachment", "size": m.raw.len(), "sha256": sha256}]);
        let html = herald_core::template::html_escape(text);
        let headers = Value::Object(serde_json::Map::new());
        let verdicts = format!("spf={} dkim={} dmarc={}", m.spf, m.dkim, m.dmarc);
        let mut out = Vec::with_capacity(self.groups.len());
        for (project_id, rcpts) in &self.groups {
            let contact = upsert_contact(
                tx,
                &ContactUpsert {
                    project_id: *project_id,
                    email: p.from.as_str(),
                    subscribed: None,
                    default_subscribed: false,
                    patch: &DataPatch::default(),
                    now,
                },
            )
            .await?
            .contact;
            blobs::put(tx, *project_id, &sha256, &m.raw, now).await?;
            let id = new_id();
            let message_id_header = p
                .message_id
                .clone()
                .unwrap_or_else(|| format!("{id}@inbound.herald"));
            let to = rcpts.first().map_or("", |r| r.as_str());
            messages::insert_many(
                tx,
                &[NewMessage {
                    id,
                    project_id: *project_id,
                    contact_id: Some(contact.id),
                    template_id: None,
                    campaign_id: None,
                    source: INBOUND_SOURCE,
                    template_type: TemplateType::Transactional,
                    status: MessageStatus::Received,
                    from_email: p.from.as_str(),
                    from_name: p.from_name.as_deref(),
                    reply_to: None,
                    to_email: to,
                    to_name: None,
                    subject: &p.subject,
                    html: &html,
                    headers: &headers,
                    attachments: &attachments,
                    message_id_header: &message_id_header,
                    detail: Some(verdicts.as_str()),
                    simulated: false,
                    now,
                }],
            )
            .await?;
            blobs::add_refs(
                tx,
                &[AttachmentRef {
                    message_id: id,
                    position: 0,
                    project_id: *project_id,
                    sha256: &sha256,
                }],
            )
            .await?;
            let to: Vec<&str> = rcpts.iter().map(|r| r.as_str()).collect();
            let data = json!({"messageId": id, "from": p.from.as_str(), "to": to,
                "subject": p.subject, "text": text, "spf": m.spf, "dkim": m.dkim, "dmarc": m.dmarc});
            insert_linked_event(
                tx,
                *project_id,
                Some(contact.id),
                Links::message(id, None),
                RECEIVED_EVENT,
                &data,
                now,
            )
            .await?;
            out.push(ReceivedIn {
                project_id: *project_id,
                message_id: id,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::prefix;

    #[test]
    fn the_text_is_cut_at_a_character_boundary() {
        assert_eq!(prefix("héllo", 2), "h");
        assert_eq!(prefix("héllo", 3), "hé");
        assert_eq!(prefix("abc", 10), "abc");
    }
}
