//! Periodic work, once per cluster per period (docs/deploy.md "Periodic work").
//!
//! Time is cut into periods of each task's length on the engine's clock (the database's on
//! PostgreSQL, `db_clock`), aligned to the epoch, so every node computes the same periods.
//! Each node with workers looks every [`MAX_POLL`] (or every period, when shorter) and, when
//! a period has begun that it has not tried yet, claims it (`Store::claim_period`): exactly
//! one node gets each period and runs the task; the others skip it (a clock set back by more
//! than a period starts afresh, see `herald_store::periodic`). A node never runs the period
//! in which it started, so a lone node runs a task one period after starting at the
//! latest, as before the claims existed. A claimed run that dies part-way is not retried in
//! that period: every task here is idempotent and picks up at the next one.
//!
//! The claim is the only coordination: a node that is still running the previous period's
//! task when the next period begins does not stop another node from claiming that one, and
//! the tasks are written so that two runs at once change nothing twice (domain checks claim
//! each domain, recomputes and purges are idempotent).

use std::future::Future;
use std::time::Duration;

use herald_core::time::Millis;
use herald_store::periodic::Period;
use tokio::sync::watch;

use crate::Engine;

/// The longest a node waits between two looks at the clock.
pub const MAX_POLL: Duration = Duration::from_secs(1);

/// The periodic tasks (their names label `/metrics`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeriodicTask {
    /// Recompute every tracked dynamic segment (`segments::run_recompute`).
    SegmentRecompute,
    /// Look for domains due for a DNS re-check (`domains::check::run_periodic_checks`).
    DomainRecheck,
    /// Purge what is past its retention (`retention::run_retention`).
    Retention,
    /// Move campaigns whose mail is all out to SENT (`campaigns::run_completion`).
    CampaignCompletion,
}

impl PeriodicTask {
    pub const ALL: [PeriodicTask; 4] = [
        PeriodicTask::SegmentRecompute,
        PeriodicTask::DomainRecheck,
        PeriodicTask::Retention,
        PeriodicTask::CampaignCompletion,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PeriodicTask::SegmentRecompute => "segment_recompute",
            PeriodicTask::DomainRecheck => "domain_recheck",
            PeriodicTask::Retention => "retention",
            PeriodicTask::CampaignCompletion => "campaign_completion",
        }
    }
}

/// The start of the period of length `period_ms` that holds `now`.
pub fn period_start(now: Millis, period_ms: Millis) -> Millis {
    now - now.rem_euclid(period_ms.max(1))
}

/// Runs `work` in every period of `period` this node claims, until shutdown; nothing before
/// `first_after` has passed since the call. `work` returns true when shutdown interrupted it.
pub async fn run_each_period<F, Fut>(
    engine: Engine,
    task: PeriodicTask,
    period: Duration,
    first_after: Duration,
    mut shutdown: watch::Receiver<bool>,
    mut work: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let period_ms = Millis::try_from(period.as_millis())
        .unwrap_or(Millis::MAX / 4)
        .max(1);
    let poll = period.min(MAX_POLL).max(Duration::from_millis(1));
    let mut tried = period_start(engine.now(), period_ms);
    if crate::sleep_or_shutdown(&mut shutdown, first_after).await {
        return;
    }
    loop {
        if crate::sleep_or_shutdown(&mut shutdown, poll).await {
            return;
        }
        let now = engine.now();
        let start = period_start(now, period_ms);
        // Each period once, forward; a clock set back by more than a period starts afresh
        // (as the claims in the store do).
        if start <= tried && tried - start <= period_ms {
            continue;
        }
        tried = start;
        let node = &engine.settings.node_name;
        let period = Period {
            start,
            length: period_ms,
        };
        match engine
            .store
            .claim_period(task.as_str(), period, node, now)
            .await
        {
            Ok(true) => {
                crate::metrics::periodic_run(task.as_str(), node);
                if work().await {
                    return;
                }
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(task = task.as_str(), error = %e, "claiming a periodic task failed")
            }
        }
    }
}

/// This machine's name and the process id: a node name unique on one host and across hosts.
pub fn default_node_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "herald".to_owned());
    format!("{host}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_aligned_to_the_epoch() {
        assert_eq!(period_start(1_234, 500), 1_000);
        assert_eq!(period_start(1_500, 500), 1_500);
        assert_eq!(period_start(-1, 500), -500);
        assert_eq!(period_start(7, 0), 7);
    }

    #[test]
    fn the_default_node_name_ends_with_the_process_id() {
        let name = default_node_name();
        assert!(
            name.ends_with(&format!("-{}", std::process::id())),
            "{name}"
        );
    }
}
