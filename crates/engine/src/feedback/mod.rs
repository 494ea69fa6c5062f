//! Feedback from relays: `POST /webhooks/notifications` in its two formats (the generic
//! signed JSON of DECISIONS.md and Amazon SES through SNS, [`sns`]), applied to messages by
//! the one rule of [`apply`], which SMTP-time rejections and the mailbox simulator share.
//!
//! Invariants:
//! - Nothing is read from a notification before its signature is verified.
//! - A notification is applied in one transaction with its receipt (source + notification
//!   id: the generic format's signature, SNS's `MessageId`), so a replay changes nothing.
//! - Unknown messages answer [`Outcome::UnknownMessage`] (404) and leave no receipt.

pub mod apply;
mod ses_inbound;
pub mod sns;

use herald_core::feedback::{FeedbackKind, verify_generic_signature};
use herald_core::ids::Uuid;
use herald_store::StoreError;
use herald_store::feedback::{FeedbackTarget, claim_receipt, target_in};
use serde::Deserialize;

pub use apply::{Feedback, apply_feedback, target_of};

use crate::Engine;

/// What a notification did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Applied (or a no-op by the forward-only rule).
    Applied,
    /// The same notification was applied before: nothing changed.
    Replayed,
    /// No message of Herald's matches it.
    UnknownMessage,
    /// An SNS subscription was confirmed.
    Confirmed,
    /// A valid notification of a kind Herald does not act on.
    Ignored,
}

/// Why a notification was refused.
#[derive(Debug, thiserror::Error)]
pub enum NotificationError {
    /// Signature missing, wrong or stale; no secret configured; a foreign certificate URL.
    #[error("{0}")]
    Unauthorized(String),
    /// Well signed or not, not accepted from this sender (an SNS topic that is not listed).
    #[error("{0}")]
    Forbidden(String),
    /// Not JSON, or not the format's shape.
    #[error("{0}")]
    Malformed(String),
    /// A field has a value the format does not allow.
    #[error("{message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    /// Amazon could not be reached (certificate or subscription confirmation).
    #[error("{0}")]
    Upstream(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The generic format's body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenericNotification {
    #[serde(rename = "type")]
    kind: String,
    message_id: String,
    bounce_type: Option<String>,
    diagnostic: Option<String>,
    url: Option<String>,
}

impl Engine {
    /// `POST /webhooks/notifications` in the generic signed format.
    pub async fn generic_notification(
        &self,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<Outcome, NotificationError> {
        let Some(secret) = self.settings.feedback_secret.as_deref() else {
            return Err(NotificationError::Unauthorized(
                "signed notifications are not accepted: HERALD_FEEDBACK_SECRET is not configured"
                    .into(),
            ));
        };
        let receipt = verify_generic_signature(signature, body, secret.as_bytes(), self.now())
            .map_err(|e| NotificationError::Unauthorized(e.to_string()))?;
        let n: GenericNotification = serde_json::from_slice(body).map_err(|e| {
            NotificationError::Malformed(format!("the notification is not valid: {e}"))
        })?;
        let kind = FeedbackKind::from_generic(&n.kind, n.bounce_type.as_deref(), n.url.clone())
            .ok_or_else(|| {
                if matches!(n.kind.as_str(), "bounce") {
                    NotificationError::Invalid {
                        field: "bounceType",
                        message: "bounceType must be permanent or transient".into(),
                    }
                } else {
                    NotificationError::Invalid {
                        field: "type",
                        message: "type must be one of delivery, bounce, complaint, open, click"
                            .into(),
                    }
                }
            })?;
        let target = match n.message_id.trim().parse::<Uuid>() {
            Ok(id) => self.store.feedback_target(id).await?,
            Err(_) => None,
        };
        let Some(target) = target else {
            return Ok(Outcome::UnknownMessage);
        };
        let fb = Feedback {
            kind,
            detail: n.diagnostic.as_deref(),
            source: "webhook",
            attempt: false,
        };
        self.apply_notification(&target, "generic", &receipt, &fb)
            .await
    }

    /// Applies one verified notification with its receipt, in one transaction.
    pub(crate) async fn apply_notification(
        &self,
        target: &FeedbackTarget,
        source: &str,
        receipt: &str,
        fb: &Feedback<'_>,
    ) -> Result<Outcome, NotificationError> {
        let now = self.now();
        let mut tx = self.store.begin().await?;
        if !claim_receipt(&mut tx, source, receipt, now).await? {
            return Ok(Outcome::Replayed);
        }
        // Read again inside the transaction: the status may have moved meanwhile.
        let Some(current) = target_in(&mut tx, target.id).await? else {
            return Ok(Outcome::UnknownMessage);
        };
        let moved = apply_feedback(&mut tx, &current, fb, now).await?;
        apply::guard_reputation(&mut tx, &current, fb, moved, &self.settings.reputation, now)
            .await?;
        tx.commit().await?;
        Ok(Outcome::Applied)
    }
}
