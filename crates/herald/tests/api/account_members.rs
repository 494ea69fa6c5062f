//! Project members: invitations (existing users at once, new addresses on sign-up), role
//! changes, the last owner, and a matrix of role x endpoint.

use reqwest::{Client, Method};
use serde_json::{Value, json};

use crate::account_setup::{PASSWORD, post_json, wait_mails};
use crate::both_engines;
use crate::helpers::{Engine, TestApp, cookie_client, error_fields, expect_error, expect_json};

both_engines!(
    an_existing_user_joins_at_once_and_is_listed,
    a_new_address_is_invited_and_joins_on_signup,
    the_last_owner_can_be_neither_removed_nor_demoted,
    only_an_owner_touches_the_owner_role,
    strangers_are_denied_and_bad_input_is_a_422,
    roles_are_enforced_on_every_management_endpoint,
);

async fn call(
    app: &TestApp,
    c: &Client,
    m: Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    app.call_with(c, m, path, None, body.as_ref()).await
}

/// A project owned by a new user, plus a signed-in user of `role` in it; returns
/// (project id, owner, member client, member user id).
async fn with_member(app: &TestApp, role: &str) -> (String, Client, Client, String) {
    let p = app.project().await;
    let email = format!(
        "{}-{}@example.com",
        role.to_lowercase(),
        uuid::Uuid::new_v4().simple()
    );
    let member = app.signup(&email).await;
    let path = format!("/projects/{}/members", p.id);
    let m = expect_json(
        call(
            app,
            &p.owner,
            Method::POST,
            &path,
            Some(json!({"email": email, "role": role})),
        )
        .await,
        201,
    )
    .await;
    (
        p.id,
        p.owner,
        member,
        m["userId"].as_str().unwrap().to_owned(),
    )
}

async fn an_existing_user_joins_at_once_and_is_listed(engine: Engine) {
    let app = engine.app().await;
    let (id, owner, member, member_id) = with_member(&app, "ADMIN").await;
    let list = expect_json(
        call(
            &app,
            &owner,
            Method::GET,
            &format!("/projects/{id}/members"),
            None,
        )
        .await,
        200,
    )
    .await;
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert!(
        list.iter()
            .any(|m| m["userId"] == member_id.as_str() && m["role"] == "ADMIN")
    );
    assert!(
        list.iter()
            .any(|m| m["role"] == "OWNER" && m["createdAt"].is_string())
    );
    // The new member sees the project with its role.
    let mine = expect_json(
        call(&app, &member, Method::GET, "/users/@me/projects", None).await,
        200,
    )
    .await;
    assert_eq!(mine[0]["id"], id.as_str());
    assert_eq!(mine[0]["role"], "ADMIN");
    let again = call(
        &app,
        &owner,
        Method::POST,
        &format!("/projects/{id}/members"),
        Some(json!({"email": list.iter().find(|m| m["role"] == "ADMIN").unwrap()["email"]})),
    )
    .await;
    expect_error(again, 409, "CONFLICT").await;
}

async fn a_new_address_is_invited_and_joins_on_signup(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let path = format!("/projects/{}/members", p.id);
    let res = call(
        &app,
        &p.owner,
        Method::POST,
        &path,
        Some(json!({"email": "newbie@example.com", "role": "ADMIN"})),
    )
    .await;
    let invited = expect_json(res, 202).await;
    assert_eq!(invited["invited"], true);
    let mail = &wait_mails(&app, "newbie@example.com", "invited", 1).await[0];
    assert!(mail.html.contains("/signup?invitation="), "{}", mail.html);
    assert_eq!(mail.token("signup?invitation").len(), 64);
    let c = cookie_client();
    expect_json(
        post_json(
            &app,
            &c,
            "/auth/signup",
            json!({"email": "newbie@example.com", "password": PASSWORD}),
        )
        .await,
        201,
    )
    .await;
    let mine = expect_json(
        call(&app, &c, Method::GET, "/users/@me/projects", None).await,
        200,
    )
    .await;
    assert_eq!(mine.as_array().unwrap().len(), 1);
    assert_eq!(mine[0]["role"], "ADMIN");
}

async fn the_last_owner_can_be_neither_removed_nor_demoted(engine: Engine) {
    let app = engine.app().await;
    let (id, owner, _member, member_id) = with_member(&app, "OWNER").await;
    let list = expect_json(
        call(
            &app,
            &owner,
            Method::GET,
            &format!("/projects/{id}/members"),
            None,
        )
        .await,
        200,
    )
    .await;
    let owner_id = list
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["userId"] != member_id.as_str())
        .unwrap()["userId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Two owners: one may step down.
    let res = call(
        &app,
        &owner,
        Method::PATCH,
        &format!("/projects/{id}/members/{member_id}"),
        Some(json!({"role": "MEMBER"})),
    )
    .await;
    assert_eq!(expect_json(res, 200).await["role"], "MEMBER");
    // Now one owner: neither demoted nor removed.
    let res = call(
        &app,
        &owner,
        Method::PATCH,
        &format!("/projects/{id}/members/{owner_id}"),
        Some(json!({"role": "ADMIN"})),
    )
    .await;
    expect_error(res, 409, "CONFLICT").await;
    let res = call(
        &app,
        &owner,
        Method::DELETE,
        &format!("/projects/{id}/members/{owner_id}"),
        None,
    )
    .await;
    expect_error(res, 409, "CONFLICT").await;
    let res = call(
        &app,
        &owner,
        Method::DELETE,
        &format!("/projects/{id}/members/{member_id}"),
        None,
    )
    .await;
    assert_eq!(res.status(), 204);
    let res = call(
        &app,
        &owner,
        Method::DELETE,
        &format!("/projects/{id}/members/{member_id}"),
        None,
    )
    .await;
    expect_error(res, 404, "NOT_FOUND").await;
}

