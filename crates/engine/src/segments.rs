//! Segment membership in the background (docs/segments.md):
//! - the `segment.reevaluate` consumer: a contact changed (create, update, tracked event), so
//!   its tracked dynamic segments are re-evaluated for it (entry/exit events, cached count);
//! - the periodic recompute of every tracked dynamic segment (time-relative conditions such as
//!   `within` move contacts without any write), every [`RECOMPUTE_INTERVAL`], on one node of
//!   the cluster per interval.
//!
//! Both are idempotent (membership rows are inserted ON CONFLICT DO NOTHING and deleted by key;
//! an event is written only for a row actually inserted or deleted), so a job that runs twice
//! after a lost lease changes nothing the second time.

use std::time::Duration;

use herald_core::ids::Uuid;
use herald_store::jobs;
use herald_store::segment_membership::REEVALUATE_JOB;
use tokio::sync::watch;

use crate::Engine;
use crate::periodic::{self, PeriodicTask};

/// How often every tracked dynamic segment is recomputed.
pub const RECOMPUTE_INTERVAL: Duration = Duration::from_secs(300);
/// Lease of one claimed re-evaluation job.
const LEASE_MS: i64 = 60_000;
/// Jobs claimed at once.
const BATCH: u32 = 32;

/// Claims and runs `segment.reevaluate` jobs until shutdown.
pub async fn run_reevaluations(engine: Engine, mut shutdown: watch::Receiver<bool>) {
    loop {
        let mark = engine.due_mark();
        let done = match engine.reevaluate_batch().await {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(error = %e, "segment re-evaluation failed; retrying later");
                0
            }
        };
        let stop = if done == 0 {
            engine
                .wait_for_due(&[REEVALUATE_JOB], mark, &mut shutdown)
                .await
        } else {
            *shutdown.borrow()
        };
        if stop {
            return;
        }
    }
}

/// Recomputes every tracked dynamic segment once per [`RECOMPUTE_INTERVAL`] of the engine's
/// clock in the cluster (`periodic`: one node per period) until shutdown. The clock is looked
/// at every second, so moving a test clock forward past a period starts a recompute within
/// that time.
pub async fn run_recompute(engine: Engine, shutdown: watch::Receiver<bool>) {
    let worker = engine.clone();
    periodic::run_each_period(
        engine,
        PeriodicTask::SegmentRecompute,
        RECOMPUTE_INTERVAL,
        Duration::ZERO,
        shutdown,
        move || {
            let engine = worker.clone();
            async move {
                if let Err(e) = engine.recompute_tracked_segments().await {
                    tracing::error!(error = %e, "segment recompute failed; retrying later");
                }
                false
            }
        },
    )
    .await;
}

impl Engine {
    /// Runs one batch of re-evaluation jobs; returns how many were claimed.
    pub async fn reevaluate_batch(&self) -> herald_store::StoreResult<usize> {
        let claimed = self
            .store
            .claim_jobs(REEVALUATE_JOB, BATCH, self.now(), LEASE_MS)
            .await?;
        for job in &claimed {
            let contact = job
                .payload
                .0
                .get("contactId")
                .and_then(|v| v.as_str())
                .and_then(|s| Uuid::parse_str(s).ok());
            if job.attempts > job.max_attempts {
                let mut tx = self.store.begin().await?;
                jobs::fail(
                    &mut tx,
                    job.id,
                    job.lease_token,
                    "too many attempts",
                    self.now(),
                )
                .await?;
                tx.commit().await?;
                continue;
            }
            if let (Some(project_id), Some(contact_id)) = (job.project_id, contact) {
                self.store
                    .reevaluate_contact_segments(project_id, contact_id, self.now())
                    .await?;
            }
            let mut tx = self.store.begin().await?;
            jobs::complete(&mut tx, job.id, job.lease_token).await?;
            tx.commit().await?;
        }
        Ok(claimed.len())
    }

    /// Recomputes the membership of every tracked dynamic segment of every project.
    pub async fn recompute_tracked_segments(&self) -> herald_store::StoreResult<()> {
        for project_id in self.store.projects_with_tracked_segments().await? {
            for segment in self.store.tracked_segments(project_id).await? {
                self.store
                    .compute_segment(project_id, &segment, self.now())
                    .await?;
            }
        }
        Ok(())
    }
}
