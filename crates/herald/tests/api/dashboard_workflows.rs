//! Workflow pages over HTTP on both engines: the list with its empty state, Create workflow
//! with errors beside their fields, building the graph in the page (a "+" at an open end, a
//! step inserted between two, every step type's form, a CONDITION's branches, delete with the
//! successors reconnected or the reason it cannot), the API's refusals on the step concerned
//! (a bad config, a deleted template, a step no path reaches, a transition out of an EXIT
//! undone), enable, start for a contact, executions with the count waiting at each step and
//! each one's path, and the 404 of another project's workflow.

use serde_json::{Value, json};

use crate::both_engines;
use crate::dashboard::{get, location, page, post_form, project_in_browser};
use crate::helpers::{Engine, TestApp, TestProject, expect_json, run_sql};
use crate::workflow_runs::{add_step, connect, enable, track, wait_execution};

both_engines!(
    list_create_and_build_a_workflow_in_the_page,
    refusals_show_on_the_step_concerned,
    executions_show_where_they_wait_and_their_path,
    another_projects_workflow_is_not_found,
);

async fn api_workflow(app: &TestApp, p: &TestProject, id: &str) -> Value {
    expect_json(
        app.get(&format!("/workflows/{id}"), &p.secret_key).await,
        200,
    )
    .await
}

