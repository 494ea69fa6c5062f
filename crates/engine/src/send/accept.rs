//! Accepting a send: per recipient, upsert the contact (custom-field rules, subscription
//! events), render subject and body, and insert the message with its send job. A recipient
//! on the project's suppression list (or the simulator's `suppressionlist@`) becomes a
//! SUPPRESSED message with no job, as does an unsubscribed contact of a MARKETING template;
//! the request's other recipients still go. Simulator recipients are flagged `simulated`. The request's
//! attachments are stored once (content-addressed blobs, see `herald_store::blobs`) and each
//! message references them. The writes of concurrent requests share one transaction (group
//! commit, see [`super::batch`]); the answer is given only once that transaction committed.

use std::collections::{HashMap, HashSet};

use herald_core::billing::Category;
use herald_core::email::EmailAddress;
use herald_core::feedback::{SimulatedOutcome, simulated_outcome};
use herald_core::fields::DataPatch;
use herald_core::ids::{Uuid, new_id};
use herald_core::kinds::TemplateType;
use herald_core::template::{Escape, Template};
use herald_core::time::Millis;
use herald_store::billing::Allowance;
use herald_store::blobs::{self, AttachmentRef};
use herald_store::contacts::{Contact, ContactUpsert, upsert_contact, upsert_existing_contact};
use herald_store::contacts_batch::NewContact;
use herald_store::messages::{self, MessageStatus, NewMessage, SentRecord};
use herald_store::segment_membership::enqueue_reevaluate_each;
use herald_store::{StoreError, StoreResult, Tx, billing, jobs, suppressions};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::batch::{Done, Work};
use super::merge::Merged;
use crate::Engine;
use crate::links::{MailLinks, PageUrls};

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
    /// The decoded bytes (base64 is decoded once, while the request is read); shared, so the
    /// plan, the blocking hash step and the stored blob hold one copy between them.
    pub content: bytes::Bytes,
    pub content_id: Option<String>,
    pub inline: bool,
}

/// A validated send request.
#[derive(Clone, Debug)]
pub struct SendPlan {
    pub project_id: Uuid,
    pub recipients: Vec<Recipient>,
    /// The request merged with its template: subject and body sources, sender, reply-to,
    /// template (whose type decides the skip of unsubscribed contacts).
    pub message: Merged,
    pub subscribed: Option<bool>,
    pub data: DataPatch,
    pub headers: Vec<(String, String)>,
    pub attachments: Vec<AttachmentIn>,
    pub idempotency_key: Option<String>,
    /// Send MARKETING mail even to an unsubscribed contact (a campaign's test send to the
    /// address its author names).
    pub ignore_subscription: bool,
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
    /// Queuing the messages would pass the project's monthly cap of the category.
    #[error("the project's monthly {} limit is reached", .0.as_str())]
    BillingLimit(herald_core::billing::Category),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The variables of one render: the contact's data (with this request's transient values) and
/// the built-in names of DECISIONS.md "Templates and rendering", the contact's list-page URLs
/// included.
pub fn render_vars(
    contact_id: Uuid,
    email: &str,
    data: &Map<String, Value>,
    pages: PageUrls,
) -> Map<String, Value> {
    let mut vars = data.clone();
    for (k, url) in [
        ("unsubscribeUrl", pages.unsubscribe),
        ("subscribeUrl", pages.subscribe),
        ("manageUrl", pages.manage),
    ] {
        vars.insert(k.into(), Value::String(url));
    }
    vars.insert("data".into(), Value::Object(data.clone()));
    for k in ["email", "svc_email"] {
        vars.insert(k.into(), Value::String(email.to_owned()));
    }
    for k in ["id", "svc_id"] {
        vars.insert(k.into(), Value::String(contact_id.to_string()));
    }
    vars
}

/// Subject and body rendered with `vars`: the subject unescaped on one line, the body's values
/// HTML-escaped. Every send renders this way, and so does the dashboard's preview.
pub fn render_parts(
    subject: &Template,
    body: &Template,
    vars: &Map<String, Value>,
) -> (String, String) {
    (
        one_line(subject.render(vars, Escape::None)),
        body.render(vars, Escape::Html),
    )
}

