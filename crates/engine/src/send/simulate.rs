//! The mailbox simulator's delivery: a message to `simulator.herald.test` is recorded SENT
//! (with its ack, history and `email.sent`, exactly as a relay's 250 would be) and then given
//! its simulated feedback through the same rule as real feedback, all in one transaction
//! fenced by the job's lease. Nothing is composed, signed or handed to a transport.
//!
//! `success@` → DELIVERED; `bounce@` → the permanent-bounce path; `complaint@` → DELIVERED,
//! then the complaint path. (`suppressionlist@` never gets here: it is SUPPRESSED at
//! acceptance.) Simulated messages unsubscribe their contact like real feedback but never put
//! the address on the suppression list and are not counted in feedback metrics.

use herald_core::feedback::{FeedbackKind, SimulatedOutcome, simulated_outcome};
use herald_store::StoreResult;
use herald_store::jobs::Job;
use herald_store::messages::{self, Message, MessageStatus, SentRecord};

use crate::Engine;
use crate::feedback::{Feedback, apply_feedback, target_of};

/// The reply recorded as the SENT step of a simulated message.
const REPLY: &str = "250 simulated: not handed to a transport (via the mailbox simulator)";

pub(crate) async fn deliver_simulated(
    engine: &Engine,
    job: &Job,
    msg: &Message,
) -> StoreResult<()> {
    let steps: &[FeedbackKind] = match simulated_outcome(&msg.to_email) {
        Some(SimulatedOutcome::Bounce) => &[FeedbackKind::Bounce { permanent: true }],
        Some(SimulatedOutcome::Complaint) => &[FeedbackKind::Delivery, FeedbackKind::Complaint],
        Some(SimulatedOutcome::SuppressionList) => &[],
        Some(SimulatedOutcome::Success) | None => &[FeedbackKind::Delivery],
    };
    let now = engine.now();
    let mut tx = engine.store.begin().await?;
    let sent = SentRecord {
        job_id: job.id,
        lease_token: job.lease_token,
        message_id: msg.id,
        template_id: msg.template_id,
        subject: &msg.subject,
        reply: REPLY,
        started_at: now,
        first_attempt: msg.status == MessageStatus::Pending,
        relay_message_id: None,
    };
    if messages::record_sent(&mut tx, &[sent], now)
        .await?
        .is_empty()
    {
        // The lease was taken over (or the message is gone): change nothing.
        return Ok(());
    }
    let mut target = target_of(msg);
    target.status = MessageStatus::Sent;
    for kind in steps {
        let fb = Feedback {
            kind: kind.clone(),
            detail: None,
            source: "mailbox simulator",
            attempt: false,
        };
        apply_feedback(&mut tx, &target, &fb, now).await?;
        if let Some(s) = kind.status() {
            target.status = s;
        }
    }
    tx.commit().await
}
