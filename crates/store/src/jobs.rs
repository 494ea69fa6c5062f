//! The durable job queue.
//!
//! Guarantees: a job enqueued in a transaction exists exactly when that transaction commits
//! (outbox). A claim leases jobs for `lease_ms` under a fresh owner token; a job whose lease
//! expires (its worker died or stalled) is claimed again under a new token, counting an
//! attempt, so work is at-least-once and handlers must be idempotent. Leases are fenced:
//! extending, completing, retrying and failing a job only apply while the caller's token is
//! still the job's, so a worker whose lease was taken over changes nothing (the functions
//! answer false / leave the job out). On PostgreSQL claims use `FOR UPDATE SKIP LOCKED`, so
//! many workers on many nodes never take the same job; on SQLite the single writer serialises
//! claims. Retries are rescheduled by the caller (backoff policy lives with the work); failed
//! jobs stay as dead letters with their error.

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::Value;
use sqlx::FromRow;
use sqlx::types::Json;

use crate::engine::{Dialect, column, sql};
use crate::{Store, StoreResult, Tx};

/// How a renewal of leases treats a job row locked by a transaction in progress
/// (PostgreSQL; SQLite's single writer never leaves one locked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockedRows {
    /// Wait for the transaction, then renew or not. For a job whose own batch transactions
    /// lock its row ([`hold`]): the renewal must land once the batch commits.
    Wait,
    /// Skip the row and renew the others now. For the send worker: its recorder deletes a
    /// group's jobs in a transaction that may take a while on a loaded machine, and waiting
    /// for it let every other held lease run out meanwhile; another node then sent again
    /// hundreds of messages handed over and not yet recorded.
    Skip,
}

/// What a renewal of held leases found ([`Store::extend_leases`]). A job in neither list was
/// busy (its row locked by a transaction in progress): its lease is as before.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LeaseRenewal {
    /// Extended to the new end.
    pub extended: Vec<Uuid>,
    /// Taken over or gone.
    pub lost: Vec<Uuid>,
}

#[derive(Clone, Debug, FromRow)]
pub struct Job {
    pub id: Uuid,
    pub project_id: Option<Uuid>,
    pub kind: String,
    pub payload: Json<Value>,
    /// Including the current one.
    pub attempts: i32,
    pub max_attempts: i32,
    /// The owner token of this claim: every later change of the job must present it.
    pub lease_token: Uuid,
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
    tx.jobs_queued = true;
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

/// Completes (deletes) a job inside a transaction, so the job's effect and its ack commit
/// together. False (and nothing changed) when `token` no longer holds the job's lease.
pub async fn complete(tx: &mut Tx, id: Uuid, token: Uuid) -> StoreResult<bool> {
    let n = db_tx!(tx, |conn| {
        sqlx::query("DELETE FROM jobs WHERE id = $1 AND lease_token = $2")
            .bind(id)
            .bind(token)
            .execute(&mut *conn)
            .await?
            .rows_affected()
    });
    Ok(n == 1)
}

/// Reschedules a job for another attempt; false (nothing changed) when the lease was lost.
pub async fn retry(
    tx: &mut Tx,
    id: Uuid,
    token: Uuid,
    run_at: Millis,
    error: &str,
    now: Millis,
) -> StoreResult<bool> {
    tx.jobs_queued = true;
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE jobs SET state = 'waiting', run_at = $3, lease_until = NULL, lease_token = NULL, \
             last_error = $4, updated_at = $5 WHERE id = $1 AND lease_token = $2",
        )
        .bind(id)
        .bind(token)
        .bind(run_at)
        .bind(error)
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(n == 1)
}

/// Puts a job back to wait until `run_at` without counting this claim as an attempt (a job
/// that found its work not yet due, e.g. a campaign scheduled later). False when the lease
/// was lost.
pub async fn postpone(
    tx: &mut Tx,
    id: Uuid,
    token: Uuid,
    run_at: Millis,
    now: Millis,
) -> StoreResult<bool> {
    tx.jobs_queued = true;
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE jobs SET state = 'waiting', run_at = $3, lease_until = NULL, lease_token = NULL, \
             attempts = attempts - 1, updated_at = $4 WHERE id = $1 AND lease_token = $2",
        )
        .bind(id)
        .bind(token)
        .bind(run_at)
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(n == 1)
}

