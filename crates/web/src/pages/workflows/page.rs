//! `workflows/{id}`: the workflow's graph, the side panel (a step's form, the trigger and
//! settings, a step to add, an execution's path) and the executions. The query chooses the
//! panel: `?step=<id>`, `?add=<step>&branch=<b>[&type=<TYPE>]`, `?execution=<id>`.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use herald_api::AppState;
use herald_api::error::{ApiError, ApiResult};
use herald_api::routes::workflows::workflow_of;
use herald_core::ids::{Uuid, parse_id};
use herald_core::workflow::{Branch, StepType};
use herald_store::workflows::Workflow;
use serde::Deserialize;
use serde_json::Value;

use super::graph::{self, GraphView, Marks};
use super::step_form::StepForm;
use super::{status_badge, type_hint, type_words};
use crate::filter_builder::{Catalogue, Input};
use crate::form::Errors;
use crate::format::ago;
use crate::pages::not_found;
use crate::render::html;
use crate::session::ProjectPage;
use crate::shell::Shell;

/// Executions listed under the graph (newest first).
const EXECUTIONS_SHOWN: u32 = 50;

#[derive(Deserialize, Default)]
pub struct PageQuery {
    #[serde(default)]
    step: String,
    #[serde(default)]
    add: String,
    #[serde(default)]
    branch: String,
    #[serde(rename = "type", default)]
    step_type: String,
    #[serde(default)]
    execution: String,
    #[serde(default)]
    notice: String,
}

/// What the side panel shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Focus {
    Nothing,
    Step(Uuid),
    /// The "+" after a step on a branch: the type chooser, or a type's form.
    Add(Uuid, Option<Branch>, Option<StepType>),
    Execution(Uuid),
}

/// A posted form coming back: its values, and the API's refusal.
#[derive(Default)]
pub struct Posted {
    pub step: Option<StepForm>,
    pub settings: Option<Settings>,
    pub errors: Errors,
    /// Delete was asked without the script's dialog: the panel asks again.
    pub confirm_delete: bool,
    pub start_contact: String,
    pub start_error: Option<String>,
    pub enable_error: Option<String>,
}

/// The trigger's panel: the workflow's own fields.
#[derive(Clone, Default)]
pub struct Settings {
    pub name: String,
    pub description: String,
    pub event_name: String,
    pub allow_reentry: bool,
}

