//! What the workflow executor reads and writes (docs/workflows.md "Executor").
//!
//! - The outbox of events: [`enqueue_dispatch`] runs in the transaction that records events
//!   (tracked, subscription, email, segment) and queues an [`EVENT_JOB`] for each one a
//!   workflow of the project reacts to (the trigger of an enabled workflow, or a WAIT_FOR_EVENT
//!   step), so events nobody listens to cost one indexed read and no job.
//! - Starts: [`start_execution`] honours `allowReentry` and the one-active-execution index, and
//!   queues the execution's [`RUN_JOB`] in the same transaction.
//! - Runs: an execution has one run job at a time; its payload names the step it expects the
//!   execution to be at, so a stale job (the execution moved on, was cancelled or deleted)
//!   changes nothing. Every step's effect, the execution's move and the history row commit in
//!   one transaction with the fenced hold of that job.

use std::collections::HashSet;

use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use herald_core::workflow::{ExecutionStatus, StepStatus};
use serde_json::{Value, json};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, FromRow};

use crate::contacts::Contact;
use crate::engine::sql;
use crate::{StoreResult, Tx, jobs};

/// Outbox rows of events a workflow may react to: payload `{eventId, name}`.
pub const EVENT_JOB: &str = "event.dispatch";
/// The run job of an execution: payload `{executionId, stepId}`.
pub const RUN_JOB: &str = "workflow.run";
/// Attempts of a job of either kind before it is dead-lettered (and its execution FAILED).
pub const MAX_ATTEMPTS: i32 = 5;

/// An event just recorded, as the outbox sees it.
#[derive(Clone, Copy, Debug)]
pub struct EventRef<'a> {
    pub id: Uuid,
    pub name: &'a str,
}

/// PostgreSQL: (project, name) of every event name the workflows of the projects `$1` (an
/// array) react to: triggers of enabled workflows and the events WAIT_FOR_EVENT steps wait
/// for. A macro, so the track insert can carry it in the same statement
/// (`crate::tracked`, one round trip for both).
macro_rules! reacting_names_pg {
    () => {
        "SELECT w.project_id, w.trigger_config->>'eventName' FROM workflows w \
         WHERE w.project_id = ANY($1) AND w.enabled \
         UNION SELECT w.project_id, s.config->>'eventName' FROM workflow_steps s \
         JOIN workflows w ON w.id = s.workflow_id \
         WHERE w.project_id = ANY($1) AND s.type = 'WAIT_FOR_EVENT'"
    };
}
pub(crate) use reacting_names_pg;

/// The event names the project's workflows react to: triggers of enabled workflows and the
/// events WAIT_FOR_EVENT steps wait for.
pub async fn reacting_names(tx: &mut Tx, project_id: Uuid) -> StoreResult<HashSet<String>> {
    let rows: Vec<(Option<String>,)> = db_tx_each!(
        tx,
        sqlite | conn | {
            sqlx::query_as(
                "SELECT json_extract(trigger_config, '$.eventName') FROM workflows \
                     WHERE project_id = $1 AND enabled \
                     UNION SELECT json_extract(s.config, '$.eventName') FROM workflow_steps s \
                     JOIN workflows w ON w.id = s.workflow_id \
                     WHERE w.project_id = $1 AND s.type = 'WAIT_FOR_EVENT'",
            )
            .bind(project_id)
            .fetch_all(&mut *conn)
            .await?
        },
        postgres | conn | {
            let rows: Vec<(Uuid, Option<String>)> = sqlx::query_as(reacting_names_pg!())
                .bind(vec![project_id])
                .fetch_all(&mut *conn)
                .await?;
            rows.into_iter().map(|(_, n)| (n,)).collect()
        },
    );
    Ok(rows.into_iter().filter_map(|(n,)| n).collect())
}

