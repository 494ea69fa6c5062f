//! The posts of a workflow's page, each through the API's own function: the trigger and
//! settings (`change`), enable / disable (`change`), start for a contact (`start`), add a
//! step at a "+" (`insert_step`), save a step (`change_step`), delete a step with its
//! successors reconnected (`remove_step` with splice). Success answers 303 to the page; a
//! refusal re-renders it with the messages beside their fields and on the step.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiError;
use herald_api::routes::workflows::{
    StartRequest, StepRequest, WorkflowRequest, change, change_step, insert_step, remove_step,
    start, workflow_of,
};
use herald_core::ids::parse_id;
use herald_core::workflow::{Branch, StepType};
use herald_store::workflows::{Step, Workflow};
use serde_json::json;

use super::graph::node_anchor;
use super::page::{Focus, Posted, Settings, render};
use super::step_form::StepForm;
use crate::filter_builder::Catalogue;
use crate::form::{Errors, FormData};
use crate::pages::not_found;
use crate::render::see_other;
use crate::session::ProjectPage;

async fn load(state: &AppState, page: &ProjectPage, id: &str) -> Result<Workflow, Response> {
    workflow_of(state, page.id(), id)
        .await
        .map_err(|e| not_found::api_error(&e))
}

/// The workflow and its step `step` (the 404 page when either is not the project's).
async fn load_step(
    state: &AppState,
    page: &ProjectPage,
    id: &str,
    step: &str,
) -> Result<(Workflow, Step), Response> {
    let w = load(state, page, id).await?;
    let found = parse_id(step).and_then(|sid| w.steps.iter().find(|s| s.id == sid).cloned());
    match found {
        Some(s) => Ok((w, s)),
        None => Err(not_found::api_error(&ApiError::not_found(
            "NOT_FOUND",
            "Step",
        ))),
    }
}

fn base(page: &ProjectPage, w: &Workflow) -> String {
    page.href(&format!("workflows/{}", w.id))
}

/// A refusal the page shows (4xx), or the error page (5xx).
async fn refused(
    state: &AppState,
    page: &ProjectPage,
    w: &Workflow,
    focus: Focus,
    mut posted: Posted,
    e: &ApiError,
) -> Response {
    if !e.status.is_client_error() {
        return not_found::api_error(e);
    }
    posted.errors.extend(Errors::from_api(e));
    render(state, page, w, focus, posted, "", e.status).await
}

/// `POST workflows/{id}/settings`: name, description, trigger event, re-entry.
pub async fn settings(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let w = match load(&state, &page, &id).await {
        Ok(w) => w,
        Err(r) => return r,
    };
    let f = FormData::parse(&body);
    let s = Settings {
        name: f.get("name"),
        description: f.get("description"),
        event_name: f.get("triggerConfig.eventName"),
        allow_reentry: f.get("allowReentry") == "true",
    };
    let req = WorkflowRequest {
        name: Some(s.name.clone()),
        description: Some(s.description.clone()),
        trigger_config: Some(json!({"eventName": s.event_name})),
        allow_reentry: Some(s.allow_reentry),
        ..WorkflowRequest::default()
    };
    let trigger = w.steps.iter().find(|s| s.step_type == StepType::Trigger);
    let focus = trigger.map_or(Focus::Nothing, |t| Focus::Step(t.id));
    match change(&state, page.id(), &w, req).await {
        Ok(_) => {
            let (at, anchor) = trigger.map_or((String::new(), String::new()), |t| {
                (format!("step={}&", t.id), format!("#{}", node_anchor(t.id)))
            });
            see_other(&format!("{}?{at}notice=saved{anchor}", base(&page, &w)))
        }
        Err(e) => {
            let posted = Posted {
                settings: Some(s),
                ..Posted::default()
            };
            refused(&state, &page, &w, focus, posted, &e).await
        }
    }
}

/// `POST workflows/{id}/enabled`: `enabled=true` or `false`.
pub async fn enabled(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let w = match load(&state, &page, &id).await {
        Ok(w) => w,
        Err(r) => return r,
    };
    let on = FormData::parse(&body).get("enabled") == "true";
    let req = WorkflowRequest {
        enabled: Some(on),
        ..WorkflowRequest::default()
    };
    match change(&state, page.id(), &w, req).await {
        Ok(_) => {
            let n = if on { "enabled" } else { "disabled" };
            see_other(&format!("{}?notice={n}", base(&page, &w)))
        }
        Err(e) if e.status.is_client_error() => {
            let posted = Posted {
                enable_error: Some(e.message.clone()),
                ..Posted::default()
            };
            render(&state, &page, &w, Focus::Nothing, posted, "", e.status).await
        }
        Err(e) => not_found::api_error(&e),
    }
}

