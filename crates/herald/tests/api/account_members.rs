//! Project members: invitations (existing users at once, new addresses through the
//! invitation's link or once their address is verified), role changes, the last owner, the
//! engine's owner rules, and a matrix of role x endpoint.

use reqwest::{Client, Method};
use serde_json::{Value, json};

use herald_core::kinds::Role;
use herald_engine::accounts::MemberError;

use crate::account_setup::{PASSWORD, post_json, wait_mails};
use crate::both_engines;
use crate::helpers::{Engine, TestApp, cookie_client, error_fields, expect_error, expect_json};

both_engines!(
    an_existing_user_joins_at_once_and_is_listed,
    a_sign_up_with_the_invitation_token_joins_at_once,
    a_sign_up_without_the_invitation_token_joins_only_once_verified,
    the_last_owner_can_be_neither_removed_nor_demoted,
    only_an_owner_touches_the_owner_role,
    strangers_are_denied_and_bad_input_is_a_422,
    roles_are_enforced_on_every_management_endpoint,
    the_owner_rules_are_the_engines_own,
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

/// Invites `email` as `role` into `p` (a new address: 202) and returns the mailed token.
async fn invite(app: &TestApp, p: &crate::helpers::TestProject, email: &str, role: &str) -> String {
    let path = format!("/projects/{}/members", p.id);
    let body = json!({"email": email, "role": role});
    let invited = expect_json(
        call(app, &p.owner, Method::POST, &path, Some(body)).await,
        202,
    )
    .await;
    assert_eq!(invited["invited"], true);
    let mail = &wait_mails(app, email, "invited", 1).await[0];
    assert!(mail.html.contains("/signup?invitation="), "{}", mail.html);
    let token = mail.token("signup?invitation");
    assert_eq!(token.len(), 64);
    token
}

async fn projects_of(app: &TestApp, c: &Client) -> Vec<Value> {
    let mine = expect_json(
        call(app, c, Method::GET, "/users/@me/projects", None).await,
        200,
    )
    .await;
    mine.as_array().unwrap().clone()
}

/// The invitation's token proves the mailbox: the account is verified and in the project at
/// once. The token fits only its own address and works once.
async fn a_sign_up_with_the_invitation_token_joins_at_once(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let token = invite(&app, &p, "newbie@example.com", "ADMIN").await;
    let c = cookie_client();
    // Another address cannot use it.
    let body = json!({"email": "other@example.com", "password": PASSWORD, "invitation": token});
    let res = post_json(&app, &c, "/auth/signup", body).await;
    let err = expect_error(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(error_fields(&err), vec!["invitation"]);
    let body = json!({"email": "newbie@example.com", "password": PASSWORD, "invitation": "ffff"});
    expect_error(
        post_json(&app, &c, "/auth/signup", body).await,
        400,
        "INVALID_TOKEN",
    )
    .await;
    let body = json!({"email": "newbie@example.com", "password": PASSWORD, "invitation": token});
    expect_json(post_json(&app, &c, "/auth/signup", body).await, 201).await;
    let mine = projects_of(&app, &c).await;
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["id"], p.id.as_str());
    assert_eq!(mine[0]["role"], "ADMIN");
    let user = app
        .store
        .user_by_email("newbie@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(
        user.email_verified_at.is_some(),
        "the link proved the address"
    );
    // Used up.
    let body = json!({"email": "other@example.com", "password": PASSWORD, "invitation": token});
    expect_error(
        post_json(&app, &c, "/auth/signup", body).await,
        400,
        "INVALID_TOKEN",
    )
    .await;
}

/// Whoever signs up first with an invited address, without the link, gets nothing; the
/// address's owner joins once the address is verified.
async fn a_sign_up_without_the_invitation_token_joins_only_once_verified(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    invite(&app, &p, "late@example.com", "ADMIN").await;
    let c = cookie_client();
    let body = json!({"email": "late@example.com", "password": PASSWORD});
    expect_json(post_json(&app, &c, "/auth/signup", body).await, 201).await;
    assert!(
        projects_of(&app, &c).await.is_empty(),
        "not a member before verifying"
    );
    let members = expect_json(
        call(
            &app,
            &p.owner,
            Method::GET,
            &format!("/projects/{}/members", p.id),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(members.as_array().unwrap().len(), 1, "{members}");
    let token =
        wait_mails(&app, "late@example.com", "Verify", 1).await[0].token("verify-email?token");
    expect_json(
        post_json(&app, &c, "/auth/verify-email", json!({"token": token})).await,
        200,
    )
    .await;
    let mine = projects_of(&app, &c).await;
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["id"], p.id.as_str());
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

/// The dashboard calls the engine's service functions, not the handlers: the owner rules hold
/// there on their own.
async fn the_owner_rules_are_the_engines_own(engine: Engine) {
    let app = engine.app().await;
    let (id, owner, _admin, admin_id) = with_member(&app, "ADMIN").await;
    let pid: uuid::Uuid = id.parse().unwrap();
    let admin_id: uuid::Uuid = admin_id.parse().unwrap();
    let project = app.store.project_by_id(pid).await.unwrap().unwrap();
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
    let owner_id: uuid::Uuid = list
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "OWNER")
        .unwrap()["userId"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let e = app.engine.delete_project(Role::Admin, pid).await;
    assert!(matches!(e, Err(MemberError::OwnerOnly(_))), "{e:?}");
    let e = app
        .engine
        .reset_project(Role::Admin, &project, Some(project.name.as_str()))
        .await;
    assert!(matches!(e, Err(MemberError::OwnerOnly(_))), "{e:?}");
    let e = app
        .engine
        .reset_project(Role::Owner, &project, Some("not the name"))
        .await;
    assert!(matches!(e, Err(MemberError::Confirmation { .. })), "{e:?}");
    let e = app
        .engine
        .set_member_role(Role::Admin, pid, owner_id, Role::Member)
        .await;
    assert!(matches!(e, Err(MemberError::OwnerOnly(_))), "{e:?}");
    let e = app
        .engine
        .set_member_role(Role::Admin, pid, admin_id, Role::Owner)
        .await;
    assert!(matches!(e, Err(MemberError::OwnerOnly(_))), "{e:?}");
    let e = app.engine.remove_member(Role::Member, pid, admin_id).await;
    assert!(matches!(e, Err(MemberError::NotManager)), "{e:?}");
    let e = app
        .engine
        .set_member_role(Role::Owner, pid, owner_id, Role::Admin)
        .await;
    assert!(matches!(e, Err(MemberError::LastOwner)), "{e:?}");
    let e = app.engine.remove_member(Role::Owner, pid, owner_id).await;
    assert!(matches!(e, Err(MemberError::LastOwner)), "{e:?}");
    // An owner may do each of these.
    let m = app
        .engine
        .set_member_role(Role::Owner, pid, admin_id, Role::Owner)
        .await
        .unwrap();
    assert_eq!(m.role, Role::Owner);
    app.engine
        .remove_member(Role::Owner, pid, owner_id)
        .await
        .unwrap();
    app.engine.delete_project(Role::Owner, pid).await.unwrap();
    assert!(app.store.project_by_id(pid).await.unwrap().is_none());
}
