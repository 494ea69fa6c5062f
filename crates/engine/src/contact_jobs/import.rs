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

use std::collections::HashMap;

use herald_core::contact_import::{ImportRow, read_header, rows};
use herald_core::contact_jobs::{JobState, progress};
use herald_store::StoreResult;
use herald_store::contact_jobs::{JobWork, checkpoint};
use herald_store::contacts_batch::{BatchRow, upsert_batch};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Held;
use crate::Engine;

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
    let Some(work) = engine.store.contact_job_work(held.contact_job).await? else {
        return ack_only(engine, held).await;
    };
    let Some(bytes) = work.input.as_deref().filter(|_| is_open(&work)) else {
        return ack_only(engine, held).await;
    };
    let header = match read_header(bytes) {
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
    let resume = u64::try_from(work.resume_offset).unwrap_or(0);
    let batch_rows = engine.settings.import_batch_rows.max(1);
    let total = bytes.len() as u64;
    // Email to the line of its first occurrence, rows before the resume point included.
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut batch: Vec<ImportRow> = Vec::with_capacity(batch_rows);
    for row in rows(bytes, &header) {
        if row.offset < resume {
            if let Ok(r) = row.outcome {
                seen.entry(r.email.into_string()).or_insert(row.line);
            }
            continue;
        }
        match row.outcome {
            Err(e) => result.skip(row.line, e),
            Ok(r) => match seen.get(r.email.as_str()) {
                Some(first) => {
                    let msg = format!(
                        "duplicate email {} (first on line {first})",
                        r.email.as_str()
                    );
                    result.skip(row.line, msg);
                }
                None => {
                    seen.insert(r.email.as_str().to_owned(), row.line);
                    batch.push(r);
                }
            },
        }
        if batch.len() >= batch_rows {
            let Some(mut tx) = held.begin(engine).await? else {
                return Ok(());
            };
            commit_rows(engine, &mut tx, &work, &batch, &mut result).await?;
            let next = i64::try_from(row.offset + 1).unwrap_or(i64::MAX);
            let line = i64::try_from(row.line).unwrap_or(i64::MAX);
            let value = serde_json::to_value(&result).unwrap_or_default();
            let pct = progress(row.offset + 1, total).min(99);
            checkpoint(
                &mut tx,
                held.contact_job,
                next,
                line,
                pct,
                &value,
                engine.now(),
            )
            .await?;
            tx.commit().await?;
            batch.clear();
        }
    }
    let Some(mut tx) = held.begin(engine).await? else {
        return Ok(());
    };
    commit_rows(engine, &mut tx, &work, &batch, &mut result).await?;
    let value = serde_json::to_value(&result).unwrap_or_default();
    held.finish(engine, tx, JobState::Completed, &value, None)
        .await
}

/// Upserts one batch inside `tx` and counts it.
async fn commit_rows(
    engine: &Engine,
    tx: &mut herald_store::Tx,
    work: &JobWork,
    batch: &[ImportRow],
    result: &mut ImportResult,
) -> StoreResult<()> {
    let rows: Vec<BatchRow> = batch
        .iter()
        .map(|r| BatchRow {
            email: r.email.as_str(),
            subscribed: r.subscribed,
            patch: &r.patch,
        })
        .collect();
    let out = upsert_batch(tx, work.project_id, &rows, true, engine.now()).await?;
    result.created += out.created;
    result.updated += out.updated;
    Ok(())
}

/// Whether the job still has work (not completed or failed already).
pub(crate) fn is_open(work: &JobWork) -> bool {
    matches!(work.state.as_str(), "waiting" | "active")
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