/// A rendered subject (contact data may hold anything) follows the header character rule:
/// line breaks and other control characters become spaces.
fn one_line(s: String) -> String {
    match herald_core::rules::header_safe(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(clean) => clean,
    }
}

/// Attachments larger than this (base64, in total) are decoded and hashed off the async threads.
const INLINE_DECODE_LIMIT: usize = 256 * 1024;

/// One attachment's bytes and their hash.
pub(crate) struct PreparedBlob {
    pub sha256: String,
    pub content: bytes::Bytes,
}

/// What every recipient of one send gets, before rendering: shared by `/v1/send` (inside an
/// [`AcceptRequest`]) and campaigns, so both apply the same rendering and skip rules.
pub(crate) struct MessageSpec {
    pub project_id: Uuid,
    subject: Template,
    body: Template,
    from: EmailAddress,
    from_name: Option<String>,
    reply_to: Option<String>,
    template_id: Option<Uuid>,
    template_type: TemplateType,
    /// Skip unsubscribed contacts (MARKETING mail).
    marketing: bool,
    /// The `source` of the messages (`transactional`, `campaign`).
    source: &'static str,
    campaign_id: Option<Uuid>,
    headers: Value,
    /// Metadata of the attachments, as each message stores it.
    attachments: Value,
    /// The hash of each attachment, in order.
    attachment_shas: Vec<String>,
    /// Makes the list-page URLs of each recipient.
    links: MailLinks,
}

/// A campaign's message, as [`MessageSpec::campaign`] takes it.
pub(crate) struct CampaignMessage<'a> {
    pub project_id: Uuid,
    pub campaign_id: Uuid,
    pub subject: &'a str,
    pub body: &'a str,
    pub from: &'a EmailAddress,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
}

/// One recipient as staging sees it.
pub(crate) struct StageRecipient<'a, 'e> {
    pub contact_id: Uuid,
    pub email: String,
    pub name: Option<&'a str>,
    pub subscribed: bool,
    /// The render variables' data (the contact's, with a request's transient values).
    pub data: Map<String, Value>,
    /// Why the address is on the project's suppression list, if it is.
    pub suppressed: Option<String>,
    /// The `event.*` variables of a workflow's message (the execution's context).
    pub event: Option<&'e Value>,
}

/// A [`SendPlan`] made ready for the batcher: templates parsed, attachments decoded and hashed.
pub(crate) struct AcceptRequest {
    spec: MessageSpec,
    pub recipients: Vec<Recipient>,
    subscribed: Option<bool>,
    data: DataPatch,
    /// Distinct contents.
    blobs: Vec<PreparedBlob>,
    idempotency_key: Option<String>,
}

/// Decodes and hashes the attachments: (metadata array, hash per attachment, distinct blobs).
fn prepare_attachments(
    items: &[AttachmentIn],
) -> Result<(Value, Vec<String>, Vec<PreparedBlob>), AcceptError> {
    let mut meta = Vec::with_capacity(items.len());
    let mut shas = Vec::with_capacity(items.len());
    let mut blobs: Vec<PreparedBlob> = Vec::new();
    for a in items {
        let sha256 = hex::encode(Sha256::digest(&a.content));
        meta.push(json!({"filename": a.filename, "contentType": a.content_type,
            "contentId": a.content_id, "disposition": if a.inline { "inline" } else { "attachment" },
            "size": a.content.len(), "sha256": sha256}));
        shas.push(sha256.clone());
        if !blobs.iter().any(|b| b.sha256 == sha256) {
            let content = a.content.clone();
            blobs.push(PreparedBlob { sha256, content });
        }
    }
    Ok((Value::Array(meta), shas, blobs))
}

impl AcceptRequest {
    /// The project the request sends from.
    pub(crate) fn project_id(&self) -> Uuid {
        self.spec.project_id
    }

