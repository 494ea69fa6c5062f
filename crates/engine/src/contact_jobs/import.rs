//! Running a CSV import: rows are parsed from the stored file in order and upserted in
//! batches of `import_batch_rows` (multi-row statements, one transaction per batch, each with
//! its checkpoint), so progress moves while it runs and a resumed import continues after the
//! last committed batch.
//!
//! Row rules (DECISIONS.md "Jobs"): an invalid row is skipped and reported with its line
//! while the others import; an email seen earlier in the file is skipped and reported as a
//! duplicate (the first occurrence wins); at most [`MAX_ERRORS`] errors are listed (all are
//! counted in `skipped`). A new contact without a `subscribed` value is subscribed, as with
//! `POST /contacts`.

use std::borrow::Cow;

use herald_core::contact_import::read_header;
use herald_core::contact_jobs::JobState;
use herald_store::contact_jobs::{JobWork, checkpoint};
use herald_store::contacts_batch::{BatchRow, upsert_batch};
use herald_store::{StoreError, StoreResult};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Held;
use super::import_rows::{self, ReadPlan, ReadyRow};
use crate::Engine;

/// A new contact whose row gives no `subscribed` is subscribed, as with `POST /contacts`.
const NEW_CONTACTS_SUBSCRIBED: bool = true;

/// Errors listed in a result at most.
pub const MAX_ERRORS: usize = 1000;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ImportResult {
    pub created: u64,
    pub updated: u64,
    pub skipped: u64,
    pub errors: Vec<RowError>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RowError {
    pub row: u64,
    pub error: String,
}

impl ImportResult {
    fn skip(&mut self, row: u64, error: String) {
        self.skipped += 1;
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(RowError { row, error });
        }
    }
}

/// Runs (or resumes) the import of `held`.
pub(crate) async fn run(engine: &Engine, held: &Held) -> StoreResult<()> {
    let Some(mut work) = engine.store.contact_job_work(held.contact_job).await? else {
        return ack_only(engine, held).await;
    };
    let Some(bytes) = work.input.take().filter(|_| is_open(&work)) else {
        return ack_only(engine, held).await;
    };
    // Checked at upload already; checking the stored file again is linear and capped at
    // IMPORT_MAX_COLUMNS names, and keeps a file stored by an older version honest.
    let header = match read_header(&bytes) {
        Ok(h) => h,
        Err(problem) => {
            let Some(tx) = held.begin(engine).await? else {
                return Ok(());
            };
            let result = json!({"created": 0, "updated": 0, "skipped": 0, "errors": []});
            let reason = problem.to_string();
            return held
                .finish(engine, tx, JobState::Failed, &result, Some(&reason))
                .await;
        }
    };
    let mut result: ImportResult =
        serde_json::from_value(work.result.0.clone()).unwrap_or_default();
    let mut batches = import_rows::spawn(ReadPlan {
        bytes,
        header,
        resume: u64::try_from(work.resume_offset).unwrap_or(0),
        batch_rows: engine.settings.import_batch_rows.max(1),
    });
    while let Some(batch) = batches.recv().await {
        for (line, error) in batch.skipped {
            result.skip(line, error);
        }
        let Some(mut tx) = held.begin(engine).await? else {
            return Ok(());
        };
        commit_rows(engine, &mut tx, &work, &batch.rows, &mut result).await?;
        // Freeing 2,000 rows' maps is not the writer's work.
        let rows = batch.rows;
        tokio::task::spawn_blocking(move || drop(rows));
        let value = serde_json::to_value(&result).unwrap_or_default();
        let Some(end) = batch.end else {
            return held
                .finish(engine, tx, JobState::Completed, &value, None)
                .await;
        };
        let next = i64::try_from(end.next).unwrap_or(i64::MAX);
        let line = i64::try_from(end.line).unwrap_or(i64::MAX);
        checkpoint(
            &mut tx,
            held.contact_job,
            next,
            line,
            end.progress,
            &value,
            engine.now(),
        )
        .await?;
        tx.commit().await?;
    }
    // The reader ended without its last batch: it panicked. The job is tried again.
    Err(StoreError::Other(anyhow::anyhow!(
        "the import's reader stopped before the end of the file"
    )))
}

/// Upserts one batch inside `tx` and counts it.
async fn commit_rows(
    engine: &Engine,
    tx: &mut herald_store::Tx,
    work: &JobWork,
    batch: &[ReadyRow],
    result: &mut ImportResult,
) -> StoreResult<()> {
    let rows: Vec<BatchRow> = batch
        .iter()
        .map(|r| {
            BatchRow::prepared(
                work.project_id,
                r.row.email.as_str(),
                r.row.subscribed,
                NEW_CONTACTS_SUBSCRIBED,
                &r.row.patch,
                r.id,
                Cow::Borrowed(&*r.data),
            )
        })
        .collect();
    let out = upsert_batch(tx, work.project_id, &rows, engine.now()).await?;
    result.created += out.created;
    result.updated += out.updated;
    Ok(())
}

/// Whether the job still has work (not completed or failed already).
pub(crate) fn is_open(work: &JobWork) -> bool {
    work.state.is_open()
}

/// Acks a queue job whose contact job is gone or already ended.
pub(crate) async fn ack_only(engine: &Engine, held: &Held) -> StoreResult<()> {
    if let Some(mut tx) = held.begin(engine).await?
        && herald_store::jobs::complete(&mut tx, held.job_id, held.token).await?
    {
        tx.commit().await?;
    }
    Ok(())
}
