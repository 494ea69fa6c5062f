//! The Workflows resource (SPEC.md "Workflows", DECISIONS.md "Workflows"): the record (created
//! with `triggerType: EVENT`, `enabled: false` and its TRIGGER step), steps with configs
//! checked per type (`herald_core::workflow::check_config`), transitions under the graph rules
//! (`herald_core::workflow::Graph`, checked inside the writing transaction), step deletion
//! with `splice=true`, `GET /workflows/fields`, and executions as records: list, get with
//! step history, cancel one, cancel all; a workflow with active executions is not deleted.
//!
//! Executions run in the engine (`herald_engine::workflows`): an enabled workflow starts one
//! per triggering event, and `POST /workflows/:id/executions` starts one by hand.
//! `GET /workflows/webhook-secret` shows the key WEBHOOK calls are signed with.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use herald_core::workflow::ExecutionStatus;
use herald_store::workflows::Workflow;
use herald_store::workflows::executions::WorkflowDelete;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::ProjectAuth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, path_id};
use crate::query::{Bounded, LaterQuery, text};
use crate::state::AppState;

mod edit;
mod rules;
mod wire;

pub use edit::{
    add_step as add_workflow_step, change, change_step, connect, create, disconnect, insert_step,
    remove_step, start, workflow_of,
};

pub use wire::{
    CancelledCount, ConditionField, ExecutionList, ExecutionResponse, ExecutionStepResponse,
    StartRequest, StepRequest, StepResponse, TransitionRequest, TransitionResponse, WebhookSecret,
    WorkflowFields, WorkflowList, WorkflowRequest, WorkflowResponse,
};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_workflows, create_workflow))
        .routes(routes!(workflow_fields))
        .routes(routes!(webhook_secret))
        .routes(routes!(get_workflow, patch_workflow, delete_workflow))
        .routes(routes!(add_step))
        .routes(routes!(patch_step, delete_step))
        .routes(routes!(add_transition))
        .routes(routes!(delete_transition))
        .routes(routes!(list_executions, start_execution))
        .routes(routes!(get_execution, cancel_execution))
        .routes(routes!(cancel_all_executions))
}

fn not_found() -> ApiError {
    ApiError::not_found("WORKFLOW_NOT_FOUND", "Workflow")
}

async fn load(state: &AppState, auth: &ProjectAuth, raw: &str) -> ApiResult<Workflow> {
    edit::workflow_of(state, auth.id(), raw).await
}

/// All workflows of the project, newest first, with their steps and transitions.
#[utoipa::path(get, path = "/workflows", tag = "workflows",
    responses((status = 200, body = WorkflowList)))]
async fn list_workflows(
    State(state): State<AppState>,
    auth: ProjectAuth,
) -> ApiResult<Json<WorkflowList>> {
    let mut workflows = Vec::new();
    for id in state.store.workflow_ids(auth.id()).await? {
        if let Some(w) = state.store.workflow(auth.id(), id).await? {
            workflows.push(WorkflowResponse::from(w));
        }
    }
    Ok(Json(WorkflowList {
        total: workflows.len(),
        workflows,
    }))
}

/// Creates a disabled EVENT workflow with its TRIGGER step.
#[utoipa::path(post, path = "/workflows", tag = "workflows", request_body = WorkflowRequest,
    responses((status = 201, body = WorkflowResponse), (status = 422)))]
async fn create_workflow(
    State(state): State<AppState>,
    auth: ProjectAuth,
    ApiJson(body): ApiJson<WorkflowRequest>,
) -> ApiResult<(StatusCode, Json<WorkflowResponse>)> {
    let w = edit::create(&state, auth.id(), body).await?;
    Ok((StatusCode::CREATED, Json(w.into())))
}

/// The fields a CONDITION step can test.
#[utoipa::path(get, path = "/workflows/fields", tag = "workflows",
    responses((status = 200, body = WorkflowFields)))]
