//! `workflow.run` jobs: each runs its execution from the step its payload names.
//!
//! A job's payload always names the step its execution is at: a DELAY or a WAIT_FOR_EVENT with
//! a timeout reschedules the same job (new step, attempts reset) to the wake time; a wait
//! without timeout completes it (the resuming event queues a new one); a WEBHOOK reached in
//! the middle of a run reschedules the job to now at that step, so the call is made by the
//! next claim, after the steps before it committed.

use std::collections::HashMap;
use std::sync::Arc;

use herald_core::ids::Uuid;
use herald_core::workflow::{Branch, ExecutionStatus, StepType};
use herald_store::contacts::Contact;
use herald_store::jobs::{self, Job};
use herald_store::workflows::Workflow;
use herald_store::workflows::run::{self as wf_run, HistoryRow, RUN_JOB, RunState};
use herald_store::{StoreError, StoreResult, Tx};
use serde_json::{Value, json};

use super::steps::{Flow, Mail, SpecCache, StepRun, message_spec};
use super::webhook::{CallOutcome, WebhookRequest};
use super::{BATCH, backoff_ms, payload_id};
use crate::Engine;
use crate::send::accept::Staged;

/// Steps one run may take before it must stop (graphs have no cycles; this bounds a corrupt one).
const MAX_STEPS: usize = 256;

/// How a job ended in its batch.
pub(super) enum Settle {
    /// Done: acked with the batch.
    Complete,
    /// Already rescheduled, retried or completed inside the transaction.
    Settled,
    /// At a WEBHOOK step: the call is made once the batch commits, the job still held.
    Webhook(Box<PendingCall>),
}

/// A WEBHOOK call to make, and what to continue with.
pub(super) struct PendingCall {
    pub project_id: Uuid,
    pub request: WebhookRequest,
}

/// What one batch reads once, and the history rows it writes at its end.
#[derive(Default)]
pub(super) struct Caches {
    workflows: HashMap<Uuid, Option<Arc<Workflow>>>,
    /// Per project: whether it caps workflow mail (then each send checks the cap).
    caps: HashMap<Uuid, bool>,
    /// A message was queued: wake the sender after the commit.
    pub sent: bool,
    pub history: Vec<HistoryRow>,
    /// Prefetched with the batch: executions (taken once used), contacts with their project
    /// (dropped when a step changes one), and suppressed addresses per project.
    states: HashMap<Uuid, RunState>,
    pub contacts: HashMap<Uuid, (Uuid, Contact)>,
    pub suppressed: HashMap<(Uuid, String), Option<String>>,
    /// Workflow mail of uncapped projects, counted at the batch's end.
    pub counted: HashMap<Uuid, i64>,
}

impl Caches {
    pub(super) async fn workflow_cap(
        &mut self,
        engine: &Engine,
        project: Uuid,
    ) -> StoreResult<bool> {
        if let Some(c) = self.caps.get(&project) {
            return Ok(*c);
        }
        let capped = engine
            .store
            .billing_limits(project)
            .await?
            .workflows
            .is_some();
        self.caps.insert(project, capped);
        Ok(capped)
    }

    /// Reads what the claimed jobs' runs need, a statement per kind for the whole batch.
    async fn prefetch(&mut self, tx: &mut Tx, claimed: &[Job]) -> StoreResult<()> {
        let ids: Vec<Uuid> = claimed
            .iter()
            .filter_map(|j| payload_id(j, "executionId"))
            .collect();
        for state in wf_run::run_states(tx, &ids).await? {
            self.states.insert(state.id, state);
        }
        let contact_ids: Vec<Uuid> = self.states.values().filter_map(|s| s.contact_id).collect();
        let mut emails: HashMap<Uuid, Vec<String>> = HashMap::new();
        for (project, c) in wf_run::contacts_now(tx, &contact_ids).await? {
            emails.entry(project).or_default().push(c.email.clone());
            self.contacts.insert(c.id, (project, c));
        }
        for (project, list) in emails {
            let refs: Vec<&str> = list.iter().map(String::as_str).collect();
            let on_list = herald_store::suppressions::suppressed_among(tx, project, &refs).await?;
            for e in list {
                self.suppressed.insert((project, e), None);
            }
            for (e, reason) in on_list {
                self.suppressed.insert((project, e), Some(reason));
            }
        }
        Ok(())
    }

