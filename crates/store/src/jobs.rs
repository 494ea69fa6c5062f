//! The durable job queue.
//!
//! Guarantees: a job enqueued in a transaction exists exactly when that transaction commits
//! (outbox). A claim leases jobs for `lease_ms`; a job whose lease expires (its worker died)
//! is claimed again, so work is at-least-once and handlers must be idempotent. On PostgreSQL
//! claims use `FOR UPDATE SKIP LOCKED`, so many workers on many nodes never take the same job;
//! on SQLite the single writer serialises claims. Retries are rescheduled by the caller
//! (backoff policy lives with the work); failed jobs stay as dead letters with their error.

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::FromRow;
use sqlx::types::Json;

use crate::engine::sql;
use crate::{Store, StoreResult, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Job {
    pub id: Uuid,
    pub project_id: Option<Uuid>,
    pub kind: String,
    pub payload: Json<Value>,
    /// Including the current one.
    pub attempts: i32,
    pub max_attempts: i32,
}

/// Enqueues a job inside the transaction of the change that causes it.
pub async fn enqueue(
    tx: &mut Tx,
    project_id: Option<Uuid>,
    kind: &str,
    payload: &Value,
    run_at: Millis,
    max_attempts: i32,
) -> StoreResult<Uuid> {
    let id = new_id();
    db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO jobs (id, project_id, kind, payload, state, run_at, max_attempts, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, 'waiting', $5, $6, $5, $5)",
        )
        .bind(id)
        .bind(project_id)
        .bind(kind)
        .bind(Json(payload))
        .bind(run_at)
        .bind(max_attempts)
        .execute(&mut *conn)
        .await?;
    });
    Ok(id)
}

/// Completes (deletes) a job inside a transaction, so the job's effect and its ack commit together.
pub async fn complete(tx: &mut Tx, id: Uuid) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query("DELETE FROM jobs WHERE id = $1")
            .bind(id)
            .execute(&mut *conn)
            .await?;
    });
    Ok(())
}

/// Reschedules a job for another attempt.
pub async fn retry(
    tx: &mut Tx,
    id: Uuid,
    run_at: Millis,
    error: &str,
    now: Millis,
) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE jobs SET state = 'waiting', run_at = $2, lease_until = NULL, last_error = $3, updated_at = $4 \
             WHERE id = $1",
        )
        .bind(id)
        .bind(run_at)
        .bind(error)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

/// Marks a job dead; it stays for inspection.
pub async fn fail(tx: &mut Tx, id: Uuid, error: &str, now: Millis) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE jobs SET state = 'failed', lease_until = NULL, last_error = $2, updated_at = $3 WHERE id = $1",
        )
        .bind(id)
        .bind(error)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

impl Store {
    /// Leases up to `limit` due jobs of `kind`: first jobs whose lease expired (their worker
    /// died), then waiting jobs in run order. Each part is a range scan of the
    /// `(kind, state, run_at)` index, so a long queue costs nothing extra per claim.
    pub async fn claim_jobs(
        &self,
        kind: &str,
        limit: u32,
        now: Millis,
        lease_ms: i64,
    ) -> StoreResult<Vec<Job>> {
        let expired = sql(
            self.dialect(),
            "UPDATE jobs SET lease_until = $3, attempts = attempts + 1, updated_at = $2 \
             WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND state = 'active' AND lease_until < $2 \
                 LIMIT $4) \
             RETURNING id, project_id, kind, payload, attempts, max_attempts",
            "UPDATE jobs SET lease_until = $3, attempts = attempts + 1, updated_at = $2 \
             WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND state = 'active' AND lease_until < $2 \
                 LIMIT $4 FOR UPDATE SKIP LOCKED) \
             RETURNING id, project_id, kind, payload, attempts, max_attempts",
        );
        let waiting = sql(
            self.dialect(),
            "UPDATE jobs SET state = 'active', lease_until = $3, attempts = attempts + 1, updated_at = $2 \
             WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND state = 'waiting' AND run_at <= $2 \
                 ORDER BY run_at LIMIT $4) \
             RETURNING id, project_id, kind, payload, attempts, max_attempts",
            "UPDATE jobs SET state = 'active', lease_until = $3, attempts = attempts + 1, updated_at = $2 \
             WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND state = 'waiting' AND run_at <= $2 \
                 ORDER BY run_at LIMIT $4 FOR UPDATE SKIP LOCKED) \
             RETURNING id, project_id, kind, payload, attempts, max_attempts",
        );
        let mut jobs: Vec<Job> = Vec::new();
        for q in [expired, waiting] {
            let room = i64::from(limit) - jobs.len() as i64;
            if room <= 0 {
                break;
            }
            let claimed: Vec<Job> = db_write!(self, |pool| {
                sqlx::query_as(q)
                    .bind(kind)
                    .bind(now)
                    .bind(now + lease_ms)
                    .bind(room)
                    .fetch_all(pool)
                    .await?
            });
            jobs.extend(claimed);
        }
        Ok(jobs)
    }

