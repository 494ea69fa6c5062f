//! The leases a node's send worker holds, kept alive by one heartbeat.
//!
//! Invariants: a job is registered here from its claim until its last write (ack, retry,
//! dead letter, or the group-commit record of its delivery), so its lease is extended every
//! third of the lease the whole time: throttle waits, composing and signing, the handoff and
//! the wait for the recorder included. Each heartbeat extends every held lease in one
//! statement per 100 jobs, fenced by the claim's token; a job whose lease was taken over is
//! dropped from the registry and [`Leases::holds`] answers false for it, so its worker stops
//! before the handoff.
//! - The registry keeps, per job, the lease end the database last confirmed (the claim's, then
//!   each beat's). No other claim can take a job before that end (claims take only expired
//!   leases), so "confirmed until at least T" answers the pre-handoff check without a read.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use herald_store::jobs::LockedRows;
use tokio::sync::watch;

use crate::Engine;

#[derive(Default)]
pub(crate) struct Leases {
    /// Job id to the token of our claim and the lease end the database last confirmed.
    held: Mutex<HashMap<Uuid, (Uuid, Millis)>>,
}

impl Leases {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, (Uuid, Millis)>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a claimed job; `until` is the lease end its claim wrote.
    pub(crate) fn hold(&self, job: Uuid, token: Uuid, until: Millis) {
        self.map().insert(job, (token, until));
    }

    /// Forgets a job whose last write was made (or abandoned).
    pub(crate) fn release(&self, job: Uuid) {
        self.map().remove(&job);
    }

    /// Whether the job is ours under `token` with a lease the database confirmed until at
    /// least `at`.
    pub(crate) fn holds_until(&self, job: Uuid, token: Uuid, at: Millis) -> bool {
        self.map()
            .get(&job)
            .is_some_and(|(t, until)| *t == token && *until >= at)
    }

    fn snapshot(&self) -> Vec<(Uuid, Uuid)> {
        self.map().iter().map(|(j, (t, _))| (*j, *t)).collect()
    }

    /// Extends every held lease to `until`; drops the ones taken over meanwhile. A job whose
    /// row is busy (being recorded) keeps the end confirmed before.
    async fn beat(&self, engine: &Engine, until: Millis) {
        let held = self.snapshot();
        if held.is_empty() {
            return;
        }
        match engine
            .store
            .extend_leases(&held, until, LockedRows::Skip)
            .await
        {
            Ok(renewal) => {
                let tokens: HashMap<Uuid, Uuid> = held.into_iter().collect();
                let mut map = self.map();
                // Only entries still under the token the renewal used (not released or
                // re-held meanwhile).
                let ours = |map: &HashMap<Uuid, (Uuid, Millis)>, job: &Uuid| {
                    map.get(job).map(|(t, _)| t) == tokens.get(job)
                };
                for job in &renewal.extended {
                    if ours(&map, job)
                        && let Some(entry) = map.get_mut(job)
                    {
                        entry.1 = entry.1.max(until);
                    }
                }
                for job in &renewal.lost {
                    if ours(&map, job) {
                        tracing::warn!(job = %job, "a send lease was taken over; its worker stops");
                        map.remove(job);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, count = held.len(), "extending send leases failed")
            }
        }
    }
}

/// How often the heartbeat runs: a third of the lease, so two beats may fail before a lease
/// can expire.
pub(crate) fn heartbeat_every(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_millis(100))
}

/// Extends the held leases every third of the lease until `stop` turns true.
pub(crate) async fn run_heartbeat(
    engine: Engine,
    leases: std::sync::Arc<Leases>,
    mut stop: watch::Receiver<bool>,
) {
    let lease = engine.settings.send_lease;
    let mut tick = tokio::time::interval(heartbeat_every(lease));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let until = engine.now() + lease.as_millis() as Millis;
                leases.beat(&engine, until).await;
            }
            _ = stop.changed() => return,
        }
    }
}
