//! The retention task: purges what must not be kept forever, in bounded batches (each its own
//! short transaction, so the SQLite writer is never held long), with time from the Clock.
//!
//! - message bodies and attachments `retention_days` after the message was created (finished
//!   messages only; 0 = keep forever). Metadata and history stay; `GET /emails/:id` shows the
//!   body as purged. With the local outbox transport, the message's `.eml` goes too.
//! - `Idempotency-Key`s after [`IDEMPOTENCY_WINDOW_MS`] (24 h);
//! - finished jobs (done, failed, dead) [`FINISHED_JOB_RETENTION_MS`] (7 days) after they finished;
//! - the shared limits' past request windows and idle send slots (PostgreSQL).

use std::time::Duration;

use herald_mail::transport::Transport;
use herald_store::StoreResult;
use tokio::sync::watch;

use crate::Engine;
use crate::send::accept::IDEMPOTENCY_WINDOW_MS;

/// How long finished jobs are kept.
pub const FINISHED_JOB_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;
/// Rows per purge transaction.
pub const PURGE_BATCH: u32 = 500;
/// How often the task runs (once per cluster).
pub const PURGE_INTERVAL: Duration = Duration::from_secs(600);
/// A node starting does not purge within this time (it has its start-up to do).
const FIRST_AFTER: Duration = Duration::from_secs(60);
/// Pause between batches, so other writers get the database in between.
const BETWEEN_BATCHES: Duration = Duration::from_millis(20);

const DAY_MS: i64 = 24 * 3600 * 1000;

/// What one purge run removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PurgeReport {
    pub bodies: u64,
    pub blobs: u64,
    pub idempotency_keys: u64,
    pub jobs: u64,
}

impl Engine {
    /// Runs every purge until nothing is left to purge now.
    pub async fn purge_expired(&self) -> StoreResult<PurgeReport> {
        let mut report = PurgeReport::default();
        if self.settings.retention_days > 0 {
            let cutoff = self.now() - i64::from(self.settings.retention_days) * DAY_MS;
            loop {
                let purged = self
                    .store
                    .purge_message_bodies(cutoff, self.now(), PURGE_BATCH)
                    .await?;
                report.bodies += purged.message_ids.len() as u64;
                report.blobs += purged.blobs;
                if let Transport::Outbox(outbox) = &self.transport {
                    for id in &purged.message_ids {
                        if let Ok(path) = outbox.path_for(&id.to_string()) {
                            let _ = tokio::fs::remove_file(path).await;
                        }
                    }
                }
                if purged.message_ids.len() < PURGE_BATCH as usize {
                    break;
                }
                tokio::time::sleep(BETWEEN_BATCHES).await;
            }
        }
        let cutoff = self.now() - IDEMPOTENCY_WINDOW_MS;
        loop {
            let n = self
                .store
                .purge_idempotency_keys(cutoff, PURGE_BATCH)
                .await?;
            report.idempotency_keys += n;
            if n < u64::from(PURGE_BATCH) {
                break;
            }
            tokio::time::sleep(BETWEEN_BATCHES).await;
        }
        let cutoff = self.now() - FINISHED_JOB_RETENTION_MS;
        loop {
            let n = self.store.purge_finished_jobs(cutoff, PURGE_BATCH).await?;
            report.jobs += n;
            if n < u64::from(PURGE_BATCH) {
                break;
            }
            tokio::time::sleep(BETWEEN_BATCHES).await;
        }
        // Feedback receipts outlive every window in which a notification is accepted (300 s
        // for the generic format, an hour for SNS), so a day is plenty.
        let cutoff = self.now() - DAY_MS;
        loop {
            let n = self
                .store
                .purge_feedback_receipts(cutoff, PURGE_BATCH)
                .await?;
            if n < u64::from(PURGE_BATCH) {
                break;
            }
            tokio::time::sleep(BETWEEN_BATCHES).await;
        }
        // The shared limits' rows (PostgreSQL): request windows before the last minute, and
        // send slots of projects that sent nothing for an hour (a missing row is the same as
        // a slot in the past).
        let window = self.now() / 1000 / 60 - 1;
        let idle_us = (self.now() - 3600 * 1000) * 1000;
        loop {
            let n = self
                .store
                .purge_shared_limits(window, idle_us, PURGE_BATCH)
                .await?;
            if n < u64::from(PURGE_BATCH) {
                break;
            }
            tokio::time::sleep(BETWEEN_BATCHES).await;
        }
        Ok(report)
    }
}

/// Purges once per [`PURGE_INTERVAL`] in the cluster (`periodic`: one node per interval),
/// not within the node's first minute, until shutdown.
pub async fn run_retention(engine: Engine, shutdown: watch::Receiver<bool>) {
    let worker = engine.clone();
    crate::periodic::run_each_period(
        engine,
        crate::periodic::PeriodicTask::Retention,
        PURGE_INTERVAL,
        FIRST_AFTER,
        shutdown,
        move || {
            let engine = worker.clone();
            async move {
                match engine.purge_expired().await {
                    Ok(r) if r != PurgeReport::default() => tracing::info!(
                        bodies = r.bodies,
                        blobs = r.blobs,
                        idempotency_keys = r.idempotency_keys,
                        jobs = r.jobs,
                        "retention purge"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "retention purge failed; retrying later"),
                }
                false
            }
        },
    )
    .await;
}
