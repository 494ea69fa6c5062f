//! The Workflows resource's changes as functions of a project, shared by the REST handlers
//! and the dashboard's workflow pages (a rule and its messages live once): create and change
//! a workflow, add, change and delete a step, add and delete a transition, insert a step into
//! the graph, start an execution by hand.

use herald_core::ids::{Uuid, parse_id};
use herald_core::workflow::{Branch, GraphError, StepType, check_config};
use herald_store::StoreError;
use herald_store::workflows::executions::Execution;
use herald_store::workflows::{
    NewStep, NewWorkflow, StepChange, StepDelete, StepInsert, TransitionAdd, Workflow,
    WorkflowChange,
};
use serde_json::Value;

use super::rules;
use super::wire::{StartRequest, StepRequest, StepResponse, TransitionRequest, TransitionResponse};
use crate::error::{ApiError, ApiResult, FieldError};
use crate::extract::path_id;
use crate::state::AppState;

fn not_found() -> ApiError {
    ApiError::not_found("WORKFLOW_NOT_FOUND", "Workflow")
}

fn step_not_found() -> ApiError {
    ApiError::not_found("NOT_FOUND", "Step")
}

/// A transition the graph rules refuse, on its field.
fn refused(e: GraphError) -> ApiError {
    ApiError::field(e.field, e.message, "invalid_transition")
}

/// The project's workflow `raw` (an id from a path): 404 for a malformed, unknown or another
/// project's id.
pub async fn workflow_of(state: &AppState, project_id: Uuid, raw: &str) -> ApiResult<Workflow> {
    let id = path_id(raw, "WORKFLOW_NOT_FOUND", "Workflow")?;
    state
        .store
        .workflow(project_id, id)
        .await?
        .ok_or_else(not_found)
}

/// `POST /workflows`: a disabled EVENT workflow with its TRIGGER step.
pub async fn create(
    state: &AppState,
    project_id: Uuid,
    body: super::WorkflowRequest,
) -> ApiResult<Workflow> {
    let c = rules::check_workflow(body, true)?;
    let (Some(name), Some(trigger)) = (&c.name, &c.trigger_config) else {
        return Err(ApiError::internal(
            "a checked create lacks a required field",
        ));
    };
    Ok(state
        .store
        .create_workflow(
            project_id,
            &NewWorkflow {
                name,
                description: c.description.as_ref().and_then(|d| d.as_deref()),
                trigger_config: trigger,
                allow_reentry: c.allow_reentry.unwrap_or(false),
            },
            state.engine.now(),
        )
        .await?)
}

/// `PATCH /workflows/:id`: the metadata, trigger, `enabled` or `allowReentry`.
pub async fn change(
    state: &AppState,
    project_id: Uuid,
    w: &Workflow,
    body: super::WorkflowRequest,
) -> ApiResult<Workflow> {
    let c = rules::check_workflow(body, false)?;
    let change = WorkflowChange {
        name: c.name.as_deref(),
        description: c.description.as_ref().map(|d| d.as_deref()),
        trigger_config: c.trigger_config.as_ref(),
        enabled: c.enabled,
        allow_reentry: c.allow_reentry,
    };
    match state
        .store
        .update_workflow(project_id, w.id, &change, state.engine.now())
        .await
    {
        Ok(w) => Ok(w),
        Err(StoreError::NotFound) => Err(not_found()),
        Err(e) => Err(e.into()),
    }
}

/// A checked step config and the template a SEND_EMAIL step names (which must exist).
async fn step_config(
    state: &AppState,
    project_id: Uuid,
    step_type: StepType,
    raw: &Value,
) -> ApiResult<(Value, Option<Uuid>)> {
    let config = check_config(step_type, raw).map_err(rules::config_errors)?;
    let template = match step_type {
        StepType::SendEmail => config["templateId"].as_str().and_then(parse_id),
        _ => None,
    };
    if let Some(t) = template
        && state.store.template(project_id, t).await?.is_none()
    {
        return Err(ApiError::field(
            "config.templateId",
            format!("template {t} does not exist"),
            "template_not_found",
        ));
    }
    Ok((config, template))
}

/// A new step's request checked: its type, name, position, config and template.
struct CheckedStep {
    step_type: StepType,
    name: Option<String>,
    position: Option<Value>,
    config: Value,
    template_id: Option<Uuid>,
}

