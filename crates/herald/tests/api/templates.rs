//! The Templates resource over HTTP: create, get, patch, delete, list (pages, type, search),
//! duplicate, usage, the verified-sender rule and isolation between projects.

use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};

both_engines!(
    create_get_patch_delete_round_trip,
    create_rejects_bad_input_with_field_paths,
    patch_applies_the_rules_of_create,
    from_must_be_on_a_verified_domain,
    list_pages_with_totals_newest_first,
    list_validates_its_query,
    list_filters_by_type_and_searches_name_and_subject,
    duplicate_copies_under_a_new_id,
    usage_is_empty_while_no_workflow_step_sends_it,
    projects_never_see_each_others_templates,
);

fn template(name: &str) -> Value {
    json!({"name": name, "subject": "Hello {{name ?? \"there\"}}", "body": "<p>Hi</p>", "type": "TRANSACTIONAL"})
}

/// Adds `domain` (a reserved `.test` name, verified at once with the local outbox).
async fn verified_domain(app: &TestApp, key: &str, domain: &str) {
    let res = app.post("/domains", key, &json!({"domain": domain})).await;
    assert!(res.status().is_success(), "add domain: {}", res.status());
}

async fn create(app: &TestApp, key: &str, body: &Value) -> Value {
    expect_json(app.post("/templates", key, body).await, 201).await
}