impl Settings {
    fn of(w: &Workflow) -> Settings {
        Settings {
            name: w.name.clone(),
            description: w.description.clone().unwrap_or_default(),
            event_name: w
                .trigger_config
                .get("eventName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            allow_reentry: w.allow_reentry,
        }
    }
}

pub struct Choice {
    pub value: String,
    pub label: String,
    pub chosen: bool,
}

pub struct ChoiceGroup {
    pub label: &'static str,
    pub choices: Vec<Choice>,
}

/// A CONDITION's row: the builder's field list and operators.
pub struct ConditionView {
    pub fields: Vec<ChoiceGroup>,
    pub operators: Vec<Choice>,
    /// none, number, boolean, date or text.
    pub input: &'static str,
}

pub struct HistoryRow {
    pub step: String,
    pub status: String,
    pub when: String,
    pub when_exact: String,
    pub note: String,
}

pub struct ExecutionView {
    pub contact: String,
    pub contact_href: Option<String>,
    pub status_words: &'static str,
    pub status_tone: &'static str,
    pub exit_reason: String,
    pub history: Vec<HistoryRow>,
}

pub struct PanelView {
    /// intro, step, trigger, choose, add or execution.
    pub kind: &'static str,
    pub title: String,
    pub action: String,
    pub step_type: &'static str,
    pub type_words: &'static str,
    pub form: StepForm,
    pub settings: Settings,
    pub errors: Errors,
    pub after: String,
    pub branch: String,
    pub choices: Vec<(&'static str, &'static str, &'static str)>,
    pub templates: Vec<Choice>,
    pub condition: Option<ConditionView>,
    pub confirm_delete: bool,
    pub delete_action: String,
    pub execution: Option<ExecutionView>,
    pub close: String,
}

pub struct ExecutionRow {
    pub href: String,
    pub contact: String,
    pub status_words: &'static str,
    pub status_tone: &'static str,
    pub at: String,
    pub started: String,
    pub started_exact: String,
    pub selected: bool,
}

#[derive(Template)]
#[template(path = "pages/workflow.html")]
struct WorkflowPage {
    shell: Shell,
    base: String,
    list_href: String,
    name: String,
    description: String,
    enabled: bool,
    event: String,
    steps_words: String,
    graph: GraphView,
    panel: PanelView,
    executions: Vec<ExecutionRow>,
    start_contact: String,
    start_error: Option<String>,
    enable_error: Option<String>,
    notice: &'static str,
}

fn notice_words(n: &str) -> &'static str {
    match n {
        "created" => "Workflow created. Add its first step with the + under the trigger.",
        "saved" => "Saved.",
        "added" => "Step added.",
        "deleted" => "Step deleted.",
        "enabled" => "Enabled: the workflow now starts for every contact who triggers it.",
        "disabled" => "Disabled: no new executions start; running ones go on.",
        "started" => "Execution started.",
        _ => "",
    }
}

/// `GET workflows/{id}`.
pub async fn page(
    State(state): State<AppState>,
    page: ProjectPage,
    Path((_, id)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Response {
    let w = match workflow_of(&state, page.id(), &id).await {
        Ok(w) => w,
        Err(e) => return not_found::api_error(&e),
    };
    let focus = focus_of(&q);
    render(
        &state,
        &page,
        &w,
        focus,
        Posted::default(),
        notice_words(&q.notice),
        StatusCode::OK,
    )
    .await
}

fn focus_of(q: &PageQuery) -> Focus {
    if let Some(s) = parse_id(&q.step) {
        return Focus::Step(s);
    }
    if let Some(after) = parse_id(&q.add) {
        let branch = Branch::parse(&q.branch);
        let t = StepType::parse(&q.step_type).filter(|t| *t != StepType::Trigger);
        return Focus::Add(after, branch, t);
    }
    if let Some(e) = parse_id(&q.execution) {
        return Focus::Execution(e);
    }
    Focus::Nothing
}

/// The page of `w` with the panel on `focus`, a posted form's values and refusal, `status`.
pub async fn render(
    state: &AppState,
    page: &ProjectPage,
    w: &Workflow,
    focus: Focus,
    posted: Posted,
    notice: &'static str,
    status: StatusCode,
) -> Response {
    match build(state, page, w, focus, posted, notice).await {
        Ok(p) => html(status, &p),
        Err(e) => not_found::api_error(&e),
    }
}

async fn build(
    state: &AppState,
    page: &ProjectPage,
    w: &Workflow,
    focus: Focus,
    posted: Posted,
    notice: &'static str,
) -> ApiResult<WorkflowPage> {
    let base = page.href(&format!("workflows/{}", w.id));
    let custom = state.store.custom_fields(page.id()).await?;
    let catalogue = Catalogue::for_condition(&custom);
    let templates: HashMap<String, String> =
        herald_api::routes::templates::template_list(state, page.id(), 1, 100, None, None)
            .await?
            .templates
            .into_iter()
            .map(|t| (t.id, t.name))
            .collect();
    let mut marks = Marks {
        active: state
            .store
            .active_executions_by_step(page.id(), w.id)
            .await?
            .into_iter()
            .collect(),
        ..Marks::default()
    };
    // A SEND_EMAIL naming a template beyond the first 100: look it up before calling it gone.
    let mut templates = templates;
    for s in w
        .steps
        .iter()
        .filter(|s| s.step_type == StepType::SendEmail)
    {
        let id = s.config["templateId"].as_str().unwrap_or_default();
        if !templates.contains_key(id)
            && let Some(tid) = parse_id(id)
            && let Some(t) = state.store.template(page.id(), tid).await?
        {
            templates.insert(id.to_owned(), t.name);
        }
    }
    marks.templates = templates;
    let name_of = |id: Uuid| {
        w.steps
            .iter()
            .find(|s| s.id == id)
            .map(|s| {
                s.name
                    .clone()
                    .unwrap_or_else(|| type_words(s.step_type).to_owned())
            })
            .unwrap_or_default()
    };
    let mut panel = PanelView {
        kind: "intro",
        title: "Steps".to_owned(),
        action: String::new(),
        step_type: "",
        type_words: "",
        form: StepForm::new_step(),
        settings: posted.settings.clone().unwrap_or_else(|| Settings::of(w)),
        errors: Errors::default(),
        after: String::new(),
        branch: String::new(),
        choices: Vec::new(),
        templates: Vec::new(),
        condition: None,
        confirm_delete: posted.confirm_delete,
        delete_action: String::new(),
        execution: None,
        close: base.clone(),
    };
    let template_choices = |chosen: &str| {
        let mut list: Vec<Choice> = marks
            .templates
            .iter()
            .map(|(id, name)| Choice {
                value: id.clone(),
                label: name.clone(),
                chosen: id == chosen,
            })
            .collect();
        list.sort_by_key(|a| a.label.to_lowercase());
        list
    };
    match focus {
        Focus::Nothing => {}
        Focus::Step(id) => {
            let Some(step) = w.steps.iter().find(|s| s.id == id) else {
                return Err(ApiError::not_found("NOT_FOUND", "Step"));
            };
            marks.selected = Some(id);
            panel.action = format!("{base}/steps/{id}");
            panel.delete_action = format!("{base}/steps/{id}/delete");
            panel.step_type = step.step_type.as_str();
            panel.type_words = type_words(step.step_type);
            panel.title = name_of(id);
            if step.step_type == StepType::Trigger {
                panel.kind = "trigger";
                panel.action = format!("{base}/settings");
            } else {
                panel.kind = "step";
                panel.form = posted
                    .step
                    .clone()
                    .unwrap_or_else(|| StepForm::from_step(step.name.as_deref(), &step.config));
                panel.templates = template_choices(&panel.form.template_id);
                if step.step_type == StepType::SendEmail
                    && !panel.form.template_id.is_empty()
                    && !marks.templates.contains_key(&panel.form.template_id)
                {
                    panel.errors.push(
                        "config.templateId",
                        "This template was deleted: choose another and save.",
                    );
                }
            }
        }
        Focus::Add(after, branch, t) => {
            if !w.steps.iter().any(|s| s.id == after) {
                return Err(ApiError::not_found("NOT_FOUND", "Step"));
            }
            marks.adding = Some((after, branch));
            panel.after = after.to_string();
            panel.branch = branch.map(|b| b.as_str().to_owned()).unwrap_or_default();
            let on = match branch {
                Some(Branch::Yes) => " (yes)",
                Some(Branch::No) => " (no)",
                Some(Branch::Timeout) => " (timeout)",
                None => "",
            };
            panel.title = format!("Add a step after {}{on}", name_of(after));
            panel.action = format!("{base}/add");
            match t {
                None => {
                    panel.kind = "choose";
                    panel.choices = StepType::ALL
                        .into_iter()
                        .filter(|t| *t != StepType::Trigger)
                        .map(|t| (t.as_str(), type_words(t), type_hint(t)))
                        .collect();
                }
                Some(t) => {
                    panel.kind = "add";
                    panel.step_type = t.as_str();
                    panel.type_words = type_words(t);
                    panel.form = posted.step.clone().unwrap_or_else(StepForm::new_step);
                    panel.templates = template_choices(&panel.form.template_id);
                }
            }
        }
        Focus::Execution(eid) => {
            let Some(e) = state.store.execution(page.id(), w.id, eid).await? else {
                return Err(ApiError::not_found("NOT_FOUND", "Execution"));
            };
            let history = state.store.execution_steps(e.id).await?;
            marks.path = history.iter().filter_map(|h| h.step_id).collect();
            marks.path.dedup();
            if e.status.is_active() {
                marks.current = e.current_step_id;
            }
            let now = state.engine.now();
            let (contact, contact_href) = contact_words(state, page, e.contact_id).await?;
            let (status_words, status_tone) = status_badge(e.status);
            panel.kind = "execution";
            panel.title = "Execution".to_owned();
            panel.execution = Some(ExecutionView {
                contact,
                contact_href,
                status_words,
                status_tone,
                exit_reason: e.exit_reason.clone().unwrap_or_default(),
                history: history
                    .iter()
                    .map(|h| {
                        let (when, when_exact) = ago(h.started_at, now);
                        HistoryRow {
                            step: h
                                .step_id
                                .map(name_of)
                                .unwrap_or_else(|| "A deleted step".into()),
                            status: h.status.as_str().to_lowercase().replace('_', " "),
                            when,
                            when_exact,
                            note: h
                                .output
                                .as_ref()
                                .and_then(|o| {
                                    o.0.get("reason")
                                        .or_else(|| o.0.get("error"))
                                        .or_else(|| o.0.get("branch"))
                                })
                                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                                .unwrap_or_default(),
                        }
                    })
                    .collect(),
            });
        }
    }
    if matches!(panel.kind, "step" | "add")
        && let Some(t) = StepType::parse(panel.step_type)
        && t == StepType::Condition
    {
        panel.form.fit_condition(&catalogue);
        panel.condition = Some(condition_view(&panel.form, &catalogue));
    }
    // The refusal: on its fields, and on the step in the graph.
    if let (Focus::Step(id), Some(m)) = (focus, posted.errors.all().first()) {
        marks.refused = Some((id, (*m).to_owned()));
    }
    panel.errors.extend(posted.errors);
    let graph = graph::view(w, &marks, &catalogue, &base);
    let executions = execution_rows(state, page, w, &base, focus, &name_of).await?;
    let steps = w.steps.len();
    Ok(WorkflowPage {
        shell: page.shell("Workflows", &w.name),
        list_href: page.href("workflows"),
        name: w.name.clone(),
        description: w.description.clone().unwrap_or_default(),
        enabled: w.enabled,
        event: Settings::of(w).event_name,
        steps_words: if steps == 1 {
            "1 step".to_owned()
        } else {
            format!("{steps} steps")
        },
        graph,
        panel,
        executions,
        start_contact: posted.start_contact,
        start_error: posted.start_error,
        enable_error: posted.enable_error,
        notice,
        base,
    })
}

fn condition_view(form: &StepForm, catalogue: &Catalogue) -> ConditionView {
    let kind = catalogue.kind_of(&form.cond_field);
    ConditionView {
        fields: catalogue
            .groups
            .iter()
            .map(|g| ChoiceGroup {
                label: g.label,
                choices: g
                    .choices
                    .iter()
                    .map(|c| Choice {
                        value: c.value.clone(),
                        label: c.label.clone(),
                        chosen: c.value == form.cond_field,
                    })
                    .collect(),
            })
            .collect(),
        operators: kind
            .condition_operators()
            .into_iter()
            .map(|(op, words)| Choice {
                value: op.to_owned(),
                label: words.to_owned(),
                chosen: op == form.cond_operator,
            })
            .collect(),
        input: match kind.input(&form.cond_operator) {
            Input::None => "none",
            Input::Number => "number",
            Input::Boolean => "boolean",
            Input::Date => "date",
            Input::Text | Input::Span => "text",
        },
    }
}

async fn contact_words(
    state: &AppState,
    page: &ProjectPage,
    id: Option<Uuid>,
) -> ApiResult<(String, Option<String>)> {
    Ok(match id {
        None => ("A deleted contact".to_owned(), None),
        Some(id) => match state.store.contact(page.id(), id).await? {
            Some(c) => (c.email, Some(page.href(&format!("contacts/{id}")))),
            None => ("A deleted contact".to_owned(), None),
        },
    })
}

async fn execution_rows(
    state: &AppState,
    page: &ProjectPage,
    w: &Workflow,
    base: &str,
    focus: Focus,
    name_of: &impl Fn(Uuid) -> String,
) -> ApiResult<Vec<ExecutionRow>> {
    let list = state
        .store
        .list_executions(page.id(), w.id, None, EXECUTIONS_SHOWN)
        .await?;
    let now = state.engine.now();
    let mut emails: HashMap<Uuid, String> = HashMap::new();
    let mut rows = Vec::with_capacity(list.len());
    for e in list {
        let contact = match e.contact_id {
            Some(c) => match emails.get(&c) {
                Some(m) => m.clone(),
                None => {
                    let m = contact_words(state, page, Some(c)).await?.0;
                    emails.insert(c, m.clone());
                    m
                }
            },
            None => "A deleted contact".to_owned(),
        };
        let (status_words, status_tone) = status_badge(e.status);
        let (started, started_exact) = ago(e.started_at, now);
        rows.push(ExecutionRow {
            href: format!("{base}?execution={}", e.id),
            contact,
            status_words,
            status_tone,
            at: match (e.status.is_active(), e.current_step_id) {
                (true, Some(s)) => name_of(s),
                _ => e.exit_reason.clone().unwrap_or_else(|| "—".to_owned()),
            },
            started,
            started_exact,
            selected: focus == Focus::Execution(e.id),
        });
    }
    Ok(rows)
}
