//! Nodes wake each other: mail accepted by an `api` node, or an event that starts a
//! workflow, is handled by an idle `worker` node at once, not at its next poll. The worker
//! here polls every 30 s, so only a wake-up (LISTEN/NOTIFY on PostgreSQL) can get the
//! messages out within seconds. SQLite is one node: the same holds in memory between the API
//! and the workers of one process.

use std::time::{Duration, Instant};

use herald::Application;
use herald::config::Role;

use crate::both_engines;
use crate::crash::send_many;
use crate::helpers::Engine;
use crate::mail_setup::mail_world;
use crate::workflow_runs::{add_step, connect, enable, template, track, trigger_of, workflow};

both_engines!(
    an_idle_worker_node_is_woken_by_mail_accepted_elsewhere,
    an_idle_worker_node_runs_a_workflow_started_elsewhere,
);

/// The world of these tests: on PostgreSQL an `api` node (the test's app) and a `worker` node
/// beside it, on SQLite one node; every worker polls every 30 s.
async fn api_and_idle_worker(engine: Engine) -> crate::mail_setup::MailWorld {
    let w = mail_world(engine, |c| {
        c.idle_poll_secs = 30.0;
        if engine == Engine::Postgres {
            c.role = Role::Api;
        }
    })
    .await;
    if engine == Engine::Postgres {
        let mut config = w.app.config.clone();
        config.role = Role::Worker;
        let worker = Application::build_with_clock(config, w.app.clock.clone())
            .await
            .expect("worker node");
        tokio::spawn(worker.run_until_stopped(std::future::pending()));
    }
    // Let the worker go idle: its loops now wait up to 30 s for a look at the queues.
    tokio::time::sleep(Duration::from_secs(2)).await;
    w
}

async fn an_idle_worker_node_is_woken_by_mail_accepted_elsewhere(engine: Engine) {
    let w = api_and_idle_worker(engine).await;
    for round in 1..=3 {
        let start = Instant::now();
        let sent = send_many(&w.app, &w.project.secret_key, 5).await;
        let got = w.sink.wait_for(5 * round, Duration::from_secs(10)).await;
        assert_eq!(got.len(), 5 * round, "round {round}: woken within seconds");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "round {round} took {:?}",
            start.elapsed()
        );
        assert_eq!(sent.len(), 5);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// A tracked event queues a dispatch job, the dispatch a run job, the run a send: each is
/// announced when committed (`due_jobs`), so the chain crosses the idle worker in seconds.
async fn an_idle_worker_node_runs_a_workflow_started_elsewhere(engine: Engine) {
    let w = api_and_idle_worker(engine).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    let t = template(app, sk, "TRANSACTIONAL", "Welcome aboard").await;
    let wf = workflow(app, sk, "joined", false).await;
    let full =
        crate::helpers::expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let send = add_step(
        app,
        sk,
        &wf,
        "SEND_EMAIL",
        serde_json::json!({"templateId": t}),
    )
    .await;
    connect(app, sk, &wf, &trigger_of(&full), &send, None).await;
    enable(app, sk, &wf).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let start = Instant::now();
    track(
        app,
        sk,
        "joiner@example.com",
        "joined",
        serde_json::json!({}),
    )
    .await;
    let got = w.sink.wait_for(1, Duration::from_secs(8)).await;
    assert_eq!(got.len(), 1, "the workflow's mail within seconds");
    assert!(
        String::from_utf8_lossy(&got[0].data).contains("Welcome aboard"),
        "the workflow's template"
    );
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "took {:?}",
        start.elapsed()
    );
}