/// The event names WAIT_FOR_EVENT steps of the project's workflows wait for.
pub async fn waited_names(tx: &mut Tx, project_id: Uuid) -> StoreResult<HashSet<String>> {
    let q = sql(
        tx.dialect(),
        "SELECT DISTINCT json_extract(s.config, '$.eventName') FROM workflow_steps s \
         JOIN workflows w ON w.id = s.workflow_id \
         WHERE w.project_id = $1 AND s.type = 'WAIT_FOR_EVENT'",
        "SELECT DISTINCT s.config->>'eventName' FROM workflow_steps s \
         JOIN workflows w ON w.id = s.workflow_id \
         WHERE w.project_id = $1 AND s.type = 'WAIT_FOR_EVENT'",
    );
    let rows: Vec<(Option<String>,)> = db_tx!(tx, |conn| {
        sqlx::query_as(q)
            .bind(project_id)
            .fetch_all(&mut *conn)
            .await?
    });
    Ok(rows.into_iter().filter_map(|(n,)| n).collect())
}

/// Queues a dispatch job for each of `events` (of one project) that a workflow reacts to.
pub async fn enqueue_dispatch(
    tx: &mut Tx,
    project_id: Uuid,
    events: &[EventRef<'_>],
    now: Millis,
) -> StoreResult<()> {
    if events.is_empty() {
        return Ok(());
    }
    let names = reacting_names(tx, project_id).await?;
    enqueue_for_names(tx, project_id, events, &names, now).await
}

/// [`enqueue_dispatch`] with the project's reacting names already read (`names`).
pub async fn enqueue_for_names(
    tx: &mut Tx,
    project_id: Uuid,
    events: &[EventRef<'_>],
    names: &HashSet<String>,
    now: Millis,
) -> StoreResult<()> {
    if names.is_empty() {
        return Ok(());
    }
    let rows: Vec<(Option<Uuid>, Value)> = events
        .iter()
        .filter(|e| names.contains(e.name))
        .map(|e| (Some(project_id), json!({"eventId": e.id, "name": e.name})))
        .collect();
    if !rows.is_empty() {
        jobs::enqueue_many(tx, EVENT_JOB, &rows, now, MAX_ATTEMPTS).await?;
    }
    Ok(())
}

/// A recorded event, as a dispatch reads it.
#[derive(Clone, Debug, FromRow)]
pub struct DispatchedEvent {
    pub id: Uuid,
    pub project_id: Uuid,
    pub contact_id: Option<Uuid>,
    pub name: String,
    pub data: Json<Value>,
}

/// The event a dispatch job names (`None` once deleted, or its contact gone).
pub async fn dispatched_event(tx: &mut Tx, id: Uuid) -> StoreResult<Option<DispatchedEvent>> {
    Ok(db_tx!(tx, |conn| {
        sqlx::query_as(
            "SELECT id, project_id, contact_id, name, data FROM events \
             WHERE id = $1 AND contact_id IS NOT NULL",
        )
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
    }))
}

/// [`dispatched_event`] of many events in one statement (a batch's prefetch).
pub async fn dispatched_events(tx: &mut Tx, ids: &[Uuid]) -> StoreResult<Vec<DispatchedEvent>> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(200) {
        let q = format!(
            "SELECT id, project_id, contact_id, name, data FROM events \
             WHERE contact_id IS NOT NULL AND id IN ({})",
            crate::engine::placeholder_list(chunk.len(), 1)
        );
        let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
        let rows: Vec<DispatchedEvent> = db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query_as(AssertSqlSafe(q.as_str()));
            for id in chunk {
                query = query.bind(*id);
            }
            query.fetch_all(&mut *conn).await?
        });
        out.extend(rows);
    }
    Ok(out)
}

/// Which workflows the contacts entered: `(workflow, contact, has an active execution)`.
pub async fn entered(tx: &mut Tx, contacts: &[Uuid]) -> StoreResult<Vec<(Uuid, Uuid, bool)>> {
    let mut out = Vec::new();
    for chunk in contacts.chunks(200) {
        let q = format!(
            "SELECT workflow_id, contact_id, \
             max(CASE WHEN status IN ('RUNNING', 'WAITING') THEN 1 ELSE 0 END) \
             FROM workflow_executions WHERE contact_id IN ({}) GROUP BY workflow_id, contact_id",
            crate::engine::placeholder_list(chunk.len(), 1)
        );
        let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
        let rows: Vec<(Uuid, Uuid, i32)> = db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query_as(AssertSqlSafe(q.as_str()));
            for id in chunk {
                query = query.bind(*id);
            }
            query.fetch_all(&mut *conn).await?
        });
        out.extend(rows.into_iter().map(|(w, c, a)| (w, c, a == 1)));
    }
    Ok(out)
}

