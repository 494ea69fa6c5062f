//! Crash safety of the workflow executor: a `herald serve` process killed (SIGKILL) while 300
//! executions are between their steps (the first mail queued, a WEBHOOK call in flight, the
//! second mail to come) resumes each at the right step after a restart: every execution ends
//! COMPLETED, each SEND_EMAIL step queued exactly one message per contact, and only calls in
//! flight at the kill were made twice (a WEBHOOK is at least once).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use herald_core::workflow::ExecutionStatus;
use herald_store::messages::MessageFilter;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::mail_world;
use crate::track_crash::{free_port, spawn_server_with, wait_healthy};
use crate::workflow_runs::{
    add_step, connect, enable, receiver, template, track, trigger_of, workflow,
};

both_engines!(killed_mid_workflow_resumes_without_repeating_a_step);

const CONTACTS: usize = 300;

/// The child server, killed when the test ends whichever way (a failed assertion included),
/// so no process outlives the test holding its database.
const CHILD_ENV: [(&str, &str); 1] = [("HERALD_WEBHOOK_ALLOW_PRIVATE", "true")];

async fn killed_mid_workflow_resumes_without_repeating_a_step(engine: Engine) {
    // The in-process app (no workers) sets up and reads; the child runs the workflows.
    let w = mail_world(engine, |c| c.workers = false).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    let project: uuid::Uuid = w.project.id.parse().unwrap();
    let first = template(app, sk, "TRANSACTIONAL", "First").await;
    let second = template(app, sk, "TRANSACTIONAL", "Second").await;
    let r = receiver().await;
    let wf = workflow(app, sk, "joined", false).await;
    let full = expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let send1 = add_step(app, sk, &wf, "SEND_EMAIL", json!({"templateId": first})).await;
    let url = format!("http://127.0.0.1:{}/wait?c={{{{id}}}}", r.port);
    let hook = add_step(app, sk, &wf, "WEBHOOK", json!({"url": url})).await;
    let send2 = add_step(app, sk, &wf, "SEND_EMAIL", json!({"templateId": second})).await;
    connect(app, sk, &wf, &trigger_of(&full), &send1, None).await;
    connect(app, sk, &wf, &send1, &hook, None).await;
    connect(app, sk, &wf, &hook, &send2, None).await;
    enable(app, sk, &wf).await;
    for i in 0..CONTACTS {
        track(app, sk, &format!("c{i}@example.com"), "joined", json!({})).await;
    }
    let wf_id: uuid::Uuid = wf.parse().unwrap();
    let count = |status: ExecutionStatus| {
        let store = app.store.clone();
        async move {
            store
                .list_executions(project, wf_id, Some(status), 100_000)
                .await
                .unwrap()
                .len()
        }
    };

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut child = spawn_server_with(&app.config, port, &CHILD_ENV);
    wait_healthy(&client, &base).await;
    // Kill once calls are in flight: every execution started, some past their webhook.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let calls = r.requests.lock().unwrap().len();
        if calls >= 50 {
            break;
        }
        assert!(Instant::now() < deadline, "the child made {calls} calls");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    // Requests the dead process had already written are still being read: let them land.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let calls_at_kill = r.requests.lock().unwrap().len();
    let done_at_kill = count(ExecutionStatus::Completed).await;
    println!("killed with {calls_at_kill} calls made, {done_at_kill} executions completed");
    assert!(done_at_kill < CONTACTS, "the kill came too late");

    let child = spawn_server_with(&app.config, port, &CHILD_ENV);
    wait_healthy(&client, &base).await;
    let deadline = Instant::now() + Duration::from_secs(90);
    while count(ExecutionStatus::Completed).await < CONTACTS {
        assert!(Instant::now() < deadline, "executions did not all complete");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(child);

    // Each SEND_EMAIL step queued one message per contact, no more.
    let filter = MessageFilter {
        source: Some("workflow".into()),
        ..MessageFilter::default()
    };
    let (messages, more) = app
        .store
        .list_messages(project, &filter, 10_000, None)
        .await
        .unwrap();
    assert!(!more);
    let mut per: HashMap<(Option<uuid::Uuid>, Option<uuid::Uuid>), usize> = HashMap::new();
    for m in &messages {
        *per.entry((m.contact_id, m.template_id)).or_default() += 1;
    }
    assert_eq!(messages.len(), 2 * CONTACTS, "{} messages", messages.len());
    assert!(per.values().all(|n| *n == 1), "a step queued twice");
    // Calls: each contact at least once; twice only for calls in flight at the kill.
    let mut calls: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, q) in r.requests.lock().unwrap().iter().enumerate() {
        let c = q
            .split("?c=")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap_or("");
        calls.entry(c.to_owned()).or_default().push(i);
    }
    assert_eq!(calls.len(), CONTACTS);
    let repeated: Vec<&Vec<usize>> = calls.values().filter(|n| n.len() > 1).collect();
    println!(
        "webhook calls repeated: {} (made before the kill: {calls_at_kill})",
        repeated.len()
    );
    for made in repeated {
        assert_eq!(made.len(), 2, "a call made more than twice");
        assert!(
            made[0] < calls_at_kill,
            "a call repeated that was not in flight at the kill"
        );
    }
}
