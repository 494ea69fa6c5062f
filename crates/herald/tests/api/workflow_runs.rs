//! The workflow executor end to end, on both engines: events (tracked and system) start enabled
//! workflows (a tracked name, `contact.unsubscribed`, `segment.<slug>.entry`, `email.open`);
//! SEND_EMAIL sends through the pipeline to the loopback SMTP sink with `event.*`
//! variables (a MARKETING template to an unsubscribed contact is skipped and the run goes on);
//! a week-long DELAY driven by the test clock; CONDITION branches; UPDATE_CONTACT; EXIT;
//! WAIT_FOR_EVENT resumed by the contact's next event and timed out; re-entry both ways;
//! manual start; WEBHOOK calls to a loopback HTTP server (success with a verifiable signature,
//! 500 retried then FAILED, timeout, a private address refused).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_error, expect_json};
use crate::mail_setup::{DOMAIN, mail_world};

both_engines!(
    tracked_event_sends_waits_a_week_and_sends_again,
    conditions_branch_update_and_exit,
    waits_are_resumed_by_events_or_time_out,
    reentry_and_manual_start,
    system_events_trigger_workflows,
    webhooks_are_signed_retried_and_guarded,
    private_webhook_targets_are_refused,
    workflow_mail_counts_and_stops_at_the_cap,
    an_opened_email_triggers_a_workflow,
);

pub async fn workflow(app: &TestApp, key: &str, event: &str, reentry: bool) -> String {
    let w = expect_json(
        app.post(
            "/workflows",
            key,
            &json!({"name": "W", "triggerConfig": {"eventName": event}, "allowReentry": reentry}),
        )
        .await,
        201,
    )
    .await;
    w["id"].as_str().unwrap().to_owned()
}

pub fn trigger_of(w: &Value) -> String {
    w["steps"][0]["id"].as_str().unwrap().to_owned()
}

pub async fn add_step(app: &TestApp, key: &str, wf: &str, kind: &str, config: Value) -> String {
    let s = expect_json(
        app.post(
            &format!("/workflows/{wf}/steps"),
            key,
            &json!({"type": kind, "config": config}),
        )
        .await,
        201,
    )
    .await;
    s["id"].as_str().unwrap().to_owned()
}

pub async fn connect(
    app: &TestApp,
    key: &str,
    wf: &str,
    from: &str,
    to: &str,
    branch: Option<&str>,
) {
    let mut body = json!({"fromStepId": from, "toStepId": to});
    if let Some(b) = branch {
        body["branch"] = json!(b);
    }
    expect_json(
        app.post(&format!("/workflows/{wf}/transitions"), key, &body)
            .await,
        201,
    )
    .await;
}

pub async fn enable(app: &TestApp, key: &str, wf: &str) -> Value {
    expect_json(
        app.patch(&format!("/workflows/{wf}"), key, &json!({"enabled": true}))
            .await,
        200,
    )
    .await
}

pub async fn track(app: &TestApp, key: &str, email: &str, event: &str, data: Value) -> String {
    let t = expect_json(
        app.post(
            "/v1/track",
            key,
            &json!({"email": email, "event": event, "data": data}),
        )
        .await,
        200,
    )
    .await;
    t["data"]["contact"].as_str().unwrap().to_owned()
}

async fn executions(app: &TestApp, key: &str, wf: &str) -> Vec<Value> {
    let list = expect_json(
        app.get(&format!("/workflows/{wf}/executions?limit=100"), key)
            .await,
        200,
    )
    .await;
    list["executions"].as_array().unwrap().clone()
}

async fn execution(app: &TestApp, key: &str, wf: &str, id: &str) -> Value {
    expect_json(
        app.get(&format!("/workflows/{wf}/executions/{id}"), key)
            .await,
        200,
    )
    .await
}