    async fn prepare(plan: &SendPlan, links: &MailLinks) -> Result<AcceptRequest, AcceptError> {
        let bytes: usize = plan.attachments.iter().map(|a| a.content.len()).sum();
        let (attachments, attachment_shas, blobs) = if bytes > INLINE_DECODE_LIMIT {
            let items = plan.attachments.clone();
            tokio::task::spawn_blocking(move || prepare_attachments(&items))
                .await
                .map_err(|e| AcceptError::Store(StoreError::Other(e.into())))??
        } else {
            prepare_attachments(&plan.attachments)?
        };
        let headers: Map<String, Value> = plan
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        Ok(AcceptRequest {
            spec: MessageSpec {
                project_id: plan.project_id,
                subject: Template::parse(&plan.message.subject),
                body: Template::parse(&plan.message.body),
                from: ascii_sender(&plan.message.from),
                from_name: plan.message.from_name.clone(),
                reply_to: plan.message.reply_to.clone(),
                template_id: plan.message.template_id,
                template_type: plan
                    .message
                    .template_type
                    .unwrap_or(TemplateType::Transactional),
                marketing: plan.message.skips_unsubscribed() && !plan.ignore_subscription,
                source: "transactional",
                campaign_id: None,
                headers: Value::Object(headers),
                attachments,
                attachment_shas,
                links: links.clone(),
            },
            recipients: plan.recipients.clone(),
            subscribed: plan.subscribed,
            data: plan.data.clone(),
            blobs,
            idempotency_key: plan.idempotency_key.clone(),
        })
    }

    /// Attachment bytes this request writes.
    pub(crate) fn blob_bytes(&self) -> usize {
        self.blobs.iter().map(|b| b.content.len()).sum()
    }

    pub(crate) fn idempotency_key(&self) -> Option<&str> {
        self.idempotency_key.as_deref()
    }

    /// The subscription the request sets on its contacts, if it sets one.
    pub(crate) fn subscribed(&self) -> Option<bool> {
        self.subscribed
    }

    /// Whether the batch may insert this request's new contacts before staging it: nothing
    /// can refuse it afterwards (no `Idempotency-Key`, no cap on its project's transactional
    /// mail, as read into `staged`).
    pub(crate) fn may_insert_ahead(&self, staged: &Staged<'_>) -> bool {
        self.idempotency_key.is_none()
            && staged
                .uncapped
                .contains(&(self.spec.project_id, Category::Transactional))
    }

