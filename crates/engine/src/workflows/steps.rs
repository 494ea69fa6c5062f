//! What each step type does inside the run's transaction (DECISIONS.md "Workflows"), and the
//! history row it leaves. The decisions themselves are `herald_core::workflow_run`.

use std::collections::HashMap;
use std::sync::Arc;

use herald_core::billing::Category;
use herald_core::fields::DataPatch;
use herald_core::ids::Uuid;
use herald_core::workflow::{Branch, ExecutionStatus, StepStatus, StepType};
use herald_core::workflow_run::{ConditionInput, condition_holds, delay_ms, wait_for};
use herald_store::contacts::{Contact, ContactUpdate, update_contact};
use herald_store::jobs::{self, Job};
use herald_store::workflows::Step;
use herald_store::workflows::run::{self as wf_run, HistoryRow, RunState};
use herald_store::{StoreError, StoreResult, Tx, billing, suppressions};
use serde_json::{Value, json};

use super::runner::{Caches, PendingCall, Settle, lease_lost, payload};
use super::webhook::{CallOutcome, WebhookRequest};
use crate::Engine;
use crate::send::accept::{MessageSpec, StageRecipient, Staged, render_vars};
use crate::send::merge::{SendOverrides, merge_with_template};

/// What happens after a step.
pub(super) enum Flow {
    /// Follow the transition with this branch (`None`: the plain one); none: COMPLETED.
    Next(Option<Branch>),
    /// The run stops here (waiting, or calling out).
    Stop(Settle),
    /// The execution ends (EXITED, or FAILED with the reason).
    End(ExecutionStatus, Option<String>),
}

/// A SEND_EMAIL template's message, or why it cannot be sent.
pub(super) type SpecCache = HashMap<Uuid, Result<Arc<MessageSpec>, String>>;

/// The batch's mail: the message of every template its workflows send (resolved before the
/// runs), and the messages and send jobs the runs staged (written once, at the batch's end).
pub(super) struct Mail<'s> {
    pub specs: &'s SpecCache,
    pub staged: Staged<'s>,
}

/// One execution's run inside a batch.
pub(super) struct StepRun<'a, 's> {
    pub engine: &'a Engine,
    pub mail: &'a mut Mail<'s>,
    /// The batch's reads and its buffered history rows.
    pub caches: &'a mut Caches,
    pub job: &'a Job,
    pub state: &'a RunState,
    pub contact_id: Uuid,
    /// The execution's context (its `event.*`).
    pub context: Value,
    pub now: i64,
}