async fn workflow_fields(
    State(state): State<AppState>,
    auth: ProjectAuth,
) -> ApiResult<Json<WorkflowFields>> {
    let field = |f: String, t: &str| ConditionField {
        field: f,
        field_type: t.to_owned(),
    };
    let mut contact = vec![
        field("contact.email".into(), "string"),
        field("contact.subscribed".into(), "boolean"),
    ];
    for f in state.store.custom_fields(auth.id()).await? {
        contact.push(field(format!("data.{}", f.key), f.field_type.as_str()));
    }
    Ok(Json(WorkflowFields {
        contact,
        event: vec![field("event.<key>".into(), "any")],
    }))
}

/// One workflow with its steps and transitions.
#[utoipa::path(get, path = "/workflows/{id}", tag = "workflows", params(("id" = String, Path)),
    responses((status = 200, body = WorkflowResponse), (status = 404)))]
async fn get_workflow(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<WorkflowResponse>> {
    Ok(Json(load(&state, &auth, &id).await?.into()))
}

/// Changes the metadata, trigger, `enabled` or `allowReentry`.
#[utoipa::path(patch, path = "/workflows/{id}", tag = "workflows", params(("id" = String, Path)),
    request_body = WorkflowRequest,
    responses((status = 200, body = WorkflowResponse), (status = 404), (status = 422)))]
async fn patch_workflow(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<WorkflowRequest>,
) -> ApiResult<Json<WorkflowResponse>> {
    let w = load(&state, &auth, &id).await?;
    Ok(Json(
        edit::change(&state, auth.id(), &w, body).await?.into(),
    ))
}

/// Deletes a workflow; 409 while executions are RUNNING or WAITING.
#[utoipa::path(delete, path = "/workflows/{id}", tag = "workflows", params(("id" = String, Path)),
    responses((status = 204), (status = 404), (status = 409)))]
async fn delete_workflow(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let w = load(&state, &auth, &id).await?;
    match state.store.delete_workflow(auth.id(), w.id).await? {
        WorkflowDelete::Deleted => Ok(StatusCode::NO_CONTENT),
        WorkflowDelete::NotFound => Err(not_found()),
        WorkflowDelete::ActiveExecutions(n) => Err(ApiError::conflict(format!(
            "the workflow has {n} running or waiting executions; cancel them first \
             (POST /workflows/{}/executions/cancel-all)",
            w.id
        ))),
    }
}

/// Adds a step of a listed type (not TRIGGER) with its config.
#[utoipa::path(post, path = "/workflows/{id}/steps", tag = "workflows", params(("id" = String, Path)),
    request_body = StepRequest,
    responses((status = 201, body = StepResponse), (status = 404), (status = 422)))]
async fn add_step(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<StepRequest>,
) -> ApiResult<(StatusCode, Json<StepResponse>)> {
    let w = load(&state, &auth, &id).await?;
    let step = edit::add_step(&state, auth.id(), &w, body).await?;
    Ok((StatusCode::CREATED, Json(step)))
}

/// Changes a step's name, config (checked for its type) or position.
#[utoipa::path(patch, path = "/workflows/{id}/steps/{stepId}", tag = "workflows",
    params(("id" = String, Path), ("stepId" = String, Path)), request_body = StepRequest,
    responses((status = 200, body = StepResponse), (status = 404), (status = 422)))]
async fn patch_step(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path((id, step)): Path<(String, String)>,
    ApiJson(body): ApiJson<StepRequest>,
) -> ApiResult<Json<StepResponse>> {
    let w = load(&state, &auth, &id).await?;
    let step_id = path_id(&step, "NOT_FOUND", "Step")?;
    Ok(Json(
        edit::change_step(&state, auth.id(), &w, step_id, body).await?,
    ))
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct DeleteStepQuery {
    /// true (or 1): reconnect the steps before it to the one after it
    #[param(value_type = Option<bool>)]
    splice: Option<String>,
}

/// Deletes a step and its transitions; `splice=true` reconnects the steps before it to the
/// one after it.
#[utoipa::path(delete, path = "/workflows/{id}/steps/{stepId}", tag = "workflows",
    params(("id" = String, Path), ("stepId" = String, Path), DeleteStepQuery),
    responses((status = 204), (status = 404), (status = 409), (status = 422)))]