/// An execution to start (at its TRIGGER step).
pub struct NewExecution {
    pub id: Uuid,
    pub project_id: Uuid,
    pub workflow_id: Uuid,
    pub contact_id: Uuid,
    pub trigger_step_id: Uuid,
    pub context: Value,
}

/// Starts executions decided by the caller (the rules of [`start_execution`] applied to a
/// batch) in multi-row statements, with their run jobs. An execution the unique index refuses
/// (another node started one meanwhile) is not written; its run job finds nothing and ends.
pub async fn insert_executions(tx: &mut Tx, rows: &[NewExecution], now: Millis) -> StoreResult<()> {
    for chunk in rows.chunks(100) {
        let q = format!(
            "INSERT INTO workflow_executions (id, workflow_id, project_id, contact_id, status, \
             current_step_id, context, started_at, updated_at) VALUES {} ON CONFLICT DO NOTHING",
            (0..chunk.len())
                .map(|i| {
                    let b = 1 + 8 * i;
                    format!(
                        "(${b}, ${}, ${}, ${}, 'RUNNING', ${}, ${}, ${}, ${})",
                        b + 1,
                        b + 2,
                        b + 3,
                        b + 4,
                        b + 5,
                        b + 6,
                        b + 7
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        // Every value bound per row in text order, so SQLite binds them anonymously.
        let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
        db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query(AssertSqlSafe(q.as_str()));
            for r in chunk {
                query = query
                    .bind(r.id)
                    .bind(r.workflow_id)
                    .bind(r.project_id)
                    .bind(r.contact_id)
                    .bind(r.trigger_step_id)
                    .bind(Json(&r.context))
                    .bind(now)
                    .bind(now);
            }
            query.execute(&mut *conn).await?;
        });
    }
    let jobs: Vec<(Option<Uuid>, Value)> = rows
        .iter()
        .map(|r| {
            let p = json!({"executionId": r.id, "stepId": r.trigger_step_id});
            (Some(r.project_id), p)
        })
        .collect();
    jobs::enqueue_many(tx, RUN_JOB, &jobs, now, MAX_ATTEMPTS).await?;
    Ok(())
}

/// An enabled workflow an event starts.
#[derive(Clone, Debug, FromRow)]
pub struct Triggered {
    pub workflow_id: Uuid,
    pub allow_reentry: bool,
    pub trigger_step_id: Uuid,
}

/// The enabled workflows of the project whose trigger is `name`.
pub async fn triggered_by(
    tx: &mut Tx,
    project_id: Uuid,
    name: &str,
) -> StoreResult<Vec<Triggered>> {
    let q = sql(
        tx.dialect(),
        "SELECT w.id AS workflow_id, w.allow_reentry, s.id AS trigger_step_id FROM workflows w \
         JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER' \
         WHERE w.project_id = $1 AND w.enabled AND json_extract(w.trigger_config, '$.eventName') = $2 \
         ORDER BY w.id",
        "SELECT w.id AS workflow_id, w.allow_reentry, s.id AS trigger_step_id FROM workflows w \
         JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER' \
         WHERE w.project_id = $1 AND w.enabled AND w.trigger_config->>'eventName' = $2 \
         ORDER BY w.id",
    );
    Ok(db_tx!(tx, |conn| {
        sqlx::query_as(q)
            .bind(project_id)
            .bind(name)
            .fetch_all(&mut *conn)
            .await?
    }))
}

/// The TRIGGER step of a workflow of the project (a manual start).
pub async fn trigger_of(
    tx: &mut Tx,
    project_id: Uuid,
    workflow_id: Uuid,
) -> StoreResult<Option<Triggered>> {
    Ok(db_tx!(tx, |conn| {
        sqlx::query_as(
            "SELECT w.id AS workflow_id, w.allow_reentry, s.id AS trigger_step_id FROM workflows w \
             JOIN workflow_steps s ON s.workflow_id = w.id AND s.type = 'TRIGGER' \
             WHERE w.project_id = $1 AND w.id = $2",
        )
        .bind(project_id)
        .bind(workflow_id)
        .fetch_optional(&mut *conn)
        .await?
    }))
}

/// Why an execution did not start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotStarted {
    /// The contact has a RUNNING or WAITING execution of the workflow.
    Active,
    /// The workflow does not allow re-entry and the contact entered it before.
    Entered,
}

/// DECISIONS.md "Workflows": a contact with an active execution of the workflow does not
/// enter it again; one that entered before enters again only when `allowReentry` is true.
pub fn may_start(active: bool, entered: bool, allow_reentry: bool) -> Result<(), NotStarted> {
    if active {
        Err(NotStarted::Active)
    } else if entered && !allow_reentry {
        Err(NotStarted::Entered)
    } else {
        Ok(())
    }
}

/// Starts an execution of `w` for the contact at its TRIGGER step and queues its run job.
pub async fn start_execution(
    tx: &mut Tx,
    project_id: Uuid,
    w: &Triggered,
    contact_id: Uuid,
    context: &Value,
    now: Millis,
) -> StoreResult<Result<Uuid, NotStarted>> {
    let (active, any): (i64, i64) = db_tx!(tx, |conn| {
        sqlx::query_as(
            "SELECT count(CASE WHEN status IN ('RUNNING', 'WAITING') THEN 1 END), count(*) \
             FROM workflow_executions WHERE workflow_id = $1 AND contact_id = $2",
        )
        .bind(w.workflow_id)
        .bind(contact_id)
        .fetch_one(&mut *conn)
        .await?
    });
    if let Err(why) = may_start(active > 0, any > 0, w.allow_reentry) {
        return Ok(Err(why));
    }
    let id = new_id();
    // The unique index on active executions settles a race between two nodes.
    let n = db_tx!(tx, |conn| {
        sqlx::query(
            "INSERT INTO workflow_executions (id, workflow_id, project_id, contact_id, status, \
             current_step_id, context, started_at, updated_at) \
             VALUES ($1, $2, $3, $4, 'RUNNING', $5, $6, $7, $7) ON CONFLICT DO NOTHING",
        )
        .bind(id)
        .bind(w.workflow_id)
        .bind(project_id)
        .bind(contact_id)
        .bind(w.trigger_step_id)
        .bind(Json(context))
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected()
    });
    if n == 0 {
        return Ok(Err(NotStarted::Active));
    }
    enqueue_run(tx, project_id, id, w.trigger_step_id, now).await?;
    Ok(Ok(id))
}

/// Queues the run job of an execution at `step_id`, due at `at`.
pub async fn enqueue_run(
    tx: &mut Tx,
    project_id: Uuid,
    execution_id: Uuid,
    step_id: Uuid,
    at: Millis,
) -> StoreResult<()> {
    let payload = json!({"executionId": execution_id, "stepId": step_id});
    jobs::enqueue(tx, Some(project_id), RUN_JOB, &payload, at, MAX_ATTEMPTS).await?;
    Ok(())
}

/// A WAITING execution at a WAIT_FOR_EVENT step for the event.
#[derive(Clone, Debug, FromRow)]
pub struct Waiter {
    pub execution_id: Uuid,
    pub workflow_id: Uuid,
    pub step_id: Uuid,
}

/// The contact's executions WAITING at a WAIT_FOR_EVENT step for `name`.
pub async fn waiting_for(
    tx: &mut Tx,
    project_id: Uuid,
    contact_id: Uuid,
    name: &str,
) -> StoreResult<Vec<Waiter>> {
    let q = sql(
        tx.dialect(),
        "SELECT e.id AS execution_id, e.workflow_id, s.id AS step_id FROM workflow_executions e \
         JOIN workflow_steps s ON s.id = e.current_step_id AND s.type = 'WAIT_FOR_EVENT' \
         WHERE e.contact_id = $1 AND e.project_id = $2 AND e.status = 'WAITING' \
         AND json_extract(s.config, '$.eventName') = $3 ORDER BY e.id",
        "SELECT e.id AS execution_id, e.workflow_id, s.id AS step_id FROM workflow_executions e \
         JOIN workflow_steps s ON s.id = e.current_step_id AND s.type = 'WAIT_FOR_EVENT' \
         WHERE e.contact_id = $1 AND e.project_id = $2 AND e.status = 'WAITING' \
         AND s.config->>'eventName' = $3 ORDER BY e.id",
    );
    Ok(db_tx!(tx, |conn| {
        sqlx::query_as(q)
            .bind(contact_id)
            .bind(project_id)
            .bind(name)
            .fetch_all(&mut *conn)
            .await?
    }))
}

/// An execution as the runner reads it (row-locked on PostgreSQL).
#[derive(Clone, Debug, FromRow)]
pub struct RunState {
    pub id: Uuid,
    pub project_id: Uuid,
    pub workflow_id: Uuid,
    pub contact_id: Option<Uuid>,
    #[sqlx(try_from = "String")]
    pub status: ExecutionStatus,
    pub current_step_id: Option<Uuid>,
    pub context: Json<Value>,
}

pub async fn run_state(tx: &mut Tx, execution_id: Uuid) -> StoreResult<Option<RunState>> {
    let q = sql(
        tx.dialect(),
        "SELECT id, project_id, workflow_id, contact_id, status, current_step_id, context \
         FROM workflow_executions WHERE id = $1",
        "SELECT id, project_id, workflow_id, contact_id, status, current_step_id, context \
         FROM workflow_executions WHERE id = $1 FOR UPDATE",
    );
    Ok(db_tx!(tx, |conn| {
        sqlx::query_as(q)
            .bind(execution_id)
            .fetch_optional(&mut *conn)
            .await?
    }))
}

/// [`run_state`] of many executions in one statement (a batch's prefetch).
pub async fn run_states(tx: &mut Tx, ids: &[Uuid]) -> StoreResult<Vec<RunState>> {
    let mut out = Vec::with_capacity(ids.len());
    let lock = if tx.dialect() == crate::Dialect::Postgres {
        " FOR UPDATE"
    } else {
        ""
    };
    for chunk in ids.chunks(200) {
        let q = format!(
            "SELECT id, project_id, workflow_id, contact_id, status, current_step_id, context \
             FROM workflow_executions WHERE id IN ({}){lock}",
            crate::engine::placeholder_list(chunk.len(), 1)
        );
        let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
        let rows: Vec<RunState> = db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query_as(AssertSqlSafe(q.as_str()));
            for id in chunk {
                query = query.bind(*id);
            }
            query.fetch_all(&mut *conn).await?
        });
        out.extend(rows);
    }
    Ok(out)
}