    /// The new contact `email` becomes when this request creates it: what the upsert inserts.
    pub(crate) fn new_contact<'a>(&self, email: &'a str) -> StoreResult<NewContact<'a>> {
        let subscribed = self.subscribed.unwrap_or(false);
        NewContact::new(self.spec.project_id, email, subscribed, &self.data)
    }

    /// The contact `r` names: the one the batch inserted ahead (its field types and outbox
    /// row recorded here, as the upsert records them), or the upsert's.
    async fn contact_of(
        &self,
        tx: &mut Tx,
        staged: &mut Staged<'_>,
        r: &Recipient,
        now: Millis,
    ) -> StoreResult<Contact> {
        let project_id = self.spec.project_id;
        let key = (project_id, r.email.as_str().to_owned());
        if let Some((id, subscribed)) = staged.created.remove(&key) {
            herald_store::fields::record_types(tx, project_id, &self.data, now).await?;
            staged.reevaluate.push((project_id, id));
            let mut data = Map::new();
            self.data.apply(&mut data);
            return Ok(Contact {
                id,
                email: key.1,
                subscribed,
                data,
                created_at: now,
                updated_at: now,
            });
        }
        let upsert = ContactUpsert {
            project_id,
            email: r.email.as_str(),
            subscribed: self.subscribed,
            default_subscribed: false,
            patch: &self.data,
            now,
        };
        let outcome = match staged.existed.contains(&key) {
            true => upsert_existing_contact(tx, &upsert).await?,
            false => upsert_contact(tx, &upsert).await?,
        };
        Ok(outcome.contact)
    }

    /// Claims the key, stores the blobs, upserts the contacts and renders each message into
    /// `staged` (written by [`Staged::flush`]). An `Idempotency-Key` conflict writes nothing.
    pub(crate) async fn stage<'a>(
        &'a self,
        tx: &mut Tx,
        staged: &mut Staged<'a>,
        now: Millis,
    ) -> Result<Vec<Accepted>, AcceptError> {
        // The cap first: a refused request writes nothing.
        let (project, category) = (self.spec.project_id, Category::Transactional);
        let adding = i64::try_from(self.recipients.len()).unwrap_or(i64::MAX);
        if !staged.uncapped.contains(&(project, category)) {
            // The earlier requests of the batch are counted only at its flush.
            let adding = adding.saturating_add(staged.usage_of(project, category));
            match billing::allowance(tx, project, category, adding, now).await? {
                Allowance::Over => return Err(AcceptError::BillingLimit(category)),
                Allowance::Uncapped => {
                    staged.uncapped.insert((project, category));
                }
                Allowance::Within => {}
            }
        }
        if let Some(key) = &self.idempotency_key
            && !messages::claim_idempotency_key(
                tx,
                self.spec.project_id,
                key,
                now,
                IDEMPOTENCY_WINDOW_MS,
            )
            .await?
        {
            return Err(AcceptError::IdempotencyKeyReused);
        }
        for b in &self.blobs {
            blobs::put(tx, self.spec.project_id, &b.sha256, &b.content, now).await?;
        }
        let mut contacts = Vec::with_capacity(self.recipients.len());
        for r in &self.recipients {
            contacts.push(self.contact_of(tx, staged, r, now).await?);
        }
        // Read after the upserts: a flip to subscribed in this request lifted its suppression
        // (the batch read them ahead only when no request flips one, `batch_contacts`).
        let emails: Vec<&str> = contacts.iter().map(|c| c.email.as_str()).collect();
        let mut suppressed = match staged.suppressions.get(&self.spec.project_id) {
            Some(found) => found
                .iter()
                .filter(|(e, _)| emails.contains(&e.as_str()))
                .cloned()
                .collect(),
            None => suppressions::suppressed_among(tx, self.spec.project_id, &emails).await?,
        };
        let mut accepted = Vec::with_capacity(self.recipients.len());
        for (r, contact) in self.recipients.iter().zip(contacts) {
            let on_list = suppressions::take_reason(&mut suppressed, &contact.email);
            let recipient = StageRecipient {
                contact_id: contact.id,
                data: self.data.render_data(&contact.data),
                email: contact.email,
                name: r.name.as_deref(),
                subscribed: contact.subscribed,
                suppressed: on_list,
                event: None,
            };
            accepted.push(self.spec.stage_one(staged, recipient));
        }
        let queued = accepted.iter().filter(|a| a.skipped.is_none()).count();
        let queued = i64::try_from(queued).unwrap_or(i64::MAX);
        staged.usage.push((project, category, queued));
        Ok(accepted)
    }
}

/// The sender in its A-label form: the verified domain is stored that way, and the Message-ID
/// and the SMTP envelope need ASCII domains.
fn ascii_sender(from: &EmailAddress) -> EmailAddress {
    EmailAddress::parse(&from.ascii_domain_form()).unwrap_or_else(|_| from.clone())
}

impl MessageSpec {
    /// The message of a campaign: MARKETING mail (footer, `List-Unsubscribe`, unsubscribed
    /// contacts skipped), no attachments.
    pub(crate) fn campaign(m: CampaignMessage<'_>, links: &MailLinks) -> MessageSpec {
        MessageSpec {
            project_id: m.project_id,
            subject: Template::parse(m.subject),
            body: Template::parse(m.body),
            from: ascii_sender(m.from),
            from_name: m.from_name,
            reply_to: m.reply_to,
            template_id: None,
            template_type: TemplateType::Marketing,
            marketing: true,
            source: "campaign",
            campaign_id: Some(m.campaign_id),
            headers: Value::Object(Map::new()),
            attachments: Value::Array(Vec::new()),
            attachment_shas: Vec::new(),
            links: links.clone(),
        }
    }

    /// The message of a workflow's SEND_EMAIL step: its template merged as `/v1/send` merges
    /// one (a MARKETING template skips unsubscribed contacts), no attachments.
    pub(crate) fn workflow(project_id: Uuid, m: &Merged, links: &MailLinks) -> MessageSpec {
        let template_type = m.template_type.unwrap_or(TemplateType::Transactional);
        MessageSpec {
            project_id,
            subject: Template::parse(&m.subject),
            body: Template::parse(&m.body),
            from: ascii_sender(&m.from),
            from_name: m.from_name.clone(),
            reply_to: m.reply_to.clone(),
            template_id: m.template_id,
            template_type,
            marketing: m.skips_unsubscribed(),
            source: "workflow",
            campaign_id: None,
            headers: Value::Object(Map::new()),
            attachments: Value::Array(Vec::new()),
            attachment_shas: Vec::new(),
            links: links.clone(),
        }
    }

