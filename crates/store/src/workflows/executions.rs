//! Workflow executions: one per contact run through a workflow, with its step history. The
//! executor (engine, issue 11 part 2) writes them; the API lists, reads and cancels them, and
//! a workflow with RUNNING or WAITING executions cannot be deleted.

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use herald_core::workflow::{ExecutionStatus, StepStatus};
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, FromRow};

use crate::{Store, StoreError, StoreResult};

#[derive(Clone, Debug)]
pub struct Execution {
    pub id: Uuid,
    pub workflow_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub status: ExecutionStatus,
    pub current_step_id: Option<Uuid>,
    pub context: Value,
    pub exit_reason: Option<String>,
    pub started_at: Millis,
    pub completed_at: Option<Millis>,
}

#[derive(Clone, Debug, FromRow)]
pub struct ExecutionStep {
    pub id: Uuid,
    pub step_id: Option<Uuid>,
    #[sqlx(try_from = "String")]
    pub status: StepStatus,
    pub output: Option<Json<Value>>,
    pub started_at: Millis,
    pub completed_at: Option<Millis>,
}

#[derive(FromRow)]
struct Row {
    id: Uuid,
    workflow_id: Uuid,
    contact_id: Option<Uuid>,
    status: String,
    current_step_id: Option<Uuid>,
    context: Json<Value>,
    exit_reason: Option<String>,
    started_at: Millis,
    completed_at: Option<Millis>,
}

impl TryFrom<Row> for Execution {
    type Error = StoreError;
    fn try_from(r: Row) -> StoreResult<Execution> {
        Ok(Execution {
            status: ExecutionStatus::parse(&r.status).ok_or_else(|| {
                StoreError::Other(anyhow::anyhow!("execution {}: status {:?}", r.id, r.status))
            })?,
            id: r.id,
            workflow_id: r.workflow_id,
            contact_id: r.contact_id,
            current_step_id: r.current_step_id,
            context: r.context.0,
            exit_reason: r.exit_reason,
            started_at: r.started_at,
            completed_at: r.completed_at,
        })
    }
}

const COLUMNS: &str = "id, workflow_id, contact_id, status, current_step_id, context, exit_reason, \
     started_at, completed_at";

/// The outcome of a delete that active executions block.
#[derive(Debug, PartialEq, Eq)]
pub enum WorkflowDelete {
    Deleted,
    NotFound,
    ActiveExecutions(i64),
}

impl Store {
    /// Records an execution (the executor's start; tests).
    pub async fn insert_execution(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        contact_id: Uuid,
        status: ExecutionStatus,
        context: &Value,
        now: Millis,
    ) -> StoreResult<Uuid> {
        let id = new_id();
        db_write!(self, |pool| {
            sqlx::query(
                "INSERT INTO workflow_executions (id, workflow_id, project_id, contact_id, status, \
                 context, started_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
            )
            .bind(id)
            .bind(workflow_id)
            .bind(project_id)
            .bind(contact_id)
            .bind(status.as_str())
            .bind(Json(context))
            .bind(now)
            .execute(pool)
            .await?;
        });
        Ok(id)
    }

