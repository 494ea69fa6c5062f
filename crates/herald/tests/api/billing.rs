//! Billing caps and consumption (DECISIONS.md "Billing"), on both engines: limits read by any
//! member and changed by an owner or admin (only the keys named; null = unlimited; bad values
//! 422), consumption counted per category when messages are queued, and sends over a cap
//! refused with 402 before anything is queued: `/v1/send` and a campaign's send.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_engines;
use crate::campaigns::{body, create, seed, send_now, wait_campaign};
use crate::helpers::{Engine, TestApp, TestProject, error_fields, expect_error, expect_json};
use crate::mail_setup::{DOMAIN, mail_world};

both_engines!(
    limits_are_read_by_members_and_changed_by_managers,
    sends_over_the_cap_are_refused_and_nothing_is_queued,
    concurrent_sends_never_pass_the_cap,
    a_cap_check_waits_for_the_transaction_that_counted_before_it,
    a_campaign_over_the_cap_is_refused,
);

async fn limits(
    app: &TestApp,
    p: &TestProject,
    method: Method,
    body: Option<&Value>,
) -> reqwest::Response {
    let path = format!("/users/@me/projects/{}/billing-limits", p.id);
    app.call_with(&p.owner, method, &path, None, body).await
}

async fn consumption(app: &TestApp, p: &TestProject) -> Value {
    let path = format!("/users/@me/projects/{}/billing-consumption", p.id);
    expect_json(
        app.call_with(&p.owner, Method::GET, &path, None, None)
            .await,
        200,
    )
    .await
}

