//! Project reset (owner only, confirmed by name; data gone, project, keys, members and
//! domains kept) and the setup state.

use reqwest::Method;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, error_fields, expect_error, expect_json};
use crate::mail_setup::{message_ids, outbox_project, wait_status};

both_engines!(
    reset_wipes_data_and_keeps_the_project,
    setup_state_follows_the_first_steps,
);

async fn reset_wipes_data_and_keeps_the_project(engine: Engine) {
    let app = engine.app().await;
    let p = outbox_project(&app).await;
    let sk = &p.secret_key;
    app.create_contact(sk, json!({"email": "a@example.org"}))
        .await;
    let body = json!({"to": "b@example.org", "from": "x@shop.test", "subject": "S", "body": "B"});
    let id = message_ids(&expect_json(app.post("/v1/send", sk, &body).await, 200).await)[0].clone();
    wait_status(&app, sk, &id, &["SENT"], std::time::Duration::from_secs(15)).await;
    let other = app.project().await;
    app.create_contact(&other.secret_key, json!({"email": "keep@example.org"}))
        .await;

    let path = format!("/users/@me/projects/{}/reset", p.id);
    let res = app
        .call_with(&p.owner, Method::POST, &path, None, Some(&json!({})))
        .await;
    assert_eq!(
        error_fields(&expect_error(res, 422, "VALIDATION_ERROR").await),
        vec!["confirmation"]
    );
    let res = app
        .call_with(
            &p.owner,
            Method::POST,
            &path,
            None,
            Some(&json!({"confirmation": "nope"})),
        )
        .await;
    expect_error(res, 422, "VALIDATION_ERROR").await;
    // An admin may not reset.
    app.signup("admin-reset@example.com").await;
    let admin = crate::account_setup::login(
        &app,
        "admin-reset@example.com",
        crate::account_setup::PASSWORD,
    )
    .await
    .0;
    let res = app
        .call_with(
            &p.owner,
            Method::POST,
            &format!("/projects/{}/members", p.id),
            None,
            Some(&json!({"email": "admin-reset@example.com", "role": "ADMIN"})),
        )
        .await;
    expect_json(res, 201).await;
    let res = app
        .call_with(
            &admin,
            Method::POST,
            &path,
            None,
            Some(&json!({"confirmation": "Test project"})),
        )
        .await;
    expect_error(res, 403, "FORBIDDEN").await;

    let res = app
        .call_with(
            &p.owner,
            Method::POST,
            &path,
            None,
            Some(&json!({"confirmation": "Test project"})),
        )
        .await;
    expect_json(res, 200).await;
    let contacts = expect_json(app.get("/contacts", sk).await, 200).await;
    assert_eq!(
        contacts["data"].as_array().map(Vec::len),
        Some(0),
        "{contacts}"
    );
    expect_error(
        app.get(&format!("/emails/{id}"), sk).await,
        404,
        "NOT_FOUND",
    )
    .await;
    // Keys, domains and members are kept; another project is untouched.
    let domains = expect_json(
        app.get(&format!("/domains/project/{}", p.id), sk).await,
        200,
    )
    .await;
    assert_eq!(domains.as_array().map(Vec::len), Some(1), "{domains}");
    let members = expect_json(
        app.call_with(
            &p.owner,
            Method::GET,
            &format!("/projects/{}/members", p.id),
            None,
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(members.as_array().map(Vec::len), Some(2));
    let kept = expect_json(app.get("/contacts", &other.secret_key).await, 200).await;
    assert_eq!(kept["data"].as_array().map(Vec::len), Some(1), "{kept}");
}

async fn setup_state_follows_the_first_steps(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let path = format!("/projects/{}/setup-state", p.id);
    let s = expect_json(
        app.call_with(&p.owner, Method::GET, &path, None, None)
            .await,
        200,
    )
    .await;
    assert_eq!(s["domainAdded"], false);
    assert_eq!(s["complete"], false);
    expect_json(
        app.post("/domains", &p.secret_key, &json!({"domain": "shop.test"}))
            .await,
        201,
    )
    .await;
    app.create_contact(&p.secret_key, json!({"email": "a@example.org"}))
        .await;
    let body = json!({"to": "b@example.org", "from": "x@shop.test", "subject": "S", "body": "B"});
    expect_json(app.post("/v1/send", &p.secret_key, &body).await, 200).await;
    let s = expect_json(
        app.call_with(&p.owner, Method::GET, &path, None, None)
            .await,
        200,
    )
    .await;
    assert_eq!(s["domainAdded"], true, "{s}");
    assert_eq!(s["domainVerified"], true, "{s}");
    assert_eq!(s["firstContact"], true, "{s}");
    assert_eq!(s["firstSend"], true, "{s}");
    assert_eq!(s["complete"], true, "{s}");
    let stranger = app.signup("nosy@example.com").await;
    let res = app
        .call_with(&stranger, Method::GET, &path, None, None)
        .await;
    expect_error(res, 403, "PROJECT_ACCESS_DENIED").await;
}