    /// Renders one recipient's message into `staged`: queued, or SUPPRESSED with the reason
    /// when the address is suppressed (or the simulator's `suppressionlist@`) or the contact is
    /// unsubscribed from MARKETING mail.
    pub(crate) fn stage_one<'a>(
        &'a self,
        staged: &mut Staged<'a>,
        r: StageRecipient<'a, '_>,
    ) -> Accepted {
        let rendered = self.render_one(r.contact_id, &r.email, &r.data, r.event);
        let addressee = Addressee {
            contact_id: r.contact_id,
            email: r.email,
            name: r.name,
            subscribed: r.subscribed,
            suppressed: r.suppressed,
        };
        self.stage_rendered(staged, addressee, rendered)
    }

    /// One recipient's message, rendered under its new id (the id is in its page links). What
    /// does not depend on the suppression list, so a campaign renders its next page while the
    /// page before is written.
    pub(crate) fn render_one(
        &self,
        contact_id: Uuid,
        email: &str,
        data: &Map<String, Value>,
        event: Option<&Value>,
    ) -> Rendered {
        let id = new_id();
        let pages = self.links.page_urls(self.project_id, contact_id, Some(id));
        let mut vars = render_vars(contact_id, email, data, pages);
        if let Some(event) = event {
            vars.insert("event".into(), event.clone());
        }
        let (subject, html) = render_parts(&self.subject, &self.body, &vars);
        Rendered { id, subject, html }
    }

    /// Stages a message [`MessageSpec::render_one`] rendered for `r`: queued, or SUPPRESSED
    /// (see [`MessageSpec::stage_one`]).
    pub(crate) fn stage_rendered<'a>(
        &'a self,
        staged: &mut Staged<'a>,
        r: Addressee<'a>,
        rendered: Rendered,
    ) -> Accepted {
        let id = rendered.id;
        let simulated = simulated_outcome(&r.email);
        let (skipped, detail) = if simulated == Some(SimulatedOutcome::SuppressionList) {
            let why = "mailbox simulator: the address is on the suppression list";
            (Some("suppressed"), Some(why.to_owned()))
        } else if let Some(reason) = &r.suppressed {
            let why = format!("the address is on the project's suppression list ({reason})");
            (Some("suppressed"), Some(why))
        } else if self.marketing && !r.subscribed {
            let why = "contact is unsubscribed from marketing mail";
            (Some("unsubscribed"), Some(why.to_owned()))
        } else {
            (None, None)
        };
        for (position, sha256) in self.attachment_shas.iter().enumerate() {
            staged.refs.push(AttachmentRef {
                message_id: id,
                position: i32::try_from(position).unwrap_or(i32::MAX),
                project_id: self.project_id,
                sha256,
            });
        }
        if skipped.is_none() {
            staged
                .jobs
                .push((Some(self.project_id), json!({"messageId": id})));
        }
        staged.messages.push(StagedMessage {
            spec: self,
            id,
            contact_id: r.contact_id,
            to_email: r.email.clone(),
            to_name: r.name,
            subject: rendered.subject,
            html: rendered.html,
            message_id_header: format!("{id}@{}", self.from.domain()),
            skip_detail: detail,
            simulated: simulated.is_some(),
        });
        Accepted {
            contact_id: r.contact_id,
            email: r.email,
            message_id: id,
            skipped,
        }
    }
}

/// A recipient's message rendered by [`MessageSpec::render_one`], not yet staged.
pub(crate) struct Rendered {
    id: Uuid,
    subject: String,
    html: String,
}

/// Whom a rendered message goes to, as staging decides between queued and skipped.
pub(crate) struct Addressee<'a> {
    pub contact_id: Uuid,
    pub email: String,
    pub name: Option<&'a str>,
    pub subscribed: bool,
    /// Why the address is on the project's suppression list, if it is.
    pub suppressed: Option<String>,
}