async fn limits_are_read_by_members_and_changed_by_managers(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let none =
        json!({"transactional": null, "campaigns": null, "workflows": null, "inbound": null});
    assert_eq!(
        expect_json(limits(&app, &p, Method::GET, None).await, 200).await,
        none
    );
    let set = expect_json(
        limits(
            &app,
            &p,
            Method::PUT,
            Some(&json!({"transactional": 100, "campaigns": 5000})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(set["transactional"], 100);
    assert_eq!(set["campaigns"], 5000);
    // Only the keys named change; null lifts a cap.
    let set = expect_json(
        limits(&app, &p, Method::PUT, Some(&json!({"campaigns": null}))).await,
        200,
    )
    .await;
    assert_eq!(
        set,
        json!({"transactional": 100, "campaigns": null, "workflows": null, "inbound": null})
    );
    let e = expect_error(
        limits(
            &app,
            &p,
            Method::PUT,
            Some(&json!({"transactional": -1, "inbound": "many"})),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["transactional", "inbound"]);
    let c = consumption(&app, &p).await;
    assert_eq!(c["transactional"], 0);
    assert!(
        c["periodStart"]
            .as_str()
            .unwrap()
            .ends_with("-01T00:00:00.000Z"),
        "{c}"
    );

    // A MEMBER reads but cannot change; a stranger sees nothing; an API key is not a session.
    let member_email = format!("member-{}@example.com", uuid::Uuid::new_v4().simple());
    let member = app.signup(&member_email).await;
    let invite = format!("/projects/{}/members", p.id);
    expect_json(
        app.call_with(
            &p.owner,
            Method::POST,
            &invite,
            None,
            Some(&json!({"email": member_email, "role": "MEMBER"})),
        )
        .await,
        201,
    )
    .await;
    let path = format!("/users/@me/projects/{}/billing-limits", p.id);
    expect_json(
        app.call_with(&member, Method::GET, &path, None, None).await,
        200,
    )
    .await;
    expect_error(
        app.call_with(
            &member,
            Method::PUT,
            &path,
            None,
            Some(&json!({"inbound": 1})),
        )
        .await,
        403,
        "FORBIDDEN",
    )
    .await;
    let stranger = app
        .signup(&format!("s-{}@example.com", uuid::Uuid::new_v4().simple()))
        .await;
    expect_error(
        app.call_with(&stranger, Method::GET, &path, None, None)
            .await,
        403,
        "PROJECT_ACCESS_DENIED",
    )
    .await;
    expect_error(
        app.call(Method::GET, &path, Some(&p.secret_key), None)
            .await,
        401,
        "INVALID_API_KEY",
    )
    .await;
}

async fn sends_over_the_cap_are_refused_and_nothing_is_queued(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let (app, p) = (&w.app, &w.project);
    expect_json(
        limits(app, p, Method::PUT, Some(&json!({"transactional": 3}))).await,
        200,
    )
    .await;
    let send = |to: Value| json!({"to": to, "from": format!("hi@{DOMAIN}"), "subject": "S", "body": "<p>B</p>"});
    expect_json(
        app.post(
            "/v1/send",
            &p.secret_key,
            &send(json!(["a@example.org", "b@example.org"])),
        )
        .await,
        200,
    )
    .await;
    // Two more would pass the cap of 3: refused whole, nothing queued.
    let e = expect_error(
        app.post(
            "/v1/send",
            &p.secret_key,
            &send(json!(["c@example.org", "d@example.org"])),
        )
        .await,
        402,
        "BILLING_LIMIT_EXCEEDED",
    )
    .await;
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("transactional"),
        "{e}"
    );
    expect_json(
        app.post("/v1/send", &p.secret_key, &send(json!("c@example.org")))
            .await,
        200,
    )
    .await;
    expect_error(
        app.post("/v1/send", &p.secret_key, &send(json!("d@example.org")))
            .await,
        402,
        "BILLING_LIMIT_EXCEEDED",
    )
    .await;
    let emails = expect_json(app.get("/emails?limit=100", &p.secret_key).await, 200).await;
    assert_eq!(emails["data"].as_array().unwrap().len(), 3, "{emails}");
    assert_eq!(consumption(app, p).await["transactional"], 3);
    // Lifting the cap lets mail through again.
    expect_json(
        limits(app, p, Method::PUT, Some(&json!({"transactional": null}))).await,
        200,
    )
    .await;
    expect_json(
        app.post("/v1/send", &p.secret_key, &send(json!("d@example.org")))
            .await,
        200,
    )
    .await;
    w.sink.wait_for(4, Duration::from_secs(30)).await;
}

/// Sends arriving together are written by several transactions at once on PostgreSQL (the
/// acceptance writers, or other nodes): each checks the cap after the others' counts, so
/// exactly the cap goes through.
async fn concurrent_sends_never_pass_the_cap(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let (app, p) = (&w.app, &w.project);
    expect_json(
        limits(app, p, Method::PUT, Some(&json!({"transactional": 25}))).await,
        200,
    )
    .await;
    let mut calls = Vec::new();
    for i in 0..60 {
        let body = json!({"to": format!("r{i}@example.org"), "from": format!("hi@{DOMAIN}"),
            "subject": "S", "body": "<p>B</p>"});
        let req = app
            .client
            .post(app.url("/v1/send"))
            .bearer_auth(&p.secret_key)
            .json(&body);
        calls.push(tokio::spawn(req.send()));
    }
    let (mut sent, mut refused) = (0, 0);
    for c in calls {
        match c.await.unwrap().unwrap().status().as_u16() {
            200 => sent += 1,
            402 => refused += 1,
            s => panic!("unexpected status {s}"),
        }
    }
    assert_eq!((sent, refused), (25, 35));
    assert_eq!(consumption(app, p).await["transactional"], 25);
    let emails = expect_json(app.get("/emails?limit=100", &p.secret_key).await, 200).await;
    assert_eq!(emails["data"].as_array().unwrap().len(), 25);
}

/// Two transactions checking the same cap (two acceptance writers, or two nodes): the second
/// check waits until the first transaction, which took the last message of the cap, commits,
/// and then sees it. (PostgreSQL locks the month's usage row; SQLite has one writer.)
async fn a_cap_check_waits_for_the_transaction_that_counted_before_it(engine: Engine) {
    use herald_core::billing::Category;
    use herald_store::billing::{Allowance, allowance, count};
    let app = engine.app().await;
    let p = app.project().await;
    expect_json(
        limits(&app, &p, Method::PUT, Some(&json!({"transactional": 1}))).await,
        200,
    )
    .await;
    let project: uuid::Uuid = p.id.parse().unwrap();
    let store = app.engine.store.clone();
    let now = app.engine.now();
    let mut first = store.begin().await.unwrap();
    let a = allowance(&mut first, project, Category::Transactional, 1, now)
        .await
        .unwrap();
    assert!(matches!(a, Allowance::Within));
    count(&mut first, project, Category::Transactional, 1, now)
        .await
        .unwrap();
    let second = tokio::spawn(async move {
        let mut tx = store.begin().await.unwrap();
        let a = allowance(&mut tx, project, Category::Transactional, 1, now)
            .await
            .unwrap();
        drop(tx);
        a
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !second.is_finished(),
        "the second check went ahead of the first transaction's commit"
    );
    first.commit().await.unwrap();
    let a = tokio::time::timeout(Duration::from_secs(10), second)
        .await
        .expect("the second check goes on after the commit")
        .unwrap();
    assert!(matches!(a, Allowance::Over), "{a:?}");
}

async fn a_campaign_over_the_cap_is_refused(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let (app, p) = (&w.app, &w.project);
    let sk = &p.secret_key;
    seed(
        app,
        &p.id,
        10,
        true,
        |i| format!("b{i}@example.org"),
        |_| json!({}),
    )
    .await;
    expect_json(
        limits(app, p, Method::PUT, Some(&json!({"campaigns": 15}))).await,
        200,
    )
    .await;
    let first = create(app, sk, &body("First")).await;
    let id = first["id"].as_str().unwrap();
    send_now(app, sk, id).await;
    wait_campaign(app, sk, id, Duration::from_secs(60), |c| {
        c["status"] == "SENT"
    })
    .await;
    assert_eq!(consumption(app, p).await["campaigns"], 10);
    // Ten more would make 20 > 15: refused, the campaign stays a draft.
    let second = create(app, sk, &body("Second")).await;
    let id2 = second["id"].as_str().unwrap();
    expect_error(
        app.post(&format!("/campaigns/{id2}/send"), sk, &json!({}))
            .await,
        402,
        "BILLING_LIMIT_EXCEEDED",
    )
    .await;
    let c = expect_json(app.get(&format!("/campaigns/{id2}"), sk).await, 200).await;
    assert_eq!(c["status"], "DRAFT");
    assert_eq!(w.sink.messages().len(), 10);
}
