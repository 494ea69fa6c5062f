//! The group-commit recorder of accepted deliveries.
//!
//! Invariants: SENT, its history, `email.sent` and the job's ack of many messages commit in one
//! transaction (the single SQLite writer is not the bottleneck), fenced by each claim's token.
//! One row never makes the others go out again: the store's writes skip what cannot be
//! recorded (a lease taken over, a message or contact deleted meanwhile), and if a group still
//! fails (e.g. a PostgreSQL deadlock with a concurrent deletion) each delivery is recorded in
//! a transaction of its own, so only a row that fails alone stays unrecorded. A job leaves the
//! lease registry only once its record was attempted, so its lease lives until then.

use std::sync::Arc;
use std::time::Duration;

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use herald_store::StoreResult;
use herald_store::messages::{self, SentRecord};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::leases::Leases;
use crate::Engine;

/// Deliveries recorded per transaction at most.
const GROUP: usize = 256;
/// How long the first delivery of a group waits for others. Recording a group costs about
/// the same few statements whatever its size, and each statement is a round trip to the
/// database's thread; without the wait, groups at 3,000 deliveries/s held about 7 deliveries
/// and the recorder's statements took a fifth of the CPU (docs/benchmarks.md). The lease of a
/// waiting job lives on (the heartbeat covers it until its record).
const LINGER: Duration = Duration::from_millis(5);

/// A delivery the relay accepted, waiting to be recorded with others.
pub(crate) struct SentDone {
    pub job_id: Uuid,
    pub lease_token: Uuid,
    pub message_id: Uuid,
    pub template_id: Option<Uuid>,
    pub subject: String,
    pub reply: String,
    pub started_at: Millis,
    pub first_attempt: bool,
    /// The relay's id for the message from its 250 reply (SMTP relays that give one).
    pub relay_message_id: Option<String>,
}

/// Records accepted deliveries in groups until every sender of `rx` is gone.
pub(crate) async fn run_completer(
    engine: Engine,
    leases: Arc<Leases>,
    mut rx: mpsc::Receiver<SentDone>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let deadline = Instant::now() + LINGER;
        while batch.len() < GROUP {
            // None: every sender is gone (shutdown); the group is recorded, then the loop ends.
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(d)) => batch.push(d),
                Ok(None) | Err(_) => break,
            }
        }
        record_sent(&engine, &batch).await;
        for d in &batch {
            leases.release(d.job_id);
        }
    }
}

/// Records a group; on failure, each delivery alone. Returns how many were recorded.
pub(crate) async fn record_sent(engine: &Engine, batch: &[SentDone]) -> usize {
    match record_group(engine, batch).await {
        Ok(n) => return n,
        Err(e) if batch.len() > 1 => {
            tracing::warn!(error = %e, count = batch.len(), "recording a group of sent messages failed; recording them one by one");
        }
        Err(e) => {
            // The job stays leased; once the lease expires it is claimed again.
            tracing::error!(error = %e, message = %batch[0].message_id, "recording a sent message failed");
            return 0;
        }
    }
    let mut recorded = 0;
    for d in batch {
        match record_group(engine, std::slice::from_ref(d)).await {
            Ok(n) => recorded += n,
            Err(e) => {
                tracing::error!(error = %e, message = %d.message_id, "recording a sent message failed")
            }
        }
    }
    recorded
}

async fn record_group(engine: &Engine, batch: &[SentDone]) -> StoreResult<usize> {
    let records: Vec<SentRecord<'_>> = batch
        .iter()
        .map(|d| SentRecord {
            job_id: d.job_id,
            lease_token: d.lease_token,
            message_id: d.message_id,
            template_id: d.template_id,
            subject: &d.subject,
            reply: &d.reply,
            started_at: d.started_at,
            first_attempt: d.first_attempt,
            relay_message_id: d.relay_message_id.as_deref(),
        })
        .collect();
    // Background work: request writes go first (herald_store's write_precedence.rs).
    engine.store.yield_to_urgent().await;
    let mut tx = engine.store.begin().await?;
    let recorded = messages::record_sent(&mut tx, &records, engine.now()).await?;
    tx.commit().await?;
    if recorded.len() < batch.len() {
        tracing::warn!(
            skipped = batch.len() - recorded.len(),
            "sent messages not recorded: their lease was taken over or the message is gone"
        );
    }
    Ok(recorded.len())
}
