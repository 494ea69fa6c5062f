//! Counts behind a project's bounce and complaint rates: messages handed to the relay (sent
//! and everything after it), and of those the bounced and the complained ones. Simulated
//! messages never count.

use std::sync::LazyLock;

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use sqlx::AssertSqlSafe;

use crate::messages::WENT_OUT;
use crate::{Store, StoreResult};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliveryCounts {
    pub sent: i64,
    pub bounced: i64,
    pub complained: i64,
}

/// Inside the transaction of a bounce or complaint: disables the project with `reason(counts)`
/// when that gives one (counts of messages created since `since`); true when it did. The
/// system project is never disabled.
pub async fn disable_if_critical(
    tx: &mut crate::Tx,
    project: Uuid,
    since: Millis,
    now: Millis,
    reason: impl FnOnce(DeliveryCounts) -> Option<String>,
) -> StoreResult<bool> {
    if project.is_nil() {
        return Ok(false);
    }
    let done = db_tx!(tx, |conn| {
        let (sent, bounced, complained): (i64, i64, i64) =
            sqlx::query_as(AssertSqlSafe(COUNTS.as_str()))
                .bind(project)
                .bind(since)
                .fetch_one(&mut *conn)
                .await?;
        let Some(why) = reason(DeliveryCounts {
            sent,
            bounced,
            complained,
        }) else {
            return Ok(false);
        };
        sqlx::query(
            "UPDATE projects SET disabled = $2, disabled_reason = $3, updated_at = $4 \
             WHERE id = $1 AND NOT disabled",
        )
        .bind(project)
        .bind(true)
        .bind(why)
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    // Requests by key see the disabled project as soon as this commits (`ttl_cache.rs`).
    tx.projects_changed |= done > 0;
    Ok(done > 0)
}

/// Messages that went out since `$2`, and how many of them bounced or complained.
static COUNTS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT COUNT(*), \
         COALESCE(SUM(CASE WHEN status = 'BOUNCED' THEN 1 ELSE 0 END), 0), \
         COALESCE(SUM(CASE WHEN status = 'COMPLAINED' THEN 1 ELSE 0 END), 0) \
         FROM messages WHERE project_id = $1 AND created_at >= $2 AND NOT simulated \
         AND {went_out}",
        went_out = *WENT_OUT
    )
});

impl Store {
    /// Re-enables a project (an OWNER decided); false when it was not disabled.
    pub async fn enable_project(&self, project: Uuid, now: Millis) -> StoreResult<bool> {
        let n = db_write!(self, |pool| {
            sqlx::query(
                "UPDATE projects SET disabled = $2, disabled_reason = NULL, updated_at = $3 \
                 WHERE id = $1 AND disabled",
            )
            .bind(project)
            .bind(false)
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected()
        });
        self.key_cache.clear();
        Ok(n > 0)
    }

    /// Counts of the project's messages created since `since` (0 for all time).
    pub async fn delivery_counts(
        &self,
        project: Uuid,
        since: Millis,
    ) -> StoreResult<DeliveryCounts> {
        self.delivery_counts_between(project, since, Millis::MAX)
            .await
    }

    /// Counts of the project's messages created in `[from, to)`: the figures the security
    /// check weighs, for any range (Analytics' Deliverability tab).
    pub async fn delivery_counts_between(
        &self,
        project: Uuid,
        from: Millis,
        to: Millis,
    ) -> StoreResult<DeliveryCounts> {
        let q = format!("{} AND created_at < $3", *COUNTS);
        let q = AssertSqlSafe(q.as_str());
        let (sent, bounced, complained): (i64, i64, i64) = db_read!(self, |pool| sqlx::query_as(q)
            .bind(project)
            .bind(from)
            .bind(to)
            .fetch_one(pool)
            .await?);
        Ok(DeliveryCounts {
            sent,
            bounced,
            complained,
        })
    }
}
