//! Periodic work runs once per cluster per period, and `/metrics` names the node that ran it
//! (docs/deploy.md "Periodic work").
//!
//! Three nodes on one PostgreSQL schema share a stopped test clock, so a period begins only
//! when the test moves the clock past it: each move of ten minutes (one period of every task)
//! must add exactly one run of each task across the three nodes, counted by the nodes' own
//! run counters (`herald_periodic_runs_total`, one per process, so every node's runs appear
//! in it), and the database's claim count must agree. A node does not purge within its first
//! minute, so retention joins after that. SQLite is one node: the same rounds hold for it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use herald::Application;
use herald_core::clock::Clock;

use crate::both_engines;
use crate::helpers::{Engine, TestApp, pg_schema_connection};

both_engines!(each_periodic_task_runs_once_per_period_on_one_node);

const TOKEN: &str = "metrics-token-for-tests";
/// Retention last: it joins after the nodes' first minute.
const TASKS: [&str; 4] = [
    "segment_recompute",
    "domain_recheck",
    "campaign_completion",
    "retention",
];
/// A multiple of every task's period (10 min, 5 min, 30 s, 0.5 s).
const STEP: Duration = Duration::from_secs(600);
const NODES: [&str; 3] = ["node-a", "node-b", "node-c"];

async fn each_periodic_task_runs_once_per_period_on_one_node(engine: Engine) {
    let started = Instant::now();
    let app = engine
        .app_with(|c| {
            c.metrics_token = Some(TOKEN.into());
            c.node_name = NODES[0].into();
        })
        .await;
    // Stopped well inside every period, so nodes whose corrections differ by a millisecond
    // agree on which period it is.
    app.clock.freeze();
    let next = (app.clock.now() / 600_000 + 1) * 600_000;
    app.clock.set(next + 123_250);
    if engine == Engine::Postgres {
        for name in &NODES[1..] {
            let mut config = app.config.clone();
            config.node_name = (*name).into();
            let node = Application::build_with_clock(config, app.clock.clone())
                .await
                .expect("another node");
            tokio::spawn(node.run_until_stopped(std::future::pending()));
        }
    }

    // Every node starts in the current period, which none of them runs.
    let mut runs = settle(&app, &[]).await;
    for round in 1..=2 {
        app.clock.advance(STEP);
        let before = runs.clone();
        runs = settle(&app, &TASKS[..3]).await;
        for task in &TASKS[..3] {
            assert_eq!(runs[*task], before[*task] + 1.0, "round {round}: {task}");
        }
    }

    // Past the nodes' first minute, the current period's purge runs once, then once per move.
    let first_minute = Duration::from_secs(62).saturating_sub(started.elapsed());
    tokio::time::sleep(first_minute).await;
    runs = settle(&app, &TASKS).await;
    assert_eq!(
        runs["retention"], 1.0,
        "one purge once the first minute is over"
    );
    for round in 3..=4 {
        app.clock.advance(STEP);
        let before = runs.clone();
        runs = settle(&app, &TASKS).await;
        for task in TASKS {
            assert_eq!(runs[task], before[task] + 1.0, "round {round}: {task}");
        }
    }

    // `/metrics` names the node that ran each task last, and the database counted the claims.
    let text = metrics(&app).await;
    for task in TASKS {
        let line = text
            .lines()
            .find(|l| {
                l.starts_with("herald_periodic_last_run_seconds{")
                    && l.contains(&format!("task=\"{task}\""))
            })
            .unwrap_or_else(|| panic!("no last run of {task}:\n{text}"));
        assert!(
            NODES
                .iter()
                .any(|n| line.contains(&format!("node=\"{n}\""))),
            "{line}"
        );
    }
    assert!(
        text.contains("herald_node_info{node=\"node-a\"} 1"),
        "{text}"
    );
    if let Some(mut conn) = pg_schema_connection(&app).await {
        let claims: Vec<(String, i64)> =
            sqlx::query_as("SELECT task, claims FROM periodic_tasks ORDER BY task")
                .fetch_all(&mut conn)
                .await
                .expect("claims");
        for (task, n) in claims {
            assert_eq!(Some(&(n as f64)), runs.get(task.as_str()), "{task}");
        }
    }
}

/// Waits until the runs of `tasks` (summed over every node) stop changing for a while, and
/// returns the runs of every task.
async fn settle(app: &TestApp, tasks: &[&str]) -> HashMap<String, f64> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut text = metrics(app).await;
    let mut last = runs_by_task(&text);
    let mut quiet_since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        text = metrics(app).await;
        let now = runs_by_task(&text);
        if now != last {
            last = now;
            quiet_since = Instant::now();
            continue;
        }
        // Every node looks at the clock at least once a second.
        let ran = tasks
            .iter()
            .all(|t| last.get(*t).copied().unwrap_or(0.0) > 0.0);
        if ran && quiet_since.elapsed() > Duration::from_millis(2_500) {
            return TASKS
                .iter()
                .map(|t| (t.to_string(), last.get(*t).copied().unwrap_or(0.0)))
                .collect();
        }
        assert!(
            Instant::now() < deadline,
            "runs never settled: {last:?}\n{text}"
        );
    }
}

async fn metrics(app: &TestApp) -> String {
    let res = app.get("/metrics", TOKEN).await;
    assert_eq!(res.status(), 200);
    res.text().await.expect("metrics")
}

/// `herald_periodic_runs_total` summed over the nodes, by task.
fn runs_by_task(text: &str) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for line in text
        .lines()
        .filter(|l| l.starts_with("herald_periodic_runs_total{"))
    {
        let task = line
            .split("task=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_default();
        let n: f64 = line
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        *out.entry(task.to_owned()).or_insert(0.0) += n;
    }
    out
}
