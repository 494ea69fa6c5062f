//! `DELETE /domains/:id` while something sends from the domain in the background: 409
//! `DOMAIN_IN_USE` naming each SCHEDULED or SENDING campaign and each enabled workflow whose
//! SEND_EMAIL template sends from it (message and `details`), and deletable again once they are
//! cancelled or disabled. A DRAFT campaign, or a template alone, does not hold a domain.

use herald_core::clock::Clock;

use super::*;

both_engines!(a_domain_in_use_by_campaigns_and_workflows_is_409_until_released);

async fn post_ok(app: &TestApp, key: &str, path: &str, body: Value, status: u16) -> Value {
    expect_json(app.post(path, key, &body).await, status).await
}

async fn a_domain_in_use_by_campaigns_and_workflows_is_409_until_released(engine: Engine) {
    // No workers: a campaign sent now stays SENDING.
    let app = engine.app_with(|c| c.workers = false).await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let d = add(&app, &p, "used.test").await;
    let path = format!("/domains/{}", d["id"].as_str().unwrap());
    let campaign = |name: &str| {
        json!({"name": name, "subject": "S", "body": "<p>B</p>", "from": "news@used.test",
               "audienceType": "ALL"})
    };
    let draft = post_ok(&app, sk, "/campaigns", campaign("Draft"), 201).await;
    let scheduled = post_ok(&app, sk, "/campaigns", campaign("Autumn"), 201).await["data"].clone();
    let sending = post_ok(&app, sk, "/campaigns", campaign("Spring"), 201).await["data"].clone();
    let (scheduled_id, sending_id) = (
        scheduled["id"].as_str().unwrap(),
        sending["id"].as_str().unwrap(),
    );
    let at = herald_core::time::iso(app.clock.now() + 86_400_000);
    let s = post_ok(
        &app,
        sk,
        &format!("/campaigns/{scheduled_id}/send"),
        json!({"scheduledFor": at}),
        200,
    )
    .await;
    assert_eq!(s["data"]["status"], "SCHEDULED");
    let s = post_ok(
        &app,
        sk,
        &format!("/campaigns/{sending_id}/send"),
        json!({}),
        200,
    )
    .await;
    assert_eq!(s["data"]["status"], "SENDING");
    let template = post_ok(
        &app,
        sk,
        "/templates",
        json!({"name": "Hi", "subject": "S", "body": "<p>B</p>", "type": "MARKETING",
               "from": "hi@used.test"}),
        201,
    )
    .await;
    let wf = post_ok(
        &app,
        sk,
        "/workflows",
        json!({"name": "Welcome", "triggerConfig": {"eventName": "signup"}}),
        201,
    )
    .await;
    let wf_id = wf["id"].as_str().unwrap();
    post_ok(
        &app,
        sk,
        &format!("/workflows/{wf_id}/steps"),
        json!({"type": "SEND_EMAIL", "config": {"templateId": template["id"]}}),
        201,
    )
    .await;
    let enable = |on: bool| {
        let path = format!("/workflows/{wf_id}");
        let app = &app;
        async move { expect_json(app.patch(&path, sk, &json!({"enabled": on})).await, 200).await }
    };
    enable(true).await;

    let err = expect_error(app.delete(&path, sk).await, 409, "DOMAIN_IN_USE").await;
    let message = err["error"]["message"].as_str().unwrap();
    for named in [
        "Autumn",
        scheduled_id,
        "Spring",
        sending_id,
        "Welcome",
        wf_id,
    ] {
        assert!(message.contains(named), "{named} not in {message}");
    }
    assert!(!message.contains("Draft"), "{message}");
    let details = &err["error"]["details"];
    assert_eq!(
        details["campaigns"],
        json!([{"id": scheduled_id, "name": "Autumn"}, {"id": sending_id, "name": "Spring"}]),
        "{err}"
    );
    assert_eq!(
        details["workflows"],
        json!([{"id": wf_id, "name": "Welcome"}]),
        "{err}"
    );
    assert!(err["error"]["suggestion"].as_str().is_some(), "{err}");

    // Each user released in turn: the answer names only what is left.
    for id in [scheduled_id, sending_id] {
        post_ok(&app, sk, &format!("/campaigns/{id}/cancel"), json!({}), 200).await;
    }
    let err = expect_error(app.delete(&path, sk).await, 409, "DOMAIN_IN_USE").await;
    assert_eq!(err["error"]["details"]["campaigns"], json!([]), "{err}");
    assert_eq!(
        err["error"]["details"]["workflows"][0]["id"], wf_id,
        "{err}"
    );
    enable(false).await;
    assert_eq!(app.delete(&path, sk).await.status(), 204);
    assert!(list(&app, &p).await.is_empty());
    // The draft and the template stay; they now name an unverified sender.
    expect_json(
        app.get(
            &format!("/campaigns/{}", draft["data"]["id"].as_str().unwrap()),
            sk,
        )
        .await,
        200,
    )
    .await;
}