impl<'s> StepRun<'_, 's> {
    /// Buffers a history row (written with the batch's others before it commits).
    fn history(&mut self, step: &Step, status: StepStatus, output: Option<Value>) {
        let open = status.is_open();
        self.caches.history.push(HistoryRow {
            execution_id: self.state.id,
            step_id: step.id,
            status,
            output,
            started_at: self.now,
            completed_at: (!open).then_some(self.now),
        });
    }

    /// Records a step that cannot run and ends the execution FAILED.
    async fn fail(&mut self, _tx: &mut Tx, step: &Step, why: String) -> StoreResult<Flow> {
        self.history(step, StepStatus::Failed, Some(json!({"error": why})));
        Ok(Flow::End(ExecutionStatus::Failed, Some(why)))
    }

    async fn contact(&self, tx: &mut Tx) -> StoreResult<Option<Contact>> {
        match self.caches.contacts.get(&self.contact_id) {
            Some((project, c)) if *project == self.state.project_id => Ok(Some(c.clone())),
            _ => wf_run::contact_now(tx, self.state.project_id, self.contact_id).await,
        }
    }

    /// Parks the execution at `step` and its job until `at` (payload: that step).
    async fn park(
        &self,
        tx: &mut Tx,
        step: &Step,
        status: ExecutionStatus,
        at: Option<i64>,
    ) -> StoreResult<()> {
        wf_run::move_to(
            tx,
            self.state.id,
            step.id,
            status,
            at,
            &self.context,
            self.now,
        )
        .await?;
        let kept = match at {
            Some(at) => {
                let p = payload(self.state.id, step.id);
                jobs::reschedule(tx, self.job.id, self.job.lease_token, at, &p, self.now).await?
            }
            None => jobs::complete(tx, self.job.id, self.job.lease_token).await?,
        };
        if kept { Ok(()) } else { Err(lease_lost()) }
    }

    /// Runs a step that is not a WEBHOOK.
    pub async fn step(&mut self, tx: &mut Tx, step: &Step) -> StoreResult<Flow> {
        let config = &step.config;
        match step.step_type {
            StepType::Trigger => {
                self.history(step, StepStatus::Completed, None);
                Ok(Flow::Next(None))
            }
            StepType::SendEmail => self.send_email(tx, step).await,
            StepType::Delay => match delay_ms(config) {
                Ok(ms) => {
                    let at = self.now.saturating_add(ms);
                    self.history(step, StepStatus::Waiting, Some(json!({"until": at})));
                    self.park(tx, step, ExecutionStatus::Waiting, Some(at))
                        .await?;
                    Ok(Flow::Stop(Settle::Settled))
                }
                Err(e) => self.fail(tx, step, e.to_string()).await,
            },
            StepType::WaitForEvent => match wait_for(config) {
                Ok((name, timeout)) => {
                    let at = timeout.map(|t| self.now.saturating_add(t));
                    let output = json!({"eventName": name, "timeoutAt": at});
                    self.history(step, StepStatus::Waiting, Some(output));
                    self.park(tx, step, ExecutionStatus::Waiting, at).await?;
                    Ok(Flow::Stop(Settle::Settled))
                }
                Err(e) => self.fail(tx, step, e.to_string()).await,
            },
            StepType::Condition => {
                let Some(contact) = self.contact(tx).await? else {
                    return self
                        .fail(tx, step, "the contact no longer exists".into())
                        .await;
                };
                let input = ConditionInput {
                    email: &contact.email,
                    subscribed: contact.subscribed,
                    data: &contact.data,
                    event: &self.context,
                };
                match condition_holds(config, &input, self.now) {
                    Ok(holds) => {
                        self.history(step, StepStatus::Completed, Some(json!({"result": holds})));
                        Ok(Flow::Next(Some(if holds {
                            Branch::Yes
                        } else {
                            Branch::No
                        })))
                    }
                    Err(e) => self.fail(tx, step, e.to_string()).await,
                }
            }
            StepType::UpdateContact => self.update_contact(tx, step).await,
            StepType::Exit => {
                let reason = config
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                self.history(step, StepStatus::Completed, None);
                Ok(Flow::End(ExecutionStatus::Exited, reason))
            }
            StepType::Webhook => Err(StoreError::Other(anyhow::anyhow!(
                "a WEBHOOK step is run by the runner"
            ))),
        }
    }

    /// A timer fired: a DELAY is over, or a WAIT_FOR_EVENT timed out (its `timeout` branch).
    pub async fn wake(&mut self, tx: &mut Tx, step: &Step) -> StoreResult<Flow> {
        let (execution, now) = (self.state.id, self.now);
        match step.step_type {
            StepType::Delay => {
                wf_run::close_step(tx, execution, step.id, StepStatus::Completed, None, now)
                    .await?;
                Ok(Flow::Next(None))
            }
            StepType::WaitForEvent => {
                wf_run::close_step(tx, execution, step.id, StepStatus::TimedOut, None, now).await?;
                Ok(Flow::Next(Some(Branch::Timeout)))
            }
            other => Err(StoreError::Other(anyhow::anyhow!(
                "an execution waiting at a {} step",
                other.as_str()
            ))),
        }
    }

    async fn send_email(&mut self, tx: &mut Tx, step: &Step) -> StoreResult<Flow> {
        let project_id = self.state.project_id;
        let template_id = step
            .config
            .get("templateId")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<Uuid>().ok());
        let Some(template_id) = template_id else {
            return self
                .fail(tx, step, "the step names no template".into())
                .await;
        };
        let specs: &'s SpecCache = self.mail.specs;
        let spec: &'s MessageSpec = match specs.get(&template_id) {
            Some(Ok(s)) => s,
            Some(Err(why)) => return self.fail(tx, step, why.clone()).await,
            None => {
                return Err(StoreError::Other(anyhow::anyhow!(
                    "the template {template_id} was not prepared for this batch"
                )));
            }
        };
        let capped = self.caches.workflow_cap(self.engine, project_id).await?;
        if capped && !billing::allows(tx, project_id, Category::Workflows, 1, self.now).await? {
            let why = "the project's monthly workflows limit is reached".to_owned();
            return self.fail(tx, step, why).await;
        }
        let Some(contact) = self.contact(tx).await? else {
            return self
                .fail(tx, step, "the contact no longer exists".into())
                .await;
        };
        let key = (project_id, contact.email.clone());
        let suppressed = match self.caches.suppressed.get(&key) {
            Some(known) => known.clone(),
            None => suppressions::suppressed_among(tx, project_id, &[contact.email.as_str()])
                .await?
                .pop()
                .map(|(_, reason)| reason),
        };
        let accepted = spec.stage_one(
            &mut self.mail.staged,
            StageRecipient {
                contact_id: contact.id,
                email: contact.email.clone(),
                name: None,
                subscribed: contact.subscribed,
                data: contact.data.clone(),
                suppressed,
                event: Some(&self.context),
            },
        );
        let output = json!({"messageId": accepted.message_id, "templateId": template_id,
            "skipped": accepted.skipped});
        if accepted.skipped.is_some() {
            self.history(step, StepStatus::Skipped, Some(output));
        } else {
            if capped {
                billing::count(tx, project_id, Category::Workflows, 1, self.now).await?;
            } else {
                *self.caches.counted.entry(project_id).or_default() += 1;
            }
            self.caches.sent = true;
            self.history(step, StepStatus::Completed, Some(output));
        }
        Ok(Flow::Next(None))
    }

    async fn update_contact(&mut self, tx: &mut Tx, step: &Step) -> StoreResult<Flow> {
        let patch = match DataPatch::parse(step.config.get("data")) {
            Ok(p) => p,
            Err(p) => {
                return self
                    .fail(tx, step, format!("data.{}: {}", p.key, p.message))
                    .await;
            }
        };
        let subscribed = step.config.get("subscribed").and_then(Value::as_bool);
        let change = ContactUpdate {
            email: None,
            subscribed,
            patch: &patch,
            now: self.now,
            cause: Default::default(),
        };
        self.caches.contacts.remove(&self.contact_id);
        match update_contact(tx, self.state.project_id, self.contact_id, &change).await {
            Ok(c) => {
                let output = json!({"data": c.data, "subscribed": c.subscribed});
                self.history(step, StepStatus::Completed, Some(output));
                Ok(Flow::Next(None))
            }
            Err(StoreError::NotFound) => {
                self.fail(tx, step, "the contact no longer exists".into())
                    .await
            }
            Err(e) => Err(e),
        }
    }

    /// A WEBHOOK step at the start of a run: its call is made after the batch commits.
    pub async fn webhook_due(&self, tx: &mut Tx, step: &Step) -> StoreResult<Settle> {
        let contact = self.contact(tx).await?;
        let request = self.webhook_request(step, contact.as_ref());
        Ok(Settle::Webhook(Box::new(PendingCall {
            project_id: self.state.project_id,
            request,
        })))
    }

    /// A WEBHOOK step reached mid-run: the job is rescheduled to now at it, so the steps
    /// before it commit first and the next claim makes the call.
    pub async fn webhook_later(&self, tx: &mut Tx, step: &Step) -> StoreResult<Flow> {
        let (execution, now) = (self.state.id, self.now);
        let running = ExecutionStatus::Running;
        wf_run::move_to(tx, execution, step.id, running, None, &self.context, now).await?;
        let p = payload(execution, step.id);
        if !jobs::reschedule(tx, self.job.id, self.job.lease_token, now, &p, now).await? {
            return Err(lease_lost());
        }
        Ok(Flow::Stop(Settle::Settled))
    }

    /// Records a WEBHOOK call: a 2xx answer moves on; no answer or another status is retried
    /// while attempts remain, then FAILED; a refused target FAILED at once.
    pub async fn webhook_answered(
        &mut self,
        tx: &mut Tx,
        step: &Step,
        outcome: CallOutcome,
    ) -> StoreResult<Flow> {
        let (output, error, retry) = match outcome {
            CallOutcome::Answered { status, body } => {
                let out = json!({"status": status, "response": body});
                if (200..300).contains(&status) {
                    self.history(step, StepStatus::Completed, Some(out));
                    return Ok(Flow::Next(None));
                }
                (out, format!("the webhook answered {status}"), true)
            }
            CallOutcome::Failed(why) => (json!({"error": why}), why, true),
            CallOutcome::Refused(why) => (json!({"error": why}), why, false),
        };
        self.history(step, StepStatus::Failed, Some(output));
        if retry && self.job.attempts < self.job.max_attempts {
            let at = self.now + super::backoff_ms(self.job);
            if !jobs::retry(tx, self.job.id, self.job.lease_token, at, &error, self.now).await? {
                return Err(lease_lost());
            }
            return Ok(Flow::Stop(Settle::Settled));
        }
        Ok(Flow::End(ExecutionStatus::Failed, Some(error)))
    }

    fn webhook_request(&self, step: &Step, contact: Option<&Contact>) -> WebhookRequest {
        let empty = serde_json::Map::new();
        let data = contact.map_or(&empty, |c| &c.data);
        let email = contact.map_or("", |c| c.email.as_str());
        let pages = self
            .engine
            .links
            .page_urls(self.state.project_id, self.contact_id, None);
        let mut vars = render_vars(self.contact_id, email, data, pages);
        vars.insert("event".into(), self.context.clone());
        let default_body = json!({
            "workflowId": self.state.workflow_id,
            "executionId": self.state.id,
            "stepId": step.id,
            "contact": {"id": self.contact_id, "email": email, "data": data},
            "event": self.context,
        });
        let delivery = format!("{}:{}", self.state.id, step.id);
        WebhookRequest::render(&step.config, &vars, &default_body, delivery)
    }
}

/// The message of a SEND_EMAIL step's template, or why it cannot be sent (the template was
/// deleted, has no sender, or its sender's domain is not verified).
pub(super) async fn message_spec(
    engine: &Engine,
    project_id: Uuid,
    template_id: Uuid,
) -> StoreResult<Result<Arc<MessageSpec>, String>> {
    let Some(template) = engine.store.template(project_id, template_id).await? else {
        return Ok(Err("the template was deleted".into()));
    };
    let merged = match merge_with_template(SendOverrides::default(), Some(&template)) {
        Ok(m) => m,
        Err(missing) => {
            let fields: Vec<&str> = missing.iter().map(|m| m.field).collect();
            return Ok(Err(format!("the template has no {}", fields.join(", "))));
        }
    };
    match engine
        .require_verified_sender(project_id, &merged.from)
        .await
    {
        Ok(_) => {}
        Err(crate::domains::SenderDomainError::NotVerified { domain }) => {
            return Ok(Err(format!("the sender domain {domain} is not verified")));
        }
        Err(crate::domains::SenderDomainError::Store(e)) => return Err(e),
    }
    Ok(Ok(Arc::new(MessageSpec::workflow(
        project_id,
        &merged,
        &engine.links,
    ))))
}
