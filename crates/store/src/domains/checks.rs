//! Recording DNS checks and claiming due domains for the periodic job.
//!
//! Invariants:
//! - A flip of `verified` and its `domain.verified` / `domain.unverified` activity entry are one
//!   transaction; a check that does not flip it writes no activity.
//! - A due domain is claimed by compare-and-set on `next_check_at`, so of several nodes
//!   claiming the same row exactly one wins.

use herald_core::ids::Uuid;
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::AssertSqlSafe;
use sqlx::types::Json;

use super::{COLUMNS, Domain, activity_data};
use crate::activity::{DOMAIN_UNVERIFIED, DOMAIN_VERIFIED, insert_activity};
use crate::engine::sql;
use crate::{Store, StoreError, StoreResult};

/// The outcome of one check, to record.
pub struct CheckRecord<'a> {
    pub verified: bool,
    pub last_check: Option<&'a Value>,
    pub last_error: Option<&'a str>,
    /// Why the state is what it is; recorded in the feed when `verified` changes.
    pub reason: &'a str,
    pub next_check_at: Millis,
    pub now: Millis,
}

/// A recorded check and whether it flipped `verified` (`Some(new state)`).
pub struct CheckOutcome {
    pub domain: Domain,
    pub changed: Option<bool>,
}

impl Store {
    /// Records a check; when `verified` flips, the activity entry joins the transaction.
    /// `Conflict` when verifying collides with a domain another project verified meanwhile.
    pub async fn record_domain_check(
        &self,
        id: Uuid,
        check: &CheckRecord<'_>,
    ) -> StoreResult<CheckOutcome> {
        let mut tx = self.begin().await?;
        let lock = sql(
            tx.dialect(),
            "SELECT project_id, domain, verified, verified_at FROM domains WHERE id = $1",
            "SELECT project_id, domain, verified, verified_at FROM domains WHERE id = $1 FOR UPDATE",
        );
        let prev: Option<(Uuid, String, bool, Option<Millis>)> =
            db_tx!(&mut tx, |conn| sqlx::query_as(lock)
                .bind(id)
                .fetch_optional(&mut *conn)
                .await?);
        let (project_id, domain, was_verified, prev_verified_at) =
            prev.ok_or(StoreError::NotFound)?;
        let verified_at = match (check.verified, was_verified) {
            (true, true) => prev_verified_at.or(Some(check.now)),
            (true, false) => Some(check.now),
            (false, _) => None,
        };
        let q = format!(
            "UPDATE domains SET verified = $2, verified_at = $3, last_checked_at = $4, last_check = $5, \
             last_error = $6, next_check_at = $7, updated_at = $4 WHERE id = $1 RETURNING {COLUMNS}"
        );
        let updated: Domain = db_tx!(&mut tx, |conn| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(id)
                .bind(check.verified)
                .bind(verified_at)
                .bind(check.now)
                .bind(check.last_check.map(Json))
                .bind(check.last_error)
                .bind(check.next_check_at)
                .fetch_one(&mut *conn)
                .await?
        });
        let changed = (was_verified != check.verified).then_some(check.verified);
        if let Some(now_verified) = changed {
            let kind = if now_verified {
                DOMAIN_VERIFIED
            } else {
                DOMAIN_UNVERIFIED
            };
            let data = activity_data(id, &domain, check.reason);
            insert_activity(&mut tx, project_id, kind, &data, check.now).await?;
        }
        tx.commit().await?;
        if changed.is_some() {
            self.verified_domains.clear();
        }
        Ok(CheckOutcome {
            domain: updated,
            changed,
        })
    }

    /// True when another row of `domain` (another project's) is verified.
    pub async fn domain_verified_elsewhere(&self, domain: &str, except: Uuid) -> StoreResult<bool> {
        let row: Option<(Uuid,)> = db_read!(self, |pool| {
            sqlx::query_as("SELECT id FROM domains WHERE domain = $1 AND verified AND id <> $2")
                .bind(domain)
                .bind(except)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.is_some())
    }

    /// Claims up to `limit` domains due at `now` by moving their `next_check_at` to `next`
    /// (compare-and-set on the old value, so a row is claimed by one node only).
    pub async fn claim_due_domains(
        &self,
        now: Millis,
        next: Millis,
        limit: u32,
    ) -> StoreResult<Vec<Domain>> {
        let due: Vec<(Uuid, Millis)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT id, next_check_at FROM domains WHERE next_check_at <= $1 ORDER BY next_check_at LIMIT $2",
            )
            .bind(now)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        });
        let q = format!(
            "UPDATE domains SET next_check_at = $3 WHERE id = $1 AND next_check_at = $2 RETURNING {COLUMNS}"
        );
        let mut claimed = Vec::with_capacity(due.len());
        for (id, seen) in due {
            let row: Option<Domain> = db_write!(self, |pool| {
                sqlx::query_as(AssertSqlSafe(q.as_str()))
                    .bind(id)
                    .bind(seen)
                    .bind(next)
                    .fetch_optional(pool)
                    .await?
            });
            claimed.extend(row);
        }
        Ok(claimed)
    }
}
