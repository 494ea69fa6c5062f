//! Contact jobs (CSV imports, bulk operations): the row a client polls by `jobId`, beside the
//! queue job (`jobs`) that runs it.
//!
//! Invariants:
//! - A contact job and its queue job are created in one transaction (outbox): a `jobId` the
//!   API answers always has work queued for it.
//! - Every read and write names the project: another project's job is not found.
//! - The checkpoint (`resume_offset`, `resume_line`, `result`, `progress`) is written by
//!   [`checkpoint`] in the transaction of the batch it records, after the fenced check that
//!   the worker still holds the queue job ([`crate::jobs::hold`]); a resumed job skips what a
//!   committed batch did, so no row is imported twice and the counts stay exact.

use herald_core::contact_jobs::{JobOperation, JobState};
use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use serde_json::{Value, json};
use sqlx::FromRow;
use sqlx::types::Json;

use crate::{Store, StoreResult, Tx};

/// What a poll shows.
#[derive(Clone, Debug)]
pub struct ContactJob {
    pub id: Uuid,
    pub operation: JobOperation,
    pub state: JobState,
    pub progress: i32,
    pub result: Value,
    pub failed_reason: Option<String>,
}

#[derive(FromRow)]
struct JobRow {
    id: Uuid,
    #[sqlx(try_from = "String")]
    operation: JobOperation,
    #[sqlx(try_from = "String")]
    state: JobState,
    progress: i32,
    result: Json<Value>,
    failed_reason: Option<String>,
}

impl From<JobRow> for ContactJob {
    fn from(r: JobRow) -> Self {
        ContactJob {
            id: r.id,
            operation: r.operation,
            state: r.state,
            progress: r.progress,
            result: r.result.0,
            failed_reason: r.failed_reason,
        }
    }
}

/// What a worker needs to run (or resume) a job.
#[derive(Clone, Debug, FromRow)]
pub struct JobWork {
    pub project_id: Uuid,
    #[sqlx(try_from = "String")]
    pub operation: JobOperation,
    #[sqlx(try_from = "String")]
    pub state: JobState,
    pub input: Option<Vec<u8>>,
    pub resume_offset: i64,
    pub resume_line: i64,
    pub result: Json<Value>,
}

/// Creates a job with its input and queues it, in one transaction; returns its id.
pub async fn create(
    tx: &mut Tx,
    project_id: Uuid,
    operation: JobOperation,
    input: &[u8],
    now: Millis,
    max_attempts: i32,
) -> StoreResult<Uuid> {
    let id = new_id();
    let kind = if operation == JobOperation::Import {
        "import"
    } else {
        "bulk"
    };
    db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO contact_jobs (id, project_id, kind, operation, state, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, 'waiting', $5, $5)",
        )
        .bind(id)
        .bind(project_id)
        .bind(kind)
        .bind(operation.as_str())
        .bind(now)
        .execute(&mut *conn)
        .await?;
        sqlx::query("INSERT INTO contact_job_inputs (id, input) VALUES ($1, $2)")
            .bind(id)
            .bind(input)
            .execute(&mut *conn)
            .await?;
    });
    crate::jobs::enqueue(
        tx,
        Some(project_id),
        operation.queue_kind(),
        &json!({ "jobId": id }),
        now,
        max_attempts,
    )
    .await?;
    Ok(id)
}

/// Records a batch's checkpoint inside its transaction.
pub async fn checkpoint(
    tx: &mut Tx,
    id: Uuid,
    resume_offset: i64,
    resume_line: i64,
    progress: i32,
    result: &Value,
    now: Millis,
) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE contact_jobs SET state = 'active', resume_offset = $2, resume_line = $3, \
             progress = $4, result = $5, updated_at = $6 WHERE id = $1",
        )
        .bind(id)
        .bind(resume_offset)
        .bind(resume_line)
        .bind(progress)
        .bind(Json(result))
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

/// Ends a job (completed with its result, or failed with a reason) and drops its input.
pub async fn finish(
    tx: &mut Tx,
    id: Uuid,
    state: JobState,
    result: &Value,
    failed_reason: Option<&str>,
    now: Millis,
) -> StoreResult<()> {
    let progress = if state == JobState::Completed { 100 } else { 0 };
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE contact_jobs SET state = $2, progress = CASE WHEN $3 = 100 THEN 100 ELSE progress END, \
             result = $4, failed_reason = $5, updated_at = $6 WHERE id = $1",
        )
        .bind(id)
        .bind(state.as_str())
        .bind(progress)
        .bind(Json(result))
        .bind(failed_reason)
        .bind(now)
        .execute(&mut *conn)
        .await?;
        sqlx::query("DELETE FROM contact_job_inputs WHERE id = $1")
            .bind(id)
            .execute(&mut *conn)
            .await?;
    });
    Ok(())
}

impl Store {
    /// A job of the project, or `None` (also for another project's job).
    pub async fn contact_job(
        &self,
        project_id: Uuid,
        id: Uuid,
        bulk: bool,
    ) -> StoreResult<Option<ContactJob>> {
        let kind = if bulk { "bulk" } else { "import" };
        let row: Option<JobRow> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT id, operation, state, progress, result, failed_reason FROM contact_jobs \
                 WHERE project_id = $1 AND id = $2 AND kind = $3",
            )
            .bind(project_id)
            .bind(id)
            .bind(kind)
            .fetch_optional(pool)
            .await?
        });
        Ok(row.map(ContactJob::from))
    }

    /// The input and checkpoint of a job (the worker's read; the queue payload names the id).
    pub async fn contact_job_work(&self, id: Uuid) -> StoreResult<Option<JobWork>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT j.project_id, j.operation, j.state, i.input, j.resume_offset, j.resume_line, \
                 j.result FROM contact_jobs j LEFT JOIN contact_job_inputs i ON i.id = j.id \
                 WHERE j.id = $1",
            )
            .bind(id)
            .fetch_optional(pool)
            .await?
        }))
    }

    /// Marks a job active once a worker took it (a poll then says `active`).
    pub async fn mark_contact_job_active(&self, id: Uuid, now: Millis) -> StoreResult<()> {
        db_write!(self, |pool| {
            sqlx::query(
                "UPDATE contact_jobs SET state = 'active', updated_at = $2 WHERE id = $1 AND state = 'waiting'",
            )
            .bind(id)
            .bind(now)
            .execute(pool)
            .await?;
        });
        Ok(())
    }
}
