//! `workflows`: every workflow of the project with its trigger, enabled state, steps and
//! execution counts, and the Create workflow form (`POST workflows`, the API's `create`).

use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::ApiResult;
use herald_api::routes::workflows::{WorkflowRequest, create};
use herald_core::workflow::ExecutionStatus;
use serde_json::{Value, json};

use crate::form::{Errors, FormData};
use crate::format::{ago, count};
use crate::pages::not_found;
use crate::render::{html, see_other};
use crate::session::ProjectPage;
use crate::shell::Shell;

pub struct Row {
    pub href: String,
    pub name: String,
    pub description: String,
    pub event: String,
    pub enabled: bool,
    pub steps: usize,
    pub active: String,
    pub total: String,
    pub updated: String,
    pub updated_exact: String,
}

#[derive(Template)]
#[template(path = "pages/workflows.html")]
struct ListPage {
    shell: Shell,
    base: String,
    rows: Vec<Row>,
    name: String,
    event: String,
    errors: Errors,
}

async fn rows(state: &AppState, page: &ProjectPage) -> ApiResult<Vec<Row>> {
    let base = page.href("workflows");
    let now = state.engine.now();
    let mut rows = Vec::new();
    for id in state.store.workflow_ids(page.id()).await? {
        let Some(w) = state.store.workflow(page.id(), id).await? else {
            continue;
        };
        let counts = state.store.execution_status_counts(page.id(), id).await?;
        let active: i64 = counts
            .iter()
            .filter(|(s, _)| s.is_active())
            .map(|(_, n)| n)
            .sum();
        let total: i64 = counts.iter().map(|(_, n)| n).sum();
        let failed = counts
            .iter()
            .find(|(s, _)| *s == ExecutionStatus::Failed)
            .map_or(0, |(_, n)| *n);
        let (updated, updated_exact) = ago(w.updated_at, now);
        rows.push(Row {
            href: format!("{base}/{}", w.id),
            event: w
                .trigger_config
                .get("eventName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            description: w.description.clone().unwrap_or_default(),
            enabled: w.enabled,
            steps: w.steps.len(),
            active: count(active),
            total: if failed > 0 {
                format!("{} ({} failed)", count(total), count(failed))
            } else {
                count(total)
            },
            updated,
            updated_exact,
            name: w.name,
        });
    }
    Ok(rows)
}

async fn render(
    state: &AppState,
    page: &ProjectPage,
    name: String,
    event: String,
    errors: Errors,
    status: StatusCode,
) -> Response {
    match rows(state, page).await {
        Ok(rows) => html(
            status,
            &ListPage {
                shell: page.shell("Workflows", "Workflows"),
                base: page.href("workflows"),
                rows,
                name,
                event,
                errors,
            },
        ),
        Err(e) => not_found::api_error(&e),
    }
}

/// `GET workflows`.
pub async fn page(State(state): State<AppState>, page: ProjectPage) -> Response {
    render(
        &state,
        &page,
        String::new(),
        String::new(),
        Errors::default(),
        StatusCode::OK,
    )
    .await
}

/// `POST workflows`: Create workflow (name and trigger event), through the API's `create`;
/// the new workflow's page next.
pub async fn create_submit(
    State(state): State<AppState>,
    page: ProjectPage,
    body: Bytes,
) -> Response {
    let f = FormData::parse(&body);
    let (name, event) = (f.get("name"), f.get("triggerConfig.eventName"));
    let req = WorkflowRequest {
        name: Some(name.clone()),
        trigger_config: Some(json!({"eventName": event})),
        ..WorkflowRequest::default()
    };
    match create(&state, page.id(), req).await {
        Ok(w) => see_other(&format!(
            "{}/{}?notice=created",
            page.href("workflows"),
            w.id
        )),
        Err(e) if e.status.is_client_error() => {
            let status = e.status;
            render(&state, &page, name, event, Errors::from_api(&e), status).await
        }
        Err(e) => not_found::api_error(&e),
    }
}
