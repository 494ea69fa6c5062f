//! Changing a workflow's graph: steps and transitions. Each change reads the graph inside its
//! transaction (locking the workflow row on PostgreSQL) and applies the rules of
//! `herald_core::workflow::Graph`, so concurrent changes cannot together break them.

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use herald_core::workflow::{Branch, Graph, GraphError, StepType};
use sqlx::types::Json;

use super::{NewStep, StepChange, insert_step};
use crate::engine::sql;
use crate::{Store, StoreResult, Tx};

/// The outcome of adding a transition.
#[derive(Debug)]
pub enum TransitionAdd {
    Added(Uuid),
    NoWorkflow,
    Refused(GraphError),
}

/// The outcome of inserting a step after another.
#[derive(Debug)]
pub enum StepInsert {
    Inserted(Uuid),
    NoWorkflow,
    /// The step to insert after is not the workflow's.
    NoStep,
    Refused(GraphError),
}

/// The outcome of deleting a step.
#[derive(Debug, PartialEq, Eq)]
pub enum StepDelete {
    Deleted,
    NotFound,
    /// The TRIGGER step stays with its workflow.
    IsTrigger,
    /// `splice=true` on a step with more than one outgoing transition.
    CannotSplice,
}

/// Locks the workflow (PostgreSQL) and reads its graph; `None` when it is not the project's.
async fn graph_in(tx: &mut Tx, project_id: Uuid, workflow_id: Uuid) -> StoreResult<Option<Graph>> {
    let q = sql(
        tx.dialect(),
        "SELECT id FROM workflows WHERE project_id = $1 AND id = $2",
        "SELECT id FROM workflows WHERE project_id = $1 AND id = $2 FOR UPDATE",
    );
    let found: Option<(Uuid,)> = db_tx!(tx, |conn| {
        sqlx::query_as(q)
            .bind(project_id)
            .bind(workflow_id)
            .fetch_optional(&mut *conn)
            .await?
    });
    if found.is_none() {
        return Ok(None);
    }
    let steps: Vec<(Uuid, String)> = db_tx!(tx, |conn| {
        sqlx::query_as("SELECT id, type FROM workflow_steps WHERE workflow_id = $1")
            .bind(workflow_id)
            .fetch_all(&mut *conn)
            .await?
    });
    let edges: Vec<(Uuid, Uuid, Option<String>)> = db_tx!(tx, |conn| {
        sqlx::query_as(
            "SELECT from_step_id, to_step_id, branch FROM workflow_transitions WHERE workflow_id = $1",
        )
        .bind(workflow_id)
        .fetch_all(&mut *conn)
        .await?
    });
    let mut g = Graph::default();
    for (id, t) in steps {
        if let Some(t) = StepType::parse(&t) {
            g.steps.insert(id, t);
        }
    }
    g.edges = edges
        .into_iter()
        .map(|(f, t, b)| (f, t, b.as_deref().and_then(Branch::parse)))
        .collect();
    Ok(Some(g))
}

async fn insert_transition(
    tx: &mut Tx,
    project_id: Uuid,
    workflow_id: Uuid,
    edge: (Uuid, Uuid, Option<Branch>),
    now: Millis,
) -> StoreResult<Uuid> {
    let id = new_id();
    db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO workflow_transitions (id, workflow_id, project_id, from_step_id, to_step_id, \
             branch, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(workflow_id)
        .bind(project_id)
        .bind(edge.0)
        .bind(edge.1)
        .bind(edge.2.map(Branch::as_str))
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(id)
}

async fn touch(tx: &mut Tx, workflow_id: Uuid, now: Millis) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query("UPDATE workflows SET updated_at = $2 WHERE id = $1")
            .bind(workflow_id)
            .bind(now)
            .execute(&mut *conn)
            .await?;
    });
    Ok(())
}

