//! The Workflows resource over HTTP, on both engines: create (disabled, EVENT, with its TRIGGER
//! step), get, list, patch, delete (409 with active executions); steps with configs checked
//! per type (422 at `config.<path>`), SEND_EMAIL naming an existing template (template usage
//! and the template delete 409); transitions under the graph rules (branches, EXIT, cycles);
//! step deletion with and without splice; executions listed, read, cancelled one and all
//! (inserted through the store; running them is workflow_runs.rs);
//! a deleted contact's executions cancelled; `GET /workflows/fields`; project isolation.

use herald_core::clock::Clock;
use herald_core::ids::Uuid;
use herald_core::workflow::ExecutionStatus;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};

both_engines!(
    create_get_list_patch_delete,
    steps_are_checked_per_type,
    transitions_follow_the_graph_rules,
    deleting_a_step_with_and_without_splice,
    executions_are_listed_read_and_cancelled,
    send_email_steps_use_templates,
    workflows_are_invisible_to_other_projects,
);

async fn create(app: &TestApp, key: &str, event: &str) -> Value {
    expect_json(
        app.post(
            "/workflows",
            key,
            &json!({"name": "Onboarding", "triggerConfig": {"eventName": event}}),
        )
        .await,
        201,
    )
    .await
}

async fn step(app: &TestApp, key: &str, wf: &str, body: Value) -> Value {
    expect_json(
        app.post(&format!("/workflows/{wf}/steps"), key, &body)
            .await,
        201,
    )
    .await
}

async fn link(
    app: &TestApp,
    key: &str,
    wf: &str,
    from: &Value,
    to: &Value,
    branch: Option<&str>,
) -> reqwest::Response {
    let mut body = json!({"fromStepId": from["id"], "toStepId": to["id"]});
    if let Some(b) = branch {
        body["branch"] = json!(b);
    }
    app.post(&format!("/workflows/{wf}/transitions"), key, &body)
        .await
}

async fn get(app: &TestApp, key: &str, wf: &str) -> Value {
    expect_json(app.get(&format!("/workflows/{wf}"), key).await, 200).await
}

