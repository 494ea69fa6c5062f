//! The workflow executor (docs/workflows.md "Executor"): two kinds of jobs, claimed in batches
//! by one worker per node.
//!
//! - `event.dispatch` ([`dispatch`]): an event a workflow reacts to starts an execution of each
//!   enabled workflow it triggers (`allowReentry` honoured) and resumes the contact's
//!   executions waiting for it.
//! - `workflow.run` ([`runner`]): runs an execution's steps from the one its payload names
//!   until it waits (DELAY, WAIT_FOR_EVENT), calls out (WEBHOOK) or ends.
//!
//! Guarantees: a batch's effects (executions, messages, history, contact changes) commit in
//! one transaction with the fenced acks of its jobs, each job under its own savepoint so one
//! failing job is retried alone; a job whose lease was lost changes nothing. A SEND_EMAIL step
//! queues its message in the transaction that moves the execution past it, so a retry never
//! sends twice. A WEBHOOK call is made outside any transaction and may repeat after a crash
//! (at least once; `Herald-Delivery` lets the receiver drop a repeat).

pub mod dispatch;
mod runner;
mod steps;
pub mod webhook;

use herald_core::ids::Uuid;
use herald_store::jobs::Job;
use herald_store::workflows::run::{EVENT_JOB, RUN_JOB};
use serde_json::Value;
use tokio::sync::watch;

use crate::Engine;

/// Jobs claimed per batch.
const BATCH: u32 = 200;
/// Runs dispatches and executions until shutdown; idle, it waits for due jobs
/// (`due_jobs`).
pub async fn run_workflows(engine: Engine, mut shutdown: watch::Receiver<bool>) {
    loop {
        let mark = engine.due_mark();
        let mut busy = false;
        match engine.dispatch_events().await {
            Ok(n) => busy |= n > 0,
            Err(e) => tracing::error!(error = %e, "dispatching events to workflows failed"),
        }
        match engine.run_executions().await {
            Ok(n) => busy |= n > 0,
            Err(e) => tracing::error!(error = %e, "running workflow executions failed"),
        }
        if *shutdown.borrow() {
            return;
        }
        if !busy
            && engine
                .wait_for_due(&[EVENT_JOB, RUN_JOB], mark, &mut shutdown)
                .await
        {
            return;
        }
    }
}

/// A uuid field of a job's payload.
fn payload_id(job: &Job, key: &str) -> Option<Uuid> {
    job.payload
        .0
        .get(key)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
}

/// Backoff before the next attempt of a failed job: a second per attempt so far.
fn backoff_ms(job: &Job) -> i64 {
    1000 * i64::from(job.attempts.clamp(1, 30))
}