    /// The message of every template a SEND_EMAIL step of the prefetched executions'
    /// workflows sends.
    async fn specs(&mut self, engine: &Engine) -> StoreResult<SpecCache> {
        let owners: Vec<(Uuid, Uuid)> = self
            .states
            .values()
            .map(|s| (s.project_id, s.workflow_id))
            .collect();
        let mut specs = SpecCache::new();
        for (project, workflow) in owners {
            let Some(w) = self.workflow(engine, project, workflow).await? else {
                continue;
            };
            for step in w
                .steps
                .iter()
                .filter(|s| s.step_type == StepType::SendEmail)
            {
                let id = step.config.get("templateId").and_then(Value::as_str);
                if let Some(id) = id.and_then(|t| t.parse::<Uuid>().ok())
                    && !specs.contains_key(&id)
                {
                    specs.insert(id, message_spec(engine, project, id).await?);
                }
            }
        }
        Ok(specs)
    }

    /// Writes the buffered history rows and the deferred mail counts.
    async fn flush(&mut self, tx: &mut Tx, now: i64) -> StoreResult<()> {
        wf_run::record_steps(tx, &self.history).await?;
        self.history.clear();
        for (project, n) in self.counted.drain() {
            let category = herald_core::billing::Category::Workflows;
            herald_store::billing::count(tx, project, category, n, now).await?;
        }
        Ok(())
    }

    async fn workflow(
        &mut self,
        engine: &Engine,
        project_id: Uuid,
        id: Uuid,
    ) -> StoreResult<Option<Arc<Workflow>>> {
        if let Some(w) = self.workflows.get(&id) {
            return Ok(w.clone());
        }
        let w = engine.store.workflow(project_id, id).await?.map(Arc::new);
        self.workflows.insert(id, w.clone());
        Ok(w)
    }
}

impl Engine {
    /// Claims a batch of run jobs and runs them; returns how many were claimed.
    pub async fn run_executions(&self) -> StoreResult<usize> {
        let lease = crate::job_lease::lease_ms(self);
        let claimed = self
            .store
            .claim_jobs(RUN_JOB, BATCH, self.now(), lease)
            .await?;
        if claimed.is_empty() {
            return Ok(0);
        }
        // First all jobs in one transaction without savepoints; if one fails, the batch is
        // redone with a savepoint per job so the failure is handled alone.
        let mut outcome = self.run_batch(&claimed, false).await?;
        if outcome.is_none() {
            outcome = self.run_batch(&claimed, true).await?;
        }
        let Some((calls, sent)) = outcome else {
            return Ok(claimed.len());
        };
        if sent {
            self.send_queued();
        }
        if !calls.is_empty() {
            self.make_calls(calls).await?;
        }
        Ok(claimed.len())
    }

    /// Runs claimed jobs in one transaction. Without `isolate`, the first failing job makes
    /// it answer `None` (nothing written); with it, each job runs under a savepoint and a
    /// failure is settled alone. Returns the WEBHOOK calls due and whether mail was queued
    /// (`Some((vec![], false))` too when a lease was lost and nothing was written).
    async fn run_batch(
        &self,
        claimed: &[Job],
        isolate: bool,
    ) -> StoreResult<Option<(Vec<(Job, Box<PendingCall>)>, bool)>> {
        let mut caches = Caches::default();
        let mut tx = self.store.begin().await?;
        caches.prefetch(&mut tx, claimed).await?;
        let specs = caches.specs(self).await?;
        let mut mail = Mail {
            specs: &specs,
            staged: Staged::default(),
        };
        let mut done = Vec::new();
        let mut calls = Vec::new();
        let mut failed = Vec::new();
        for job in claimed {
            if isolate {
                tx.savepoint("wf_run").await?;
            }
            let mark = (
                caches.history.len(),
                caches.counted.clone(),
                mail.staged.mark(),
            );
            match self
                .advance(&mut tx, job, None, &mut caches, &mut mail)
                .await
            {
                Ok(settle) => {
                    if isolate {
                        tx.release_savepoint("wf_run").await?;
                    }
                    match settle {
                        Settle::Complete => done.push((job.id, job.lease_token)),
                        Settle::Settled => {}
                        Settle::Webhook(call) => calls.push((job.clone(), call)),
                    }
                }
                Err(_) if !isolate => return Ok(None),
                Err(e) => {
                    tx.rollback_to_savepoint("wf_run").await?;
                    caches.history.truncate(mark.0);
                    caches.counted = mark.1;
                    mail.staged.truncate(mark.2);
                    failed.push((job, e.to_string()));
                }
            }
        }
        if jobs::complete_many(&mut tx, &done).await?.len() != done.len() {
            return Ok(Some((Vec::new(), false)));
        }
        for (job, error) in failed {
            settle_error(self, &mut tx, job, &error).await?;
        }
        mail.staged
            .flush(&mut tx, send_attempts(self), self.now())
            .await?;
        caches.flush(&mut tx, self.now()).await?;
        tx.commit().await?;
        Ok(Some((calls, caches.sent)))
    }

