//! Keeping a long job's lease alive: the heartbeat that contact jobs and campaign fan-outs run
//! beside their work, so a job that takes minutes is not claimed again by another worker.
//! Leases are fenced (see `herald_store::jobs`): once the heartbeat finds the lease lost it
//! stops, and the job's own fenced writes then change nothing.

use std::future::Future;
use std::time::Duration;

use herald_core::ids::Uuid;
use herald_store::jobs::{self, Job, LockedRows};
use herald_store::{StoreResult, Tx};
use tokio::sync::watch;

use crate::Engine;

/// The lease of a long job, from the send lease setting.
pub(crate) fn lease_ms(engine: &Engine) -> i64 {
    i64::try_from(engine.settings.send_lease.as_millis()).unwrap_or(10_000)
}

/// Runs `work` with the job's lease renewed every third of the lease until it ends.
pub(crate) async fn with_heartbeat<T>(
    engine: &Engine,
    job: &Job,
    work: impl Future<Output = T>,
) -> T {
    with_heartbeats(engine, vec![(job.id, job.lease_token)], work).await
}

/// [`with_heartbeat`] for several jobs held at once (one statement per renewal).
pub(crate) async fn with_heartbeats<T>(
    engine: &Engine,
    held: Vec<(Uuid, Uuid)>,
    work: impl Future<Output = T>,
) -> T {
    let (stop, stopped) = watch::channel(false);
    let beat = tokio::spawn(heartbeat(engine.clone(), held, stopped));
    let out = work.await;
    let _ = stop.send(true);
    let _ = beat.await;
    out
}

/// Renews the jobs' leases every third of the lease until told to stop or every lease is lost.
async fn heartbeat(engine: Engine, mut held: Vec<(Uuid, Uuid)>, mut stop: watch::Receiver<bool>) {
    let lease = lease_ms(&engine);
    let every = Duration::from_millis(u64::try_from(lease / 3).unwrap_or(1000).max(50));
    loop {
        if crate::sleep_or_shutdown(&mut stop, every).await {
            return;
        }
        match engine
            .store
            .extend_leases(&held, engine.now() + lease, LockedRows::Wait)
            .await
        {
            Ok(renewal) => {
                held.retain(|(id, _)| !renewal.lost.contains(id));
                if held.is_empty() {
                    return;
                }
            }
            Err(e) => tracing::warn!(error = %e, jobs = held.len(), "extending job leases failed"),
        }
    }
}

/// Settles a failed attempt of a long job: while attempts remain (and `no_retry` is false) it
/// is retried after a backoff of one second per attempt; otherwise it is dead-lettered, and
/// the transaction that did so is returned for the caller's own writes (marking its record
/// failed) and commit. `None`: retried, or the lease was lost (nothing to do).
pub(crate) async fn settle_failure(
    engine: &Engine,
    job: &Job,
    error: &str,
    no_retry: bool,
) -> StoreResult<Option<Tx>> {
    let now = engine.now();
    let mut tx = engine.store.begin().await?;
    if job.attempts >= job.max_attempts || no_retry {
        if jobs::fail(&mut tx, job.id, job.lease_token, error, now).await? {
            return Ok(Some(tx));
        }
        return Ok(None);
    }
    let backoff = 1000 * i64::from(job.attempts.clamp(1, 30));
    if jobs::retry(&mut tx, job.id, job.lease_token, now + backoff, error, now).await? {
        tx.commit().await?;
    }
    Ok(None)
}