/// `POST workflows/{id}/start`: `contact` (an address or a contact id) starts an execution.
pub async fn start_for(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let w = match load(&state, &page, &id).await {
        Ok(w) => w,
        Err(r) => return r,
    };
    let typed = FormData::parse(&body).get("contact").trim().to_owned();
    let contact_id = match parse_id(&typed) {
        Some(c) => Some(c.to_string()),
        None if typed.is_empty() => None,
        None => match state.store.contact_by_email(page.id(), &typed).await {
            Ok(Some(c)) => Some(c.id.to_string()),
            Ok(None) => {
                let posted = Posted {
                    start_error: Some(format!(
                        "No contact of this project has the address {typed}."
                    )),
                    start_contact: typed,
                    ..Posted::default()
                };
                return render(
                    &state,
                    &page,
                    &w,
                    Focus::Nothing,
                    posted,
                    "",
                    StatusCode::NOT_FOUND,
                )
                .await;
            }
            Err(e) => return not_found::api_error(&ApiError::from(e)),
        },
    };
    let req = StartRequest {
        contact_id,
        context: None,
    };
    match start(&state, page.id(), &w, req).await {
        Ok(e) => see_other(&format!(
            "{}?execution={}&notice=started",
            base(&page, &w),
            e.id
        )),
        Err(e) if e.status.is_client_error() => {
            let message = match e.errors.first() {
                Some(f) if f.field == "contactId" => {
                    "Type the address (or id) of one of this project's contacts.".to_owned()
                }
                _ => e.message.clone(),
            };
            let posted = Posted {
                start_error: Some(message),
                start_contact: typed,
                ..Posted::default()
            };
            render(&state, &page, &w, Focus::Nothing, posted, "", e.status).await
        }
        Err(e) => not_found::api_error(&e),
    }
}

async fn catalogue(state: &AppState, page: &ProjectPage) -> Result<Catalogue, Response> {
    match state.store.custom_fields(page.id()).await {
        Ok(custom) => Ok(Catalogue::for_condition(&custom)),
        Err(e) => Err(not_found::api_error(&ApiError::from(e))),
    }
}

/// `POST workflows/{id}/add`: `after`, `branch`, `type` and the type's fields; `do=refresh`
/// re-renders the form (a CONDITION's field changed), anything else adds the step.
pub async fn add(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let w = match load(&state, &page, &id).await {
        Ok(w) => w,
        Err(r) => return r,
    };
    let f = FormData::parse(&body);
    let Some(after) = parse_id(&f.get("after")) else {
        return not_found::api_error(&ApiError::not_found("NOT_FOUND", "Step"));
    };
    let branch = Branch::parse(&f.get("branch"));
    let t = StepType::parse(&f.get("type")).filter(|t| *t != StepType::Trigger);
    let form = StepForm::posted(&f);
    let focus = Focus::Add(after, branch, t);
    let posted = Posted {
        step: Some(form.clone()),
        ..Posted::default()
    };
    let Some(t) = t else {
        let e = ApiError::field("type", "Choose the kind of step to add.", "required");
        return refused(&state, &page, &w, focus, posted, &e).await;
    };
    if f.get("do") == "refresh" {
        return render(&state, &page, &w, focus, posted, "", StatusCode::OK).await;
    }
    let catalogue = match catalogue(&state, &page).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let req = StepRequest {
        step_type: Some(t.as_str().to_owned()),
        name: Some(form.name.clone()),
        config: Some(form.config(t, &catalogue)),
        position: None,
    };
    match insert_step(&state, page.id(), &w, after, branch, req).await {
        Ok(s) => see_other(&format!(
            "{}?step={}&notice=added#n-{}",
            base(&page, &w),
            s.id,
            s.id
        )),
        Err(e) => refused(&state, &page, &w, focus, posted, &e).await,
    }
}

/// `POST workflows/{id}/steps/{step}`: saves the step (`do=refresh` re-renders its form).
pub async fn save_step(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id, step)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    let (w, s) = match load_step(&state, &page, &id, &step).await {
        Ok(found) => found,
        Err(r) => return r,
    };
    let f = FormData::parse(&body);
    let form = StepForm::posted(&f);
    let focus = Focus::Step(s.id);
    let posted = Posted {
        step: Some(form.clone()),
        ..Posted::default()
    };
    if f.get("do") == "refresh" {
        return render(&state, &page, &w, focus, posted, "", StatusCode::OK).await;
    }
    let catalogue = match catalogue(&state, &page).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let req = StepRequest {
        step_type: None,
        name: Some(form.name.clone()),
        config: Some(form.config(s.step_type, &catalogue)),
        position: None,
    };
    match change_step(&state, page.id(), &w, s.id, req).await {
        Ok(_) => see_other(&format!(
            "{}?step={}&notice=saved#{}",
            base(&page, &w),
            s.id,
            node_anchor(s.id)
        )),
        Err(e) => refused(&state, &page, &w, focus, posted, &e).await,
    }
}

/// `POST workflows/{id}/steps/{step}/delete`: with `confirm=yes` deletes the step and
/// reconnects the steps before it to the one after it; without, the panel asks.
pub async fn delete_step(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id, step)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    let (w, s) = match load_step(&state, &page, &id, &step).await {
        Ok(found) => found,
        Err(r) => return r,
    };
    let focus = Focus::Step(s.id);
    if FormData::parse(&body).get("confirm") != "yes" {
        let posted = Posted {
            confirm_delete: true,
            ..Posted::default()
        };
        return render(&state, &page, &w, focus, posted, "", StatusCode::OK).await;
    }
    match remove_step(&state, page.id(), &w, s.id, true).await {
        Ok(()) => see_other(&format!("{}?notice=deleted", base(&page, &w))),
        Err(e) if e.status == StatusCode::CONFLICT && s.step_type != StepType::Trigger => {
            // The API's reason, in the page's words: which steps would lose their place.
            let why = ApiError::conflict(format!(
                "This step cannot be deleted while steps follow both of its branches: they \
                 cannot both take its place. Delete the steps of one branch first. ({})",
                e.message
            ));
            refused(&state, &page, &w, focus, Posted::default(), &why).await
        }
        Err(e) => refused(&state, &page, &w, focus, Posted::default(), &e).await,
    }
}