impl Store {
    /// Lets go of claimed jobs that were never started (a node shutting down): each waits
    /// again, due at once and with its claim's attempt given back, so another node takes it
    /// now instead of after its lease. A job whose lease was lost meanwhile is left alone.
    pub async fn release_jobs(&self, held: &[(Uuid, Uuid)], now: Millis) -> StoreResult<usize> {
        if held.is_empty() {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        let mut released = 0;
        for (id, token) in held {
            if postpone(&mut tx, *id, *token, now, now).await? {
                released += 1;
            }
        }
        tx.commit().await?;
        Ok(released)
    }
}

/// Puts a job back to wait until `run_at` with a new payload and its attempts reset: the next
/// stage of a long-lived job (a workflow execution after a DELAY). False when the lease was
/// lost.
pub async fn reschedule(
    tx: &mut Tx,
    id: Uuid,
    token: Uuid,
    run_at: Millis,
    payload: &Value,
    now: Millis,
) -> StoreResult<bool> {
    tx.jobs_queued = true;
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE jobs SET state = 'waiting', run_at = $3, lease_until = NULL, lease_token = NULL, \
             attempts = 0, payload = $4, last_error = NULL, updated_at = $5 \
             WHERE id = $1 AND lease_token = $2",
        )
        .bind(id)
        .bind(token)
        .bind(run_at)
        .bind(Json(payload))
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(n == 1)
}

/// Marks a job dead (a dead letter kept for inspection); false when the lease was lost.
pub async fn fail(
    tx: &mut Tx,
    id: Uuid,
    token: Uuid,
    error: &str,
    now: Millis,
) -> StoreResult<bool> {
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE jobs SET state = 'failed', lease_until = NULL, lease_token = NULL, last_error = $3, \
             updated_at = $4 WHERE id = $1 AND lease_token = $2",
        )
        .bind(id)
        .bind(token)
        .bind(error)
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(n == 1)
}