async fn create_get_patch_delete_round_trip(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    verified_domain(&app, sk, "example.test").await;
    let created = create(
        &app,
        sk,
        &json!({"name": "  Welcome ", "subject": "Hi {{name}}", "body": "<h1>Hello</h1>", "type": "TRANSACTIONAL",
            "from": "Hello@Example.TEST", "fromName": "Herald", "replyTo": "Support@Example.com", "extra": 1}),
    )
    .await;
    assert_eq!(created["name"], "Welcome");
    assert_eq!(created["from"], "hello@example.test");
    assert_eq!(created["fromName"], "Herald");
    assert_eq!(created["replyTo"], "support@example.com");
    assert_eq!(created["type"], "TRANSACTIONAL");
    assert!(created["createdAt"].as_str().unwrap().ends_with('Z'));
    let id = created["id"].as_str().unwrap();
    let path = format!("/templates/{id}");

    assert_eq!(expect_json(app.get(&path, sk).await, 200).await, created);

    let patched = expect_json(
        app.patch(
            &path,
            sk,
            &json!({"subject": "New subject", "type": "marketing", "fromName": null}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(patched["subject"], "New subject");
    assert_eq!(patched["type"], "MARKETING");
    assert_eq!(patched["fromName"], Value::Null);
    assert_eq!(
        patched["name"], "Welcome",
        "fields not sent keep their values"
    );
    assert_eq!(patched["from"], "hello@example.test");
    assert_eq!(patched["createdAt"], created["createdAt"]);
    assert_eq!(expect_json(app.get(&path, sk).await, 200).await, patched);

    let res = app.delete(&path, sk).await;
    assert_eq!(res.status(), 204);
    expect_error(app.get(&path, sk).await, 404, "TEMPLATE_NOT_FOUND").await;
    expect_error(app.delete(&path, sk).await, 404, "TEMPLATE_NOT_FOUND").await;
    expect_error(
        app.get("/templates/not-an-id", sk).await,
        404,
        "TEMPLATE_NOT_FOUND",
    )
    .await;
}

async fn create_rejects_bad_input_with_field_paths(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let body = expect_error(
        app.post("/templates", sk, &json!({})).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&body), ["name", "subject", "body", "type"]);

    let with = |k: &str, v: Value| {
        let mut t = template("Bad");
        t[k] = v;
        t
    };
    for (body, field) in [
        (with("type", json!("BULK")), "type"),
        (with("subject", json!("Hello\nWorld")), "subject"),
        (with("subject", json!("Hello\rWorld")), "subject"),
        (with("subject", json!("s".repeat(999))), "subject"),
        (with("subject", json!("   ")), "subject"),
        (with("name", json!("n".repeat(201))), "name"),
        (with("body", json!("")), "body"),
        (with("from", json!("not-an-email")), "from"),
        (with("replyTo", json!("reply@")), "replyTo"),
        (
            with("fromName", json!("Evil\r\nBcc: x@example.com")),
            "fromName",
        ),
        (with("fromName", json!("f".repeat(201))), "fromName"),
        (with("name", json!(5)), "name"),
    ] {
        let res = app.post("/templates", sk, &body).await;
        let err = expect_error(res, 422, "VALIDATION_ERROR").await;
        assert_eq!(error_fields(&err), [field], "{body}");
    }
    // Every problem at once, and a 998-character subject is fine.
    let mut many = template("Bad");
    many["type"] = json!("nope");
    many["from"] = json!("x");
    many["replyTo"] = json!("y");
    let err = expect_error(
        app.post("/templates", sk, &many).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), ["type", "from", "replyTo"]);
    let mut long = template("Long subject");
    long["subject"] = json!("s".repeat(998));
    create(&app, sk, &long).await;
}

async fn patch_applies_the_rules_of_create(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    verified_domain(&app, sk, "example.test").await;
    let mut body = template("Receipt");
    body["from"] = json!("billing@example.test");
    body["replyTo"] = json!("help@example.test");
    let t = create(&app, sk, &body).await;
    let path = format!("/templates/{}", t["id"].as_str().unwrap());

    let err = expect_error(
        app.patch(
            &path,
            sk,
            &json!({"name": "", "subject": "a\nb", "type": "X", "replyTo": "bad"}),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), ["name", "subject", "type", "replyTo"]);

    let same = expect_json(app.patch(&path, sk, &json!({})).await, 200).await;
    assert_eq!(same, t, "an empty patch changes nothing");

    let cleared = expect_json(
        app.patch(&path, sk, &json!({"from": null, "replyTo": ""}))
            .await,
        200,
    )
    .await;
    assert_eq!(cleared["from"], Value::Null);
    assert_eq!(cleared["replyTo"], Value::Null);
    let moved = expect_json(
        app.patch(&path, sk, &json!({"from": "news@EXAMPLE.test"}))
            .await,
        200,
    )
    .await;
    assert_eq!(moved["from"], "news@example.test");
}

async fn from_must_be_on_a_verified_domain(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let mut body = template("Unverified");
    body["from"] = json!("hello@unverified.test");
    let err = expect_error(
        app.post("/templates", sk, &body).await,
        403,
        "DOMAIN_NOT_VERIFIED",
    )
    .await;
    assert!(err["error"]["suggestion"].as_str().is_some(), "{err}");

    let t = create(&app, sk, &template("No sender")).await;
    let path = format!("/templates/{}", t["id"].as_str().unwrap());
    let res = app
        .patch(&path, sk, &json!({"from": "hello@unverified.test"}))
        .await;
    expect_error(res, 403, "DOMAIN_NOT_VERIFIED").await;
    assert_eq!(
        expect_json(app.get(&path, sk).await, 200).await["from"],
        Value::Null
    );

    // Another project's verified domain is not ours.
    let other = app.project().await;
    verified_domain(&app, &other.secret_key, "theirs.test").await;
    body["from"] = json!("hello@theirs.test");
    expect_error(
        app.post("/templates", sk, &body).await,
        403,
        "DOMAIN_NOT_VERIFIED",
    )
    .await;
    create(&app, &other.secret_key, &body).await;
}

async fn list_pages_with_totals_newest_first(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(create(&app, sk, &template(&format!("T{i:02}"))).await["id"].clone());
    }
    ids.reverse();
    let list = expect_json(app.get("/templates?pageSize=10", sk).await, 200).await;
    assert_eq!(list["total"], 25);
    assert_eq!(list["page"], 1);
    assert_eq!(list["pageSize"], 10);
    assert_eq!(list["totalPages"], 3);
    let got: Vec<Value> = list["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(got, ids[..10], "newest first");
    assert!(list.get("cursor").is_none());

    let page3 = expect_json(app.get("/templates?limit=10&page=3", sk).await, 200).await;
    let got: Vec<Value> = page3["templates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(got, ids[20..]);
    assert_eq!(page3["page"], 3);
    // A cursor-style client names the page as a cursor.
    let by_cursor = expect_json(app.get("/templates?limit=10&cursor=3", sk).await, 200).await;
    assert_eq!(by_cursor["templates"], page3["templates"]);
    let past = expect_json(app.get("/templates?limit=10&page=4", sk).await, 200).await;
    assert_eq!(past["templates"], json!([]));
    assert_eq!(past["total"], 25);
    let default = expect_json(app.get("/templates", sk).await, 200).await;
    assert_eq!(default["pageSize"], 20);
    assert_eq!(default["templates"].as_array().unwrap().len(), 20);
}

async fn list_validates_its_query(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("pageSize=x", "pageSize"),
        ("page=0", "page"),
        ("cursor=abc", "cursor"),
        // An alias is checked even when the main name is given too.
        ("page=2&cursor=true", "cursor"),
        ("limit=5&pageSize=0", "pageSize"),
        // A parameter takes one value.
        ("limit=5&limit=6", "limit"),
        ("type=BULK", "type"),
    ] {
        let res = app.get(&format!("/templates?{query}"), &p.secret_key).await;
        let err = expect_error(res, 422, "VALIDATION_ERROR").await;
        assert_eq!(error_fields(&err), [field], "{query}");
    }
    let empty = expect_json(app.get("/templates", &p.secret_key).await, 200).await;
    assert_eq!(
        empty,
        json!({"templates": [], "total": 0, "page": 1, "pageSize": 20, "totalPages": 0})
    );
}

async fn list_filters_by_type_and_searches_name_and_subject(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let mk = |name: &str, subject: &str, kind: &str| json!({"name": name, "subject": subject, "body": "b", "type": kind});
    create(
        &app,
        sk,
        &mk("Welcome email", "Hello there", "TRANSACTIONAL"),
    )
    .await;
    create(
        &app,
        sk,
        &mk("Spring sale", "50% off everything", "MARKETING"),
    )
    .await;
    create(
        &app,
        sk,
        &mk("Password reset", "Reset your WELCOME code", "TRANSACTIONAL"),
    )
    .await;
    create(&app, sk, &mk("Raw", "Headless", "HEADLESS")).await;

    let names = |list: &Value| -> Vec<String> {
        let mut n: Vec<String> = list["templates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        n.sort();
        n
    };
    let l = expect_json(app.get("/templates?type=TRANSACTIONAL", sk).await, 200).await;
    assert_eq!(names(&l), ["Password reset", "Welcome email"]);
    assert_eq!(l["total"], 2);
    let l = expect_json(app.get("/templates?type=HEADLESS", sk).await, 200).await;
    assert_eq!(names(&l), ["Raw"]);
    let l = expect_json(app.get("/templates?search=welcome", sk).await, 200).await;
    assert_eq!(
        names(&l),
        ["Password reset", "Welcome email"],
        "name or subject, any case"
    );
    let l = expect_json(
        app.get("/templates?search=welcome&type=TRANSACTIONAL&limit=1", sk)
            .await,
        200,
    )
    .await;
    assert_eq!(
        (l["total"].clone(), l["totalPages"].clone()),
        (json!(2), json!(2))
    );
    let l = expect_json(app.get("/templates?search=50%25", sk).await, 200).await;
    assert_eq!(names(&l), ["Spring sale"]);
    let l = expect_json(app.get("/templates?search=%25", sk).await, 200).await;
    assert_eq!(names(&l), ["Spring sale"], "a % matches itself only");
    let l = expect_json(app.get("/templates?search=_", sk).await, 200).await;
    assert_eq!(l["total"], 0, "a _ matches itself only");
}

async fn duplicate_copies_under_a_new_id(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    verified_domain(&app, sk, "example.test").await;
    let mut body = template("Welcome");
    body["from"] = json!("hi@example.test");
    body["fromName"] = json!("Team");
    let t = create(&app, sk, &body).await;
    let res = app
        .post(
            &format!("/templates/{}/duplicate", t["id"].as_str().unwrap()),
            sk,
            &json!({}),
        )
        .await;
    let copy = expect_json(res, 201).await;
    assert_ne!(copy["id"], t["id"]);
    assert_eq!(copy["name"], "Welcome (copy)");
    for k in ["subject", "body", "type", "from", "fromName", "replyTo"] {
        assert_eq!(copy[k], t[k], "{k}");
    }
    let got = expect_json(
        app.get(&format!("/templates/{}", copy["id"].as_str().unwrap()), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(got, copy);
    let list = expect_json(app.get("/templates", sk).await, 200).await;
    assert_eq!(list["total"], 2);
    assert_eq!(
        list["templates"][0]["id"], copy["id"],
        "the copy is the newest"
    );
    let res = app.post("/templates/nope/duplicate", sk, &json!({})).await;
    expect_error(res, 404, "TEMPLATE_NOT_FOUND").await;
}

async fn usage_is_empty_while_no_workflow_step_sends_it(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let t = create(&app, &p.secret_key, &template("Used")).await;
    let res = app
        .get(
            &format!("/templates/{}/usage", t["id"].as_str().unwrap()),
            &p.secret_key,
        )
        .await;
    assert_eq!(
        expect_json(res, 200).await,
        json!({"campaigns": [], "workflowSteps": []})
    );
    let res = app
        .get(
            "/templates/0192f0c4-0000-7000-8000-000000000000/usage",
            &p.secret_key,
        )
        .await;
    expect_error(res, 404, "TEMPLATE_NOT_FOUND").await;
}

async fn projects_never_see_each_others_templates(engine: Engine) {
    let app = engine.app().await;
    let a = app.project().await;
    let b = app.project().await;
    create(&app, &a.secret_key, &template("Mine")).await;
    let theirs = create(&app, &b.secret_key, &template("Theirs")).await;
    let path = format!("/templates/{}", theirs["id"].as_str().unwrap());
    let ak = &a.secret_key;
    expect_error(app.get(&path, ak).await, 404, "TEMPLATE_NOT_FOUND").await;
    expect_error(
        app.patch(&path, ak, &json!({"name": "Stolen"})).await,
        404,
        "TEMPLATE_NOT_FOUND",
    )
    .await;
    expect_error(app.delete(&path, ak).await, 404, "TEMPLATE_NOT_FOUND").await;
    let res = app.post(&format!("{path}/duplicate"), ak, &json!({})).await;
    expect_error(res, 404, "TEMPLATE_NOT_FOUND").await;
    expect_error(
        app.get(&format!("{path}/usage"), ak).await,
        404,
        "TEMPLATE_NOT_FOUND",
    )
    .await;

    let list = expect_json(app.get("/templates?search=theirs", ak).await, 200).await;
    assert_eq!(list["total"], 0);
    let list = expect_json(app.get("/templates", ak).await, 200).await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["templates"][0]["name"], "Mine");
    // B's template is untouched.
    assert_eq!(
        expect_json(app.get(&path, &b.secret_key).await, 200).await,
        theirs
    );
}
