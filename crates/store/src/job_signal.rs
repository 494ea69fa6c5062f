//! Committed jobs announce themselves. A transaction that queued or rescheduled a job
//! (`jobs::enqueue`, `retry`, `reschedule`, ...) bumps a counter when it commits, never before,
//! so whoever watches it (the engine's due-jobs probe, the wake-ups of other nodes) reads the
//! queue only once the job is there to be read. Nothing is announced for a rolled-back
//! transaction. The counter is a hint: a lost announcement costs a polling interval.

use herald_core::time::Millis;
use tokio::sync::watch;

use crate::{Store, StoreResult};

/// The counter of commits that queued jobs on this node.
pub(crate) struct JobSignal(watch::Sender<u64>);

impl Default for JobSignal {
    fn default() -> Self {
        Self(watch::Sender::new(0))
    }
}

impl JobSignal {
    pub(crate) fn bump(&self) {
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }
}

impl Store {
    /// Changes each time a commit on this node queued jobs.
    pub fn jobs_queued(&self) -> watch::Receiver<u64> {
        self.job_signal.0.subscribe()
    }

    /// Announces jobs queued by a write that committed outside [`crate::Tx`]'s tracking.
    pub fn announce_jobs(&self) {
        self.job_signal.bump();
    }

    /// When the next job of each of `kinds` is due: a waiting job's run time or an active
    /// job's lease expiry, `None` when the queue of that kind is empty. One statement for all
    /// kinds (two index lookups each, whatever the backlog), so an idle node asks the
    /// database once per look rather than once per queue.
    pub async fn next_due_by_kind(&self, kinds: &[&str]) -> StoreResult<Vec<Option<Millis>>> {
        if kinds.is_empty() {
            return Ok(Vec::new());
        }
        let q = (1..=kinds.len())
            .map(|i| {
                format!(
                    "SELECT {i} AS n, \
                     (SELECT min(run_at) FROM jobs WHERE kind = ${i} AND state = 'waiting') AS waiting, \
                     (SELECT min(lease_until) FROM jobs WHERE kind = ${i} AND state = 'active') AS leased"
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let rows: Vec<(i32, Option<i64>, Option<i64>)> = db_read!(self, |pool| {
            // Built from numbers only; the kinds are bound.
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(q.as_str()));
            for kind in kinds {
                query = query.bind(*kind);
            }
            query.fetch_all(pool).await?
        });
        let mut due = vec![None; kinds.len()];
        for (n, waiting, leased) in rows {
            if let Some(slot) = usize::try_from(n - 1).ok().and_then(|i| due.get_mut(i)) {
                *slot = waiting.into_iter().chain(leased).min();
            }
        }
        Ok(due)
    }
}