impl Store {
    /// Leases up to `limit` due jobs of `kind` under a fresh owner token: first jobs whose
    /// lease expired (their worker died or stalled), then waiting jobs in run order. Every
    /// claim counts an attempt, a re-claim included. Each part is a range scan of the
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
            "UPDATE jobs SET lease_until = $3, lease_token = $5, attempts = attempts + 1, updated_at = $2 \
             WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND state = 'active' AND lease_until < $2 \
                 LIMIT $4) \
             RETURNING id, project_id, kind, payload, attempts, max_attempts, lease_token",
            "UPDATE jobs SET lease_until = $3, lease_token = $5, attempts = attempts + 1, updated_at = $2 \
             WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND state = 'active' AND lease_until < $2 \
                 LIMIT $4 FOR UPDATE SKIP LOCKED) \
             RETURNING id, project_id, kind, payload, attempts, max_attempts, lease_token",
        );
        let waiting = sql(
            self.dialect(),
            "UPDATE jobs SET state = 'active', lease_until = $3, lease_token = $5, attempts = attempts + 1, \
             updated_at = $2 \
             WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND state = 'waiting' AND run_at <= $2 \
                 ORDER BY run_at LIMIT $4) \
             RETURNING id, project_id, kind, payload, attempts, max_attempts, lease_token",
            "UPDATE jobs SET state = 'active', lease_until = $3, lease_token = $5, attempts = attempts + 1, \
             updated_at = $2 \
             WHERE id IN (SELECT id FROM jobs WHERE kind = $1 AND state = 'waiting' AND run_at <= $2 \
                 ORDER BY run_at LIMIT $4 FOR UPDATE SKIP LOCKED) \
             RETURNING id, project_id, kind, payload, attempts, max_attempts, lease_token",
        );
        let mut jobs: Vec<Job> = Vec::new();
        for q in [expired, waiting] {
            let room = i64::from(limit) - jobs.len() as i64;
            if room <= 0 {
                break;
            }
            // One token per claim statement: a job's (id, token) pair is unique per claim.
            let token = new_id();
            // A claim is background work: request writes go first (write_precedence.rs).
            self.yield_to_urgent().await;
            let claimed: Vec<Job> = db_write!(self, |pool| {
                sqlx::query_as(q)
                    .bind(kind)
                    .bind(now)
                    .bind(now + lease_ms)
                    .bind(room)
                    .bind(token)
                    .fetch_all(pool)
                    .await?
            });
            jobs.extend(claimed);
        }
        Ok(jobs)
    }

    /// When the next job of `kind` is due (a waiting job's run time or an active job's lease
    /// expiry), if any ([`Store::next_due_by_kind`] for one kind).
    pub async fn next_job_due(&self, kind: &str) -> StoreResult<Option<Millis>> {
        Ok(self.next_due_by_kind(&[kind]).await?.pop().flatten())
    }

    /// Extends the leases of jobs still held under their tokens to `until` (a statement or two
    /// per 100 jobs). A job whose lease was taken over (or that is gone) is in
    /// [`LeaseRenewal::lost`]: its worker must stop and change nothing.
    ///
    /// A row locked by a transaction in progress (PostgreSQL) is waited for, or with
    /// [`LockedRows::Skip`] skipped: it is then neither extended nor lost, unless a plain read
    /// (which waits for no lock) shows another token or no row.
    pub async fn extend_leases(
        &self,
        held: &[(Uuid, Uuid)],
        until: Millis,
        locked: LockedRows,
    ) -> StoreResult<LeaseRenewal> {
        // SQLite's one writer never leaves a row locked by another transaction.
        let skip = locked == LockedRows::Skip && self.dialect() == Dialect::Postgres;
        let mut renewal = LeaseRenewal::default();
        for chunk in held.chunks(100) {
            let held_here = format!("state = 'active' AND ({})", id_token_pairs(chunk.len(), 2));
            let q = if skip {
                format!(
                    "UPDATE jobs SET lease_until = $1 WHERE id IN \
                     (SELECT id FROM jobs WHERE {held_here} FOR UPDATE SKIP LOCKED) RETURNING id"
                )
            } else {
                format!("UPDATE jobs SET lease_until = $1 WHERE {held_here} RETURNING id")
            };
            let rows: Vec<(Uuid,)> = db_write!(self, |pool| {
                let mut query = sqlx::query_as(sqlx::AssertSqlSafe(q.as_str())).bind(until);
                for (id, token) in chunk {
                    query = query.bind(*id).bind(*token);
                }
                query.fetch_all(pool).await?
            });
            let extended: Vec<Uuid> = rows.into_iter().map(|(id,)| id).collect();
            let rest: Vec<(Uuid, Uuid)> = chunk
                .iter()
                .filter(|(id, _)| !extended.contains(id))
                .copied()
                .collect();
            // Waiting: a row not extended is no longer ours.
            let busy = if skip && !rest.is_empty() {
                self.still_held(&rest).await?
            } else {
                Vec::new()
            };
            renewal.lost.extend(
                rest.iter()
                    .map(|(id, _)| *id)
                    .filter(|id| !busy.contains(id)),
            );
            renewal.extended.extend(extended);
        }
        Ok(renewal)
    }

    /// The jobs among `held` whose row still carries the token, as last committed (a plain
    /// read, which waits for no lock).
    async fn still_held(&self, held: &[(Uuid, Uuid)]) -> StoreResult<Vec<Uuid>> {
        let q = format!(
            "SELECT id FROM jobs WHERE state = 'active' AND ({})",
            id_token_pairs(held.len(), 1)
        );
        let rows: Vec<(Uuid,)> = db_read!(self, |pool| {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(q.as_str()));
            for (id, token) in held {
                query = query.bind(*id).bind(*token);
            }
            query.fetch_all(pool).await?
        });
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Whether `token` still holds the job's lease and the lease runs at least until `until`:
    /// checked right before a message is handed to the transport.
    pub async fn lease_held(&self, id: Uuid, token: Uuid, until: Millis) -> StoreResult<bool> {
        let (n,): (i64,) = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT count(*) FROM jobs WHERE id = $1 AND lease_token = $2 AND state = 'active' \
                 AND lease_until >= $3",
            )
            .bind(id)
            .bind(token)
            .bind(until)
            .fetch_one(pool)
            .await?
        });
        Ok(n == 1)
    }
}

impl Store {
    /// A job's state (`waiting`, `active`, `failed`) and attempts so far; `None` once acked.
    pub async fn job_state(&self, id: Uuid) -> StoreResult<Option<(String, i32)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as("SELECT state, attempts FROM jobs WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?
        }))
    }
}