impl Store {
    /// Adds a step; `None` when the workflow is not the project's.
    pub async fn add_step(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        step: &NewStep<'_>,
        now: Millis,
    ) -> StoreResult<Option<Uuid>> {
        let mut tx = self.begin().await?;
        if graph_in(&mut tx, project_id, workflow_id).await?.is_none() {
            return Ok(None);
        }
        let id = insert_step(&mut tx, project_id, workflow_id, step, now).await?;
        touch(&mut tx, workflow_id, now).await?;
        tx.commit().await?;
        Ok(Some(id))
    }

    /// The type of one step of the workflow, if it is there.
    pub async fn step_type(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        step_id: Uuid,
    ) -> StoreResult<Option<StepType>> {
        let row: Option<(String,)> = db_read!(self, |pool| {
            sqlx::query_as(
                "SELECT type FROM workflow_steps WHERE id = $1 AND workflow_id = $2 AND project_id = $3",
            )
            .bind(step_id)
            .bind(workflow_id)
            .bind(project_id)
            .fetch_optional(pool)
            .await?
        });
        Ok(row.and_then(|(t,)| StepType::parse(&t)))
    }

    /// Changes a step; false when it is not there.
    pub async fn update_step(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        step_id: Uuid,
        change: &StepChange<'_>,
        now: Millis,
    ) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let mut n = 0;
        if let Some(name) = change.name {
            n = db_tx!(&mut tx, |conn| {
                sqlx::query("UPDATE workflow_steps SET name = $4, updated_at = $5 WHERE id = $1 AND workflow_id = $2 AND project_id = $3")
                    .bind(step_id).bind(workflow_id).bind(project_id).bind(name).bind(now)
                    .execute(&mut *conn).await?.rows_affected()
            });
        }
        if let Some(config) = change.config {
            n = db_tx!(&mut tx, |conn| {
                sqlx::query("UPDATE workflow_steps SET config = $4, template_id = $5, updated_at = $6 WHERE id = $1 AND workflow_id = $2 AND project_id = $3")
                    .bind(step_id).bind(workflow_id).bind(project_id).bind(Json(config))
                    .bind(change.template_id.flatten()).bind(now)
                    .execute(&mut *conn).await?.rows_affected()
            });
        }
        if let Some(position) = change.position {
            n = db_tx!(&mut tx, |conn| {
                sqlx::query("UPDATE workflow_steps SET position = $4, updated_at = $5 WHERE id = $1 AND workflow_id = $2 AND project_id = $3")
                    .bind(step_id).bind(workflow_id).bind(project_id).bind(Json(position)).bind(now)
                    .execute(&mut *conn).await?.rows_affected()
            });
        }
        if n == 0 {
            return Ok(self
                .step_type(project_id, workflow_id, step_id)
                .await?
                .is_some());
        }
        touch(&mut tx, workflow_id, now).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Deletes a step and its transitions. With `splice`, each transition into it is
    /// reconnected to the step its one outgoing transition led to (keeping the incoming
    /// transition's branch).
    pub async fn delete_step(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        step_id: Uuid,
        splice: bool,
        now: Millis,
    ) -> StoreResult<StepDelete> {
        let mut tx = self.begin().await?;
        let Some(g) = graph_in(&mut tx, project_id, workflow_id).await? else {
            return Ok(StepDelete::NotFound);
        };
        match g.steps.get(&step_id) {
            None => return Ok(StepDelete::NotFound),
            Some(StepType::Trigger) => return Ok(StepDelete::IsTrigger),
            Some(_) => {}
        }
        let outgoing: Vec<Uuid> = g
            .edges
            .iter()
            .filter(|(f, ..)| *f == step_id)
            .map(|(_, t, _)| *t)
            .collect();
        let incoming: Vec<(Uuid, Option<Branch>)> = g
            .edges
            .iter()
            .filter(|(_, t, _)| *t == step_id)
            .map(|(f, _, b)| (*f, *b))
            .collect();
        if splice && outgoing.len() > 1 {
            return Ok(StepDelete::CannotSplice);
        }
        db_tx!(&mut tx, |conn| {
            sqlx::query("DELETE FROM workflow_steps WHERE id = $1 AND workflow_id = $2")
                .bind(step_id)
                .bind(workflow_id)
                .execute(&mut *conn)
                .await?;
        });
        if splice && let Some(&next) = outgoing.first() {
            for (from, branch) in incoming {
                insert_transition(&mut tx, project_id, workflow_id, (from, next, branch), now)
                    .await?;
            }
        }
        touch(&mut tx, workflow_id, now).await?;
        tx.commit().await?;
        Ok(StepDelete::Deleted)
    }