/// The contacts of many executions as they are now, with their project (no lock).
pub async fn contacts_now(tx: &mut Tx, ids: &[Uuid]) -> StoreResult<Vec<(Uuid, Contact)>> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(200) {
        let q = format!(
            "SELECT project_id, {} FROM contacts WHERE id IN ({})",
            crate::contacts::COLUMNS,
            crate::engine::placeholder_list(chunk.len(), 1)
        );
        let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
        let rows: Vec<ProjectContact> = db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query_as(AssertSqlSafe(q.as_str()));
            for id in chunk {
                query = query.bind(*id);
            }
            query.fetch_all(&mut *conn).await?
        });
        out.extend(
            rows.into_iter()
                .map(|r| (r.project_id, Contact::from(r.contact))),
        );
    }
    Ok(out)
}

#[derive(FromRow)]
struct ProjectContact {
    project_id: Uuid,
    #[sqlx(flatten)]
    contact: crate::contacts::ContactRow,
}

/// Moves an execution to `step` with `status` (RUNNING or WAITING, with `wake_at` while a
/// timer runs) and its context.
pub async fn move_to(
    tx: &mut Tx,
    execution_id: Uuid,
    step: Uuid,
    status: ExecutionStatus,
    wake_at: Option<Millis>,
    context: &Value,
    now: Millis,
) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE workflow_executions SET current_step_id = $2, status = $3, wake_at = $4, \
             context = $5, updated_at = $6 WHERE id = $1",
        )
        .bind(execution_id)
        .bind(step)
        .bind(status.as_str())
        .bind(wake_at)
        .bind(Json(context))
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