/// `(id = $a AND lease_token = $b) OR ...` for `n` pairs numbered from `first`.
fn id_token_pairs(n: usize, first: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "(id = ${} AND lease_token = ${})",
                first + 2 * i,
                first + 2 * i + 1
            )
        })
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// Completes (deletes) the jobs whose `(id, token)` still hold their lease, inside the
/// transaction of their effects; returns the ids acked (the others were taken over).
pub async fn complete_many(tx: &mut Tx, held: &[(Uuid, Uuid)]) -> StoreResult<Vec<Uuid>> {
    if held.is_empty() {
        return Ok(Vec::new());
    }
    let rows: Vec<(Uuid,)> = db_tx_each!(
        tx,
        sqlite | conn | {
            let mut rows: Vec<(Uuid,)> = Vec::with_capacity(held.len());
            for chunk in held.chunks(100) {
                let q = format!(
                    "DELETE FROM jobs WHERE {} RETURNING id",
                    id_token_pairs(chunk.len(), 1)
                );
                let q = crate::engine::binds_for(Dialect::Sqlite, &q).into_owned();
                let mut query = sqlx::query_as::<_, (Uuid,)>(sqlx::AssertSqlSafe(q));
                for (id, token) in chunk {
                    query = query.bind(*id).bind(*token);
                }
                rows.extend(query.fetch_all(&mut *conn).await?);
            }
            rows
        },
        // The pairs as two arrays: one statement text whatever their number, kept prepared
        // (`contacts_batch::insert_chunk`).
        postgres | conn | {
            sqlx::query_as(
                "DELETE FROM jobs j USING UNNEST($1::uuid[], $2::uuid[]) AS h(id, token) \
                 WHERE j.id = h.id AND j.lease_token = h.token RETURNING j.id",
            )
            .bind(column(held, |(id, _)| *id))
            .bind(column(held, |(_, token)| *token))
            .fetch_all(&mut *conn)
            .await?
        },
    );
    Ok(rows.into_iter().map(|(id,)| id).collect())
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
    tx.jobs_queued = true;
    let ids: Vec<Uuid> = jobs.iter().map(|_| new_id()).collect();
    if jobs.is_empty() {
        return Ok(ids);
    }
    db_tx_each!(
        tx,
        sqlite
            | conn
            | {
                for (chunk, chunk_ids) in jobs.chunks(200).zip(ids.chunks(200)) {
                    // Every value bound per row, in text order, so SQLite binds them anonymously
                    // (`engine::binds_for`): id, project, kind, payload, run_at, max_attempts,
                    // created_at, updated_at.
                    let rows: Vec<String> = (0..chunk.len())
                        .map(|i| {
                            let b = 1 + 8 * i;
                            let p: Vec<String> = (b..b + 8).map(|n| format!("${n}")).collect();
                            format!(
                                "({}, {}, {}, {}, 'waiting', {}, {}, {}, {})",
                                p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]
                            )
                        })
                        .collect();
                    let q = format!(
                        "INSERT INTO jobs (id, project_id, kind, payload, state, run_at, max_attempts, created_at, updated_at) \
                     VALUES {}",
                        rows.join(", ")
                    );
                    let q = crate::engine::binds_for(crate::Dialect::Sqlite, &q).into_owned();
                    let mut query = sqlx::query(sqlx::AssertSqlSafe(q));
                    for ((project_id, payload), id) in chunk.iter().zip(chunk_ids) {
                        query = query
                            .bind(*id)
                            .bind(*project_id)
                            .bind(kind)
                            .bind(Json(payload))
                            .bind(run_at)
                            .bind(max_attempts)
                            .bind(run_at)
                            .bind(run_at);
                    }
                    query.execute(&mut *conn).await?;
                }
            },
        // One array per column through `UNNEST`: one statement text whatever the number of
        // jobs, so the connection keeps it prepared (`contacts_batch::insert_chunk`).
        postgres
            | conn
            | {
                sqlx::query(
                "INSERT INTO jobs (id, project_id, kind, payload, state, run_at, max_attempts, created_at, updated_at) \
                 SELECT id, project_id, $3, payload, 'waiting', $4, $5, $4, $4 \
                 FROM UNNEST($1::uuid[], $2::uuid[], $6::jsonb[]) AS r(id, project_id, payload)",
            )
            .bind(&ids)
            .bind(column(jobs, |(p, _)| *p))
            .bind(kind)
            .bind(run_at)
            .bind(max_attempts)
            .bind(column(jobs, |(_, payload)| Json(payload)))
            .execute(&mut *conn)
            .await?;
            },
    );
    Ok(ids)
}

/// The fenced first write of a batch transaction: true while `token` still holds the job's
/// lease (the row is then locked until the transaction ends on PostgreSQL). A caller that gets
/// false drops its transaction, so a worker whose lease was taken over changes nothing.
pub async fn hold(tx: &mut Tx, id: Uuid, token: Uuid, now: Millis) -> StoreResult<bool> {
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE jobs SET updated_at = $3 WHERE id = $1 AND lease_token = $2 AND state = 'active'",
        )
        .bind(id)
        .bind(token)
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    Ok(n == 1)
}