impl CheckedStep {
    async fn of(state: &AppState, project_id: Uuid, body: StepRequest) -> ApiResult<Self> {
        let (step_type, name, position) = rules::check_new_step(&body)?;
        let raw = body.config.unwrap_or(Value::Null);
        let (config, template_id) = step_config(state, project_id, step_type, &raw).await?;
        Ok(Self {
            step_type,
            name,
            position,
            config,
            template_id,
        })
    }

    fn new_step(&self) -> NewStep<'_> {
        NewStep {
            step_type: self.step_type,
            name: self.name.as_deref(),
            config: &self.config,
            position: self.position.as_ref(),
            template_id: self.template_id,
        }
    }

    fn response(self, id: Uuid) -> StepResponse {
        StepResponse {
            id: id.to_string(),
            step_type: self.step_type.as_str().to_owned(),
            name: self.name,
            config: self.config,
            position: self.position,
        }
    }
}

/// `POST /workflows/:id/steps`: a step of a listed type (not TRIGGER) with its config.
pub async fn add_step(
    state: &AppState,
    project_id: Uuid,
    w: &Workflow,
    body: StepRequest,
) -> ApiResult<StepResponse> {
    let step = CheckedStep::of(state, project_id, body).await?;
    let step_id = state
        .store
        .add_step(project_id, w.id, &step.new_step(), state.engine.now())
        .await?
        .ok_or_else(not_found)?;
    Ok(step.response(step_id))
}

/// `PATCH /workflows/:id/steps/:stepId`: a step's name, config (checked for its type) or
/// position.
pub async fn change_step(
    state: &AppState,
    project_id: Uuid,
    w: &Workflow,
    step_id: Uuid,
    body: StepRequest,
) -> ApiResult<StepResponse> {
    let step_type = state
        .store
        .step_type(project_id, w.id, step_id)
        .await?
        .ok_or_else(step_not_found)?;
    if body
        .step_type
        .as_deref()
        .is_some_and(|t| StepType::parse(t) != Some(step_type))
    {
        return Err(ApiError::field(
            "type",
            "a step's type cannot change",
            "immutable",
        ));
    }
    let name = rules::step_name(body.name.as_deref())?;
    let config = match &body.config {
        Some(raw) if step_type != StepType::Trigger => {
            Some(step_config(state, project_id, step_type, raw).await?)
        }
        Some(_) => {
            return Err(ApiError::field(
                "config",
                "the TRIGGER step follows the workflow's triggerConfig (PATCH /workflows/{id})",
                "immutable",
            ));
        }
        None => None,
    };
    let position = rules::position(body.position.as_ref())?;
    let change = StepChange {
        name: body.name.as_ref().map(|_| name.as_deref()),
        config: config.as_ref().map(|(c, _)| c),
        position: position.as_ref(),
        template_id: config.as_ref().map(|(_, t)| *t),
    };
    if !state
        .store
        .update_step(project_id, w.id, step_id, &change, state.engine.now())
        .await?
    {
        return Err(step_not_found());
    }
    let updated = workflow_of(state, project_id, &w.id.to_string()).await?;
    let s = updated
        .steps
        .into_iter()
        .find(|s| s.id == step_id)
        .ok_or_else(step_not_found)?;
    Ok(s.into())
}

/// `DELETE /workflows/:id/steps/:stepId[?splice=true]`: the step and its transitions; with
/// `splice` the transitions into it are reconnected to the step its one outgoing transition
/// led to (409 when it has more than one).
pub async fn remove_step(
    state: &AppState,
    project_id: Uuid,
    w: &Workflow,
    step_id: Uuid,
    splice: bool,
) -> ApiResult<()> {
    match state
        .store
        .delete_step(project_id, w.id, step_id, splice, state.engine.now())
        .await?
    {
        StepDelete::Deleted => Ok(()),
        StepDelete::NotFound => Err(step_not_found()),
        StepDelete::IsTrigger => Err(ApiError::conflict("the TRIGGER step cannot be deleted")),
        StepDelete::CannotSplice => Err(ApiError::conflict(
            "the step has more than one outgoing transition: delete it without splice",
        )),
    }
}

