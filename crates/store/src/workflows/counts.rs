//! Execution counts the dashboard draws: per status for a workflow (the list), and the active
//! executions at each step (the graph). Both read the `(workflow_id, status, id)` index and
//! are scoped by project.

use herald_core::ids::Uuid;
use herald_core::workflow::ExecutionStatus;

use crate::{Store, StoreResult};

impl Store {
    /// How many executions of the workflow have each status (statuses with none left out).
    pub async fn execution_status_counts(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
    ) -> StoreResult<Vec<(ExecutionStatus, i64)>> {
        let rows: Vec<(String, i64)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT status, count(*) FROM workflow_executions \
                 WHERE workflow_id = $2 AND project_id = $1 GROUP BY status",
            )
            .bind(project_id)
            .bind(workflow_id)
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .filter_map(|(s, n)| ExecutionStatus::parse(&s).map(|s| (s, n)))
            .collect())
    }

    /// The RUNNING and WAITING executions of the workflow at each step.
    pub async fn active_executions_by_step(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
    ) -> StoreResult<Vec<(Uuid, i64)>> {
        Ok(db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT current_step_id, count(*) FROM workflow_executions \
                 WHERE workflow_id = $2 AND status IN ('RUNNING', 'WAITING') AND project_id = $1 \
                 AND current_step_id IS NOT NULL GROUP BY current_step_id",
            )
            .bind(project_id)
            .bind(workflow_id)
            .fetch_all(pool)
            .await?
        }))
    }
}
