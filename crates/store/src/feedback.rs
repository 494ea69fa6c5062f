//! What feedback handling reads and writes besides statuses and events: finding the message a
//! notification names (Herald's id, the relay's id, or our `Message-ID`), and the receipts
//! that make a replayed notification change nothing.
//!
//! Invariants: a receipt is claimed in the transaction that applies its notification, so a
//! notification is applied at most once per (source, id); a message found here carries its
//! project, and every write that follows names that project.

use herald_core::ids::Uuid;
pub use herald_core::message_status::MessageStatus;
use herald_core::time::Millis;
use sqlx::{AssertSqlSafe, FromRow};

use crate::{Store, StoreResult, Tx};

/// The part of a message that feedback needs.
#[derive(Clone, Debug, FromRow)]
pub struct FeedbackTarget {
    pub id: Uuid,
    pub project_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub campaign_id: Option<Uuid>,
    pub to_email: String,
    #[sqlx(try_from = "String")]
    pub status: MessageStatus,
    pub message_id_header: String,
    pub simulated: bool,
}

const TARGET: &str =
    "id, project_id, contact_id, campaign_id, to_email, status, message_id_header, simulated";

/// Claims a notification's receipt; false when it was applied before (a replay).
pub async fn claim_receipt(
    tx: &mut Tx,
    source: &str,
    receipt_id: &str,
    now: Millis,
) -> StoreResult<bool> {
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO feedback_receipts (source, receipt_id, received_at) VALUES ($1, $2, $3) \
             ON CONFLICT (source, receipt_id) DO NOTHING",
        )
        .bind(source)
        .bind(receipt_id)
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(n == 1)
}

/// Re-reads a target inside a transaction (its status may have moved since it was found).
pub async fn target_in(tx: &mut Tx, id: Uuid) -> StoreResult<Option<FeedbackTarget>> {
    let q = format!("SELECT {TARGET} FROM messages WHERE id = $1");
    Ok(db_tx!(tx, |conn| {
        sqlx::query_as(AssertSqlSafe(q.as_str()))
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?
    }))
}

impl Store {
    /// The message with Herald's id `id` (any project: the caller proved the notification).
    pub async fn feedback_target(&self, id: Uuid) -> StoreResult<Option<FeedbackTarget>> {
        let q = format!("SELECT {TARGET} FROM messages WHERE id = $1");
        Ok(db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(id)
                .fetch_optional(pool)
                .await?
        }))
    }

    /// The message the relay knows as `relay_id` (from its 250 reply).
    pub async fn feedback_target_by_relay_id(
        &self,
        relay_id: &str,
    ) -> StoreResult<Option<FeedbackTarget>> {
        let q = format!("SELECT {TARGET} FROM messages WHERE relay_message_id = $1 LIMIT 1");
        Ok(db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(relay_id)
                .fetch_optional(pool)
                .await?
        }))
    }

    /// The message whose `Message-ID` header is `header` (with or without angle brackets).
    /// Herald's Message-IDs are `<message id>@<sending domain>`, so the id is read from it and
    /// the whole header compared.
    pub async fn feedback_target_by_header(
        &self,
        header: &str,
    ) -> StoreResult<Option<FeedbackTarget>> {
        let bare = header.trim().trim_start_matches('<').trim_end_matches('>');
        let Some(id) = bare.split('@').next().and_then(|l| l.parse::<Uuid>().ok()) else {
            return Ok(None);
        };
        Ok(self
            .feedback_target(id)
            .await?
            .filter(|t| t.message_id_header.eq_ignore_ascii_case(bare)))
    }

    /// Deletes at most `limit` receipts older than `before`; returns how many.
    pub async fn purge_feedback_receipts(&self, before: Millis, limit: u32) -> StoreResult<u64> {
        Ok(db_write!(self, |pool| {
            sqlx::query(
                "DELETE FROM feedback_receipts WHERE (source, receipt_id) IN \
                 (SELECT source, receipt_id FROM feedback_receipts WHERE received_at < $1 LIMIT $2)",
            )
            .bind(before)
            .bind(i64::from(limit))
            .execute(pool)
            .await?
            .rows_affected()
        }))
    }
}
