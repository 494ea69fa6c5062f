//! The worker of contact jobs: CSV imports ([`import`]) and bulk operations ([`bulk`]).
//!
//! Guarantees (docs/imports.md):
//! - Jobs come from the durable queue (kinds `contacts.import`, `contacts.bulk`), claimed
//!   under a lease that a heartbeat renews every third of the lease while the job runs; a job
//!   whose worker died is claimed again once its lease expires, on any node.
//! - Work is committed in batches. Each batch transaction first makes the fenced write on the
//!   queue job ([`jobs::hold`]), then its effects, then the job's checkpoint; a worker whose
//!   lease was taken over commits nothing. A resumed job starts after the last committed
//!   batch, so no row is done twice and the counts stay exact.
//! - The last batch, the final result and the queue ack commit together. A job that keeps
//!   failing ends `failed` with its reason after `send_max_attempts` attempts.

pub mod bulk;
pub mod import;
mod import_rows;

use herald_core::contact_jobs::{IMPORT_KIND, JobState};
use herald_core::ids::Uuid;
use herald_store::jobs::{self, Job};
use herald_store::{StoreError, StoreResult, Tx};
use serde_json::Value;
use tokio::sync::watch;

use crate::Engine;

/// A job in hand: the queue job and its claim.
pub(crate) struct Held {
    pub job_id: Uuid,
    pub token: Uuid,
    pub contact_job: Uuid,
}

impl Held {
    /// Opens a batch transaction whose first write is the fenced hold of the queue job;
    /// `None` when the lease was lost (the caller stops and changes nothing).
    pub(crate) async fn begin(&self, engine: &Engine) -> StoreResult<Option<Tx>> {
        let mut tx = engine.store.begin().await?;
        if jobs::hold(&mut tx, self.job_id, self.token, engine.now()).await? {
            Ok(Some(tx))
        } else {
            Ok(None)
        }
    }

    /// Ends the job with `state` and `result` and acks the queue job in `tx`, then commits.
    pub(crate) async fn finish(
        &self,
        engine: &Engine,
        mut tx: Tx,
        state: JobState,
        result: &Value,
        reason: Option<&str>,
    ) -> StoreResult<()> {
        let now = engine.now();
        herald_store::contact_jobs::finish(&mut tx, self.contact_job, state, result, reason, now)
            .await?;
        if jobs::complete(&mut tx, self.job_id, self.token).await? {
            tx.commit().await?;
        }
        Ok(())
    }
}

/// Runs the contact jobs of queue `kind` (one at a time) until `shutdown`. Imports and bulk
/// jobs have a loop each, so a long import does not hold up a bulk operation.
pub async fn run_contact_jobs(
    engine: Engine,
    kind: &'static str,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        if *shutdown.borrow() {
            break;
        }
        // Registered before the claim, so a job queued meanwhile on this node wakes us.
        let notified = engine.contact_jobs_wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let lease = crate::job_lease::lease_ms(&engine);
        let mark = engine.due_mark();
        match engine.store.claim_jobs(kind, 1, engine.now(), lease).await {
            Ok(claimed) if !claimed.is_empty() => {
                for job in claimed {
                    run_one(&engine, job).await;
                }
                continue;
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, kind, "claiming contact jobs failed"),
        }
        // Work queued here wakes it at once, and work queued on another node at that
        // node's announcement (`due_jobs`, `cluster_wake`).
        let kinds = [kind];
        tokio::select! {
            _ = &mut notified => {}
            _ = engine.wait_for_due(&kinds, mark, &mut shutdown) => {}
        }
    }
}

/// Runs one claimed job with its lease kept alive, then settles errors.
async fn run_one(engine: &Engine, job: Job) {
    let Some(contact_job) = job
        .payload
        .0
        .get("jobId")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Uuid>().ok())
    else {
        settle_error(engine, &job, None, "the job names no contact job").await;
        return;
    };
    let held = Held {
        job_id: job.id,
        token: job.lease_token,
        contact_job,
    };
    let outcome = if job.attempts > job.max_attempts {
        Err(StoreError::Other(anyhow::anyhow!(
            "the job was interrupted {} times",
            job.attempts - 1
        )))
    } else {
        let _ = engine
            .store
            .mark_contact_job_active(contact_job, engine.now())
            .await;
        let work = async {
            match job.kind.as_str() {
                IMPORT_KIND => import::run(engine, &held).await,
                _ => bulk::run(engine, &held).await,
            }
        };
        crate::job_lease::with_heartbeat(engine, &job, work).await
    };
    if let Err(e) = outcome {
        tracing::warn!(error = %e, job = %job.id, "contact job failed");
        settle_error(engine, &job, Some(contact_job), &e.to_string()).await;
    }
}

/// Retries a failed attempt later, or ends the job `failed` once its attempts are spent.
async fn settle_error(engine: &Engine, job: &Job, contact_job: Option<Uuid>, error: &str) {
    let now = engine.now();
    let result: StoreResult<()> = async {
        let dead = crate::job_lease::settle_failure(engine, job, error, contact_job.is_none());
        if let Some(mut tx) = dead.await? {
            if let Some(id) = contact_job {
                let empty = serde_json::json!({});
                herald_store::contact_jobs::finish(
                    &mut tx,
                    id,
                    JobState::Failed,
                    &empty,
                    Some(error),
                    now,
                )
                .await?;
            }
            tx.commit().await?;
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        tracing::error!(error = %e, job = %job.id, "recording a contact job failure failed");
    }
}
