//! `herald demo` (`herald::demo::run`, what the command calls) on both engines, beside a
//! running server on the same database: the project and all it holds (10,000 contacts with
//! typed custom fields, templates, a segment, a SENT campaign with opens and clicks, an
//! enabled workflow, tracked events over 30 days); with the server relaying to an SMTP sink,
//! no demo mail reaches it (the workflow runs and fails on the sender, a campaign send is
//! refused); with the local outbox the workflow's mail lands there; a second run makes
//! `Demo 2`; an existing user's password is left as it was.

use std::time::Duration;

use herald::demo::{DemoOutcome, DemoRequest};
use herald_testkit::smtp_sink::SmtpSink;
use reqwest::Method;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, cookie_client, expect_json};

both_engines!(
    a_demo_project_holds_everything_and_no_mail_reaches_the_relay,
    a_second_run_adds_demo_2_and_keeps_an_existing_password,
);

/// Signs in through the API; true on 200.
async fn signs_in(app: &TestApp, email: &str, password: &str) -> bool {
    let res = app
        .call_with(
            &cookie_client(),
            Method::POST,
            "/auth/login",
            None,
            Some(&json!({"email": email, "password": password})),
        )
        .await;
    res.status() == 200
}

/// The items of a list answer: an array, or one under `data`, `templates`, `workflows` or
/// `campaigns`.
fn list(v: &Value) -> Vec<Value> {
    if let Some(items) = v.as_array() {
        return items.clone();
    }
    ["data", "templates", "workflows", "campaigns"]
        .iter()
        .find_map(|k| v[*k].as_array().cloned())
        .unwrap_or_default()
}

/// Tracked events of the last `days` days.
async fn events_within(app: &TestApp, sk: &str, days: u32) -> i64 {
    let stats = expect_json(
        app.get(&format!("/events/stats?days={days}"), sk).await,
        200,
    )
    .await;
    stats["totalEvents"].as_i64().unwrap()
}

/// Tracks `signup` (the demo workflow's trigger) for a demo contact; returns its email.
async fn trigger_the_workflow(app: &TestApp, done: &DemoOutcome) -> String {
    let sk = &done.secret_key;
    let page = expect_json(app.get("/contacts?limit=1", sk).await, 200).await;
    let email = list(&page)[0]["email"].as_str().unwrap().to_owned();
    let res = app
        .post("/v1/track", sk, &json!({"email": email, "event": "signup"}))
        .await;
    assert!(res.status().is_success(), "track: {}", res.status());
    email
}