    /// Makes a batch's WEBHOOK calls at once (their jobs' leases kept alive meanwhile), then
    /// records them and runs each execution on, in one transaction.
    async fn make_calls(&self, calls: Vec<(Job, Box<PendingCall>)>) -> StoreResult<()> {
        let held = calls.iter().map(|(j, _)| (j.id, j.lease_token)).collect();
        let mut set = tokio::task::JoinSet::new();
        for (i, (_, call)) in calls.iter().enumerate() {
            let (engine, project_id, request) =
                (self.clone(), call.project_id, call.request.clone());
            set.spawn(async move { (i, engine.call_webhook(project_id, &request).await) });
        }
        let outcomes = crate::job_lease::with_heartbeats(self, held, async {
            let mut outcomes: Vec<Option<CallOutcome>> = vec![None; calls.len()];
            while let Some(done) = set.join_next().await {
                if let Ok((i, outcome)) = done {
                    outcomes[i] = Some(outcome);
                }
            }
            outcomes
        })
        .await;
        let mut caches = Caches::default();
        let mut tx = self.store.begin().await?;
        let jobs_held: Vec<Job> = calls.iter().map(|(j, _)| j.clone()).collect();
        caches.prefetch(&mut tx, &jobs_held).await?;
        let specs = caches.specs(self).await?;
        let mut mail = Mail {
            specs: &specs,
            staged: Staged::default(),
        };
        let mut done = Vec::new();
        let mut failed = Vec::new();
        for ((job, _), outcome) in calls.iter().zip(outcomes) {
            let outcome =
                outcome.unwrap_or_else(|| CallOutcome::Failed("the call was interrupted".into()));
            tx.savepoint("wf_call").await?;
            let mark = (
                caches.history.len(),
                caches.counted.clone(),
                mail.staged.mark(),
            );
            if !jobs::hold(&mut tx, job.id, job.lease_token, self.now()).await? {
                tx.rollback_to_savepoint("wf_call").await?;
                continue;
            }
            match self
                .advance(&mut tx, job, Some(outcome), &mut caches, &mut mail)
                .await
            {
                Ok(settle) => {
                    tx.release_savepoint("wf_call").await?;
                    match settle {
                        Settle::Complete => done.push((job.id, job.lease_token)),
                        Settle::Settled => {}
                        // The outcome is consumed by the WEBHOOK step the job is at, so a
                        // second call cannot be due at once; defensive: make it later.
                        Settle::Webhook(_) => {
                            let (payload, now) = (job.payload.0.clone(), self.now());
                            jobs::reschedule(&mut tx, job.id, job.lease_token, now, &payload, now)
                                .await?;
                        }
                    }
                }
                Err(e) => {
                    tx.rollback_to_savepoint("wf_call").await?;
                    caches.history.truncate(mark.0);
                    caches.counted = mark.1;
                    mail.staged.truncate(mark.2);
                    failed.push((job, e.to_string()));
                }
            }
        }
        if jobs::complete_many(&mut tx, &done).await?.len() != done.len() {
            return Ok(());
        }
        for (job, error) in failed {
            settle_error(self, &mut tx, job, &error).await?;
        }
        mail.staged
            .flush(&mut tx, send_attempts(self), self.now())
            .await?;
        caches.flush(&mut tx, self.now()).await?;
        tx.commit().await?;
        if caches.sent {
            self.send_queued();
        }
        Ok(())
    }

