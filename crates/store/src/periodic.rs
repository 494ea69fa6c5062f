//! Periodic work claimed once per cluster per period (docs/deploy.md "Periodic work").
//!
//! A period is a slice of time `[period_start, period_start + length)` on the shared clock
//! (the database's on PostgreSQL). Claiming a task's period is a compare-and-set on the task's
//! row in `periodic_tasks`: it moves forward only to a later period, so of every node that
//! tries the same period exactly one gets it, whatever the order and however many try. The
//! one way back: a row more than a period ahead of the claimer's period is taken as the trace
//! of a clock set back (the database's, or a test's), and the period claimed replaces it, or
//! the task would wait until the clock caught up. The row keeps who ran the task last, for
//! `/metrics`.
//!
//! SQLite is one node (the data directory's lock): the same claims are kept in this process's
//! memory, so the single writer is not taken twice a second for nothing.

use std::collections::HashMap;
use std::sync::Mutex;

use herald_core::time::Millis;

use crate::engine::Db;
use crate::{Store, StoreResult};

/// The last claim of one periodic task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeriodicRun {
    pub task: String,
    /// The node that claimed it (`HERALD_NODE_NAME`).
    pub node: String,
    pub period_start: Millis,
    pub claimed_at: Millis,
    /// Periods claimed since the table was made (every node together).
    pub claims: i64,
}

/// SQLite's claims, in memory (see the module's note).
#[derive(Debug, Default)]
pub(crate) struct LocalClaims(Mutex<HashMap<String, PeriodicRun>>);

impl LocalClaims {
    fn claim(&self, task: &str, period: Period, node: &str, now: Millis) -> bool {
        let Period {
            start: period_start,
            length,
        } = period;
        let mut runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match runs.get_mut(task) {
            Some(run)
                if run.period_start >= period_start
                    && run.period_start <= period_start.saturating_add(length) =>
            {
                false
            }
            Some(run) => {
                run.node = node.to_owned();
                run.period_start = period_start;
                run.claimed_at = now;
                run.claims += 1;
                true
            }
            None => {
                let run = PeriodicRun {
                    task: task.to_owned(),
                    node: node.to_owned(),
                    period_start,
                    claimed_at: now,
                    claims: 1,
                };
                runs.insert(task.to_owned(), run);
                true
            }
        }
    }

    fn runs(&self) -> Vec<PeriodicRun> {
        let runs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<PeriodicRun> = runs.values().cloned().collect();
        out.sort_by(|a, b| a.task.cmp(&b.task));
        out
    }
}

/// One period of a task: its start and its length, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    pub start: Millis,
    pub length: Millis,
}

impl Store {
    /// Claims `task`'s `period` for `node`; true for the one caller that got it, false when
    /// this period (or a later one, up to a period later) was claimed already.
    pub async fn claim_period(
        &self,
        task: &str,
        period: Period,
        node: &str,
        now: Millis,
    ) -> StoreResult<bool> {
        let pool = match &self.db {
            Db::Sqlite { .. } => {
                return Ok(self.periodic.claim(task, period, node, now));
            }
            Db::Postgres(pool) => pool,
        };
        // Two nodes racing for one period: the second waits for the first's row lock, then
        // finds the period no longer earlier than its own and changes nothing.
        let done = sqlx::query(
            "INSERT INTO periodic_tasks (task, period_start, node, claimed_at, claims) \
             VALUES ($1, $2, $3, $4, 1) \
             ON CONFLICT (task) DO UPDATE SET period_start = excluded.period_start, \
             node = excluded.node, claimed_at = excluded.claimed_at, \
             claims = periodic_tasks.claims + 1 \
             WHERE periodic_tasks.period_start < excluded.period_start \
             OR periodic_tasks.period_start > excluded.period_start + $5",
        )
        .bind(task)
        .bind(period.start)
        .bind(node)
        .bind(now)
        .bind(period.length)
        .execute(pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The last claim of every periodic task, by task name.
    pub async fn periodic_runs(&self) -> StoreResult<Vec<PeriodicRun>> {
        let pool = match &self.db {
            Db::Sqlite { .. } => return Ok(self.periodic.runs()),
            Db::Postgres(pool) => pool,
        };
        let rows: Vec<(String, String, i64, i64, i64)> = sqlx::query_as(
            "SELECT task, node, period_start, claimed_at, claims FROM periodic_tasks \
             ORDER BY task",
        )
        .fetch_all(pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(task, node, period_start, claimed_at, claims)| PeriodicRun {
                    task,
                    node,
                    period_start,
                    claimed_at,
                    claims,
                },
            )
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::{LocalClaims, Period};

    fn p(start: i64) -> Period {
        Period { start, length: 600 }
    }

    #[test]
    fn a_period_is_claimed_once_and_only_forward() {
        let c = LocalClaims::default();
        assert!(c.claim("retention", p(600), "a", 601));
        assert!(!c.claim("retention", p(600), "a", 602));
        assert!(!c.claim("retention", p(0), "a", 603));
        assert!(c.claim("retention", p(1200), "b", 1201));
        assert!(c.claim("segments", p(0), "a", 1));
        let runs = c.runs();
        assert_eq!(runs.len(), 2);
        assert_eq!((runs[0].node.as_str(), runs[0].claims), ("b", 2));
    }

    #[test]
    fn a_clock_set_back_by_more_than_a_period_claims_again() {
        let c = LocalClaims::default();
        assert!(c.claim("retention", p(6000), "a", 6001));
        assert!(!c.claim("retention", p(5400), "a", 5401));
        assert!(c.claim("retention", p(1200), "a", 1201));
        assert!(!c.claim("retention", p(1200), "b", 1202));
    }
}