/// The id of the step of `kind` (the first one).
fn step_of(w: &Value, kind: &str) -> String {
    w["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["type"] == kind)
        .unwrap_or_else(|| panic!("a {kind} step in {w}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The transitions as `(from type, to type, branch)`.
fn edges(w: &Value) -> Vec<(String, String, String)> {
    let kind = |id: &Value| {
        w["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| &s["id"] == id)
            .map(|s| s["type"].as_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let mut out: Vec<_> = w["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                kind(&t["fromStepId"]),
                kind(&t["toStepId"]),
                t["branch"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

fn e(from: &str, to: &str, branch: &str) -> (String, String, String) {
    (from.to_owned(), to.to_owned(), branch.to_owned())
}

/// Creates a workflow through the page's form; its id.
async fn create_in_page(app: &TestApp, c: &reqwest::Client, p: &TestProject, name: &str) -> String {
    let base = format!("/app/p/{}/workflows", p.id);
    let res = post_form(
        app,
        c,
        &base,
        &[("name", name), ("triggerConfig.eventName", "signup")],
    )
    .await;
    let to = location(&res);
    to.strip_prefix(&format!("{base}/"))
        .and_then(|r| r.strip_suffix("?notice=created"))
        .expect("to the workflow's page")
        .to_owned()
}

/// Adds a step after `after` on `branch` through the page's form; the redirect's step id.
async fn add_in_page(
    app: &TestApp,
    c: &reqwest::Client,
    p: &TestProject,
    wf: &str,
    after: &str,
    branch: &str,
    fields: &[(&str, &str)],
) -> String {
    let mut form = vec![("after", after), ("branch", branch)];
    form.extend_from_slice(fields);
    let res = post_form(
        app,
        c,
        &format!("/app/p/{}/workflows/{wf}/add", p.id),
        &form,
    )
    .await;
    let status = res.status().as_u16();
    if status != 303 {
        panic!("add refused: {status} {}", page(res).await.1);
    }
    let to = location(&res);
    to.split("step=")
        .nth(1)
        .and_then(|r| r.split('&').next())
        .expect("the new step")
        .to_owned()
}

async fn list_create_and_build_a_workflow_in_the_page(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/workflows", p.id);
    let (status, html) = page(get(&app, &c, &base).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("No workflows yet"), "{html}");
    assert!(html.contains(">Create workflow</button>"));
    assert!(!html.contains("not built yet"));

    // A refusal comes back beside its field, the typed event kept.
    let res = post_form(
        &app,
        &c,
        &base,
        &[("name", " "), ("triggerConfig.eventName", "signup")],
    )
    .await;
    let (status, html) = page(res).await;
    assert_eq!(status, 422);
    assert!(html.contains("name is 1 to"), "{html}");
    assert!(html.contains(r#"aria-describedby="f-name-error""#));
    assert!(html.contains(r#"value="signup""#));

    let wf = create_in_page(&app, &c, &p, "Onboarding").await;
    let (status, html) = page(get(&app, &c, &format!("{base}/{wf}?notice=created")).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("<svg class=\"wf-graph\""), "{html}");
    assert!(html.contains("On signup"));
    assert!(html.contains("Workflow created."));
    let w = api_workflow(&app, &p, &wf).await;
    let trigger = step_of(&w, "TRIGGER");
    // The trigger's open end is a "+" naming it.
    assert!(html.contains(&format!("href=\"{base}/{wf}?add={trigger}#n-{trigger}\"")));
    assert!(html.contains("aria-label=\"Add a step after Trigger\""));

    // The "+" opens the chooser, then the type's form.
    let (_, chooser) = page(get(&app, &c, &format!("{base}/{wf}?add={trigger}")).await).await;
    assert!(chooser.contains("Kind of step"));
    for t in [
        "Send email",
        "Delay",
        "Wait for event",
        "Condition",
        "Webhook",
        "Update contact",
        "Exit",
    ] {
        assert!(chooser.contains(&format!("<strong>{t}</strong>")), "{t}");
    }
    let (_, form) =
        page(get(&app, &c, &format!("{base}/{wf}?add={trigger}&type=DELAY")).await).await;
    assert!(form.contains(r#"name="config.amount""#) && form.contains(">Add step</button>"));

    // A bad amount: the API's message beside the field, nothing added.
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/add"),
        &[
            ("after", &trigger),
            ("branch", ""),
            ("type", "DELAY"),
            ("config.amount", "two"),
            ("config.unit", "days"),
        ],
    )
    .await;
    let (status, html) = page(res).await;
    assert_eq!(status, 422);
    assert!(html.contains("amount must be a whole number"), "{html}");
    assert!(html.contains(r#"value="two""#));
    assert_eq!(
        api_workflow(&app, &p, &wf).await["steps"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let delay = add_in_page(
        &app,
        &c,
        &p,
        &wf,
        &trigger,
        "",
        &[
            ("type", "DELAY"),
            ("config.amount", "2"),
            ("config.unit", "days"),
        ],
    )
    .await;
    let cond = add_in_page(
        &app,
        &c,
        &p,
        &wf,
        &delay,
        "",
        &[
            ("type", "CONDITION"),
            ("name", "Pro plan?"),
            ("config.field", "event"),
            ("conditionEvent", "plan"),
            ("config.operator", "equals"),
            ("config.value", "pro"),
        ],
    )
    .await;
    let w = api_workflow(&app, &p, &wf).await;
    let stored = w["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == cond.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        stored["config"],
        json!({"field": "event.plan", "operator": "equals", "value": "pro"})
    );
    add_in_page(
        &app,
        &c,
        &p,
        &wf,
        &cond,
        "no",
        &[("type", "EXIT"), ("config.reason", "not pro")],
    )
    .await;
    add_in_page(
        &app,
        &c,
        &p,
        &wf,
        &cond,
        "yes",
        &[
            ("type", "UPDATE_CONTACT"),
            ("config.data", r#"{"vip": true}"#),
            ("config.subscribed", ""),
        ],
    )
    .await;
    // Inserted between the trigger and the delay (the "+" on that transition).
    let hook = add_in_page(
        &app,
        &c,
        &p,
        &wf,
        &trigger,
        "",
        &[
            ("type", "WEBHOOK"),
            ("config.url", "https://example.com/hook"),
            ("config.method", "POST"),
            ("config.headers", "X-Team: growth"),
            ("config.body", ""),
        ],
    )
    .await;
    let w = api_workflow(&app, &p, &wf).await;
    assert_eq!(
        edges(&w),
        vec![
            e("CONDITION", "EXIT", "no"),
            e("CONDITION", "UPDATE_CONTACT", "yes"),
            e("DELAY", "CONDITION", ""),
            e("TRIGGER", "WEBHOOK", ""),
            e("WEBHOOK", "DELAY", ""),
        ]
    );
    let (_, html) = page(get(&app, &c, &format!("{base}/{wf}")).await).await;
    assert!(
        html.contains("Pro plan?") && html.contains("plan is pro"),
        "{html}"
    );
    assert!(html.contains(">Yes</text>") && html.contains(">No</text>"));
    assert!(html.contains("POST example.com/hook") && html.contains("Wait 2 days"));
    assert!(html.contains("Set vip") && html.contains("not pro"));

    // A step's form shows its config; Save changes it.
    let (_, panel) = page(get(&app, &c, &format!("{base}/{wf}?step={hook}")).await).await;
    assert!(panel.contains("X-Team: growth") && panel.contains(">Delete step</button>"));
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/steps/{delay}"),
        &[
            ("name", "Pause"),
            ("config.amount", "3"),
            ("config.unit", "hours"),
        ],
    )
    .await;
    assert_eq!(
        location(&res),
        format!("{base}/{wf}?step={delay}&notice=saved#n-{delay}")
    );
    let w = api_workflow(&app, &p, &wf).await;
    let d = w["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == delay.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        (d["name"].clone(), d["config"].clone()),
        (json!("Pause"), json!({"amount": 3, "unit": "hours"}))
    );

    // Delete: asked first without the script; then the step before joins the step after.
    let res = post_form(&app, &c, &format!("{base}/{wf}/steps/{hook}/delete"), &[]).await;
    let (status, html) = page(res).await;
    assert_eq!(status, 200);
    assert!(html.contains("Delete this step?"));
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/steps/{hook}/delete"),
        &[("confirm", "yes")],
    )
    .await;
    assert_eq!(location(&res), format!("{base}/{wf}?notice=deleted"));
    let w = api_workflow(&app, &p, &wf).await;
    assert!(edges(&w).contains(&e("TRIGGER", "DELAY", "")), "{w}");
    // A CONDITION with steps on both branches cannot be spliced: the page says why.
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/steps/{cond}/delete"),
        &[("confirm", "yes")],
    )
    .await;
    let (status, html) = page(res).await;
    assert_eq!(status, 409);
    assert!(
        html.contains("Delete the steps of one branch first"),
        "{html}"
    );
    assert!(html.contains("Not saved: This step cannot be deleted"));

    // The trigger's panel: the workflow's settings.
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/settings"),
        &[
            ("name", "Onboarding v2"),
            ("description", "New users"),
            ("triggerConfig.eventName", "signed_up"),
            ("allowReentry", "true"),
        ],
    )
    .await;
    assert_eq!(
        location(&res),
        format!("{base}/{wf}?step={trigger}&notice=saved#n-{trigger}")
    );
    let w = api_workflow(&app, &p, &wf).await;
    assert_eq!(w["name"], "Onboarding v2");
    assert_eq!(w["triggerConfig"]["eventName"], "signed_up");
    assert_eq!(w["allowReentry"], true);

    // Enable, then the list says so with the counts.
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/enabled"),
        &[("enabled", "true")],
    )
    .await;
    assert_eq!(location(&res), format!("{base}/{wf}?notice=enabled"));
    assert_eq!(api_workflow(&app, &p, &wf).await["enabled"], true);
    let (_, list) = page(get(&app, &c, &base).await).await;
    assert!(
        list.contains("Onboarding v2") && list.contains(">Enabled</span>"),
        "{list}"
    );
    assert!(list.contains("<code>signed_up</code>"));
    let (_, html) = page(get(&app, &c, &format!("{base}/{wf}")).await).await;
    assert!(html.contains(">Disable</button>"));
}

async fn refusals_show_on_the_step_concerned(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let sk = &p.secret_key;
    let base = format!("/app/p/{}/workflows", p.id);
    let tpl = expect_json(
        app.post(
            "/templates",
            sk,
            &json!({"name": "Gone soon", "type": "TRANSACTIONAL", "subject": "Hi", "body": "<p>Hi</p>"}),
        )
        .await,
        201,
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let wf = create_in_page(&app, &c, &p, "Refusals").await;
    let w = api_workflow(&app, &p, &wf).await;
    let trigger = step_of(&w, "TRIGGER");
    let send = add_in_page(
        &app,
        &c,
        &p,
        &wf,
        &trigger,
        "",
        &[("type", "SEND_EMAIL"), ("config.templateId", &tpl)],
    )
    .await;
    let exit = add_in_page(&app, &c, &p, &wf, &send, "", &[("type", "EXIT")]).await;

    // A step saved without its required field: the API's message on the field and the step.
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/steps/{send}"),
        &[("config.templateId", "")],
    )
    .await;
    let (status, html) = page(res).await;
    assert_eq!(status, 422);
    assert!(html.contains("templateId is required"), "{html}");
    assert!(html.contains(r#"aria-describedby="f-templateId-error""#));
    assert!(
        html.contains("wf-node wf-send_email is-selected is-problem"),
        "{html}"
    );
    assert!(html.contains("Not saved: templateId is required"));

    // Nothing may follow an EXIT: the API refuses the transition and the new step is undone.
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/add"),
        &[
            ("after", &exit),
            ("branch", ""),
            ("type", "DELAY"),
            ("config.amount", "1"),
            ("config.unit", "days"),
        ],
    )
    .await;
    let (status, html) = page(res).await;
    assert_eq!(status, 422);
    assert!(html.contains("EXIT"), "{html}");
    assert_eq!(
        api_workflow(&app, &p, &wf).await["steps"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // An EXIT inserted between the trigger and the send would leave the send behind it: the
    // step, the moved transition and the new one are one transaction, so nothing changes.
    let before = api_workflow(&app, &p, &wf).await;
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/add"),
        &[("after", &trigger), ("branch", ""), ("type", "EXIT")],
    )
    .await;
    let (status, html) = page(res).await;
    assert_eq!(status, 422, "{html}");
    let after = api_workflow(&app, &p, &wf).await;
    assert_eq!(after["steps"], before["steps"]);
    assert_eq!(after["transitions"], before["transitions"]);

    // A step no path reaches (made through the API) shows so, under the graph.
    add_step(
        &app,
        sk,
        &wf,
        "DELAY",
        json!({"amount": 1, "unit": "hours"}),
    )
    .await;
    let (_, html) = page(get(&app, &c, &format!("{base}/{wf}")).await).await;
    assert!(
        html.contains("Not connected: no path from the trigger reaches these steps"),
        "{html}"
    );
    assert!(html.contains("Not connected: never runs"));
    assert!(html.contains("is-orphan"));

    // The template deleted behind the API's back: the step says so, and its form too.
    run_sql(&app, &["DELETE FROM templates WHERE name = 'Gone soon'"]).await;
    let (_, html) = page(get(&app, &c, &format!("{base}/{wf}?step={send}")).await).await;
    assert!(html.contains("Template deleted: choose another"), "{html}");
    assert!(html.contains("This template was deleted: choose another and save."));
}

async fn executions_show_where_they_wait_and_their_path(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let sk = &p.secret_key;
    let base = format!("/app/p/{}/workflows", p.id);
    let wf = crate::workflow_runs::workflow(&app, sk, "signup", false).await;
    let w = api_workflow(&app, &p, &wf).await;
    let trigger = step_of(&w, "TRIGGER");
    let wait = add_step(
        &app,
        sk,
        &wf,
        "WAIT_FOR_EVENT",
        json!({"eventName": "purchase"}),
    )
    .await;
    let exit = add_step(&app, sk, &wf, "EXIT", json!({"reason": "bought"})).await;
    connect(&app, sk, &wf, &trigger, &wait, None).await;
    connect(&app, sk, &wf, &wait, &exit, None).await;
    enable(&app, sk, &wf).await;
    let ada = track(&app, sk, "ada@example.com", "signup", json!({})).await;
    let waiting = wait_execution(&app, sk, &wf, &ada, |e| e["status"] == "WAITING").await;

    let (_, html) = page(get(&app, &c, &format!("{base}/{wf}")).await).await;
    assert!(html.contains(">1 waiting</text>"), "{html}");
    assert!(html.contains("ada@example.com") && html.contains(">Waiting</span>"));
    let (_, list) = page(get(&app, &c, &base).await).await;
    assert!(list.contains("<td class=\"num\">1</td>"), "{list}");

    // The path: the steps it went through, and where it is.
    let id = waiting["id"].as_str().unwrap();
    let (_, html) = page(get(&app, &c, &format!("{base}/{wf}?execution={id}")).await).await;
    assert!(html.contains("wf-node wf-trigger is-visited"), "{html}");
    assert!(html.contains("wf-node wf-wait_for_event is-visited is-current"));
    assert!(html.contains("wf-link is-taken"));
    assert!(!html.contains("wf-node wf-exit is-visited"));

    track(&app, sk, "ada@example.com", "purchase", json!({})).await;
    wait_execution(&app, sk, &wf, &ada, |e| e["status"] == "EXITED").await;
    let (_, html) = page(get(&app, &c, &format!("{base}/{wf}?execution={id}")).await).await;
    assert!(html.contains("wf-node wf-exit is-visited"), "{html}");
    assert!(html.contains(">Exited</span>") && html.contains("bought"));
    assert!(!html.contains(" waiting</text>"));

    // Start by hand for a contact, by address; an unknown address is refused beside the field.
    track(&app, sk, "bob@example.com", "other", json!({})).await;
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/start"),
        &[("contact", "bob@example.com")],
    )
    .await;
    let to = location(&res);
    assert!(to.starts_with(&format!("{base}/{wf}?execution=")), "{to}");
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/start"),
        &[("contact", "nobody@example.com")],
    )
    .await;
    let (status, html) = page(res).await;
    assert_eq!(status, 404);
    assert!(html.contains("No contact of this project has the address nobody@example.com"));
    assert!(html.contains(r#"aria-describedby="f-contact-error""#));
    // Ada entered once and the workflow is once-only: the API's 409 in words.
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/start"),
        &[("contact", "ada@example.com")],
    )
    .await;
    let (status, _) = page(res).await;
    assert_eq!(status, 409);
}

async fn another_projects_workflow_is_not_found(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let other = app.project().await;
    let wf = crate::workflow_runs::workflow(&app, &other.secret_key, "signup", false).await;
    let w = expect_json(
        app.get(&format!("/workflows/{wf}"), &other.secret_key)
            .await,
        200,
    )
    .await;
    let trigger = step_of(&w, "TRIGGER");
    let base = format!("/app/p/{}/workflows", p.id);
    let (status, _) = page(get(&app, &c, &format!("{base}/{wf}")).await).await;
    assert_eq!(status, 404);
    let (status, _) = page(get(&app, &c, &format!("{base}/not-an-id")).await).await;
    assert_eq!(status, 404);
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/enabled"),
        &[("enabled", "true")],
    )
    .await;
    assert_eq!(res.status().as_u16(), 404);
    let res = post_form(
        &app,
        &c,
        &format!("{base}/{wf}/add"),
        &[("after", &trigger), ("type", "EXIT")],
    )
    .await;
    assert_eq!(res.status().as_u16(), 404);
    let (status, _) =
        page(get(&app, &c, &format!("/app/p/{}/workflows/{wf}", other.id)).await).await;
    assert_eq!(status, 404);
    assert_eq!(
        expect_json(
            app.get(&format!("/workflows/{wf}"), &other.secret_key)
                .await,
            200
        )
        .await["enabled"],
        false
    );
}