    /// When the next job of `kind` is due (a waiting job's run time or an active job's lease
    /// expiry), if any: lets idle workers sleep exactly. Two index lookups, whatever the backlog.
    pub async fn next_job_due(&self, kind: &str) -> StoreResult<Option<Millis>> {
        let (waiting,): (Option<i64>,) = db_read!(self, |pool| {
            sqlx::query_as("SELECT min(run_at) FROM jobs WHERE kind = $1 AND state = 'waiting'")
                .bind(kind)
                .fetch_one(pool)
                .await?
        });
        let (leased,): (Option<i64>,) = db_read!(self, |pool| {
            sqlx::query_as("SELECT min(lease_until) FROM jobs WHERE kind = $1 AND state = 'active'")
                .bind(kind)
                .fetch_one(pool)
                .await?
        });
        Ok(waiting.into_iter().chain(leased).min())
    }
}

impl Store {
    /// Extends the lease of a job being worked on.
    pub async fn extend_lease(&self, id: Uuid, until: Millis) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query("UPDATE jobs SET lease_until = $2 WHERE id = $1 AND state = 'active'")
                .bind(id)
                .bind(until)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}

/// Completes (deletes) many jobs in one statement, inside the transaction of their effects.
pub async fn complete_many(tx: &mut Tx, ids: &[Uuid]) -> StoreResult<()> {
    for chunk in ids.chunks(500) {
        let list: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
        let q = format!("DELETE FROM jobs WHERE id IN ({})", list.join(", "));
        db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(q.as_str()));
            for id in chunk {
                query = query.bind(*id);
            }
            query.execute(&mut *conn).await?;
        });
    }
    Ok(())
}

/// Enqueues many jobs of one kind in multi-row statements (the group commit of acceptance):
/// `(project, payload)` each, all due at `run_at`.
pub async fn enqueue_many(
    tx: &mut Tx,
    kind: &str,
    jobs: &[(Option<Uuid>, Value)],
    run_at: Millis,
    max_attempts: i32,
) -> StoreResult<Vec<Uuid>> {
    let ids: Vec<Uuid> = jobs.iter().map(|_| new_id()).collect();
    for (chunk, chunk_ids) in jobs.chunks(200).zip(ids.chunks(200)) {
        // ($4, $5, $6), ...: id, project, payload per row; kind, run_at, max_attempts shared.
        let rows: Vec<String> = (0..chunk.len())
            .map(|i| {
                let b = 4 + 3 * i;
                format!(
                    "(${b}, ${}, $1, ${}, 'waiting', $2, $3, $2, $2)",
                    b + 1,
                    b + 2
                )
            })
            .collect();
        let q = format!(
            "INSERT INTO jobs (id, project_id, kind, payload, state, run_at, max_attempts, created_at, updated_at) \
             VALUES {}",
            rows.join(", ")
        );
        db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(q.as_str()))
                .bind(kind)
                .bind(run_at)
                .bind(max_attempts);
            for ((project_id, payload), id) in chunk.iter().zip(chunk_ids) {
                query = query.bind(*id).bind(*project_id).bind(Json(payload));
            }
            query.execute(&mut *conn).await?;
        });
    }
    Ok(ids)
}
