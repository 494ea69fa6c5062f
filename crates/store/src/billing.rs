//! Billing caps and consumption (DECISIONS.md "Billing"; rules in `herald_core::billing`).
//!
//! Consumption is counted in the transaction that queues the messages ([`count`]), and the cap
//! is checked in that same transaction before anything is written ([`allows`]), so a refused
//! send writes nothing and an acknowledged one is counted. Concurrent transactions on
//! PostgreSQL may each pass the check with the last few messages under the cap (the counter
//! row is locked only by the write); the overshoot is bounded by one group commit.

use herald_core::billing::{Category, Limits, period};
use herald_core::ids::Uuid;
use herald_core::time::Millis;

use crate::{Store, StoreResult, Tx};

type LimitsRow = (Option<i64>, Option<i64>, Option<i64>, Option<i64>);

fn limits_of(row: Option<LimitsRow>) -> Limits {
    row.map_or_else(Limits::default, |(t, c, w, i)| Limits {
        transactional: t,
        campaigns: c,
        workflows: w,
        inbound: i,
    })
}

const SELECT_LIMITS: &str = "SELECT transactional, campaigns, workflows, inbound \
                             FROM billing_limits WHERE project_id = $1";

/// What the cap says to `adding` more messages of a category this month.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allowance {
    /// The project has no cap on the category (nothing more to check in this transaction).
    Uncapped,
    Within,
    Over,
}

/// Whether queuing `adding` more messages of `category` this month stays within the cap.
pub async fn allows(
    tx: &mut Tx,
    project_id: Uuid,
    category: Category,
    adding: i64,
    now: Millis,
) -> StoreResult<bool> {
    Ok(allowance(tx, project_id, category, adding, now).await? != Allowance::Over)
}

/// Whether the project has a monthly cap on `category` (one read, no lock): a batch asks it
/// before writing anything for requests that must not be refused by the cap afterwards.
pub async fn capped(tx: &mut Tx, project_id: Uuid, category: Category) -> StoreResult<bool> {
    Ok(limits_in(tx, project_id).await?.get(category).is_some())
}

/// The project's caps, read in `tx`.
async fn limits_in(tx: &mut Tx, project_id: Uuid) -> StoreResult<Limits> {
    let row: Option<LimitsRow> = db_tx!(tx, |conn| {
        sqlx::query_as(SELECT_LIMITS)
            .bind(project_id)
            .fetch_optional(&mut *conn)
            .await?
    });
    Ok(limits_of(row))
}

/// [`allows`], telling an uncapped category apart, so a batch checks it once per project.
pub async fn allowance(
    tx: &mut Tx,
    project_id: Uuid,
    category: Category,
    adding: i64,
    now: Millis,
) -> StoreResult<Allowance> {
    let limits = limits_in(tx, project_id).await?;
    if limits.get(category).is_none() {
        return Ok(Allowance::Uncapped);
    }
    let (key, ..) = period(now);
    // On PostgreSQL the month's first shard row is created if missing and locked until the
    // commit, so transactions writing at once (batches of one node, or other nodes) check the
    // cap one after another; the sum is read after the lock is held, in a statement of its
    // own (whose snapshot then holds what the transaction before counted). SQLite has one
    // writer.
    if tx.dialect() == crate::Dialect::Postgres {
        db_tx!(tx, |conn| {
            sqlx::query(
                "INSERT INTO billing_usage (project_id, period, category, shard, count) \
                 VALUES ($1, $2, $3, 0, 0) ON CONFLICT (project_id, period, category, shard) \
                 DO UPDATE SET count = billing_usage.count",
            )
            .bind(project_id)
            .bind(&key)
            .bind(category.as_str())
            .execute(&mut *conn)
            .await?;
        });
    }
    let (used,): (i64,) = db_tx!(tx, |conn| {
        sqlx::query_as(
            "SELECT CAST(COALESCE(sum(count), 0) AS BIGINT) FROM billing_usage \
             WHERE project_id = $1 AND period = $2 AND category = $3",
        )
        .bind(project_id)
        .bind(&key)
        .bind(category.as_str())
        .fetch_one(&mut *conn)
        .await?
    });
    Ok(if limits.allows(category, used, adding) {
        Allowance::Within
    } else {
        Allowance::Over
    })
}

/// Counts `n` queued messages of `category` in this month.
pub async fn count(
    tx: &mut Tx,
    project_id: Uuid,
    category: Category,
    n: i64,
    now: Millis,
) -> StoreResult<()> {
    if n == 0 {
        return Ok(());
    }
    let (key, ..) = period(now);
    // PostgreSQL: into the writing connection's shard (migration 0038), so concurrent
    // transactions of an uncapped project do not queue behind one row lock until each other's
    // commit. A capped project's transactions already queue on the first shard
    // ([`allowance`]).
    let q = match tx.dialect() {
        crate::Dialect::Sqlite => {
            "INSERT INTO billing_usage (project_id, period, category, count) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (project_id, period, category) \
             DO UPDATE SET count = billing_usage.count + $4"
        }
        crate::Dialect::Postgres => {
            "INSERT INTO billing_usage (project_id, period, category, shard, count) \
             VALUES ($1, $2, $3, pg_backend_pid() % 16, $4) \
             ON CONFLICT (project_id, period, category, shard) \
             DO UPDATE SET count = billing_usage.count + $4"
        }
    };
    db_tx!(tx, |conn| {
        sqlx::query(q)
            .bind(project_id)
            .bind(&key)
            .bind(category.as_str())
            .bind(n)
            .execute(&mut *conn)
            .await?;
    });
    Ok(())
}

/// This month's consumption per category.
#[derive(Clone, Debug, Default)]
pub struct Consumption {
    pub period_start: Millis,
    pub period_end: Millis,
    pub used: Vec<(Category, i64)>,
}

impl Store {
    pub async fn billing_limits(&self, project_id: Uuid) -> StoreResult<Limits> {
        let row: Option<LimitsRow> = db_read!(self, |pool| {
            sqlx::query_as(SELECT_LIMITS)
                .bind(project_id)
                .fetch_optional(pool)
                .await?
        });
        Ok(limits_of(row))
    }

    /// Stores the caps (the caller merged the change into the current ones).
    pub async fn set_billing_limits(
        &self,
        project_id: Uuid,
        limits: &Limits,
        now: Millis,
    ) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query(
                "INSERT INTO billing_limits (project_id, transactional, campaigns, workflows, inbound, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (project_id) DO UPDATE SET \
                 transactional = $2, campaigns = $3, workflows = $4, inbound = $5, updated_at = $6",
            )
            .bind(project_id)
            .bind(limits.transactional)
            .bind(limits.campaigns)
            .bind(limits.workflows)
            .bind(limits.inbound)
            .bind(now)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    pub async fn billing_consumption(
        &self,
        project_id: Uuid,
        now: Millis,
    ) -> StoreResult<Consumption> {
        let (key, period_start, period_end) = period(now);
        let rows: Vec<(String, i64)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT category, CAST(sum(count) AS BIGINT) FROM billing_usage \
                 WHERE project_id = $1 AND period = $2 GROUP BY category",
            )
            .bind(project_id)
            .bind(&key)
            .fetch_all(pool)
            .await?
        });
        let used = Category::ALL
            .into_iter()
            .map(|c| {
                let n = rows
                    .iter()
                    .find(|(k, _)| k == c.as_str())
                    .map_or(0, |(_, n)| *n);
                (c, n)
            })
            .collect();
        Ok(Consumption {
            period_start,
            period_end,
            used,
        })
    }
}
