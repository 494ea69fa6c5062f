//! The workflow pages in a real headless Chromium, on both engines: the empty list, Create
//! workflow, a 5-step workflow built in the page with the "+" at each open end (a CONDITION on
//! the event's data with its two branches, a WAIT_FOR_EVENT, an UPDATE_CONTACT, an EXIT),
//! Enable, then `/v1/track` moves an execution through the graph: waiting at the wait step
//! (its count on the step, its path highlighted), then on to the end. A 50-step workflow
//! keeps its boxes readable. Every state passes `Page::check_page` (screenshots light and
//! dark, 1280 and 375 px, in target/screenshots).

use std::time::{Duration, Instant};

use herald_testkit::browser::{Browser, Page};
use serde_json::{Value, json};

use crate::both_engines_with_browser;
use crate::browser_login::{log_in, owner_email};
use crate::helpers::{Engine, TestApp, expect_json};
use crate::workflow_runs::{add_step, connect, track, wait_execution};

both_engines_with_browser!(a_workflow_is_built_enabled_and_followed_in_the_graph);

const HTMX_IDLE: &str =
    "!document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping, .htmx-added')";

/// Clicks the "+" labelled `plus`, picks the kind `kind` and continues to its form.
async fn start_adding(page: &Page, plus: &str, kind: &str) {
    page.click_and_wait(&format!("a[aria-label=\"{plus}\"]"), None)
        .await
        .unwrap();
    page.click(&format!("label[for='t-{kind}']"), None)
        .await
        .unwrap();
    page.click_and_wait("button", Some("Continue"))
        .await
        .unwrap();
}

/// Chooses `value` in the select labelled by id `id` (its `change` event), as a user would.
async fn choose(page: &Page, id: &str, value: &str) {
    page.eval(&format!(
        "(() => {{ const s = document.getElementById({id:?}); s.value = {value:?};
           s.dispatchEvent(new Event('change', {{ bubbles: true }})); }})()"
    ))
    .await
    .unwrap();
}