    /// Adds a transition if the graph rules allow it.
    pub async fn add_transition(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        edge: (Uuid, Uuid, Option<Branch>),
        now: Millis,
    ) -> StoreResult<TransitionAdd> {
        let mut tx = self.begin().await?;
        let Some(g) = graph_in(&mut tx, project_id, workflow_id).await? else {
            return Ok(TransitionAdd::NoWorkflow);
        };
        if let Err(e) = g.check_edge(edge.0, edge.1, edge.2) {
            return Ok(TransitionAdd::Refused(e));
        }
        let id = insert_transition(&mut tx, project_id, workflow_id, edge, now).await?;
        touch(&mut tx, workflow_id, now).await?;
        tx.commit().await?;
        Ok(TransitionAdd::Added(id))
    }

    /// Inserts a step after step `after` on its `branch`, in one transaction: the step is
    /// added, the transition that left `after` on that branch (if any) is moved to leave the
    /// new step on `onward` (its first branch), and `after` is connected to the new step, each
    /// transition under the graph rules. A refusal leaves the graph as it was.
    pub async fn insert_step_after(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        step: &NewStep<'_>,
        (after, branch): (Uuid, Option<Branch>),
        onward: Option<Branch>,
        now: Millis,
    ) -> StoreResult<StepInsert> {
        let mut tx = self.begin().await?;
        let Some(mut g) = graph_in(&mut tx, project_id, workflow_id).await? else {
            return Ok(StepInsert::NoWorkflow);
        };
        if !g.steps.contains_key(&after) {
            return Ok(StepInsert::NoStep);
        }
        let id = insert_step(&mut tx, project_id, workflow_id, step, now).await?;
        g.steps.insert(id, step.step_type);
        let mut edges = vec![(after, id, branch)];
        if let Some(at) = g.edges.iter().position(|e| e.0 == after && e.2 == branch) {
            let (_, next, _) = g.edges.remove(at);
            let q = sql(
                tx.dialect(),
                "DELETE FROM workflow_transitions WHERE workflow_id = $1 AND from_step_id = $2 \
                 AND branch IS $3",
                "DELETE FROM workflow_transitions WHERE workflow_id = $1 AND from_step_id = $2 \
                 AND branch IS NOT DISTINCT FROM $3",
            );
            db_tx!(&mut tx, |conn| {
                sqlx::query(q)
                    .bind(workflow_id)
                    .bind(after)
                    .bind(branch.map(Branch::as_str))
                    .execute(&mut *conn)
                    .await?;
            });
            edges.insert(0, (id, next, onward));
        }
        for edge in edges {
            if let Err(e) = g.check_edge(edge.0, edge.1, edge.2) {
                return Ok(StepInsert::Refused(e));
            }
            insert_transition(&mut tx, project_id, workflow_id, edge, now).await?;
            g.edges.push(edge);
        }
        touch(&mut tx, workflow_id, now).await?;
        tx.commit().await?;
        Ok(StepInsert::Inserted(id))
    }

    /// Deletes a transition; false when it is not there.
    pub async fn delete_transition(
        &self,
        project_id: Uuid,
        workflow_id: Uuid,
        transition_id: Uuid,
    ) -> StoreResult<bool> {
        let n = db_write!(self, |pool| {
            sqlx::query(
                "DELETE FROM workflow_transitions WHERE id = $1 AND workflow_id = $2 AND project_id = $3",
            )
            .bind(transition_id)
            .bind(workflow_id)
            .bind(project_id)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(n > 0)
    }
}