async fn delete_step(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path((id, step)): Path<(String, String)>,
    q: LaterQuery<DeleteStepQuery>,
) -> ApiResult<StatusCode> {
    let w = load(&state, &auth, &id).await?;
    let step_id = path_id(&step, "NOT_FOUND", "Step")?;
    let q = q.parse()?;
    let splice = match q.splice.as_deref().unwrap_or("false") {
        "true" | "1" => true,
        "false" | "0" | "" => false,
        _ => {
            return Err(ApiError::field(
                "splice",
                "splice is true or false",
                "invalid_value",
            ));
        }
    };
    edit::remove_step(&state, auth.id(), &w, step_id, splice).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Adds a transition between two steps of the workflow, under the graph rules.
#[utoipa::path(post, path = "/workflows/{id}/transitions", tag = "workflows",
    params(("id" = String, Path)), request_body = TransitionRequest,
    responses((status = 201, body = TransitionResponse), (status = 404), (status = 422)))]
async fn add_transition(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<TransitionRequest>,
) -> ApiResult<(StatusCode, Json<TransitionResponse>)> {
    let w = load(&state, &auth, &id).await?;
    let t = edit::connect(&state, auth.id(), &w, body).await?;
    Ok((StatusCode::CREATED, Json(t)))
}

/// Deletes a transition.
#[utoipa::path(delete, path = "/workflows/{id}/transitions/{transitionId}", tag = "workflows",
    params(("id" = String, Path), ("transitionId" = String, Path)),
    responses((status = 204), (status = 404)))]
async fn delete_transition(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path((id, transition)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let w = load(&state, &auth, &id).await?;
    let tid = path_id(&transition, "NOT_FOUND", "Transition")?;
    edit::disconnect(&state, auth.id(), &w, tid).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ExecutionListQuery {
    /// RUNNING, WAITING, COMPLETED, EXITED, FAILED or CANCELLED
    status: Option<String>,
    #[serde(default)]
    #[param(inline)]
    limit: Bounded<1, 100, 50>,
}

/// The workflow's executions, newest first, optionally of one status.
#[utoipa::path(get, path = "/workflows/{id}/executions", tag = "workflows",
    params(("id" = String, Path), ExecutionListQuery),
    responses((status = 200, body = ExecutionList), (status = 404), (status = 422)))]
async fn list_executions(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    q: LaterQuery<ExecutionListQuery>,
) -> ApiResult<Json<ExecutionList>> {
    let w = load(&state, &auth, &id).await?;
    let q = q.parse()?;
    let status = match text(&q.status) {
        None => None,
        Some(s) => Some(ExecutionStatus::parse(s).ok_or_else(|| {
            ApiError::field(
                "status",
                format!("status must be {}", ExecutionStatus::EXPECTED),
                "invalid_value",
            )
        })?),
    };
    let limit = q.limit.get();
    let executions = state
        .store
        .list_executions(auth.id(), w.id, status, limit)
        .await?;
    Ok(Json(ExecutionList {
        executions: executions.into_iter().map(Into::into).collect(),
    }))
}

/// Starts an execution for a contact by hand, with `context` as its event data (the
/// workflow need not be enabled; `allowReentry` applies as to events): 201 with the execution,
/// 404 for an unknown contact, 409 when the contact may not enter now.
#[utoipa::path(post, path = "/workflows/{id}/executions", tag = "workflows",
    params(("id" = String, Path)), request_body = StartRequest,
    responses((status = 201, body = ExecutionResponse), (status = 404), (status = 409),
        (status = 422)))]