/// A rendered message waiting for the batch's multi-row insert.
struct StagedMessage<'a> {
    spec: &'a MessageSpec,
    id: Uuid,
    contact_id: Uuid,
    to_email: String,
    to_name: Option<&'a str>,
    subject: String,
    html: String,
    message_id_header: String,
    /// Why the message is SUPPRESSED instead of queued, if it is.
    skip_detail: Option<String>,
    simulated: bool,
}

/// The rows of one or more staged requests, written together.
#[derive(Default)]
pub(crate) struct Staged<'a> {
    messages: Vec<StagedMessage<'a>>,
    refs: Vec<AttachmentRef<'a>>,
    jobs: Vec<(Option<Uuid>, Value)>,
    /// Messages queued per request, by project and billing category: counted at the flush,
    /// one statement per (project, category) instead of one per request.
    usage: Vec<(Uuid, Category, i64)>,
    /// (project, category) pairs read as having no cap in this transaction: not read again.
    pub(super) uncapped: HashSet<(Uuid, Category)>,
    /// Contacts the batch inserted before staging its sends (`batch_contacts`), by (project,
    /// email): id and subscription. Taken by the first request naming them.
    pub(super) created: HashMap<(Uuid, String), (Uuid, bool)>,
    /// Contacts the batch's insert ahead found existing, by (project, email): updated without
    /// trying the insert again.
    pub(super) existed: HashSet<(Uuid, String)>,
    /// (project, contact) of the contacts inserted ahead and staged: their segment outbox
    /// rows, written at the flush.
    reevaluate: Vec<(Uuid, Uuid)>,
    /// The suppression list entries among the batch's recipients, by project, when the batch
    /// read them ahead (`batch_contacts`); a project missing here is read per request.
    pub(super) suppressions: HashMap<Uuid, Vec<(String, String)>>,
}

/// How much was staged, to [`Staged::truncate`] back to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StagedMark {
    messages: usize,
    refs: usize,
    jobs: usize,
    usage: usize,
    reevaluate: usize,
}