    /// Executions of a workflow, newest first, optionally of one status.
    pub async fn list_executions(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        status: Option<ExecutionStatus>,
        limit: u32,
    ) -> StoreResult<Vec<Execution>> {
        let filter = if status.is_some() {
            "status = $3"
        } else {
            "$3 = $3"
        };
        let q = format!(
            "SELECT {COLUMNS} FROM workflow_executions WHERE project_id = $1 AND workflow_id = $2 \
             AND {filter} ORDER BY started_at DESC, id DESC LIMIT $4"
        );
        let rows: Vec<Row> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(workflow_id)
                .bind(status.map_or("", ExecutionStatus::as_str))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
        });
        rows.into_iter().map(Execution::try_from).collect()
    }

    /// How many executions of the workflow have `status` (benchmarks, diagnostics).
    pub async fn count_executions(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        status: ExecutionStatus,
    ) -> StoreResult<i64> {
        let (n,): (i64,) = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT count(*) FROM workflow_executions WHERE project_id = $1 AND workflow_id = $2 \
                 AND status = $3",
            )
            .bind(project_id)
            .bind(workflow_id)
            .bind(status.as_str())
            .fetch_one(pool)
            .await?
        });
        Ok(n)
    }

    /// The project's WAITING executions, oldest first (`/activity/upcoming`).
    pub async fn waiting_executions(
        &self,
        project_id: Uuid,
        limit: u32,
    ) -> StoreResult<Vec<Execution>> {
        let q = format!(
            "SELECT {COLUMNS} FROM workflow_executions WHERE project_id = $1 AND status = 'WAITING' \
             ORDER BY started_at, id LIMIT $2"
        );
        let rows: Vec<Row> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
        });
        rows.into_iter().map(Execution::try_from).collect()
    }

    /// One execution of the workflow.
    pub async fn execution(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        id: Uuid,
    ) -> StoreResult<Option<Execution>> {
        let q = format!(
            "SELECT {COLUMNS} FROM workflow_executions WHERE project_id = $1 AND workflow_id = $2 AND id = $3"
        );
        let row: Option<Row> = db_read!(self, |pool| {
            sqlx::query_as(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(workflow_id)
                .bind(id)
                .fetch_optional(pool)
                .await?
        });
        row.map(Execution::try_from).transpose()
    }

    /// The step history of an execution, oldest first.
    pub async fn execution_steps(&self, execution_id: Uuid) -> StoreResult<Vec<ExecutionStep>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT id, step_id, status, output, started_at, completed_at \
                 FROM workflow_execution_steps WHERE execution_id = $1 ORDER BY started_at, id",
            )
            .bind(execution_id)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Cancels RUNNING and WAITING executions of the workflow (one when `only` is given);
    /// returns how many were cancelled.
    pub async fn cancel_executions(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        only: Option<Uuid>,
        now: Millis,
    ) -> StoreResult<u64> {
        let one = if only.is_some() { "id = $4" } else { "$4 = $4" };
        let q = format!(
            "UPDATE workflow_executions SET status = 'CANCELLED', completed_at = $3, updated_at = $3 \
             WHERE project_id = $1 AND workflow_id = $2 AND status IN ('RUNNING', 'WAITING') AND {one}"
        );
        Ok(db_write!(self, |pool| {
            sqlx::query(AssertSqlSafe(q.as_str()))
                .bind(project_id)
                .bind(workflow_id)
                .bind(now)
                .bind(only.unwrap_or(workflow_id))
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }

    /// Deletes a workflow without RUNNING or WAITING executions.
    pub async fn delete_workflow(&self, project_id: Uuid, id: Uuid) -> StoreResult<WorkflowDelete> {
        let mut tx = self.begin().await?;
        let (active,): (i64,) = db_tx!(&mut tx, |conn| {
            sqlx::query_as(
                "SELECT count(*) FROM workflow_executions WHERE project_id = $1 AND workflow_id = $2 \
                 AND status IN ('RUNNING', 'WAITING')",
            )
            .bind(project_id)
            .bind(id)
            .fetch_one(&mut *conn)
            .await?
        });
        if active > 0 {
            return Ok(WorkflowDelete::ActiveExecutions(active));
        }
        let n = db_tx!(&mut tx, |conn| {
            sqlx::query("DELETE FROM workflows WHERE project_id = $1 AND id = $2")
                .bind(project_id)
                .bind(id)
                .execute(&mut *conn)
                .await?
                .rows_affected()
        });
        tx.commit().await?;
        Ok(if n > 0 {
            WorkflowDelete::Deleted
        } else {
            WorkflowDelete::NotFound
        })
    }
}