/// `POST /workflows/:id/transitions`: a transition between two steps of the workflow, under
/// the graph rules (checked in the writing transaction).
pub async fn connect(
    state: &AppState,
    project_id: Uuid,
    w: &Workflow,
    body: TransitionRequest,
) -> ApiResult<TransitionResponse> {
    let mut errors = Vec::new();
    let mut step = |field: &str, raw: Option<&str>| match raw.and_then(parse_id) {
        Some(id) => Some(id),
        None => {
            errors.push(FieldError::new(
                field,
                format!("{field} must be a step id"),
                "invalid_id",
            ));
            None
        }
    };
    let from = step("fromStepId", body.from_step_id.as_deref());
    let to = step("toStepId", body.to_step_id.as_deref());
    let branch = match body.branch.as_deref().filter(|b| !b.is_empty()) {
        None => None,
        Some(b) => {
            let parsed = Branch::parse(b);
            if parsed.is_none() {
                errors.push(FieldError::new(
                    "branch",
                    "branch is yes, no or timeout",
                    "invalid_value",
                ));
            }
            parsed
        }
    };
    let (Some(from), Some(to)) = (from, to) else {
        return Err(ApiError::validation(errors));
    };
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    match state
        .store
        .add_transition(project_id, w.id, (from, to, branch), state.engine.now())
        .await?
    {
        TransitionAdd::Added(tid) => Ok(TransitionResponse {
            id: tid.to_string(),
            from_step_id: from.to_string(),
            to_step_id: to.to_string(),
            branch: branch.map(|b| b.as_str().to_owned()),
        }),
        TransitionAdd::NoWorkflow => Err(not_found()),
        TransitionAdd::Refused(e) => Err(refused(e)),
    }
}

/// `DELETE /workflows/:id/transitions/:transitionId`.
pub async fn disconnect(
    state: &AppState,
    project_id: Uuid,
    w: &Workflow,
    transition_id: Uuid,
) -> ApiResult<()> {
    if state
        .store
        .delete_transition(project_id, w.id, transition_id)
        .await?
    {
        Ok(())
    } else {
        Err(ApiError::not_found("NOT_FOUND", "Transition"))
    }
}

/// Adds a step after step `after` on its `branch` (the dashboard's "+"): the step is added
/// ([`add_step`]'s rules), then the transition that left `after` on that branch, if any, is
/// moved to leave the new step (on its first branch: `yes` after a CONDITION), and `after` is
/// connected to it, each under [`connect`]'s graph rules, all in one transaction. A refusal
/// changes nothing and is answered as the API answers it.
pub async fn insert_step(
    state: &AppState,
    project_id: Uuid,
    w: &Workflow,
    after: Uuid,
    branch: Option<Branch>,
    body: StepRequest,
) -> ApiResult<StepResponse> {
    if !w.steps.iter().any(|s| s.id == after) {
        return Err(step_not_found());
    }
    let step = CheckedStep::of(state, project_id, body).await?;
    let onward = step.step_type.branches().first().copied().flatten();
    match state
        .store
        .insert_step_after(
            project_id,
            w.id,
            &step.new_step(),
            (after, branch),
            onward,
            state.engine.now(),
        )
        .await?
    {
        StepInsert::Inserted(id) => Ok(step.response(id)),
        StepInsert::NoWorkflow => Err(not_found()),
        StepInsert::NoStep => Err(step_not_found()),
        StepInsert::Refused(e) => Err(refused(e)),
    }
}

/// `POST /workflows/:id/executions`: an execution for a contact started by hand, with
/// `context` as its event data (the workflow need not be enabled; `allowReentry` applies).
pub async fn start(
    state: &AppState,
    project_id: Uuid,
    w: &Workflow,
    body: StartRequest,
) -> ApiResult<Execution> {
    let mut errors = Vec::new();
    let contact = body.contact_id.as_deref().and_then(parse_id);
    if contact.is_none() {
        let message = "contactId must be a contact id";
        errors.push(FieldError::new("contactId", message, "invalid_id"));
    }
    let context = match body.context {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            let message = "context must be an object";
            errors.push(FieldError::new("context", message, "invalid_type"));
            Value::Null
        }
    };
    let Some(contact) = contact.filter(|_| errors.is_empty()) else {
        return Err(ApiError::validation(errors));
    };
    use herald_engine::workflows::dispatch::StartError;
    match state
        .engine
        .start_workflow(project_id, w.id, contact, &context)
        .await
    {
        Ok(e) => Ok(e),
        Err(StartError::WorkflowNotFound) => Err(not_found()),
        Err(StartError::ContactNotFound) => {
            Err(ApiError::not_found("CONTACT_NOT_FOUND", "Contact"))
        }
        Err(e @ (StartError::Active | StartError::Entered)) => {
            Err(ApiError::conflict(e.to_string()))
        }
        Err(StartError::Store(e)) => Err(e.into()),
    }
}
