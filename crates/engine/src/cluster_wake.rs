//! Nodes wake each other (DECISIONS.md "Several nodes on one PostgreSQL"). Queuing work wakes
//! this node's workers in memory and, on PostgreSQL, every other node's through LISTEN/NOTIFY
//! (`herald_store::wake`): mail accepted by an `api` node is claimed by an idle `worker` node
//! at once rather than at its next poll. Polling stays as the fallback, so a notification
//! lost while a listener reconnects costs at most one polling interval.
//!
//! Notifying is coalesced: one task per node sends the notifications, and wake-ups asked for
//! while it sends one become a single next one, so a burst of requests costs a few NOTIFYs,
//! not one per request.

use std::time::Duration;

use tokio::sync::watch;

use crate::Engine;

/// Payload: send jobs were queued.
pub const SEND: &str = "send";
/// Payload: an import or bulk job was queued.
pub const CONTACT_JOBS: &str = "contact_jobs";
/// Payload: jobs of any kind were queued or rescheduled (`due_jobs`): look at the queues.
pub const JOBS: &str = "jobs";
/// The least time between two `JOBS` notifications of one node: under load a node commits
/// jobs all the time, and the others need one look per spacing, not one per commit.
const JOBS_SPACING: Duration = Duration::from_millis(100);
/// The least time between two notifications of any kind from one node: wake-ups asked for
/// meanwhile become one (under load a node queues sends all the time, and a `NOTIFY` takes
/// PostgreSQL's notification lock at commit).
const SPACING: Duration = Duration::from_millis(20);

/// This node's wake-ups waiting to go out to the others.
#[derive(Default)]
pub struct Outgoing {
    send: tokio::sync::Notify,
    contact_jobs: tokio::sync::Notify,
}

impl Engine {
    /// Send jobs were committed: wake the sender here and on the other nodes.
    pub fn send_queued(&self) {
        self.wake.notify_one();
        self.outgoing_wakes.send.notify_one();
    }

    /// An import or bulk job was committed: wake its loop here and on the other nodes.
    pub fn contact_jobs_queued(&self) {
        self.contact_jobs_wake.notify_waiters();
        self.outgoing_wakes.contact_jobs.notify_one();
    }
}

/// Sends this node's wake-ups until `shutdown` (PostgreSQL; returns at once on SQLite).
pub async fn run_notifier(engine: Engine, mut shutdown: watch::Receiver<bool>) {
    if engine.store.dialect() != herald_store::Dialect::Postgres {
        return;
    }
    let mut jobs = engine.store.jobs_queued();
    let mut jobs_sent = tokio::time::Instant::now();
    let mut jobs_pending = false;
    loop {
        let what = tokio::select! {
            _ = engine.outgoing_wakes.send.notified() => SEND,
            _ = engine.outgoing_wakes.contact_jobs.notified() => CONTACT_JOBS,
            changed = jobs.changed(), if !jobs_pending => {
                if changed.is_err() {
                    break;
                }
                jobs_pending = true;
                continue;
            }
            _ = tokio::time::sleep_until(jobs_sent + JOBS_SPACING), if jobs_pending => {
                jobs_pending = false;
                jobs_sent = tokio::time::Instant::now();
                JOBS
            }
            _ = shutdown.changed() => break,
        };
        if let Err(e) = engine.store.notify_wake(what).await {
            // The others find the work at their next poll.
            tracing::warn!(error = %e, "notifying the other nodes failed");
        }
        if crate::sleep_or_shutdown(&mut shutdown, SPACING).await {
            break;
        }
    }
}

/// Listens for the other nodes' wake-ups and wakes this node's workers, until `shutdown`
/// (PostgreSQL; returns at once on SQLite).
pub async fn run_listener(engine: Engine, mut shutdown: watch::Receiver<bool>) {
    let mut listener = loop {
        match engine.store.wake_listener().await {
            Ok(Some(listener)) => break listener,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "listening for wake-ups failed; polling meanwhile");
                if crate::sleep_or_shutdown(&mut shutdown, Duration::from_secs(1)).await {
                    return;
                }
            }
        }
    };
    loop {
        tokio::select! {
            got = listener.recv() => match got {
                Ok(what) if what == SEND => engine.wake.notify_one(),
                Ok(what) if what == CONTACT_JOBS => engine.contact_jobs_wake.notify_waiters(),
                Ok(what) if what == JOBS => engine.due_jobs.poke(),
                Ok(_) => {}
                Err(e) => {
                    // The listener reconnects on the next receive.
                    tracing::warn!(error = %e, "the wake-up connection failed; reconnecting");
                    if crate::sleep_or_shutdown(&mut shutdown, Duration::from_secs(1)).await {
                        return;
                    }
                }
            },
            _ = shutdown.changed() => return,
        }
    }
}