async fn start_execution(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<StartRequest>,
) -> ApiResult<(StatusCode, Json<ExecutionResponse>)> {
    let w = load(&state, &auth, &id).await?;
    let e = edit::start(&state, auth.id(), &w, body).await?;
    Ok((StatusCode::CREATED, Json(e.into())))
}

/// The project's signing secret for WEBHOOK calls: each call carries `Herald-Signature:
/// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">` under it (docs/workflows.md).
#[utoipa::path(get, path = "/workflows/webhook-secret", tag = "workflows",
    responses((status = 200, body = WebhookSecret)))]
async fn webhook_secret(State(state): State<AppState>, auth: ProjectAuth) -> Json<WebhookSecret> {
    Json(WebhookSecret {
        secret: state.engine.webhook_secret(auth.id()),
        header: herald_core::workflow_run::SIGNATURE_HEADER.to_owned(),
    })
}

async fn load_execution(
    state: &AppState,
    auth: &ProjectAuth,
    id: &str,
    execution: &str,
) -> ApiResult<(Workflow, herald_store::workflows::executions::Execution)> {
    let w = load(state, auth, id).await?;
    let eid = path_id(execution, "NOT_FOUND", "Execution")?;
    let e = state
        .store
        .execution(auth.id(), w.id, eid)
        .await?
        .ok_or_else(|| ApiError::not_found("NOT_FOUND", "Execution"))?;
    Ok((w, e))
}

/// One execution with its step history.
#[utoipa::path(get, path = "/workflows/{id}/executions/{executionId}", tag = "workflows",
    params(("id" = String, Path), ("executionId" = String, Path)),
    responses((status = 200, body = ExecutionResponse), (status = 404)))]
async fn get_execution(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path((id, execution)): Path<(String, String)>,
) -> ApiResult<Json<ExecutionResponse>> {
    let (_, e) = load_execution(&state, &auth, &id, &execution).await?;
    let steps = state.store.execution_steps(e.id).await?;
    let mut out = ExecutionResponse::from(e);
    out.steps = Some(steps.into_iter().map(Into::into).collect());
    Ok(Json(out))
}

/// Cancels a RUNNING or WAITING execution (409 for one that already ended).
#[utoipa::path(delete, path = "/workflows/{id}/executions/{executionId}", tag = "workflows",
    params(("id" = String, Path), ("executionId" = String, Path)),
    responses((status = 200, body = ExecutionResponse), (status = 404), (status = 409)))]
async fn cancel_execution(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path((id, execution)): Path<(String, String)>,
) -> ApiResult<Json<ExecutionResponse>> {
    let (w, e) = load_execution(&state, &auth, &id, &execution).await?;
    let n = state
        .store
        .cancel_executions(auth.id(), w.id, Some(e.id), state.engine.now())
        .await?;
    if n == 0 {
        return Err(ApiError::conflict(format!(
            "the execution is {}: only a running or waiting one can be cancelled",
            e.status.as_str()
        )));
    }
    let (_, e) = load_execution(&state, &auth, &id, &execution).await?;
    Ok(Json(e.into()))
}

/// Cancels every RUNNING and WAITING execution of the workflow.
#[utoipa::path(post, path = "/workflows/{id}/executions/cancel-all", tag = "workflows",
    params(("id" = String, Path)),
    responses((status = 200, body = CancelledCount), (status = 404)))]
async fn cancel_all_executions(
    State(state): State<AppState>,
    auth: ProjectAuth,
    Path(id): Path<String>,
) -> ApiResult<Json<CancelledCount>> {
    let w = load(&state, &auth, &id).await?;
    let cancelled = state
        .store
        .cancel_executions(auth.id(), w.id, None, state.engine.now())
        .await?;
    Ok(Json(CancelledCount { cancelled }))
}