    /// Runs the job's execution from its step until it waits, calls out or ends.
    async fn advance(
        &self,
        tx: &mut Tx,
        job: &Job,
        mut call: Option<CallOutcome>,
        caches: &mut Caches,
        mail: &mut Mail<'_>,
    ) -> StoreResult<Settle> {
        let (Some(execution_id), Some(step_id)) =
            (payload_id(job, "executionId"), payload_id(job, "stepId"))
        else {
            return Ok(Settle::Complete);
        };
        let state = match caches.states.remove(&execution_id) {
            Some(s) => Some(s),
            None => wf_run::run_state(tx, execution_id).await?,
        };
        let Some(state) = state else {
            return Ok(Settle::Complete);
        };
        if !state.status.is_active() || state.current_step_id != Some(step_id) {
            // Moved on, cancelled or ended since this job was queued.
            return Ok(Settle::Complete);
        }
        let now = self.now();
        if job.attempts > job.max_attempts {
            let why = format!("the run was interrupted {} times", job.attempts - 1);
            end(tx, &state, ExecutionStatus::Failed, Some(&why), now).await?;
            return Ok(Settle::Complete);
        }
        let Some(contact_id) = state.contact_id else {
            let why = "the contact was deleted";
            end(tx, &state, ExecutionStatus::Cancelled, Some(why), now).await?;
            return Ok(Settle::Complete);
        };
        let Some(workflow) = caches
            .workflow(self, state.project_id, state.workflow_id)
            .await?
        else {
            return Ok(Settle::Complete);
        };
        let mut run = StepRun {
            engine: self,
            mail,
            caches,
            job,
            state: &state,
            contact_id,
            context: state.context.0.clone(),
            now,
        };
        let mut current = step_id;
        let mut waking = state.status == ExecutionStatus::Waiting;
        for taken in 0..MAX_STEPS {
            let Some(step) = workflow.steps.iter().find(|s| s.id == current) else {
                let why = "the execution's step was deleted";
                end(tx, &state, ExecutionStatus::Failed, Some(why), now).await?;
                return Ok(Settle::Complete);
            };
            let flow = if std::mem::take(&mut waking) {
                run.wake(tx, step).await?
            } else if step.step_type == StepType::Webhook {
                match call.take() {
                    Some(outcome) => run.webhook_answered(tx, step, outcome).await?,
                    None if taken == 0 => return run.webhook_due(tx, step).await,
                    None => run.webhook_later(tx, step).await?,
                }
            } else {
                run.step(tx, step).await?
            };
            match flow {
                Flow::Next(branch) => match next_of(&workflow, current, branch) {
                    Some(next) => current = next,
                    None => {
                        end(tx, &state, ExecutionStatus::Completed, None, now).await?;
                        return Ok(Settle::Complete);
                    }
                },
                Flow::Stop(settle) => return Ok(settle),
                Flow::End(status, reason) => {
                    end(tx, &state, status, reason.as_deref(), now).await?;
                    return Ok(Settle::Complete);
                }
            }
        }
        let why = "the workflow ran more steps than allowed in one go";
        end(tx, &state, ExecutionStatus::Failed, Some(why), now).await?;
        Ok(Settle::Complete)
    }
}

/// Delivery attempts of a queued message (the send setting).
fn send_attempts(engine: &Engine) -> i32 {
    i32::try_from(engine.settings.send_max_attempts).unwrap_or(i32::MAX)
}

/// The step the transition from `from` (with `branch`; `None`: the plain one) leads to.
fn next_of(w: &Workflow, from: Uuid, branch: Option<Branch>) -> Option<Uuid> {
    w.transitions
        .iter()
        .find(|t| t.from_step_id == from && t.branch == branch)
        .map(|t| t.to_step_id)
}

async fn end(
    tx: &mut Tx,
    state: &RunState,
    status: ExecutionStatus,
    reason: Option<&str>,
    now: i64,
) -> StoreResult<()> {
    wf_run::finish(tx, state.id, status, reason, now).await
}

/// A job that failed with an error (the database, a lost lease): retried with backoff, or,
/// once its attempts are spent, dead-lettered and its execution FAILED.
async fn settle_error(engine: &Engine, tx: &mut Tx, job: &Job, error: &str) -> StoreResult<()> {
    tracing::warn!(job = %job.id, %error, "a workflow step failed");
    let now = engine.now();
    if job.attempts < job.max_attempts {
        let at = now + backoff_ms(job);
        jobs::retry(tx, job.id, job.lease_token, at, error, now).await?;
        return Ok(());
    }
    if jobs::fail(tx, job.id, job.lease_token, error, now).await?
        && let Some(id) = payload_id(job, "executionId")
    {
        let why = format!("a step failed {} times: {error}", job.attempts);
        wf_run::finish(tx, id, ExecutionStatus::Failed, Some(&why), now).await?;
    }
    Ok(())
}

/// An error that makes the job retry (the step's effects rolled back).
pub(super) fn lease_lost() -> StoreError {
    StoreError::Other(anyhow::anyhow!("the job's lease was taken over"))
}

/// The payload naming an execution's step.
pub(super) fn payload(execution_id: Uuid, step_id: Uuid) -> Value {
    json!({"executionId": execution_id, "stepId": step_id})
}