/// Polls the contact's execution of `wf` until `done` holds (10 s at most).
pub async fn wait_execution(
    app: &TestApp,
    key: &str,
    wf: &str,
    contact: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = executions(app, key, wf)
            .await
            .into_iter()
            .find(|e| e["contactId"] == contact);
        if let Some(e) = &found {
            let full = execution(app, key, wf, e["id"].as_str().unwrap()).await;
            if done(&full) {
                return full;
            }
        }
        assert!(
            Instant::now() < deadline,
            "execution of {contact}: {found:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn status_is(s: &'static str) -> impl Fn(&Value) -> bool {
    move |e: &Value| e["status"] == s
}

fn step_statuses(e: &Value) -> Vec<String> {
    e["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap().to_owned())
        .collect()
}

pub async fn template(app: &TestApp, key: &str, kind: &str, subject: &str) -> String {
    let t = expect_json(
        app.post(
            "/templates",
            key,
            &json!({"name": subject, "type": kind, "subject": subject,
                "body": "<p>Hello {{firstName ?? \"there\"}}, plan {{event.plan}}</p>",
                "from": format!("hello@{DOMAIN}")}),
        )
        .await,
        201,
    )
    .await;
    t["id"].as_str().unwrap().to_owned()
}

async fn tracked_event_sends_waits_a_week_and_sends_again(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    let first = template(app, sk, "TRANSACTIONAL", "Welcome on {{event.plan}}").await;
    let second = template(app, sk, "MARKETING", "A week in").await;
    let wf = workflow(app, sk, "signed-up", false).await;
    let full = expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let send1 = add_step(app, sk, &wf, "SEND_EMAIL", json!({"templateId": first})).await;
    let delay = add_step(app, sk, &wf, "DELAY", json!({"amount": 7, "unit": "days"})).await;
    let send2 = add_step(app, sk, &wf, "SEND_EMAIL", json!({"templateId": second})).await;
    connect(app, sk, &wf, &trigger_of(&full), &send1, None).await;
    connect(app, sk, &wf, &send1, &delay, None).await;
    connect(app, sk, &wf, &delay, &send2, None).await;

    // Disabled: an event starts nothing.
    track(app, sk, "early@example.com", "signed-up", json!({})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(executions(app, sk, &wf).await.is_empty());

    enable(app, sk, &wf).await;
    let ada = track(
        app,
        sk,
        "ada@example.com",
        "signed-up",
        json!({"plan": "pro", "firstName": "Ada"}),
    )
    .await;
    // Bob unsubscribes before the week is over: the MARKETING mail is skipped for him.
    let bob = track(
        app,
        sk,
        "bob@example.com",
        "signed-up",
        json!({"plan": "free"}),
    )
    .await;
    for c in [&ada, &bob] {
        let e = wait_execution(app, sk, &wf, c, status_is("WAITING")).await;
        assert_eq!(e["currentStepId"], delay.as_str());
        assert_eq!(step_statuses(&e), ["COMPLETED", "COMPLETED", "WAITING"]);
    }
    let mails = w.sink.wait_for(2, Duration::from_secs(10)).await;
    let to_ada = mails
        .iter()
        .find(|m| m.rcpt_to == ["ada@example.com"])
        .expect("ada's first mail");
    let text = String::from_utf8_lossy(&to_ada.data);
    assert!(text.contains("Subject: Welcome on pro"), "{text}");
    assert!(text.contains("Hello Ada, plan pro"), "{text}");
    expect_json(
        app.patch(
            &format!("/contacts/{bob}"),
            sk,
            &json!({"subscribed": false}),
        )
        .await,
        200,
    )
    .await;

    // Six days: still waiting. Seven: the second step runs.
    app.clock.advance(Duration::from_secs(6 * 86_400));
    tokio::time::sleep(Duration::from_millis(600)).await;
    let e = wait_execution(app, sk, &wf, &ada, |_| true).await;
    assert_eq!(e["status"], "WAITING");
    app.clock.advance(Duration::from_secs(86_400 + 1));
    let e = wait_execution(app, sk, &wf, &ada, status_is("COMPLETED")).await;
    assert_eq!(
        step_statuses(&e),
        ["COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED"]
    );
    assert!(e["completedAt"].is_string());
    let e = wait_execution(app, sk, &wf, &bob, status_is("COMPLETED")).await;
    assert_eq!(
        step_statuses(&e),
        ["COMPLETED", "COMPLETED", "COMPLETED", "SKIPPED"]
    );
    assert_eq!(e["steps"][3]["output"]["skipped"], "unsubscribed");
    let mails = w.sink.wait_for(3, Duration::from_secs(10)).await;
    let weekly: Vec<_> = mails
        .iter()
        .filter(|m| String::from_utf8_lossy(&m.data).contains("Subject: A week in"))
        .collect();
    assert_eq!(weekly.len(), 1);
    assert_eq!(weekly[0].rcpt_to, ["ada@example.com"]);
    // Once-only: the same event again starts nothing for Ada.
    track(app, sk, "ada@example.com", "signed-up", json!({})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let n = executions(app, sk, &wf)
        .await
        .iter()
        .filter(|e| e["contactId"] == ada.as_str())
        .count();
    assert_eq!(n, 1);
}

async fn conditions_branch_update_and_exit(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let wf = workflow(&app, sk, "upgraded", false).await;
    let full = expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let cond = add_step(
        &app,
        sk,
        &wf,
        "CONDITION",
        json!({"field": "event.plan", "operator": "equals", "value": "pro"}),
    )
    .await;
    let update = add_step(
        &app,
        sk,
        &wf,
        "UPDATE_CONTACT",
        json!({"data": {"tier": "gold", "seats": 5}, "subscribed": false}),
    )
    .await;
    let exit = add_step(&app, sk, &wf, "EXIT", json!({"reason": "free plan"})).await;
    connect(&app, sk, &wf, &trigger_of(&full), &cond, None).await;
    connect(&app, sk, &wf, &cond, &update, Some("yes")).await;
    connect(&app, sk, &wf, &cond, &exit, Some("no")).await;
    enable(&app, sk, &wf).await;

    let pro = track(
        &app,
        sk,
        "pro@example.com",
        "upgraded",
        json!({"plan": "pro"}),
    )
    .await;
    let free = track(
        &app,
        sk,
        "free@example.com",
        "upgraded",
        json!({"plan": "free"}),
    )
    .await;
    let e = wait_execution(&app, sk, &wf, &pro, status_is("COMPLETED")).await;
    assert_eq!(e["steps"][1]["output"]["result"], true);
    assert_eq!(e["context"]["plan"], "pro");
    let c = expect_json(app.get(&format!("/contacts/{pro}"), sk).await, 200).await;
    assert_eq!(c["data"]["tier"], "gold");
    assert_eq!(c["data"]["seats"], 5);
    assert_eq!(c["subscribed"], false);
    let e = wait_execution(&app, sk, &wf, &free, status_is("EXITED")).await;
    assert_eq!(e["exitReason"], "free plan");
    assert_eq!(e["steps"][1]["output"]["result"], false);
    let c = expect_json(app.get(&format!("/contacts/{free}"), sk).await, 200).await;
    assert_eq!(c["data"].get("tier"), None);
    assert_eq!(c["subscribed"], true);
}

async fn waits_are_resumed_by_events_or_time_out(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let wf = workflow(&app, sk, "cart", false).await;
    let full = expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let wait = add_step(
        &app,
        sk,
        &wf,
        "WAIT_FOR_EVENT",
        json!({"eventName": "paid", "timeout": 3600}),
    )
    .await;
    let paid = add_step(
        &app,
        sk,
        &wf,
        "UPDATE_CONTACT",
        json!({"data": {"paid": true}}),
    )
    .await;
    let gave_up = add_step(&app, sk, &wf, "EXIT", json!({"reason": "never paid"})).await;
    connect(&app, sk, &wf, &trigger_of(&full), &wait, None).await;
    connect(&app, sk, &wf, &wait, &paid, None).await;
    connect(&app, sk, &wf, &wait, &gave_up, Some("timeout")).await;
    enable(&app, sk, &wf).await;

    let a = track(&app, sk, "a@example.com", "cart", json!({"total": 10})).await;
    let b = track(&app, sk, "b@example.com", "cart", json!({})).await;
    for c in [&a, &b] {
        wait_execution(&app, sk, &wf, c, status_is("WAITING")).await;
    }
    // An event of another contact resumes nothing; A's own does.
    track(&app, sk, "c@example.com", "paid", json!({})).await;
    track(&app, sk, "a@example.com", "paid", json!({"amount": 10})).await;
    let e = wait_execution(&app, sk, &wf, &a, status_is("COMPLETED")).await;
    assert_eq!(step_statuses(&e), ["COMPLETED", "COMPLETED", "COMPLETED"]);
    assert_eq!(e["context"]["amount"], 10);
    assert_eq!(e["context"]["total"], 10);
    let c = expect_json(app.get(&format!("/contacts/{a}"), sk).await, 200).await;
    assert_eq!(c["data"]["paid"], true);

    let e = wait_execution(&app, sk, &wf, &b, |_| true).await;
    assert_eq!(e["status"], "WAITING");
    app.clock.advance(Duration::from_secs(3601));
    let e = wait_execution(&app, sk, &wf, &b, status_is("EXITED")).await;
    assert_eq!(e["exitReason"], "never paid");
    assert_eq!(step_statuses(&e), ["COMPLETED", "TIMED_OUT", "COMPLETED"]);
    // A's timeout job finds A moved on and changes nothing.
    let e = wait_execution(&app, sk, &wf, &a, |_| true).await;
    assert_eq!(e["status"], "COMPLETED");
    assert_eq!(e["steps"].as_array().unwrap().len(), 3);
}

async fn reentry_and_manual_start(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let once = workflow(&app, sk, "visit", false).await;
    let again = workflow(&app, sk, "visit", true).await;
    enable(&app, sk, &once).await;
    enable(&app, sk, &again).await;
    let c = track(&app, sk, "v@example.com", "visit", json!({})).await;
    for wf in [&once, &again] {
        wait_execution(&app, sk, wf, &c, status_is("COMPLETED")).await;
    }
    track(&app, sk, "v@example.com", "visit", json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while executions(&app, sk, &again).await.len() < 2 {
        assert!(Instant::now() < deadline, "re-entry did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(executions(&app, sk, &once).await.len(), 1);

    // By hand: a disabled workflow too; the once-only rule holds; errors for bad input.
    let manual = workflow(&app, sk, "never-tracked", false).await;
    let started = expect_json(
        app.post(
            &format!("/workflows/{manual}/executions"),
            sk,
            &json!({"contactId": c, "context": {"source": "support"}}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(started["workflowId"], manual.as_str());
    assert_eq!(started["contactId"], c.as_str());
    assert_eq!(started["status"], "RUNNING");
    assert_eq!(started["context"], json!({"source": "support"}));
    wait_execution(&app, sk, &manual, &c, status_is("COMPLETED")).await;
    let path = format!("/workflows/{manual}/executions");
    expect_error(
        app.post(&path, sk, &json!({"contactId": c})).await,
        409,
        "CONFLICT",
    )
    .await;
    let unknown = uuid::Uuid::now_v7().to_string();
    expect_error(
        app.post(&path, sk, &json!({"contactId": unknown})).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    let e = expect_error(
        app.post(&path, sk, &json!({"contactId": "x", "context": 3}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(crate::helpers::error_fields(&e), ["contactId", "context"]);
}

async fn system_events_trigger_workflows(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let wf = workflow(&app, sk, "contact.unsubscribed", false).await;
    enable(&app, sk, &wf).await;
    let c = app
        .create_contact(sk, json!({"email": "s@example.com", "subscribed": true}))
        .await;
    let id = c["id"].as_str().unwrap();
    expect_json(
        app.patch(
            &format!("/contacts/{id}"),
            sk,
            &json!({"subscribed": false}),
        )
        .await,
        200,
    )
    .await;
    let e = wait_execution(&app, sk, &wf, id, status_is("COMPLETED")).await;
    assert_eq!(e["context"], json!({"subscribed": false}));

    // A contact entering a tracked segment (`segment.<slug>.entry`).
    let vip = workflow(&app, sk, "segment.vip.entry", false).await;
    enable(&app, sk, &vip).await;
    let c = app
        .create_contact(
            sk,
            json!({"email": "rich@example.com", "data": {"plan": "pro"}}),
        )
        .await;
    let id = c["id"].as_str().unwrap();
    let filters = json!({"operator": "AND",
        "conditions": [{"field": "data.plan", "operator": "equals", "value": "pro"}]});
    let s = expect_json(
        app.post(
            "/segments",
            sk,
            &json!({"name": "VIP", "filters": filters, "trackMembership": true}),
        )
        .await,
        201,
    )
    .await;
    let compute = format!("/segments/{}/compute", s["id"].as_str().unwrap());
    expect_json(app.post(&compute, sk, &json!({})).await, 200).await;
    let e = wait_execution(&app, sk, &vip, id, status_is("COMPLETED")).await;
    assert_eq!(e["context"]["segmentName"], "VIP");
}

/// `email.open`: the open pixel of a delivered message starts a workflow for its recipient.
async fn an_opened_email_triggers_a_workflow(engine: Engine) {
    use crate::tracking::{deliver, links_to, local, parse, world};
    let w = world(engine).await;
    let sk = &w.project.secret_key;
    let wf = workflow(&w.app, sk, "email.open", false).await;
    enable(&w.app, sk, &wf).await;
    let (_, contact, raw) = deliver(
        &w,
        &json!({"to": "ada@example.org", "from": format!("hello@{DOMAIN}"),
            "subject": "Hi", "body": "<p>Hello</p>"}),
    )
    .await;
    assert!(executions(&w.app, sk, &wf).await.is_empty());
    let html = parse(&raw).body_html(0).unwrap().into_owned();
    let pixel = local(&w.app, &links_to(&html, "/t/open/")[0]);
    assert_eq!(w.app.client.get(&pixel).send().await.unwrap().status(), 200);
    wait_execution(&w.app, sk, &wf, &contact, status_is("COMPLETED")).await;
    assert_eq!(executions(&w.app, sk, &wf).await.len(), 1);
}

/// A loopback HTTP server: answers by path (`/ok` 200, `/fail` 500, `/slow` after 3 s, `/wait`
/// after 1 s) and keeps every request it read.
pub struct Receiver {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<String>>>,
}

pub async fn receiver() -> Receiver {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests: Arc<Mutex<Vec<String>>> = Arc::default();
    let kept = requests.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let kept = kept.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Head, then as much body as Content-Length says.
                loop {
                    let Ok(n) = sock.read(&mut chunk).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            break;
                        }
                    }
                }
                let text = String::from_utf8_lossy(&buf).to_string();
                kept.lock().unwrap().push(text.clone());
                let status = if text.starts_with("POST /fail") || text.starts_with("GET /fail") {
                    "500 Internal Server Error"
                } else if text.contains(" /slow") {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    "200 OK"
                } else if text.contains(" /wait") {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    "200 OK"
                } else {
                    "200 OK"
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: 7\r\nConnection: close\r\n\r\nthanks!"
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            });
        }
    });
    Receiver { port, requests }
}

async fn webhook_workflow(app: &TestApp, sk: &str, event: &str, url: &str) -> String {
    let wf = workflow(app, sk, event, true).await;
    let full = expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let hook = add_step(
        app,
        sk,
        &wf,
        "WEBHOOK",
        json!({"url": url, "headers": {"X-Plan": "{{event.plan}}"},
            "body": {"email": "{{email}}", "plan": "{{event.plan}}", "n": 1}}),
    )
    .await;
    connect(app, sk, &wf, &trigger_of(&full), &hook, None).await;
    enable(app, sk, &wf).await;
    wf
}

async fn webhooks_are_signed_retried_and_guarded(engine: Engine) {
    let app = engine
        .app_with(|c| {
            c.webhook_allow_private = true;
            c.webhook_timeout_secs = 0.5;
        })
        .await;
    let sk = &app.project().await.secret_key;
    let r = receiver().await;
    let base = format!("http://127.0.0.1:{}", r.port);

    // Success: rendered, signed, recorded.
    let ok = webhook_workflow(&app, sk, "ok", &format!("{base}/ok?c={{{{id}}}}")).await;
    let c = track(&app, sk, "h@example.com", "ok", json!({"plan": "pro"})).await;
    let e = wait_execution(&app, sk, &ok, &c, status_is("COMPLETED")).await;
    assert_eq!(e["steps"][1]["output"]["status"], 200);
    assert_eq!(e["steps"][1]["output"]["response"], "thanks!");
    let got = r.requests.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    let req = &got[0];
    assert!(
        req.starts_with(&format!("POST /ok?c={c} HTTP/1.1")),
        "{req}"
    );
    let lower = req.to_ascii_lowercase();
    assert!(lower.contains("x-plan: pro"), "{req}");
    assert!(lower.contains("content-type: application/json"), "{req}");
    let exec_id = e["id"].as_str().unwrap();
    assert!(
        lower.contains(&format!("herald-delivery: {exec_id}:")),
        "{req}"
    );
    let body = req.split("\r\n\r\n").nth(1).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(body).unwrap(),
        json!({"email": "h@example.com", "plan": "pro", "n": 1})
    );
    let secret = expect_json(app.get("/workflows/webhook-secret", sk).await, 200).await;
    assert_eq!(secret["header"], "Herald-Signature");
    let secret = secret["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"));
    let sig = req
        .lines()
        .find_map(|l| l.strip_prefix("herald-signature: "))
        .expect("signature header");
    let t: i64 = sig
        .split(',')
        .find_map(|p| p.strip_prefix("t="))
        .unwrap()
        .parse()
        .unwrap();
    let expected =
        herald_core::workflow_run::webhook_signature(secret.as_bytes(), t, body.as_bytes());
    assert_eq!(sig, expected);

    // 500: recorded, retried with backoff (test-clock time), FAILED after the last attempt.
    let fail = webhook_workflow(&app, sk, "fail", &format!("{base}/fail")).await;
    let c = track(&app, sk, "f@example.com", "fail", json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let e = loop {
        app.clock.advance(Duration::from_secs(60));
        let e = wait_execution(&app, sk, &fail, &c, |_| true).await;
        if e["status"] == "FAILED" {
            break e;
        }
        assert!(Instant::now() < deadline, "{e}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(e["exitReason"], "the webhook answered 500");
    let calls = e["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["output"]["status"] == 500)
        .count();
    assert_eq!(calls, 5, "{e}");
    let hits = r
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|q| q.starts_with("POST /fail"))
        .count();
    assert_eq!(hits, 5);

    // No answer within the timeout: recorded as such and retried.
    let slow = webhook_workflow(&app, sk, "slow", &format!("{base}/slow")).await;
    let c = track(&app, sk, "s@example.com", "slow", json!({})).await;
    let e = wait_execution(&app, sk, &slow, &c, |e| {
        e["steps"].as_array().is_some_and(|s| s.len() >= 2)
    })
    .await;
    assert_eq!(e["steps"][1]["status"], "FAILED");
    let error = e["steps"][1]["output"]["error"].as_str().unwrap();
    assert!(error.contains("no answer within 0.5 s"), "{error}");
    assert_eq!(e["status"], "RUNNING");
}

async fn private_webhook_targets_are_refused(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let r = receiver().await;
    let wf = webhook_workflow(&app, sk, "go", &format!("http://127.0.0.1:{}/ok", r.port)).await;
    let c = track(&app, sk, "p@example.com", "go", json!({})).await;
    let e = wait_execution(&app, sk, &wf, &c, status_is("FAILED")).await;
    let reason = e["exitReason"].as_str().unwrap();
    assert!(
        reason.contains("private, loopback or link-local"),
        "{reason}"
    );
    assert_eq!(e["steps"][1]["status"], "FAILED");
    assert!(r.requests.lock().unwrap().is_empty());
}

async fn workflow_mail_counts_and_stops_at_the_cap(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let (app, p) = (&w.app, &w.project);
    let sk = &p.secret_key;
    let limits = format!("/users/@me/projects/{}/billing-limits", p.id);
    let put = reqwest::Method::PUT;
    let cap = json!({"workflows": 1});
    let res = app
        .call_with(&p.owner, put, &limits, None, Some(&cap))
        .await;
    expect_json(res, 200).await;
    let t = template(app, sk, "TRANSACTIONAL", "Capped").await;
    let wf = workflow(app, sk, "capped", false).await;
    let full = expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let send = add_step(app, sk, &wf, "SEND_EMAIL", json!({"templateId": t})).await;
    connect(app, sk, &wf, &trigger_of(&full), &send, None).await;
    enable(app, sk, &wf).await;
    let first = track(app, sk, "one@example.com", "capped", json!({})).await;
    wait_execution(app, sk, &wf, &first, status_is("COMPLETED")).await;
    let second = track(app, sk, "two@example.com", "capped", json!({})).await;
    let e = wait_execution(app, sk, &wf, &second, status_is("FAILED")).await;
    assert_eq!(
        e["exitReason"],
        "the project's monthly workflows limit is reached"
    );
    let path = format!("/users/@me/projects/{}/billing-consumption", p.id);
    let get = reqwest::Method::GET;
    let used = expect_json(app.call_with(&p.owner, get, &path, None, None).await, 200).await;
    assert_eq!(used["workflows"], 1, "{used}");
    assert_eq!(w.sink.wait_for(1, Duration::from_secs(10)).await.len(), 1);
}
