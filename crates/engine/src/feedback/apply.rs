//! Applying one piece of feedback to one message: the single rule used by the notification
//! webhook (generic and SNS), SMTP-time rejections and the mailbox simulator.
//!
//! Invariants (DECISIONS.md "Feedback, suppression"), all inside the caller's transaction:
//! - The status moves forward only (the store's rule); when it does not move, nothing else
//!   happens, so a replay or a late notification changes nothing.
//! - Permanent bounce: BOUNCED, history, `email.bounce`, the contact unsubscribed through the
//!   contact update path (which emits `contact.unsubscribed`), the address suppressed (reason
//!   `bounce`). Complaint: the same with COMPLAINED, `email.complaint`, reason `complaint`.
//!   Simulated messages change the contact the same way but never suppress the address.
//! - Transient bounce: one history entry (in the message's current status), nothing else.
//! - Delivery: DELIVERED and `email.delivery`. Open and click go through the tracking rule of
//!   the pixel and the redirect (`herald_store::tracking`): the first of each is recorded once,
//!   a click implies an open.

use herald_core::feedback::FeedbackKind;
use herald_core::fields::DataPatch;
use herald_core::time::Millis;
use herald_store::contacts::{ContactUpdate, update_contact};
use herald_store::events::{Links, insert_linked_event};
use herald_store::feedback::FeedbackTarget;
use herald_store::messages;
use herald_store::tracking;
use herald_store::{StoreError, StoreResult, Tx, suppressions};
use serde_json::{Value, json};

/// One notification about one message.
#[derive(Clone, Debug)]
pub struct Feedback<'a> {
    pub kind: FeedbackKind,
    /// The relay's diagnostic (bounce) or other detail, kept in the history and the event.
    pub detail: Option<&'a str>,
    /// Where it came from, for the history: `SMTP`, `Amazon SES`, `webhook`, `mailbox simulator`.
    pub source: &'a str,
    /// Count a delivery attempt with the move (an SMTP-time rejection is one).
    pub attempt: bool,
}

/// Applies `fb` to `target`; true when anything changed.
pub async fn apply_feedback(
    tx: &mut Tx,
    target: &FeedbackTarget,
    fb: &Feedback<'_>,
    now: Millis,
) -> StoreResult<bool> {
    // Engagement has one rule, shared with the pixel and the redirect.
    match &fb.kind {
        FeedbackKind::Open => {
            return tracking::open_in(tx, target.project_id, target.id, now).await;
        }
        FeedbackKind::Click { url } => {
            let url = url.as_deref().unwrap_or("");
            let out = tracking::click_in(tx, target.project_id, target.id, url, now).await?;
            return Ok(out.any());
        }
        _ => {}
    }
    let detail = describe(fb);
    let Some(status) = fb.kind.status() else {
        // A transient bounce: the relay keeps trying; only the history says so.
        messages::add_history(tx, target.id, target.status, Some(&detail), now).await?;
        return Ok(true);
    };
    // A bounce or complaint keeps the relay's words as the message's last error.
    let last_error = fb.kind.suppresses().and(fb.detail);
    let moved = messages::set_status(tx, target.id, status, last_error, fb.attempt, now).await?;
    if moved {
        messages::add_history(tx, target.id, status, Some(&detail), now).await?;
    }
    match &fb.kind {
        kind if moved => {
            if let Some(name) = kind.event() {
                let mut data = json!({});
                if let Some(d) = fb.detail {
                    data["diagnostic"] = Value::String(d.to_owned());
                }
                if let FeedbackKind::Bounce { .. } = kind {
                    data["bounceType"] = json!("permanent");
                }
                event(tx, target, name, data, now).await?;
            }
            if let Some(reason) = kind.suppresses() {
                unsubscribe(tx, target, now).await?;
                if !target.simulated {
                    let email = target.to_email.as_str();
                    suppressions::suppress(
                        tx,
                        target.project_id,
                        email,
                        reason,
                        Some(target.id),
                        fb.detail,
                        now,
                    )
                    .await?;
                }
            }
            if !target.simulated {
                crate::metrics::feedback(kind);
            }
        }
        _ => {}
    }
    Ok(moved)
}

/// After a bounce or complaint that moved its message (`moved`), in the same transaction:
/// disables the project when its 7-day rate reached the critical one (docs/accounts.md).
pub async fn guard_reputation(
    tx: &mut Tx,
    target: &FeedbackTarget,
    fb: &Feedback<'_>,
    moved: bool,
    limits: &herald_core::security::CriticalRates,
    now: Millis,
) -> StoreResult<bool> {
    if !moved || target.simulated || fb.kind.suppresses().is_none() {
        return Ok(false);
    }
    const WEEK_MS: Millis = 7 * 24 * 3600 * 1000;
    let disabled = herald_store::security::disable_if_critical(
        tx,
        target.project_id,
        now - WEEK_MS,
        now,
        |c| herald_core::security::disable_reason(c.sent, c.bounced, c.complained, limits),
    )
    .await?;
    if disabled {
        tracing::warn!(project = %target.project_id, "project disabled: critical bounce or complaint rate");
    }
    Ok(disabled)
}

/// The history line: what happened, from where, and the relay's words.
fn describe(fb: &Feedback<'_>) -> String {
    let what = match &fb.kind {
        FeedbackKind::Delivery => "delivered",
        FeedbackKind::Bounce { permanent: true } => "permanent bounce",
        FeedbackKind::Bounce { permanent: false } => "transient bounce (the relay retries)",
        FeedbackKind::Complaint => "complaint",
        FeedbackKind::Open => "opened",
        FeedbackKind::Click { .. } => "clicked",
    };
    match fb.detail {
        Some(d) if !d.is_empty() => format!("{what} ({}): {d}", fb.source),
        _ => format!("{what} ({})", fb.source),
    }
}

async fn event(
    tx: &mut Tx,
    target: &FeedbackTarget,
    name: &str,
    mut data: Value,
    now: Millis,
) -> StoreResult<()> {
    data["messageId"] = Value::String(target.id.to_string());
    if target.simulated {
        data["simulated"] = Value::Bool(true);
    }
    let links = Links::message(target.id, target.campaign_id);
    insert_linked_event(
        tx,
        target.project_id,
        target.contact_id,
        links,
        name,
        &data,
        now,
    )
    .await?;
    Ok(())
}

/// Unsubscribes the message's contact through the contact update path (its event included);
/// a contact deleted meanwhile is simply gone.
async fn unsubscribe(tx: &mut Tx, target: &FeedbackTarget, now: Millis) -> StoreResult<()> {
    let Some(contact_id) = target.contact_id else {
        return Ok(());
    };
    let patch = DataPatch::default();
    let change = ContactUpdate {
        email: None,
        subscribed: Some(false),
        patch: &patch,
        now,
        cause: herald_store::events::Links::message(target.id, target.campaign_id),
    };
    match update_contact(tx, target.project_id, contact_id, &change).await {
        Ok(_) | Err(StoreError::NotFound) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The feedback view of a loaded message.
pub fn target_of(m: &messages::Message) -> FeedbackTarget {
    FeedbackTarget {
        id: m.id,
        project_id: m.project_id,
        contact_id: m.contact_id,
        campaign_id: m.campaign_id,
        to_email: m.to_email.clone(),
        status: m.status,
        message_id_header: m.message_id_header.clone(),
        simulated: m.simulated,
    }
}