async fn create_get_list_patch_delete(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let w = create(&app, sk, "signed_up").await;
    assert_eq!(w["triggerType"], "EVENT");
    assert_eq!(w["enabled"], false);
    assert_eq!(w["allowReentry"], false);
    assert_eq!(w["triggerConfig"], json!({"eventName": "signed_up"}));
    assert_eq!(w["steps"].as_array().unwrap().len(), 1);
    assert_eq!(w["steps"][0]["type"], "TRIGGER");
    assert_eq!(w["transitions"], json!([]));
    let id = w["id"].as_str().unwrap();

    let patched = expect_json(
        app.patch(
            &format!("/workflows/{id}"),
            sk,
            &json!({"name": "Welcome", "enabled": true, "allowReentry": true,
                "triggerConfig": {"eventName": "contact.subscribed"}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(patched["name"], "Welcome");
    assert_eq!(patched["enabled"], true);
    assert_eq!(patched["allowReentry"], true);
    assert_eq!(
        patched["steps"][0]["config"]["eventName"],
        "contact.subscribed"
    );
    let list = expect_json(app.get("/workflows", sk).await, 200).await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["workflows"][0]["id"], id);

    let e = expect_error(
        app.post("/workflows", sk, &json!({"triggerConfig": {}}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["name", "triggerConfig.eventName"]);
    let e = expect_error(
        app.patch(
            &format!("/workflows/{id}"),
            sk,
            &json!({"triggerType": "SCHEDULE"}),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["triggerType"]);

    let res = app.delete(&format!("/workflows/{id}"), sk).await;
    assert_eq!(res.status(), 204);
    expect_error(
        app.get(&format!("/workflows/{id}"), sk).await,
        404,
        "WORKFLOW_NOT_FOUND",
    )
    .await;
}

async fn steps_are_checked_per_type(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let w = create(&app, sk, "paid").await;
    let wf = w["id"].as_str().unwrap();
    let delay = step(&app, sk, wf, json!({"type": "DELAY", "name": "Wait", "config": {"amount": 2, "unit": "day"}, "position": {"x": 1, "y": 2}})).await;
    assert_eq!(delay["config"], json!({"amount": 2, "unit": "days"}));
    assert_eq!(delay["position"], json!({"x": 1, "y": 2}));
    for (body, fields) in [
        (
            json!({"type": "DELAY", "config": {"amount": 0, "unit": "weeks"}}),
            vec!["config.unit", "config.amount"],
        ),
        (
            json!({"type": "CONDITION", "config": {"field": "plan", "operator": "equals"}}),
            vec!["config.field", "config.value"],
        ),
        (
            json!({"type": "WEBHOOK", "config": {"url": "ftp://x"}}),
            vec!["config.url"],
        ),
        (
            json!({"type": "WAIT_FOR_EVENT", "config": {"timeout": -1}}),
            vec!["config.eventName", "config.timeout"],
        ),
        (
            json!({"type": "SEND_EMAIL", "config": {}}),
            vec!["config.templateId"],
        ),
        (json!({"type": "TRIGGER", "config": {}}), vec!["type"]),
        (json!({"type": "SLEEP", "config": {}}), vec!["type"]),
    ] {
        let e = expect_error(
            app.post(&format!("/workflows/{wf}/steps"), sk, &body).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&e), fields, "{body}");
    }
    let sid = delay["id"].as_str().unwrap();
    let changed = expect_json(
        app.patch(
            &format!("/workflows/{wf}/steps/{sid}"),
            sk,
            &json!({"config": {"amount": 30, "unit": "minutes"}}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(changed["config"]["amount"], 30);
    assert_eq!(changed["name"], "Wait");
    expect_error(
        app.patch(
            &format!("/workflows/{wf}/steps/{sid}"),
            sk,
            &json!({"config": {"amount": "x", "unit": "days"}}),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    let fields = expect_json(app.get("/workflows/fields", sk).await, 200).await;
    assert_eq!(fields["contact"][0]["field"], "contact.email");
}

async fn transitions_follow_the_graph_rules(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let w = create(&app, sk, "paid").await;
    let wf = w["id"].as_str().unwrap();
    let trigger = &w["steps"][0];
    let cond = step(&app, sk, wf, json!({"type": "CONDITION", "config": {"field": "data.plan", "operator": "equals", "value": "pro"}})).await;
    let wait = step(
        &app,
        sk,
        wf,
        json!({"type": "WAIT_FOR_EVENT", "config": {"eventName": "upgraded", "timeout": 3600}}),
    )
    .await;
    let exit = step(
        &app,
        sk,
        wf,
        json!({"type": "EXIT", "config": {"reason": "done"}}),
    )
    .await;
    let delay = step(
        &app,
        sk,
        wf,
        json!({"type": "DELAY", "config": {"amount": 1, "unit": "hours"}}),
    )
    .await;

    expect_json(link(&app, sk, wf, trigger, &cond, None).await, 201).await;
    // A second plain transition out of the trigger, a branch on a plain step, a CONDITION
    // transition without a branch: all refused.
    let e = expect_error(
        link(&app, sk, wf, trigger, &exit, None).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["fromStepId"]);
    let e = expect_error(
        link(&app, sk, wf, &delay, &exit, Some("yes")).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["branch"]);
    let e = expect_error(
        link(&app, sk, wf, &cond, &exit, None).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["branch"]);
    let yes = expect_json(link(&app, sk, wf, &cond, &wait, Some("yes")).await, 201).await;
    assert_eq!(yes["branch"], "yes");
    expect_json(link(&app, sk, wf, &cond, &delay, Some("no")).await, 201).await;
    expect_json(link(&app, sk, wf, &wait, &exit, Some("timeout")).await, 201).await;
    expect_json(link(&app, sk, wf, &wait, &exit, None).await, 201).await;
    // EXIT has no outgoing transition; nothing leads back (cycle) or into the trigger.
    let e = expect_error(
        link(&app, sk, wf, &exit, &delay, None).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["fromStepId"]);
    let e = expect_error(
        link(&app, sk, wf, &delay, &cond, None).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["toStepId"]);
    let e = expect_error(
        link(&app, sk, wf, &delay, trigger, None).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["toStepId"]);
    let full = get(&app, sk, wf).await;
    assert_eq!(full["transitions"].as_array().unwrap().len(), 5);
    // The trigger's and the wait's events, and the condition's field, show the workflow.
    for event in ["paid", "upgraded"] {
        let usage = expect_json(app.get(&format!("/events/{event}/usage"), sk).await, 200).await;
        assert_eq!(usage["workflows"][0]["id"], wf, "{usage}");
    }
    app.create_contact(
        sk,
        json!({"email": "f@example.org", "data": {"plan": "pro"}}),
    )
    .await;
    let usage = expect_json(app.get("/contacts/fields/plan/usage", sk).await, 200).await;
    assert_eq!(usage["workflows"][0]["id"], wf, "{usage}");
    let tid = yes["id"].as_str().unwrap();
    assert_eq!(
        app.delete(&format!("/workflows/{wf}/transitions/{tid}"), sk)
            .await
            .status(),
        204
    );
    assert_eq!(
        get(&app, sk, wf).await["transitions"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    expect_error(
        app.delete(&format!("/workflows/{wf}/transitions/{tid}"), sk)
            .await,
        404,
        "NOT_FOUND",
    )
    .await;
}

async fn deleting_a_step_with_and_without_splice(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let w = create(&app, sk, "paid").await;
    let wf = w["id"].as_str().unwrap();
    let trigger = &w["steps"][0];
    let a = step(
        &app,
        sk,
        wf,
        json!({"type": "DELAY", "config": {"amount": 1, "unit": "hours"}}),
    )
    .await;
    let b = step(
        &app,
        sk,
        wf,
        json!({"type": "DELAY", "config": {"amount": 2, "unit": "hours"}}),
    )
    .await;
    let c = step(&app, sk, wf, json!({"type": "EXIT", "config": {}})).await;
    for (f, t) in [(trigger, &a), (&a, &b), (&b, &c)] {
        expect_json(link(&app, sk, wf, f, t, None).await, 201).await;
    }
    // Splice: trigger -> a -> c once b is gone.
    let bid = b["id"].as_str().unwrap();
    assert_eq!(
        app.delete(&format!("/workflows/{wf}/steps/{bid}?splice=true"), sk)
            .await
            .status(),
        204
    );
    let full = get(&app, sk, wf).await;
    let edges: Vec<(String, String)> = full["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["fromStepId"].as_str().unwrap().to_owned(),
                t["toStepId"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        edges.contains(&(
            a["id"].as_str().unwrap().to_owned(),
            c["id"].as_str().unwrap().to_owned()
        )),
        "{edges:?}"
    );
    assert_eq!(edges.len(), 2);
    // Without splice the transitions around it simply go.
    let aid = a["id"].as_str().unwrap();
    assert_eq!(
        app.delete(&format!("/workflows/{wf}/steps/{aid}"), sk)
            .await
            .status(),
        204
    );
    assert_eq!(get(&app, sk, wf).await["transitions"], json!([]));
    let tid = trigger["id"].as_str().unwrap();
    expect_error(
        app.delete(&format!("/workflows/{wf}/steps/{tid}"), sk)
            .await,
        409,
        "CONFLICT",
    )
    .await;
}

async fn executions_are_listed_read_and_cancelled(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let w = create(&app, sk, "paid").await;
    let wf = w["id"].as_str().unwrap();
    let project: Uuid = p.id.parse().unwrap();
    let workflow: Uuid = wf.parse().unwrap();
    let mut contacts = Vec::new();
    for i in 0..3 {
        let c = app
            .create_contact(sk, json!({"email": format!("x{i}@example.org")}))
            .await;
        contacts.push(
            c["id"]
                .as_str()
                .or(c["contact"]["id"].as_str())
                .unwrap()
                .to_owned(),
        );
    }
    let now = app.clock.now();
    let mut ids = Vec::new();
    for (c, st) in contacts.iter().zip([
        ExecutionStatus::Running,
        ExecutionStatus::Waiting,
        ExecutionStatus::Completed,
    ]) {
        let id = app
            .store
            .insert_execution(
                project,
                workflow,
                c.parse().unwrap(),
                st,
                &json!({"plan": "pro"}),
                now,
            )
            .await
            .unwrap();
        ids.push(id.to_string());
    }
    let upcoming = expect_json(app.get("/activity/upcoming", sk).await, 200).await;
    assert_eq!(
        upcoming["executions"].as_array().unwrap().len(),
        1,
        "{upcoming}"
    );
    assert_eq!(upcoming["executions"][0]["id"], ids[1].as_str());
    let list = expect_json(
        app.get(&format!("/workflows/{wf}/executions"), sk).await,
        200,
    )
    .await;
    assert_eq!(list["executions"].as_array().unwrap().len(), 3);
    let waiting = expect_json(
        app.get(&format!("/workflows/{wf}/executions?status=WAITING"), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(waiting["executions"][0]["id"], ids[1].as_str());
    expect_error(
        app.get(&format!("/workflows/{wf}/executions?status=DONE"), sk)
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    let one = expect_json(
        app.get(&format!("/workflows/{wf}/executions/{}", ids[0]), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(one["status"], "RUNNING");
    assert_eq!(one["context"], json!({"plan": "pro"}));
    assert_eq!(one["steps"], json!([]));
    // Active executions block the delete.
    expect_error(
        app.delete(&format!("/workflows/{wf}"), sk).await,
        409,
        "CONFLICT",
    )
    .await;
    let cancelled = expect_json(
        app.delete(&format!("/workflows/{wf}/executions/{}", ids[0]), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(cancelled["status"], "CANCELLED");
    expect_error(
        app.delete(&format!("/workflows/{wf}/executions/{}", ids[2]), sk)
            .await,
        409,
        "CONFLICT",
    )
    .await;
    // Deleting the waiting execution's contact cancels it.
    assert_eq!(
        app.delete(&format!("/contacts/{}", contacts[1]), sk)
            .await
            .status(),
        204
    );
    let gone = expect_json(
        app.get(&format!("/workflows/{wf}/executions/{}", ids[1]), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(gone["status"], "CANCELLED");
    let all = expect_json(
        app.post(
            &format!("/workflows/{wf}/executions/cancel-all"),
            sk,
            &json!({}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(all["cancelled"], 0);
    // The contact entered this once-only workflow (the inserted executions): no manual start.
    expect_error(
        app.post(
            &format!("/workflows/{wf}/executions"),
            sk,
            &json!({"contactId": contacts[0]}),
        )
        .await,
        409,
        "CONFLICT",
    )
    .await;
    assert_eq!(
        app.delete(&format!("/workflows/{wf}"), sk).await.status(),
        204
    );
}

async fn send_email_steps_use_templates(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let t = expect_json(
        app.post(
            "/templates",
            sk,
            &json!({"name": "Hi", "subject": "S", "body": "<p>B</p>", "type": "MARKETING"}),
        )
        .await,
        201,
    )
    .await;
    let tid = t["id"].as_str().unwrap();
    let w = create(&app, sk, "paid").await;
    let wf = w["id"].as_str().unwrap();
    let e = expect_error(
        app.post(
            &format!("/workflows/{wf}/steps"),
            sk,
            &json!({"type": "SEND_EMAIL", "config": {"templateId": Uuid::new_v4().to_string()}}),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["config.templateId"]);
    let s = step(
        &app,
        sk,
        wf,
        json!({"type": "SEND_EMAIL", "config": {"templateId": tid}}),
    )
    .await;
    let usage = expect_json(app.get(&format!("/templates/{tid}/usage"), sk).await, 200).await;
    assert_eq!(usage["workflowSteps"][0]["id"], s["id"]);
    assert_eq!(usage["workflowSteps"][0]["workflowId"], wf);
    expect_error(
        app.delete(&format!("/templates/{tid}"), sk).await,
        409,
        "CONFLICT",
    )
    .await;
    let sid = s["id"].as_str().unwrap();
    assert_eq!(
        app.delete(&format!("/workflows/{wf}/steps/{sid}"), sk)
            .await
            .status(),
        204
    );
    assert_eq!(
        app.delete(&format!("/templates/{tid}"), sk).await.status(),
        204
    );
}

async fn workflows_are_invisible_to_other_projects(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let w = create(&app, sk, "paid").await;
    let wf = w["id"].as_str().unwrap();
    let other = app.project().await.secret_key;
    expect_error(
        app.get(&format!("/workflows/{wf}"), &other).await,
        404,
        "WORKFLOW_NOT_FOUND",
    )
    .await;
    expect_error(
        app.patch(&format!("/workflows/{wf}"), &other, &json!({"name": "x"}))
            .await,
        404,
        "WORKFLOW_NOT_FOUND",
    )
    .await;
    expect_error(
        app.delete(&format!("/workflows/{wf}"), &other).await,
        404,
        "WORKFLOW_NOT_FOUND",
    )
    .await;
    expect_error(
        app.post(
            &format!("/workflows/{wf}/steps"),
            &other,
            &json!({"type": "EXIT", "config": {}}),
        )
        .await,
        404,
        "WORKFLOW_NOT_FOUND",
    )
    .await;
    expect_error(
        app.get(&format!("/workflows/{wf}/executions"), &other)
            .await,
        404,
        "WORKFLOW_NOT_FOUND",
    )
    .await;
    let list = expect_json(app.get("/workflows", &other).await, 200).await;
    assert_eq!(list["total"], 0);
}
