//! When the job queues have work: one look at the database for every queue at once, instead
//! of each worker loop asking on a timer of its own (docs/job-queue.md "Idle workers").
//!
//! The probe task reads, in one statement, when the next job of each kind is due
//! (`Store::next_due_by_kind`) and publishes it as a [`Snapshot`]. It looks again at once when
//! a commit on this node queued jobs (`Store::jobs_queued`) or another node says it did
//! (`cluster_wake`), and otherwise every `HERALD_IDLE_POLL_SECS`, the fallback for a lost
//! wake-up. An idle worker loop waits in [`Engine::wait_for_due`] until the snapshot shows a
//! job of its kinds due on the engine's clock, looking at the clock (not the database) a few
//! times a second, so a delayed job starts when its time comes, and a test clock moved
//! forward is seen at once. An idle node thus asks the database about its queues once per
//! interval, whatever the number of queues.

use std::collections::HashMap;
use std::time::Duration;

use herald_core::contact_jobs::{BULK_KIND, IMPORT_KIND};
use herald_core::time::Millis;
use herald_store::campaigns::FANOUT_JOB;
use herald_store::segment_membership::REEVALUATE_JOB;
use herald_store::workflows::run::{EVENT_JOB, RUN_JOB};
use tokio::sync::watch;

use crate::Engine;
use crate::send::accept::SEND_JOB;

/// Every job kind a worker loop of this node claims.
pub const KINDS: [&str; 7] = [
    SEND_JOB,
    EVENT_JOB,
    RUN_JOB,
    REEVALUATE_JOB,
    FANOUT_JOB,
    IMPORT_KIND,
    BULK_KIND,
];

/// How often a waiting loop compares the snapshot's due times with the clock (no database).
const TICK: Duration = Duration::from_millis(100);
/// The least time between two looks, however often jobs are announced.
const MIN_SPACING: Duration = Duration::from_millis(50);
/// The longest a loop waits without claiming, should the probe have stopped: this many idle
/// polls, and at least [`MIN_FALLBACK`].
const FALLBACK_POLLS: u32 = 3;
const MIN_FALLBACK: Duration = Duration::from_secs(30);

/// What one look at the queues found.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The look's number: looks are numbered as they start.
    pub look: u64,
    /// When the next job of each kind is due (kinds with none are absent).
    pub due: HashMap<&'static str, Millis>,
}

/// Taken by a loop just before it claims: which looks were begun by then, and the time.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    look: u64,
    at: Millis,
}

impl Snapshot {
    /// Whether a job of `kind` is due at `now` that the claim made after `mark` could not have
    /// taken: either this look began after the mark (it saw the queue after the claim), or the
    /// job became due after the claim.
    pub fn ready(&self, kind: &str, mark: Mark, now: Millis) -> bool {
        self.due
            .get(kind)
            .is_some_and(|&t| t <= now && (self.look > mark.look || t > mark.at))
    }
}

/// The probe's state shared with the loops.
pub struct DueJobs {
    snapshot: watch::Sender<Snapshot>,
    /// Looks begun so far.
    looks: std::sync::atomic::AtomicU64,
    /// Asks for a look now (another node queued jobs).
    poke: tokio::sync::Notify,
}

impl Default for DueJobs {
    fn default() -> Self {
        Self {
            snapshot: watch::Sender::new(Snapshot::default()),
            looks: Default::default(),
            poke: tokio::sync::Notify::new(),
        }
    }
}

impl DueJobs {
    /// Asks for a look at the queues now.
    pub fn poke(&self) {
        self.poke.notify_one();
    }
}

impl Engine {
    /// To be taken just before a claim whose emptiness sends the loop to [`Self::wait_for_due`].
    pub fn due_mark(&self) -> Mark {
        Mark {
            look: self
                .due_jobs
                .looks
                .load(std::sync::atomic::Ordering::SeqCst),
            at: self.now(),
        }
    }

    /// Waits until a job of one of `kinds` is due that the claim after `mark` did not find (or
    /// the fallback time passed); true when shutting down.
    pub async fn wait_for_due(
        &self,
        kinds: &[&str],
        mark: Mark,
        shutdown: &mut watch::Receiver<bool>,
    ) -> bool {
        let mut snapshot = self.due_jobs.snapshot.subscribe();
        let fallback = (self.settings.idle_poll * FALLBACK_POLLS).max(MIN_FALLBACK);
        let give_up = tokio::time::Instant::now() + fallback;
        loop {
            if *shutdown.borrow() {
                return true;
            }
            let now = self.now();
            if kinds
                .iter()
                .any(|k| snapshot.borrow_and_update().ready(k, mark, now))
            {
                return false;
            }
            tokio::select! {
                _ = snapshot.changed() => {}
                _ = tokio::time::sleep(TICK) => {}
                _ = tokio::time::sleep_until(give_up) => return false,
                r = shutdown.changed() => if r.is_err() { return true },
            }
        }
    }
}

/// Looks at the queues at once when jobs are announced, else every idle poll, until shutdown.
pub async fn run_probe(engine: Engine, mut shutdown: watch::Receiver<bool>) {
    let mut queued = engine.store.jobs_queued();
    loop {
        let look = engine
            .due_jobs
            .looks
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        queued.mark_unchanged();
        match engine.store.next_due_by_kind(&KINDS).await {
            Ok(times) => {
                let due = KINDS
                    .iter()
                    .zip(times)
                    .filter_map(|(k, t)| Some((*k, t?)))
                    .collect();
                engine
                    .due_jobs
                    .snapshot
                    .send_replace(Snapshot { look, due });
            }
            Err(e) => tracing::warn!(error = %e, "looking for due jobs failed; trying again"),
        }
        if crate::sleep_or_shutdown(&mut shutdown, MIN_SPACING).await {
            return;
        }
        tokio::select! {
            _ = queued.changed() => {}
            _ = engine.due_jobs.poke.notified() => {}
            _ = tokio::time::sleep(engine.settings.idle_poll) => {}
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_due_job_is_ready_only_when_the_claim_could_not_have_taken_it() {
        let snap = |look, t| Snapshot {
            look,
            due: HashMap::from([("k", t)]),
        };
        let mark = Mark { look: 5, at: 1_000 };
        // Seen by a look begun before the claim and due before it: the claim took it.
        assert!(!snap(5, 900).ready("k", mark, 2_000));
        // Seen by a look begun after the claim: new work.
        assert!(snap(6, 900).ready("k", mark, 2_000));
        // Due after the claim, now passed: a timer.
        assert!(snap(5, 1_500).ready("k", mark, 2_000));
        // Not due yet, or another kind.
        assert!(!snap(6, 2_500).ready("k", mark, 2_000));
        assert!(!snap(6, 900).ready("other", mark, 2_000));
    }
}
