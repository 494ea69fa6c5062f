//! `workflows`: `count` contacts (default 100,000) each track an event that triggers a
//! three-step workflow (SEND_EMAIL, DELAY 1 minute, SEND_EMAIL), on SQLite, in process. The
//! events are recorded first (their outbox rows written with them, no worker running); then
//! the executor (`Engine::dispatch_events` and `Engine::run_executions`, as its worker calls
//! them) starts every execution and runs it to the DELAY (the first message queued): that
//! rate is the target (issue 11: at least 2,000 executions/s). The test clock then passes the
//! delay and the second step runs; every execution must end COMPLETED. Delivery is not part
//! of it (`send` measures delivery).

use std::sync::Arc;
use std::time::Instant;

use herald_core::clock::Clock;
use herald_core::fields::DataPatch;
use herald_core::kinds::TemplateType;
use herald_core::workflow::{ExecutionStatus, StepType};
use herald_engine::track::TrackPlan;
use herald_engine::{Engine, EngineSettings};
use herald_store::templates::NewTemplate;
use herald_store::workflows::{NewStep, NewWorkflow, WorkflowChange};
use serde_json::json;

use crate::send::verdict;

/// Target of issue 11.
const TARGET_STARTED_PER_SEC: f64 = 2_000.0;

pub async fn run(count: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let seeded = crate::segments::seed(dir.path(), count).await?;
    let (store, project) = (seeded.store.clone(), seeded.project);
    let mut conn = seeded.conn;
    // A verified sender domain (the DNS check is not what is measured).
    sqlx::query(
        "INSERT INTO domains (id, project_id, domain, selector, dkim_public_key, dkim_private_key, \
         verified, verified_at, next_check_at, created_at, updated_at) \
         VALUES (randomblob(16), $1, 'bench.example', 'herald1', 'k', x'00', 1, 0, 0, 0, 0)",
    )
    .bind(project)
    .execute(&mut conn)
    .await?;
    drop(conn);
    // A clock that stands still, so the delay passes exactly when the benchmark says.
    let clock = Arc::new(FixedClock(std::sync::atomic::AtomicI64::new(seeded.now)));
    let mut settings = EngineSettings::for_data_dir(dir.path(), "http://localhost:3000");
    settings.clock = clock.clone();
    let engine = Engine::new(
        store.clone(),
        settings,
        b"bench-secret-bench-secret-0123456789",
    )?;
    let now = clock.now();
    let template = |subject: &'static str| NewTemplate {
        project_id: project,
        name: subject,
        subject,
        body: "<p>Hi {{email}}, on {{event.plan ?? \"no plan\"}}.</p>",
        template_type: TemplateType::Transactional,
        from_email: Some("hello@bench.example"),
        from_name: None,
        reply_to: None,
        now,
    };
    let first = store.create_template(&template("Welcome")).await?;
    let second = store.create_template(&template("A minute later")).await?;
    let trigger = json!({"eventName": "signed-up"});
    let w = store
        .create_workflow(
            project,
            &NewWorkflow {
                name: "bench",
                description: None,
                trigger_config: &trigger,
                allow_reentry: false,
            },
            now,
        )
        .await?;
    let mut previous = w.steps[0].id;
    let steps = [
        (
            StepType::SendEmail,
            json!({"templateId": first.id}),
            Some(first.id),
        ),
        (
            StepType::Delay,
            json!({"amount": 1, "unit": "minutes"}),
            None,
        ),
        (
            StepType::SendEmail,
            json!({"templateId": second.id}),
            Some(second.id),
        ),
    ];
    for (step_type, config, template_id) in &steps {
        let step = NewStep {
            step_type: *step_type,
            name: None,
            config,
            position: None,
            template_id: *template_id,
        };
        let id = store
            .add_step(project, w.id, &step, now)
            .await?
            .ok_or_else(|| anyhow::anyhow!("the workflow is gone"))?;
        store
            .add_transition(project, w.id, (previous, id, None), now)
            .await?;
        previous = id;
    }
    let enable = WorkflowChange {
        enabled: Some(true),
        ..WorkflowChange::default()
    };
    store.update_workflow(project, w.id, &enable, now).await?;

    // The events, 64 in flight (group-committed with their outbox rows).
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(1));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..64 {
        let (engine, next) = (engine.clone(), next.clone());
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i > count {
                    return anyhow::Ok(());
                }
                let plan = TrackPlan {
                    project_id: project,
                    email: herald_core::email::EmailAddress::parse(&format!(
                        "user{i}@example.com"
                    ))?,
                    event: "signed-up".into(),
                    subscribed: None,
                    data: DataPatch::parse(Some(&json!({"plan": "pro"})))
                        .map_err(|p| anyhow::anyhow!("{}", p.message))?,
                    idempotency_key: None,
                };
                engine.track(plan).await?;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    println!(
        "workflows: {count} events tracked in {:.1} s (their outbox rows with them)",
        started.elapsed().as_secs_f64()
    );

    // Start: every execution started and run to its DELAY.
    let started = Instant::now();
    drain(&engine).await?;
    let secs = started.elapsed().as_secs_f64();
    let waiting = store
        .count_executions(project, w.id, ExecutionStatus::Waiting)
        .await?;
    let rate = waiting as f64 / secs;
    report_errors(dir.path()).await?;
    println!(
        "  started and run to the delay: {waiting} executions in {secs:.1} s = {rate:.0}/s (target >= {TARGET_STARTED_PER_SEC:.0}/s) {}",
        verdict(rate >= TARGET_STARTED_PER_SEC && waiting == count as i64)
    );

    // The clock passes the delay: the second step runs for every execution.
    clock
        .0
        .fetch_add(61_000, std::sync::atomic::Ordering::SeqCst);
    let started = Instant::now();
    drain(&engine).await?;
    let secs = started.elapsed().as_secs_f64();
    let completed = store
        .count_executions(project, w.id, ExecutionStatus::Completed)
        .await?;
    println!(
        "  after the delay: {completed} of {count} completed in {secs:.1} s = {:.0}/s {}",
        completed as f64 / secs,
        verdict(completed == count as i64)
    );
    store.close().await;
    Ok(())
}

