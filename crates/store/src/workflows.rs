//! Workflows: the record, its steps and transitions (the graph rules are
//! `herald_core::workflow`, checked inside the writing transaction so two concurrent changes
//! cannot together break them), and executions ([`executions`]). Every query is scoped by
//! project; a step or transition of another workflow is simply absent.

mod counts;
pub mod executions;
mod graph;
pub mod run;

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use herald_core::workflow::{Branch, StepType};
use serde_json::Value;
use sqlx::FromRow;
use sqlx::types::Json;

pub use graph::{StepDelete, StepInsert, TransitionAdd};

use crate::{Store, StoreError, StoreResult, Tx};

#[derive(Clone, Debug)]
pub struct Workflow {
    pub id: Uuid,
    pub project_id: Uuid,
    pub name: String,
    pub description: Option<String>,
    pub trigger_type: String,
    pub trigger_config: Value,
    pub enabled: bool,
    pub allow_reentry: bool,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub steps: Vec<Step>,
    pub transitions: Vec<Transition>,
}

#[derive(Clone, Debug)]
pub struct Step {
    pub id: Uuid,
    pub step_type: StepType,
    pub name: Option<String>,
    pub config: Value,
    pub position: Option<Value>,
    pub created_at: Millis,
}

#[derive(Clone, Debug)]
pub struct Transition {
    pub id: Uuid,
    pub from_step_id: Uuid,
    pub to_step_id: Uuid,
    pub branch: Option<Branch>,
    pub created_at: Millis,
}

#[derive(FromRow)]
struct WorkflowRow {
    id: Uuid,
    project_id: Uuid,
    name: String,
    description: Option<String>,
    trigger_type: String,
    trigger_config: Json<Value>,
    enabled: bool,
    allow_reentry: bool,
    created_at: Millis,
    updated_at: Millis,
}

#[derive(FromRow)]
struct StepRow {
    id: Uuid,
    #[sqlx(rename = "type")]
    step_type: String,
    name: Option<String>,
    config: Json<Value>,
    position: Option<Json<Value>>,
    created_at: Millis,
}

#[derive(FromRow)]
struct TransitionRow {
    id: Uuid,
    from_step_id: Uuid,
    to_step_id: Uuid,
    branch: Option<String>,
    created_at: Millis,
}

fn corrupt(what: &str, v: &str) -> StoreError {
    StoreError::Other(anyhow::anyhow!("workflow data: stored {what} {v:?}"))
}

impl TryFrom<StepRow> for Step {
    type Error = StoreError;
    fn try_from(r: StepRow) -> StoreResult<Step> {
        Ok(Step {
            id: r.id,
            step_type: StepType::parse(&r.step_type)
                .ok_or_else(|| corrupt("step type", &r.step_type))?,
            name: r.name,
            config: r.config.0,
            position: r.position.map(|p| p.0),
            created_at: r.created_at,
        })
    }
}

impl TryFrom<TransitionRow> for Transition {
    type Error = StoreError;
    fn try_from(r: TransitionRow) -> StoreResult<Transition> {
        let branch = match r.branch.as_deref() {
            None => None,
            Some(b) => Some(Branch::parse(b).ok_or_else(|| corrupt("branch", b))?),
        };
        Ok(Transition {
            id: r.id,
            from_step_id: r.from_step_id,
            to_step_id: r.to_step_id,
            branch,
            created_at: r.created_at,
        })
    }
}

const WORKFLOW_COLUMNS: &str = "id, project_id, name, description, trigger_type, trigger_config, \
     enabled, allow_reentry, created_at, updated_at";
const STEP_COLUMNS: &str = "id, type, name, config, position, created_at";
const TRANSITION_COLUMNS: &str = "id, from_step_id, to_step_id, branch, created_at";

/// A new workflow (its TRIGGER step is made with it).
pub struct NewWorkflow<'a> {
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub trigger_config: &'a Value,
    pub allow_reentry: bool,
}

/// A PATCH: `None` keeps a value.
#[derive(Default)]
pub struct WorkflowChange<'a> {
    pub name: Option<&'a str>,
    pub description: Option<Option<&'a str>>,
    pub trigger_config: Option<&'a Value>,
    pub enabled: Option<bool>,
    pub allow_reentry: Option<bool>,
}

/// A step to add.
pub struct NewStep<'a> {
    pub step_type: StepType,
    pub name: Option<&'a str>,
    pub config: &'a Value,
    pub position: Option<&'a Value>,
    /// SEND_EMAIL: the template it sends.
    pub template_id: Option<Uuid>,
}

/// A step PATCH: `None` keeps a value.
#[derive(Default)]
pub struct StepChange<'a> {
    pub name: Option<Option<&'a str>>,
    pub config: Option<&'a Value>,
    pub position: Option<&'a Value>,
    pub template_id: Option<Option<Uuid>>,
}

pub(crate) async fn insert_step(
    tx: &mut Tx,
    project_id: Uuid,
    workflow_id: Uuid,
    step: &NewStep<'_>,
    now: Millis,
) -> StoreResult<Uuid> {
    let id = new_id();
    db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO workflow_steps (id, workflow_id, project_id, type, name, config, position, \
             template_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
        )
        .bind(id)
        .bind(workflow_id)
        .bind(project_id)
        .bind(step.step_type.as_str())
        .bind(step.name)
        .bind(Json(step.config))
        .bind(step.position.map(Json))
        .bind(step.template_id)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(id)
}