/// Ends an execution (COMPLETED, EXITED or FAILED) with its reason.
pub async fn finish(
    tx: &mut Tx,
    execution_id: Uuid,
    status: ExecutionStatus,
    reason: Option<&str>,
    now: Millis,
) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE workflow_executions SET status = $2, exit_reason = $3, wake_at = NULL, \
             completed_at = $4, updated_at = $4 WHERE id = $1 AND status IN ('RUNNING', 'WAITING')",
        )
        .bind(execution_id)
        .bind(status.as_str())
        .bind(reason)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

/// A row of an execution's step history.
#[derive(Clone, Debug)]
pub struct HistoryRow {
    pub execution_id: Uuid,
    pub step_id: Uuid,
    pub status: StepStatus,
    pub output: Option<Value>,
    pub started_at: Millis,
    pub completed_at: Option<Millis>,
}

/// Inserts history rows in multi-row statements (a batch's rows at once).
pub async fn record_steps(tx: &mut Tx, rows: &[HistoryRow]) -> StoreResult<()> {
    for chunk in rows.chunks(100) {
        let q = format!(
            "INSERT INTO workflow_execution_steps (id, execution_id, step_id, status, output, \
             started_at, completed_at) VALUES {}",
            crate::engine::value_rows(chunk.len(), 7, 1)
        );
        let q = crate::engine::binds_for(tx.dialect(), &q).into_owned();
        db_tx!(&mut *tx, |conn| {
            let mut query = sqlx::query(AssertSqlSafe(q.as_str()));
            for r in chunk {
                query = query
                    .bind(new_id())
                    .bind(r.execution_id)
                    .bind(r.step_id)
                    .bind(r.status.as_str())
                    .bind(r.output.clone().map(Json))
                    .bind(r.started_at)
                    .bind(r.completed_at);
            }
            query.execute(&mut *conn).await?;
        });
    }
    Ok(())
}