/// Reloads the page until `condition` (a JS expression) holds: the executor runs in the
/// background.
async fn reload_until(page: &Page, url: &str, condition: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        page.goto(url).await.unwrap();
        if page.eval(condition).await.unwrap() == Value::Bool(true) {
            return;
        }
        assert!(Instant::now() < deadline, "never true: {condition}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn a_workflow_is_built_enabled_and_followed_in_the_graph(engine: Engine) {
    let app = engine.browser_app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let me = owner_email(&app, &p).await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in(&page, &app, &me).await;

    page.click_and_wait("nav[aria-label=Main] a", Some("Workflows"))
        .await
        .unwrap();
    assert!(
        page.text(".empty")
            .await
            .unwrap()
            .contains("No workflows yet.")
    );
    page.check_page(&app.base, "dashboard-workflows-empty")
        .await;

    page.fill("Name", "Plan router").await.unwrap();
    page.fill("Trigger event", "signup").await.unwrap();
    page.click_and_wait("button", Some("Create workflow"))
        .await
        .unwrap();
    assert_eq!(page.text("h1").await.unwrap(), "Plan router");
    page.check_page(&app.base, "dashboard-workflow-new").await;

    // 1. A CONDITION on the event's data: the field's change re-renders the panel (htmx).
    start_adding(&page, "Add a step after Trigger", "CONDITION").await;
    page.fill("Name", "Pro plan?").await.unwrap();
    choose(&page, "f-config.field", "event").await;
    page.wait_for(&format!(
        "getComputedStyle(document.querySelector('.wf-event-key')).display !== 'none' && {HTMX_IDLE}"
    ))
    .await
    .unwrap();
    page.fill("Event data key", "plan").await.unwrap();
    choose(&page, "f-config.operator", "equals").await;
    page.wait_for(HTMX_IDLE).await.unwrap();
    page.fill("Value", "pro").await.unwrap();
    page.click_and_wait("button", Some("Add step"))
        .await
        .unwrap();
    assert!(page.body_text().await.unwrap().contains("Step added."));
    page.check_page(&app.base, "dashboard-workflow-condition")
        .await;

    // 2. yes: wait for a purchase; 3. no: exit; 4. after the wait: update the contact.
    start_adding(&page, "Add a step after Pro plan? (Yes)", "WAIT_FOR_EVENT").await;
    page.fill("Event name", "purchase").await.unwrap();
    page.click_and_wait("button", Some("Add step"))
        .await
        .unwrap();
    start_adding(&page, "Add a step after Pro plan? (No)", "EXIT").await;
    page.fill("Reason", "not pro").await.unwrap();
    page.click_and_wait("button", Some("Add step"))
        .await
        .unwrap();
    start_adding(&page, "Add a step after Wait for event", "UPDATE_CONTACT").await;
    page.fill("Data", r#"{"vip": true}"#).await.unwrap();
    page.click_and_wait("button", Some("Add step"))
        .await
        .unwrap();
    let nodes = page
        .eval("document.querySelectorAll('.wf-graph .wf-node').length")
        .await
        .unwrap();
    assert_eq!(nodes, json!(5));
    // Side by side: the yes branch left of the no branch, on one row.
    let sides = page
        .eval(
            "(() => { const y = document.querySelector('.wf-wait_for_event rect').getBoundingClientRect();
               const n = document.querySelector('.wf-exit rect').getBoundingClientRect();
               return Math.abs(y.top - n.top) < 1 && y.right <= n.left; })()",
        )
        .await
        .unwrap();
    assert_eq!(sides, json!(true));
    page.click_and_wait("a", Some("Close")).await.unwrap();
    page.check_page(&app.base, "dashboard-workflow-built").await;

    page.click_and_wait("button", Some("Enable")).await.unwrap();
    assert!(page.text(".page-header").await.unwrap().contains("Enabled"));

    // /v1/track: a pro signup goes down yes and waits for its purchase.
    let url = page.url().await.unwrap();
    let url = url.split('?').next().unwrap().to_owned();
    let ada = track(
        &app,
        sk,
        "ada@example.com",
        "signup",
        json!({"plan": "pro"}),
    )
    .await;
    reload_until(
        &page,
        &url,
        "(document.querySelector('.wf-wait_for_event .wf-waiting') || {}).textContent === '1 waiting'",
    )
    .await;
    page.click_and_wait("a", Some("Show path")).await.unwrap();
    let visited = page
        .eval("Array.from(document.querySelectorAll('.wf-node.is-visited')).map(n => n.classList[1]).join(',')")
        .await
        .unwrap();
    assert_eq!(visited, json!("wf-trigger,wf-condition,wf-wait_for_event"));
    assert_eq!(
        page.eval("document.querySelectorAll('.wf-link.is-taken').length")
            .await
            .unwrap(),
        json!(2)
    );
    assert!(
        page.text("#wf-panel")
            .await
            .unwrap()
            .contains("ada@example.com")
    );
    page.check_page(&app.base, "dashboard-workflow-waiting")
        .await;

    // The purchase moves it on to the end: the whole path is lit, nobody waits any more.
    track(&app, sk, "ada@example.com", "purchase", json!({})).await;
    let done = wait_execution(&app, sk, &workflow_id(&url), &ada, |e| {
        e["status"] == "COMPLETED"
    })
    .await;
    let path = format!("{url}?execution={}", done["id"].as_str().unwrap());
    reload_until(
        &page,
        &path,
        "!!document.querySelector('.wf-update_contact.is-visited')",
    )
    .await;
    assert_eq!(
        page.eval("document.querySelectorAll('.wf-waiting').length")
            .await
            .unwrap(),
        json!(0)
    );
    assert!(page.text("#wf-panel").await.unwrap().contains("Completed"));
    page.check_page(&app.base, "dashboard-workflow-path").await;

    // 50 steps: one box per step at its full size, the graph scrolls inside its panel.
    let big = fifty_steps(&app, sk).await;
    page.goto(&app.url(&format!("/app/p/{}/workflows/{big}", p.id)))
        .await
        .unwrap();
    let boxes = page
        .eval(
            "(() => { const r = Array.from(document.querySelectorAll('.wf-node rect')).map(e => e.getBoundingClientRect());
               return [r.length, r.every(b => Math.round(b.width) === 232 && Math.round(b.height) === 76)]; })()",
        )
        .await
        .unwrap();
    assert_eq!(boxes, json!([50, true]));
    page.check_page(&app.base, "dashboard-workflow-50").await;
}

fn workflow_id(url: &str) -> String {
    url.rsplit('/').next().unwrap().to_owned()
}

/// A workflow of 50 steps through the API: a chain with a CONDITION every fifth step whose
/// `no` is an EXIT.
async fn fifty_steps(app: &TestApp, sk: &str) -> String {
    let wf = crate::workflow_runs::workflow(app, sk, "big", false).await;
    let w = expect_json(app.get(&format!("/workflows/{wf}"), sk).await, 200).await;
    let mut prev = crate::workflow_runs::trigger_of(&w);
    let mut branch: Option<&str> = None;
    let mut steps = 1;
    while steps < 50 {
        if steps % 5 == 4 && steps < 48 {
            let c = add_step(
                app,
                sk,
                &wf,
                "CONDITION",
                json!({"field": "data.plan", "operator": "equals", "value": "pro"}),
            )
            .await;
            connect(app, sk, &wf, &prev, &c, branch).await;
            let x = add_step(
                app,
                sk,
                &wf,
                "EXIT",
                json!({"reason": format!("step {steps}")}),
            )
            .await;
            connect(app, sk, &wf, &c, &x, Some("no")).await;
            prev = c;
            branch = Some("yes");
            steps += 2;
        } else {
            let d = add_step(
                app,
                sk,
                &wf,
                "DELAY",
                json!({"amount": steps, "unit": "minutes"}),
            )
            .await;
            connect(app, sk, &wf, &prev, &d, branch).await;
            prev = d;
            branch = None;
            steps += 1;
        }
    }
    wf
}
