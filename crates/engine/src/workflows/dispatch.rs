//! `event.dispatch` jobs: an event starts the enabled workflows it triggers and resumes the
//! contact's executions waiting for it; manual starts (`POST /workflows/:id/executions`).

use std::collections::{HashMap, HashSet};

use herald_core::ids::Uuid;
use herald_core::workflow::{Branch, ExecutionStatus, StepStatus};
use herald_store::jobs::{self, Job};
use herald_store::workflows::executions::Execution;
use herald_store::workflows::run::{
    self as wf_run, DispatchedEvent, EVENT_JOB, NotStarted, Triggered, Waiter,
};
use herald_store::{StoreError, StoreResult, Tx};
use serde_json::{Value, json};

use super::{BATCH, backoff_ms, payload_id};
use crate::Engine;

/// Why a manual start was refused.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("no such workflow")]
    WorkflowNotFound,
    #[error("no such contact")]
    ContactNotFound,
    #[error("the contact already has a running or waiting execution of this workflow")]
    Active,
    #[error("the workflow does not allow re-entry and the contact entered it before")]
    Entered,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Engine {
    /// Claims a batch of dispatch jobs and applies them in one transaction; returns how many
    /// were claimed.
    pub async fn dispatch_events(&self) -> StoreResult<usize> {
        let lease = crate::job_lease::lease_ms(self);
        let claimed = self
            .store
            .claim_jobs(EVENT_JOB, BATCH, self.now(), lease)
            .await?;
        if claimed.is_empty() {
            return Ok(0);
        }
        // All in one transaction without savepoints first; if one fails, again with a
        // savepoint per job so the failure is handled alone.
        if !self.dispatch_batch(&claimed, false).await? {
            self.dispatch_batch(&claimed, true).await?;
        }
        Ok(claimed.len())
    }

    /// Applies claimed dispatch jobs in one transaction; false (nothing written) when a job
    /// failed without `isolate`.
    async fn dispatch_batch(&self, claimed: &[Job], isolate: bool) -> StoreResult<bool> {
        let now = self.now();
        let mut tx = self.store.begin().await?;
        let mut done = Vec::with_capacity(claimed.len());
        let mut failed = Vec::new();
        let mut reads = Reads::default();
        if !isolate {
            return match dispatch_all(&mut tx, claimed, &mut reads, now).await {
                Ok(()) => {
                    let held: Vec<(Uuid, Uuid)> =
                        claimed.iter().map(|j| (j.id, j.lease_token)).collect();
                    // A lease taken over meanwhile: change nothing; the holders redo the work.
                    if jobs::complete_many(&mut tx, &held).await?.len() == held.len() {
                        tx.commit().await?;
                    }
                    Ok(true)
                }
                Err(_) => Ok(false),
            };
        }
        for job in claimed {
            if isolate {
                tx.savepoint("wf_dispatch").await?;
            }
            match dispatch_one(&mut tx, job, &mut reads, now).await {
                Ok(()) => {
                    if isolate {
                        tx.release_savepoint("wf_dispatch").await?;
                    }
                    done.push((job.id, job.lease_token));
                }
                Err(_) if !isolate => return Ok(false),
                Err(e) => {
                    tx.rollback_to_savepoint("wf_dispatch").await?;
                    failed.push((job, e.to_string()));
                }
            }
        }
        if jobs::complete_many(&mut tx, &done).await?.len() != done.len() {
            // A lease was taken over meanwhile: change nothing; the holders redo the work.
            return Ok(true);
        }
        for (job, error) in failed {
            tracing::warn!(job = %job.id, %error, "an event dispatch failed");
            if job.attempts >= job.max_attempts {
                jobs::fail(&mut tx, job.id, job.lease_token, &error, now).await?;
            } else {
                let at = now + backoff_ms(job);
                jobs::retry(&mut tx, job.id, job.lease_token, at, &error, now).await?;
            }
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Starts an execution by hand, with `context` as its event data.
    pub async fn start_workflow(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        contact_id: Uuid,
        context: &Value,
    ) -> Result<Execution, StartError> {
        let now = self.now();
        let mut tx = self.store.begin().await?;
        let trigger = wf_run::trigger_of(&mut tx, project_id, workflow_id)
            .await?
            .ok_or(StartError::WorkflowNotFound)?;
        if wf_run::contact_now(&mut tx, project_id, contact_id)
            .await?
            .is_none()
        {
            return Err(StartError::ContactNotFound);
        }
        let id =
            match wf_run::start_execution(&mut tx, project_id, &trigger, contact_id, context, now)
                .await?
            {
                Ok(id) => id,
                Err(NotStarted::Active) => return Err(StartError::Active),
                Err(NotStarted::Entered) => return Err(StartError::Entered),
            };
        tx.commit().await?;
        self.store
            .execution(project_id, workflow_id, id)
            .await?
            .ok_or(StartError::WorkflowNotFound)
    }
}

/// What a batch of dispatches reads once per project (and event name).
#[derive(Default)]
struct Reads {
    waited: HashMap<Uuid, HashSet<String>>,
    triggered: HashMap<(Uuid, String), Vec<Triggered>>,
}

impl Reads {
    /// Whether a WAIT_FOR_EVENT step of the project waits for `name`.
    async fn waited(&mut self, tx: &mut Tx, project: Uuid, name: &str) -> StoreResult<bool> {
        if let std::collections::hash_map::Entry::Vacant(v) = self.waited.entry(project) {
            v.insert(wf_run::waited_names(tx, project).await?);
        }
        Ok(self.waited.get(&project).is_some_and(|n| n.contains(name)))
    }

    /// The enabled workflows of the project that `name` triggers.
    async fn triggered(
        &mut self,
        tx: &mut Tx,
        project: Uuid,
        name: &str,
    ) -> StoreResult<&[Triggered]> {
        let key = (project, name.to_owned());
        if !self.triggered.contains_key(&key) {
            let found = wf_run::triggered_by(tx, project, name).await?;
            self.triggered.insert(key.clone(), found);
        }
        Ok(self.triggered.get(&key).map_or(&[], Vec::as_slice))
    }
}

/// Applies a batch of events at once: the events read in one statement, resumes one by one
/// (rare), then the starts decided from one read of what the contacts entered and written in
/// multi-row statements. Same rules as [`dispatch_one`].
async fn dispatch_all(
    tx: &mut Tx,
    claimed: &[Job],
    reads: &mut Reads,
    now: i64,
) -> StoreResult<()> {
    let ids: Vec<Uuid> = claimed
        .iter()
        .filter_map(|j| payload_id(j, "eventId"))
        .collect();
    let mut events = wf_run::dispatched_events(tx, &ids).await?;
    // In the order they were recorded (UUID v7), as one by one would apply them.
    events.sort_by_key(|e| e.id);
    let mut candidates = Vec::new();
    for event in &events {
        let Some(contact_id) = event.contact_id else {
            continue;
        };
        if reads.waited(tx, event.project_id, &event.name).await? {
            for waiter in wf_run::waiting_for(tx, event.project_id, contact_id, &event.name).await?
            {
                resume(tx, event, &waiter, now).await?;
            }
        }
        for w in reads.triggered(tx, event.project_id, &event.name).await? {
            candidates.push((event, contact_id, w.clone()));
        }
    }
    if candidates.is_empty() {
        return Ok(());
    }
    let contacts: Vec<Uuid> = candidates.iter().map(|(_, c, _)| *c).collect();
    let mut state: HashMap<(Uuid, Uuid), bool> = wf_run::entered(tx, &contacts)
        .await?
        .into_iter()
        .map(|(w, c, active)| ((w, c), active))
        .collect();
    let mut starts = Vec::new();
    for (event, contact_id, w) in candidates {
        let key = (w.workflow_id, contact_id);
        let seen = state.get(&key).copied();
        if wf_run::may_start(seen == Some(true), seen.is_some(), w.allow_reentry).is_err() {
            continue;
        }
        state.insert(key, true);
        starts.push(wf_run::NewExecution {
            id: herald_core::ids::new_id(),
            project_id: event.project_id,
            workflow_id: w.workflow_id,
            contact_id,
            trigger_step_id: w.trigger_step_id,
            context: event.data.0.clone(),
        });
    }
    wf_run::insert_executions(tx, &starts, now).await
}

/// Applies one event: resumes the contact's waiting executions, then starts the workflows it
/// triggers. Nothing when the event (or its contact) is gone.
async fn dispatch_one(tx: &mut Tx, job: &Job, reads: &mut Reads, now: i64) -> StoreResult<()> {
    let Some(event_id) = payload_id(job, "eventId") else {
        return Ok(());
    };
    let Some(event) = wf_run::dispatched_event(tx, event_id).await? else {
        return Ok(());
    };
    let Some(contact_id) = event.contact_id else {
        return Ok(());
    };
    let project = event.project_id;
    if reads.waited(tx, project, &event.name).await? {
        for waiter in wf_run::waiting_for(tx, project, contact_id, &event.name).await? {
            resume(tx, &event, &waiter, now).await?;
        }
    }
    for w in reads.triggered(tx, project, &event.name).await?.to_vec() {
        let context = event.data.0.clone();
        // An execution already active, or a contact that entered a once-only workflow, is
        // not started again: that is the rule, not a failure.
        let _ = wf_run::start_execution(tx, project, &w, contact_id, &context, now).await?;
    }
    Ok(())
}

/// Moves a waiting execution past its WAIT_FOR_EVENT step (the plain transition), the event's
/// data merged into its context; its timeout job, if any, is left to find it moved on.
async fn resume(tx: &mut Tx, event: &DispatchedEvent, w: &Waiter, now: i64) -> StoreResult<()> {
    let Some(state) = wf_run::run_state(tx, w.execution_id).await? else {
        return Ok(());
    };
    if state.status != ExecutionStatus::Waiting || state.current_step_id != Some(w.step_id) {
        return Ok(());
    }
    let mut context = state.context.0;
    if let (Some(ctx), Some(data)) = (context.as_object_mut(), event.data.0.as_object()) {
        for (k, v) in data {
            ctx.insert(k.clone(), v.clone());
        }
    }
    let output = json!({"eventId": event.id, "eventName": event.name});
    wf_run::close_step(
        tx,
        w.execution_id,
        w.step_id,
        StepStatus::Completed,
        Some(output),
        now,
    )
    .await?;
    match wf_run::next_step(tx, w.workflow_id, w.step_id, None::<Branch>).await? {
        Some(next) => {
            let running = ExecutionStatus::Running;
            wf_run::move_to(tx, w.execution_id, next, running, None, &context, now).await?;
            wf_run::enqueue_run(tx, event.project_id, w.execution_id, next, now).await?;
        }
        None => {
            let done = ExecutionStatus::Completed;
            wf_run::finish(tx, w.execution_id, done, None, now).await?;
        }
    }
    Ok(())
}