/// Closes the open history row (a WAITING one) of the execution's step.
pub async fn close_step(
    tx: &mut Tx,
    execution_id: Uuid,
    step_id: Uuid,
    status: StepStatus,
    output: Option<Value>,
    now: Millis,
) -> StoreResult<()> {
    db_tx!(tx, |conn| {
        sqlx::query(
            "UPDATE workflow_execution_steps SET status = $3, output = $4, completed_at = $5 \
             WHERE execution_id = $1 AND step_id = $2 AND completed_at IS NULL",
        )
        .bind(execution_id)
        .bind(step_id)
        .bind(status.as_str())
        .bind(output.map(Json))
        .bind(now)
        .execute(&mut *conn)
        .await?;
    });
    Ok(())
}

/// The contact of an execution as it is now (no lock).
pub async fn contact_now(
    tx: &mut Tx,
    project_id: Uuid,
    contact_id: Uuid,
) -> StoreResult<Option<Contact>> {
    let q = format!(
        "SELECT {} FROM contacts WHERE project_id = $1 AND id = $2",
        crate::contacts::COLUMNS
    );
    let row: Option<crate::contacts::ContactRow> = db_tx!(tx, |conn| {
        sqlx::query_as(AssertSqlSafe(q.as_str()))
            .bind(project_id)
            .bind(contact_id)
            .fetch_optional(&mut *conn)
            .await?
    });
    Ok(row.map(Contact::from))
}

/// Where the transition from `from` with `branch` (`None`: the plain one) leads, if anywhere.
pub async fn next_step(
    tx: &mut Tx,
    workflow_id: Uuid,
    from: Uuid,
    branch: Option<herald_core::workflow::Branch>,
) -> StoreResult<Option<Uuid>> {
    let rows: Vec<(Uuid, Option<String>)> = db_tx!(tx, |conn| {
        sqlx::query_as(
            "SELECT to_step_id, branch FROM workflow_transitions \
             WHERE workflow_id = $1 AND from_step_id = $2 ORDER BY created_at, id",
        )
        .bind(workflow_id)
        .bind(from)
        .fetch_all(&mut *conn)
        .await?
    });
    let want = branch.map(|b| b.as_str());
    Ok(rows
        .into_iter()
        .find(|(_, b)| b.as_deref() == want)
        .map(|(to, _)| to))
}
