//! Opens and clicks of a message (the tracking pixel and redirects).
//!
//! Invariants:
//! - The first open and the first click of a message are each recorded once: the
//!   `opened_at` / `clicked_at` column is claimed with `... IS NULL` in the same statement, so
//!   concurrent requests cannot both win. Recording means: the `email.open` / `email.click`
//!   event (linked to the message and its campaign), and the status OPENED / CLICKED with its
//!   history entry when the forward-only rule ([`MessageStatus::can_move_to`]) allows it.
//! - A click implies an open: the first click of a message never opened records the open
//!   first, in the same transaction.
//! - Only messages that went out count (SENT or later, not FAILED or SUPPRESSED); every query
//!   names the project.

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::json;
use sqlx::AssertSqlSafe;

use crate::events::{Links, insert_linked_event};
use crate::messages::{MessageStatus, WENT_OUT, add_history, set_status};
use crate::{Store, StoreResult, Tx};

/// Event names of engagement.
pub const OPEN_EVENT: &str = "email.open";
pub const CLICK_EVENT: &str = "email.click";

/// Claims the first-open mark; `Some((contact, campaign))` when this call claimed it.
async fn claim(
    tx: &mut Tx,
    column: &'static str,
    project_id: Uuid,
    message_id: Uuid,
    now: Millis,
) -> StoreResult<Option<(Option<Uuid>, Option<Uuid>)>> {
    let q = format!(
        "UPDATE messages SET {column} = $3 WHERE project_id = $1 AND id = $2 \
         AND {column} IS NULL AND {went_out} RETURNING contact_id, campaign_id",
        went_out = *WENT_OUT
    );
    let row: Option<(Option<Uuid>, Option<Uuid>)> = db_tx!(tx, |conn| {
        sqlx::query_as(AssertSqlSafe(q.as_str()))
            .bind(project_id)
            .bind(message_id)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?
    });
    Ok(row)
}

/// Moves the message forward to `status` (with history) if the rule allows it.
async fn advance(
    tx: &mut Tx,
    message_id: Uuid,
    status: MessageStatus,
    now: Millis,
) -> StoreResult<()> {
    if set_status(tx, message_id, status, None, false, now).await? {
        add_history(tx, message_id, status, None, now).await?;
    }
    Ok(())
}

/// Records the first open of a message inside `tx`; false when it was opened before (or never
/// went out, or is not the project's). The one open rule: the pixel, a click and the feedback
/// webhook all come here.
pub async fn open_in(
    tx: &mut Tx,
    project_id: Uuid,
    message_id: Uuid,
    now: Millis,
) -> StoreResult<bool> {
    let Some((contact_id, campaign_id)) =
        claim(tx, "opened_at", project_id, message_id, now).await?
    else {
        return Ok(false);
    };
    advance(tx, message_id, MessageStatus::Opened, now).await?;
    let links = Links::message(message_id, campaign_id);
    let data = json!({ "messageId": message_id.to_string() });
    insert_linked_event(tx, project_id, contact_id, links, OPEN_EVENT, &data, now).await?;
    Ok(true)
}

/// What [`click_in`] recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClickOutcome {
    /// The open it implied (the message had none yet).
    pub opened: bool,
    /// The first click.
    pub clicked: bool,
}

impl ClickOutcome {
    pub fn any(self) -> bool {
        self.opened || self.clicked
    }
}

/// Records the first click of a message inside `tx`, and its open if none yet. The one click
/// rule: the redirect and the feedback webhook both come here.
pub async fn click_in(
    tx: &mut Tx,
    project_id: Uuid,
    message_id: Uuid,
    url: &str,
    now: Millis,
) -> StoreResult<ClickOutcome> {
    let opened = open_in(tx, project_id, message_id, now).await?;
    let Some((contact_id, campaign_id)) =
        claim(tx, "clicked_at", project_id, message_id, now).await?
    else {
        return Ok(ClickOutcome {
            opened,
            clicked: false,
        });
    };
    advance(tx, message_id, MessageStatus::Clicked, now).await?;
    let links = Links::message(message_id, campaign_id);
    let data = json!({ "messageId": message_id.to_string(), "url": url });
    insert_linked_event(tx, project_id, contact_id, links, CLICK_EVENT, &data, now).await?;
    Ok(ClickOutcome {
        opened,
        clicked: true,
    })
}

impl Store {
    /// Records the first open of a message; false when it was opened before (or never went
    /// out, or is not the project's).
    pub async fn record_open(
        &self,
        project_id: Uuid,
        message_id: Uuid,
        now: Millis,
    ) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let first = open_in(&mut tx, project_id, message_id, now).await?;
        if first {
            tx.commit().await?;
        }
        Ok(first)
    }

    /// Records the first click of a message (and its open, if none yet); false when it was
    /// clicked before.
    pub async fn record_click(
        &self,
        project_id: Uuid,
        message_id: Uuid,
        url: &str,
        now: Millis,
    ) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let changed = click_in(&mut tx, project_id, message_id, url, now).await?;
        if changed.any() {
            tx.commit().await?;
        }
        Ok(changed.clicked)
    }
}