async fn only_an_owner_touches_the_owner_role(engine: Engine) {
    let app = engine.app().await;
    let (id, owner, admin, admin_id) = with_member(&app, "ADMIN").await;
    let list = expect_json(
        call(
            &app,
            &owner,
            Method::GET,
            &format!("/projects/{id}/members"),
            None,
        )
        .await,
        200,
    )
    .await;
    let owner_id = list
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "OWNER")
        .unwrap()["userId"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/projects/{id}/members/{owner_id}");
    expect_error(
        call(
            &app,
            &admin,
            Method::PATCH,
            &path,
            Some(json!({"role": "MEMBER"})),
        )
        .await,
        403,
        "FORBIDDEN",
    )
    .await;
    expect_error(
        call(&app, &admin, Method::DELETE, &path, None).await,
        403,
        "FORBIDDEN",
    )
    .await;
    let me = format!("/projects/{id}/members/{admin_id}");
    expect_error(
        call(
            &app,
            &admin,
            Method::PATCH,
            &me,
            Some(json!({"role": "OWNER"})),
        )
        .await,
        403,
        "FORBIDDEN",
    )
    .await;
    let invite = call(
        &app,
        &admin,
        Method::POST,
        &format!("/projects/{id}/members"),
        Some(json!({"email": "x@example.com", "role": "OWNER"})),
    )
    .await;
    expect_error(invite, 403, "FORBIDDEN").await;
    // An admin manages members below the owner.
    let res = call(
        &app,
        &admin,
        Method::POST,
        &format!("/projects/{id}/members"),
        Some(json!({"email": "y@example.com"})),
    )
    .await;
    assert_eq!(expect_json(res, 202).await["role"], "MEMBER");
}

async fn strangers_are_denied_and_bad_input_is_a_422(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let stranger = app.signup("stranger@example.com").await;
    let path = format!("/projects/{}/members", p.id);
    expect_error(
        call(&app, &stranger, Method::GET, &path, None).await,
        403,
        "PROJECT_ACCESS_DENIED",
    )
    .await;
    expect_error(
        call(&app, &app.client, Method::GET, &path, None).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    expect_error(app.get(&path, &p.secret_key).await, 401, "INVALID_API_KEY").await;
    expect_error(
        call(
            &app,
            &p.owner,
            Method::GET,
            "/projects/not-an-id/members",
            None,
        )
        .await,
        404,
        "NOT_FOUND",
    )
    .await;
    let bad = call(
        &app,
        &p.owner,
        Method::POST,
        &path,
        Some(json!({"email": "nope", "role": "KING"})),
    )
    .await;
    let body = expect_error(bad, 422, "VALIDATION_ERROR").await;
    assert_eq!(error_fields(&body), vec!["email", "role"]);
}

/// Every management endpoint, for OWNER, ADMIN and MEMBER: what each may do.
async fn roles_are_enforced_on_every_management_endpoint(engine: Engine) {
    let app = engine.app().await;
    for role in ["OWNER", "ADMIN", "MEMBER"] {
        let (id, _owner, c, self_id) = with_member(&app, role).await;
        let manager = role != "MEMBER";
        let cases: Vec<(Method, String, Option<Value>, bool)> = vec![
            (
                Method::GET,
                format!("/projects/{id}/members"),
                None,
                manager,
            ),
            (
                Method::POST,
                format!("/projects/{id}/members"),
                Some(json!({"email": format!("m-{role}@example.com")})),
                manager,
            ),
            (
                Method::PATCH,
                format!("/projects/{id}/members/{self_id}"),
                Some(json!({"role": role})),
                manager,
            ),
            (
                Method::PATCH,
                format!("/users/@me/projects/{id}"),
                Some(json!({"name": "Renamed"})),
                manager,
            ),
            (
                Method::POST,
                format!("/users/@me/projects/{id}/regenerate-keys"),
                Some(json!({})),
                manager,
            ),
            (Method::GET, "/users/@me/projects".to_owned(), None, true),
        ];
        for (m, path, body, allowed) in cases {
            let res = call(&app, &c, m.clone(), &path, body).await;
            let status = res.status().as_u16();
            if allowed {
                assert!((200..300).contains(&status), "{role} {m} {path}: {status}");
            } else {
                expect_error(res, 403, "FORBIDDEN").await;
            }
        }
        // Reads and contacts work for every role (session + X-Project-Id).
        let res = c
            .get(app.url("/contacts"))
            .header("x-project-id", &id)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{role} GET /contacts");
        let res = c
            .post(app.url("/contacts"))
            .header("x-project-id", &id)
            .json(&json!({"email": format!("c-{role}@example.com")}))
            .send()
            .await
            .unwrap();
        assert!(
            res.status().is_success(),
            "{role} POST /contacts: {}",
            res.status()
        );
        // Only the owner deletes the project.
        let res = call(
            &app,
            &c,
            Method::DELETE,
            &format!("/users/@me/projects/{id}"),
            None,
        )
        .await;
        if role == "OWNER" {
            assert_eq!(res.status(), 204);
        } else {
            expect_error(res, 403, "FORBIDDEN").await;
        }
    }
}