/// The demo workflow's executions, once one has left RUNNING (or after `limit`).
async fn settled_executions(app: &TestApp, sk: &str, limit: Duration) -> Vec<Value> {
    let wf = list(&expect_json(app.get("/workflows", sk).await, 200).await)[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let started = std::time::Instant::now();
    loop {
        let found = expect_json(
            app.get(&format!("/workflows/{wf}/executions?limit=10"), sk)
                .await,
            200,
        )
        .await;
        let runs = found["executions"].as_array().cloned().unwrap_or_default();
        if runs.iter().any(|r| r["status"] != "RUNNING") || started.elapsed() > limit {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_demo_project_holds_everything_and_no_mail_reaches_the_relay(engine: Engine) {
    let sink = SmtpSink::start().await.unwrap();
    let relay = sink.url();
    // A server relaying to the sink runs on the database the demo writes to.
    let app = engine.app_with(|c| c.smtp_url = Some(relay)).await;
    let done = herald::demo::run(&app.config, DemoRequest::default())
        .await
        .unwrap();
    assert_eq!(done.project_name, "Demo");
    assert_eq!(done.email, "demo@example.com");
    let password = done.password.clone().expect("a generated password");
    assert!(password.len() >= 12, "{password}");
    assert!(signs_in(&app, &done.email, &password).await);
    assert!(done.url.ends_with(&format!("/app/p/{}/", done.project_id)));
    let report = done.report();
    for shown in [&done.url, &done.email, &password] {
        assert!(report.contains(shown.as_str()), "{report}");
    }
    let sk = &done.secret_key;

    // 10,000 contacts with typed custom fields.
    let count = app
        .store
        .count_contacts(done.project_id, None, None)
        .await
        .unwrap();
    assert_eq!(count, 10_000);
    let page = expect_json(app.get("/contacts?limit=5", sk).await, 200).await;
    let data = &list(&page)[0]["data"];
    assert!(
        data["firstName"].is_string() && data["company"].is_string(),
        "{data}"
    );
    assert!(
        data["logins"].is_number() && data["betaTester"].is_boolean(),
        "{data}"
    );
    assert!(
        herald_core::fields::is_date(data["signedUpAt"].as_str().unwrap()),
        "{data}"
    );

    // Templates, a segment with members, an enabled workflow.
    let templates = list(&expect_json(app.get("/templates", sk).await, 200).await);
    assert_eq!(templates.len(), 2, "{templates:?}");
    let segments = list(&expect_json(app.get("/segments", sk).await, 200).await);
    assert_eq!(segments.len(), 1, "{segments:?}");
    assert!(
        segments[0]["memberCount"].as_i64() > Some(1_000),
        "{segments:?}"
    );
    let workflows = list(&expect_json(app.get("/workflows", sk).await, 200).await);
    assert_eq!(workflows.len(), 1);
    assert_eq!(workflows[0]["enabled"], true, "{workflows:?}");

    // A SENT campaign with opens and clicks in its stats.
    let campaigns = list(&expect_json(app.get("/campaigns", sk).await, 200).await);
    assert_eq!(campaigns.len(), 1);
    assert_eq!(campaigns[0]["status"], "SENT", "{campaigns:?}");
    let id = campaigns[0]["id"].as_str().unwrap();
    let stats = expect_json(app.get(&format!("/campaigns/{id}/stats"), sk).await, 200).await;
    let n = |f: &str| stats[f].as_i64().unwrap_or(-1);
    assert_eq!(n("sent") as usize, done.campaign_recipients, "{stats}");
    assert!(n("sent") > 1_000, "{stats}");
    assert_eq!(n("opened") as usize, done.opens, "{stats}");
    assert_eq!(n("clicked") as usize, done.clicks, "{stats}");
    assert!(n("clicked") > 0 && n("clicked") < n("opened"), "{stats}");

    // Tracked events over 30 days: some today, some older than 28 days, none older than 31.
    let all = events_within(&app, sk, 31).await;
    assert_eq!(all as usize, done.events);
    assert!(events_within(&app, sk, 1).await >= 200);
    assert!(events_within(&app, sk, 28).await < all);

    // No demo mail reaches the relay: the workflow runs and fails on its reserved sender,
    // and a campaign send is refused for the same reason.
    trigger_the_workflow(&app, &done).await;
    let runs = settled_executions(&app, sk, Duration::from_secs(20)).await;
    assert!(
        runs.iter().any(|r| r["status"] == "FAILED"),
        "the welcome step fails on the sender: {runs:?}"
    );
    let copy = expect_json(
        app.post(&format!("/campaigns/{id}/duplicate"), sk, &json!({}))
            .await,
        201,
    )
    .await;
    let copy = copy["data"]["id"].as_str().unwrap();
    let res = app
        .post(&format!("/campaigns/{copy}/send"), sk, &json!({}))
        .await;
    assert_eq!(res.status(), 403);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.accepted_count(), 0, "{:?}", sink.messages());
}

async fn a_second_run_adds_demo_2_and_keeps_an_existing_password(engine: Engine) {
    let app = engine.app().await;
    let email = "owner@example.com";
    app.signup(email).await;
    let small = |password: Option<&str>| DemoRequest {
        email: Some(email.to_owned()),
        password: password.map(str::to_owned),
        contacts: Some(300),
    };
    let first = herald::demo::run(&app.config, small(Some("another password")))
        .await
        .unwrap();
    assert_eq!(first.project_name, "Demo");
    assert_eq!(
        first.password, None,
        "an existing user keeps their password"
    );
    assert!(first.report().contains("unchanged"));
    let second = herald::demo::run(&app.config, small(None)).await.unwrap();
    assert_eq!(second.project_name, "Demo 2");
    assert_ne!(first.project_id, second.project_id);
    assert!(signs_in(&app, email, "correct horse battery").await);
    assert!(!signs_in(&app, email, "another password").await);
    let count = app
        .store
        .count_contacts(second.project_id, None, None)
        .await
        .unwrap();
    assert_eq!(count, 300);

    // With the local outbox, the demo's mail works and stays there (beside the sign-up's
    // verification mail).
    let to = trigger_the_workflow(&app, &second).await;
    let outbox = app.config.data_dir.join("outbox");
    let started = std::time::Instant::now();
    let welcome = loop {
        let to_contact: Vec<String> = std::fs::read_dir(&outbox)
            .map(|d| d.filter_map(Result::ok).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter(|raw| raw.contains(&to))
            .collect();
        if !to_contact.is_empty() || started.elapsed() > Duration::from_secs(20) {
            break to_contact;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(welcome.len(), 1, "the welcome mail is in the outbox");
    assert!(welcome[0].contains("Welcome to Acme"), "{}", welcome[0]);
}
