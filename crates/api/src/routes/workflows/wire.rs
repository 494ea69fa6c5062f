//! Wire types of the Workflows resource (DECISIONS.md "Workflows" shapes).

use herald_core::time::iso;
use herald_store::workflows::executions::{Execution, ExecutionStep};
use herald_store::workflows::{Step, Transition, Workflow};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepResponse {
    pub id: String,
    /// TRIGGER, SEND_EMAIL, DELAY, WAIT_FOR_EVENT, CONDITION, WEBHOOK, UPDATE_CONTACT or EXIT.
    #[serde(rename = "type")]
    pub step_type: String,
    pub name: Option<String>,
    #[schema(value_type = Object)]
    pub config: Value,
    #[schema(value_type = Option<Object>)]
    pub position: Option<Value>,
}

impl From<Step> for StepResponse {
    fn from(s: Step) -> Self {
        Self {
            id: s.id.to_string(),
            step_type: s.step_type.as_str().to_owned(),
            name: s.name,
            config: s.config,
            position: s.position,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransitionResponse {
    pub id: String,
    pub from_step_id: String,
    pub to_step_id: String,
    /// `yes`/`no` after a CONDITION, `timeout` after a WAIT_FOR_EVENT, else null.
    pub branch: Option<String>,
}

impl From<Transition> for TransitionResponse {
    fn from(t: Transition) -> Self {
        Self {
            id: t.id.to_string(),
            from_step_id: t.from_step_id.to_string(),
            to_step_id: t.to_step_id.to_string(),
            branch: t.branch.map(|b| b.as_str().to_owned()),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowResponse {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// Always EVENT.
    pub trigger_type: String,
    /// `{eventName}`: the event (tracked or system, such as `contact.subscribed`) that starts it.
    #[schema(value_type = Object)]
    pub trigger_config: Value,
    pub enabled: bool,
    pub allow_reentry: bool,
    pub steps: Vec<StepResponse>,
    pub transitions: Vec<TransitionResponse>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Workflow> for WorkflowResponse {
    fn from(w: Workflow) -> Self {
        Self {
            id: w.id.to_string(),
            name: w.name,
            description: w.description,
            trigger_type: w.trigger_type,
            trigger_config: w.trigger_config,
            enabled: w.enabled,
            allow_reentry: w.allow_reentry,
            steps: w.steps.into_iter().map(Into::into).collect(),
            transitions: w.transitions.into_iter().map(Into::into).collect(),
            created_at: iso(w.created_at),
            updated_at: iso(w.updated_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct WorkflowList {
    pub workflows: Vec<WorkflowResponse>,
    pub total: usize,
}

/// Body of create and PATCH (on create `name` and `triggerConfig.eventName` are required).
#[derive(Deserialize, ToSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowRequest {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Only EVENT is accepted.
    pub trigger_type: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub trigger_config: Option<Value>,
    pub enabled: Option<bool>,
    pub allow_reentry: Option<bool>,
}

/// Body of adding (`type` and `config` required) and changing a step.
#[derive(Deserialize, ToSchema, Default)]
pub struct StepRequest {
    #[serde(rename = "type")]
    pub step_type: Option<String>,
    pub name: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub config: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub position: Option<Value>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransitionRequest {
    pub from_step_id: Option<String>,
    pub to_step_id: Option<String>,
    pub branch: Option<String>,
}

/// `POST /workflows/:id/executions`.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartRequest {
    pub contact_id: Option<String>,
    /// The execution's event data (`event.*` in templates and conditions).
    #[schema(value_type = Option<Object>)]
    pub context: Option<Value>,
}

/// `GET /workflows/webhook-secret`.
#[derive(Serialize, ToSchema)]
pub struct WebhookSecret {
    pub secret: String,
    /// The header each call's signature is in.
    pub header: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionResponse {
    pub id: String,
    pub workflow_id: String,
    pub contact_id: Option<String>,
    /// RUNNING, WAITING, COMPLETED, EXITED, FAILED or CANCELLED.
    pub status: String,
    pub current_step_id: Option<String>,
    #[schema(value_type = Object)]
    pub context: Value,
    pub started_at: String,
    pub completed_at: Option<String>,
    pub exit_reason: Option<String>,
    /// The step history (on the GET of one execution).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<ExecutionStepResponse>>,
}

impl From<Execution> for ExecutionResponse {
    fn from(e: Execution) -> Self {
        Self {
            id: e.id.to_string(),
            workflow_id: e.workflow_id.to_string(),
            contact_id: e.contact_id.map(|c| c.to_string()),
            status: e.status.as_str().to_owned(),
            current_step_id: e.current_step_id.map(|s| s.to_string()),
            context: e.context,
            started_at: iso(e.started_at),
            completed_at: e.completed_at.map(iso),
            exit_reason: e.exit_reason,
            steps: None,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionStepResponse {
    pub id: String,
    pub step_id: Option<String>,
    pub status: String,
    #[schema(value_type = Option<Object>)]
    pub output: Option<Value>,
    pub started_at: String,
    pub completed_at: Option<String>,
}

impl From<ExecutionStep> for ExecutionStepResponse {
    fn from(s: ExecutionStep) -> Self {
        Self {
            id: s.id.to_string(),
            step_id: s.step_id.map(|i| i.to_string()),
            status: s.status.as_str().to_owned(),
            output: s.output.map(|o| o.0),
            started_at: iso(s.started_at),
            completed_at: s.completed_at.map(iso),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ExecutionList {
    pub executions: Vec<ExecutionResponse>,
}

#[derive(Serialize, ToSchema)]
pub struct CancelledCount {
    pub cancelled: u64,
}

/// One field a CONDITION step can test.
#[derive(Serialize, ToSchema)]
pub struct ConditionField {
    pub field: String,
    /// string, number, boolean, date or object.
    #[serde(rename = "type")]
    pub field_type: String,
}

#[derive(Serialize, ToSchema)]
pub struct WorkflowFields {
    /// `contact.email`, `contact.subscribed` and `data.<key>` for each custom field.
    pub contact: Vec<ConditionField>,
    /// The event side: `event.<key>` names any key of the triggering event's data (listed as
    /// the pattern `event.<key>`, type any).
    pub event: Vec<ConditionField>,
}