impl Store {
    pub async fn create_workflow(
        &self,
        project_id: Uuid,
        new: &NewWorkflow<'_>,
        now: Millis,
    ) -> StoreResult<Workflow> {
        let id = new_id();
        let mut tx = self.begin().await?;
        db_tx!(&mut tx, |conn| {
            sqlx::query(
                "INSERT INTO workflows (id, project_id, name, description, trigger_type, trigger_config, \
                 enabled, allow_reentry, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, 'EVENT', $5, FALSE, $6, $7, $7)",
            )
            .bind(id)
            .bind(project_id)
            .bind(new.name)
            .bind(new.description)
            .bind(Json(new.trigger_config))
            .bind(new.allow_reentry)
            .bind(now)
            .execute(&mut *conn)
            .await?;
        });
        let trigger = NewStep {
            step_type: StepType::Trigger,
            name: Some("Trigger"),
            config: new.trigger_config,
            position: None,
            template_id: None,
        };
        insert_step(&mut tx, project_id, id, &trigger, now).await?;
        tx.commit().await?;
        self.workflow(project_id, id)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// One workflow with its steps and transitions (oldest first).
    pub async fn workflow(&self, project_id: Uuid, id: Uuid) -> StoreResult<Option<Workflow>> {
        let row: Option<WorkflowRow> = self
            .project_row("workflows", WORKFLOW_COLUMNS, project_id, id)
            .await?;
        let Some(r) = row else { return Ok(None) };
        let steps_q = format!(
            "SELECT {STEP_COLUMNS} FROM workflow_steps WHERE workflow_id = $1 AND project_id = $2 \
             ORDER BY created_at, id"
        );
        let steps: Vec<StepRow> = db_read!(self, |pool| {
            sqlx::query_as(sqlx::AssertSqlSafe(steps_q.as_str()))
                .bind(id)
                .bind(project_id)
                .fetch_all(pool)
                .await?
        });
        let tr_q = format!(
            "SELECT {TRANSITION_COLUMNS} FROM workflow_transitions \
             WHERE workflow_id = $1 AND project_id = $2 ORDER BY created_at, id"
        );
        let transitions: Vec<TransitionRow> = db_read!(self, |pool| {
            sqlx::query_as(sqlx::AssertSqlSafe(tr_q.as_str()))
                .bind(id)
                .bind(project_id)
                .fetch_all(pool)
                .await?
        });
        Ok(Some(Workflow {
            id: r.id,
            project_id: r.project_id,
            name: r.name,
            description: r.description,
            trigger_type: r.trigger_type,
            trigger_config: r.trigger_config.0,
            enabled: r.enabled,
            allow_reentry: r.allow_reentry,
            created_at: r.created_at,
            updated_at: r.updated_at,
            steps: steps
                .into_iter()
                .map(Step::try_from)
                .collect::<StoreResult<_>>()?,
            transitions: transitions
                .into_iter()
                .map(Transition::try_from)
                .collect::<StoreResult<_>>()?,
        }))
    }

    /// The project's workflow ids, newest first.
    pub async fn workflow_ids(&self, project_id: Uuid) -> StoreResult<Vec<Uuid>> {
        let rows: Vec<(Uuid,)> = db_read!(self, |pool| {
            sqlx::query_as("SELECT id FROM workflows WHERE project_id = $1 ORDER BY id DESC")
                .bind(project_id)
                .fetch_all(pool)
                .await?
        });
        Ok(rows.into_iter().map(|r| r.0).collect())
    }

    /// Applies a PATCH; `NotFound` when the project has no such workflow.
    pub async fn update_workflow(
        &self,
        project_id: Uuid,
        id: Uuid,
        change: &WorkflowChange<'_>,
        now: Millis,
    ) -> StoreResult<Workflow> {
        let old = self
            .workflow(project_id, id)
            .await?
            .ok_or(StoreError::NotFound)?;
        let description = change
            .description
            .map_or(old.description.clone(), |d| d.map(str::to_owned));
        let trigger = change.trigger_config.unwrap_or(&old.trigger_config);
        let mut tx = self.begin().await?;
        db_tx!(&mut tx, |conn| {
            sqlx::query(
                "UPDATE workflows SET name = $3, description = $4, trigger_config = $5, enabled = $6, \
                 allow_reentry = $7, updated_at = $8 WHERE project_id = $1 AND id = $2",
            )
            .bind(project_id)
            .bind(id)
            .bind(change.name.unwrap_or(&old.name))
            .bind(&description)
            .bind(Json(trigger))
            .bind(change.enabled.unwrap_or(old.enabled))
            .bind(change.allow_reentry.unwrap_or(old.allow_reentry))
            .bind(now)
            .execute(&mut *conn)
            .await?;
        });
        if change.trigger_config.is_some() {
            // The TRIGGER step shows the trigger's config.
            db_tx!(&mut tx, |conn| {
                sqlx::query(
                    "UPDATE workflow_steps SET config = $3, updated_at = $4 \
                     WHERE workflow_id = $1 AND project_id = $2 AND type = 'TRIGGER'",
                )
                .bind(id)
                .bind(project_id)
                .bind(Json(trigger))
                .bind(now)
                .execute(&mut *conn)
                .await?;
            });
        }
        tx.commit().await?;
        self.workflow(project_id, id)
            .await?
            .ok_or(StoreError::NotFound)
    }

    /// The workflows (and their SEND_EMAIL steps) that send a template: `(workflow id, name,
    /// step id)`.
    pub async fn template_workflow_steps(
        &self,
        project_id: Uuid,
        template_id: Uuid,
    ) -> StoreResult<Vec<(Uuid, String, Uuid)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT w.id, w.name, s.id FROM workflow_steps s JOIN workflows w ON w.id = s.workflow_id \
                 WHERE s.project_id = $1 AND s.template_id = $2 ORDER BY w.id, s.id",
            )
            .bind(project_id)
            .bind(template_id)
            .fetch_all(pool)
            .await?
        }))
    }
}
