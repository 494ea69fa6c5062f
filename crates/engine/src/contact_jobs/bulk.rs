//! Running a bulk operation (subscribe, unsubscribe, delete) over up to 1,000 contact ids, in
//! transactions of [`CHUNK`] ids with their checkpoint. Subscription changes go through the
//! one-contact PATCH rules (events, suppression lift); an id repeated in the request counts as
//! unchanged after its first occurrence; an id the project does not have (or that is not an
//! id) is a failure listed in `errors`. `successCount + unchangedCount + failureCount =
//! totalRequested`.

use std::collections::HashSet;

use herald_core::contact_jobs::{JobOperation, JobState, progress};
use herald_core::ids::Uuid;
use herald_store::StoreResult;
use herald_store::contact_jobs::checkpoint;
use herald_store::contacts_batch::{delete, set_subscribed};
use serde::{Deserialize, Serialize};

use super::Held;
use super::import::{ack_only, is_open};
use crate::Engine;

/// Ids per transaction (and progress step).
const CHUNK: usize = 100;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkResult {
    pub operation: String,
    pub total_requested: u64,
    pub success_count: u64,
    pub unchanged_count: u64,
    pub failure_count: u64,
    pub errors: Vec<BulkError>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkError {
    pub contact_id: String,
    pub error: String,
}

pub(crate) async fn run(engine: &Engine, held: &Held) -> StoreResult<()> {
    let Some(work) = engine.store.contact_job_work(held.contact_job).await? else {
        return ack_only(engine, held).await;
    };
    let Some(input) = work.input.as_deref().filter(|_| is_open(&work)) else {
        return ack_only(engine, held).await;
    };
    let op = work.operation;
    let ids: Vec<String> = serde_json::from_slice(input).unwrap_or_default();
    let mut result: BulkResult = serde_json::from_value(work.result.0.clone()).unwrap_or_default();
    result.operation = op.as_str().to_owned();
    result.total_requested = ids.len() as u64;
    let start = usize::try_from(work.resume_offset)
        .unwrap_or(0)
        .min(ids.len());
    let mut seen: HashSet<&str> = ids[..start].iter().map(String::as_str).collect();
    let mut at = start;
    loop {
        let end = (at + CHUNK).min(ids.len());
        let Some(mut tx) = held.begin(engine).await? else {
            return Ok(());
        };
        for raw in &ids[at..end] {
            if !seen.insert(raw.as_str()) {
                result.unchanged_count += 1;
                continue;
            }
            let now = engine.now();
            let changed = match raw.parse::<Uuid>() {
                Err(_) => None,
                Ok(id) => match op {
                    JobOperation::Subscribe => {
                        set_subscribed(&mut tx, work.project_id, id, true, now).await?
                    }
                    JobOperation::Unsubscribe => {
                        set_subscribed(&mut tx, work.project_id, id, false, now).await?
                    }
                    _ => delete(&mut tx, work.project_id, id, engine.now())
                        .await?
                        .then_some(true),
                },
            };
            match changed {
                Some(true) => result.success_count += 1,
                Some(false) => result.unchanged_count += 1,
                None => {
                    result.failure_count += 1;
                    result.errors.push(BulkError {
                        contact_id: raw.clone(),
                        error: "contact not found".into(),
                    });
                }
            }
        }
        at = end;
        let value = serde_json::to_value(&result).unwrap_or_default();
        if at >= ids.len() {
            return held
                .finish(engine, tx, JobState::Completed, &value, None)
                .await;
        }
        let pct = progress(at as u64, ids.len() as u64);
        let next = i64::try_from(at).unwrap_or(i64::MAX);
        checkpoint(
            &mut tx,
            held.contact_job,
            next,
            0,
            pct,
            &value,
            engine.now(),
        )
        .await?;
        tx.commit().await?;
    }
}