impl Staged<'_> {
    /// How much is staged: a mark to [`Staged::truncate`] back to.
    pub(crate) fn mark(&self) -> StagedMark {
        StagedMark {
            messages: self.messages.len(),
            refs: self.refs.len(),
            jobs: self.jobs.len(),
            usage: self.usage.len(),
            reevaluate: self.reevaluate.len(),
        }
    }

    /// Drops what was staged after `mark` (a part of a batch that failed).
    pub(crate) fn truncate(&mut self, mark: StagedMark) {
        self.messages.truncate(mark.messages);
        self.refs.truncate(mark.refs);
        self.jobs.truncate(mark.jobs);
        self.usage.truncate(mark.usage);
        self.reevaluate.truncate(mark.reevaluate);
    }

    /// Messages of `category` staged for `project` and not counted yet.
    fn usage_of(&self, project: Uuid, category: Category) -> i64 {
        self.usage
            .iter()
            .filter(|(p, c, _)| *p == project && *c == category)
            .map(|(.., n)| n)
            .sum()
    }

    /// Inserts the staged messages, their attachment references and their send jobs.
    pub(crate) async fn flush(
        &self,
        tx: &mut Tx,
        max_attempts: i32,
        now: Millis,
    ) -> StoreResult<()> {
        messages::insert_many(tx, &self.rows(now)).await?;
        blobs::add_refs(tx, &self.refs).await?;
        jobs::enqueue_many(tx, SEND_JOB, &self.jobs, now, max_attempts).await?;
        enqueue_reevaluate_each(tx, self.reevaluate.iter().copied(), now).await?;
        // One count per (project, category), in the order the batch first staged it.
        for (i, &(project, category, _)) in self.usage.iter().enumerate() {
            let seen = self.usage[..i]
                .iter()
                .any(|(p, c, _)| *p == project && *c == category);
            if !seen {
                let n = self.usage_of(project, category);
                billing::count(tx, project, category, n, now).await?;
            }
        }
        Ok(())
    }

    /// Writes the staged messages as already SENT at `now`, with their history and
    /// `email.sent` events (`reply` is the SENT step's detail), and queues no send job: the
    /// history of a past campaign (`herald demo`). Nothing is handed to a transport, and
    /// nothing is counted for billing. Returns the (message, contact) pairs recorded SENT;
    /// skipped ones stay SUPPRESSED. Attachments are not supported here.
    pub(crate) async fn flush_as_sent(
        &self,
        tx: &mut Tx,
        reply: &str,
        now: Millis,
    ) -> StoreResult<Vec<(Uuid, Uuid)>> {
        messages::insert_many(tx, &self.rows(now)).await?;
        let sent: Vec<SentRecord<'_>> = self
            .messages
            .iter()
            .filter(|m| m.skip_detail.is_none())
            .map(|m| SentRecord {
                job_id: Uuid::nil(),
                lease_token: Uuid::nil(),
                message_id: m.id,
                template_id: m.spec.template_id,
                subject: &m.subject,
                reply,
                started_at: now,
                first_attempt: true,
                relay_message_id: None,
            })
            .collect();
        let recorded = messages::record_sent_without_job(tx, &sent, now).await?;
        let contact_of: HashMap<Uuid, Uuid> =
            self.messages.iter().map(|m| (m.id, m.contact_id)).collect();
        Ok(recorded
            .into_iter()
            .filter_map(|id| contact_of.get(&id).map(|c| (id, *c)))
            .collect())
    }

    /// The staged messages as rows: SUPPRESSED with their reason, or PENDING.
    fn rows(&self, now: Millis) -> Vec<NewMessage<'_>> {
        self.messages
            .iter()
            .map(|m| NewMessage {
                id: m.id,
                project_id: m.spec.project_id,
                contact_id: Some(m.contact_id),
                template_id: m.spec.template_id,
                campaign_id: m.spec.campaign_id,
                source: m.spec.source,
                template_type: m.spec.template_type,
                status: if m.skip_detail.is_some() {
                    MessageStatus::Suppressed
                } else {
                    MessageStatus::Pending
                },
                from_email: m.spec.from.as_str(),
                from_name: m.spec.from_name.as_deref(),
                reply_to: m.spec.reply_to.as_deref(),
                to_email: &m.to_email,
                to_name: m.to_name,
                subject: &m.subject,
                html: &m.html,
                headers: &m.spec.headers,
                attachments: &m.spec.attachments,
                message_id_header: &m.message_id_header,
                detail: m.skip_detail.as_deref(),
                simulated: m.simulated,
                now,
            })
            .collect()
    }
}

impl Engine {
    /// Accepts a send: answers once its messages and jobs are committed (with those of the
    /// other requests of the same batch).
    pub async fn accept_send(&self, plan: &SendPlan) -> Result<Vec<Accepted>, AcceptError> {
        let req = AcceptRequest::prepare(plan, &self.links).await?;
        let accepted = self.acceptor.submit(req).await?;
        self.send_queued();
        Ok(accepted)
    }

    /// Accepts several sends in one transaction, as the batcher does with requests that wait
    /// together: one answer per plan, each request failing alone.
    pub async fn accept_batch(
        &self,
        plans: &[SendPlan],
    ) -> Vec<Result<Vec<Accepted>, AcceptError>> {
        let mut prepared = Vec::with_capacity(plans.len());
        for plan in plans {
            prepared.push(
                AcceptRequest::prepare(plan, &self.links)
                    .await
                    .map(|r| Work::Send(Box::new(r))),
            );
        }
        let ready: Vec<&Work> = prepared.iter().filter_map(|p| p.as_ref().ok()).collect();
        let mut written = self.acceptor.write_now(&ready).await.into_iter();
        self.send_queued();
        prepared
            .into_iter()
            .map(|p| match p {
                Ok(_) => match written.next() {
                    Some(Ok(Done::Sent(accepted))) => Ok(accepted),
                    Some(Err(e)) => Err(e),
                    Some(Ok(_)) => Err(super::batch::mismatch()),
                    None => Err(AcceptError::Store(StoreError::Other(anyhow::anyhow!(
                        "no answer"
                    )))),
                },
                Err(e) => Err(e),
            })
            .collect()
    }
}