/// A clock that only moves when told.
#[derive(Debug)]
struct FixedClock(std::sync::atomic::AtomicI64);

impl Clock for FixedClock {
    fn now(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Runs dispatches and executions until neither finds work.
async fn drain(engine: &Engine) -> anyhow::Result<()> {
    let mut rounds = 0;
    loop {
        rounds += 1;
        let t = Instant::now();
        let d = engine.dispatch_events().await?;
        let td = t.elapsed();
        let r = engine.run_executions().await?;
        if std::env::var_os("BENCH_TRACE").is_some() {
            println!(
                "round {rounds}: {d} dispatched in {td:?}, {r} run in {:?}",
                t.elapsed() - td
            );
        }
        let n = d + r;
        if n == 0 {
            return Ok(());
        }
    }
}

/// Jobs that failed an attempt, by error (a healthy run has none).
async fn report_errors(dir: &std::path::Path) -> anyhow::Result<()> {
    use sqlx::Connection;
    let url = format!("sqlite://{}", dir.join("bench.db").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await?;
    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT kind, last_error, count(*) FROM jobs WHERE last_error IS NOT NULL \
         GROUP BY kind, last_error ORDER BY 3 DESC LIMIT 5",
    )
    .fetch_all(&mut conn)
    .await?;
    for (kind, error, n) in rows {
        println!("  {n} {kind} jobs failed an attempt: {error}");
    }
    let states: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT kind, state, count(*) FROM jobs WHERE kind <> 'send' GROUP BY kind, state",
    )
    .fetch_all(&mut conn)
    .await?;
    for (kind, state, n) in states {
        println!("  {n} {kind} jobs {state}");
    }
    Ok(())
}
