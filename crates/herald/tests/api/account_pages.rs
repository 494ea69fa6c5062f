//! The old addresses of account mail links (verify, reset password, accept an invitation):
//! a GET follows the redirect to the dashboard's page and changes nothing; the POSTs of the
//! old forms still spend the token.

use serde_json::json;

use crate::account_setup::{PASSWORD, login, post_json, wait_mails};
use crate::both_engines;
use crate::helpers::{Engine, TestApp, cookie_client, expect_json};

both_engines!(
    the_verify_page_verifies_only_on_post,
    the_reset_page_sets_the_password,
    the_invitation_page_creates_the_account_in_the_project,
);

async fn get_page(app: &TestApp, path: &str) -> (u16, String) {
    let res = app.client.get(app.url(path)).send().await.unwrap();
    let status = res.status().as_u16();
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    (status, res.text().await.unwrap())
}

async fn post_form(app: &TestApp, path: &str, form: &[(&str, &str)]) -> (u16, String) {
    // Hex tokens and passwords of letters and spaces: `+` is the only escape needed.
    let body = form
        .iter()
        .map(|(k, v)| format!("{k}={}", v.replace(' ', "+")))
        .collect::<Vec<_>>()
        .join("&");
    post_body(app, path, body).await
}

/// Posts an encoded form body; returns the status and the page.
pub async fn post_body(app: &TestApp, path: &str, body: String) -> (u16, String) {
    let res = app
        .client
        .post(app.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

async fn the_verify_page_verifies_only_on_post(engine: Engine) {
    let app = engine
        .app_with(|c| c.require_email_verification = true)
        .await;
    let c = cookie_client();
    expect_json(
        post_json(
            &app,
            &c,
            "/auth/signup",
            json!({"email": "page@example.com", "password": PASSWORD}),
        )
        .await,
        201,
    )
    .await;
    let token =
        wait_mails(&app, "page@example.com", "Verify", 1).await[0].token("verify-email?token");
    let (status, html) = get_page(&app, &format!("/verify-email?token={token}")).await;
    assert_eq!(status, 200);
    assert!(
        html.contains("<form method=\"post\" action=\"/app/verify-email\""),
        "{html}"
    );
    assert!(html.contains("<html lang=\"en\">"));
    let (_, res) = login(&app, "page@example.com", PASSWORD).await;
    assert_eq!(res.status(), 403, "the GET verified nothing");
    let (status, _) = post_form(&app, "/verify-email", &[("token", &token)]).await;
    assert_eq!(status, 200);
    let (_, res) = login(&app, "page@example.com", PASSWORD).await;
    assert_eq!(res.status(), 200);
    let (status, html) = post_form(&app, "/verify-email", &[("token", &token)]).await;
    assert_eq!(status, 400, "{html}");
}

async fn the_reset_page_sets_the_password(engine: Engine) {
    let app = engine.app().await;
    app.signup("pagereset@example.com").await;
    let c = cookie_client();
    expect_json(
        post_json(
            &app,
            &c,
            "/auth/request-password-reset",
            json!({"email": "pagereset@example.com"}),
        )
        .await,
        200,
    )
    .await;
    let token = wait_mails(&app, "pagereset@example.com", "Reset", 1).await[0]
        .token("reset-password?token");
    let (status, html) = get_page(&app, &format!("/reset-password?token={token}")).await;
    assert_eq!(status, 200);
    assert!(html.contains("type=\"password\""), "{html}");
    let (status, _) = post_form(
        &app,
        "/reset-password",
        &[("token", &token), ("password", "short")],
    )
    .await;
    assert_eq!(status, 422);
    let (status, _) = post_form(
        &app,
        "/reset-password",
        &[("token", &token), ("password", "a page password")],
    )
    .await;
    assert_eq!(status, 200);
    let (_, res) = login(&app, "pagereset@example.com", "a page password").await;
    assert_eq!(res.status(), 200);
}

async fn the_invitation_page_creates_the_account_in_the_project(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let res = app
        .call_with(
            &p.owner,
            reqwest::Method::POST,
            &format!("/projects/{}/members", p.id),
            None,
            Some(&json!({"email": "invitee@example.com"})),
        )
        .await;
    expect_json(res, 202).await;
    let token =
        wait_mails(&app, "invitee@example.com", "invited", 1).await[0].token("signup?invitation");
    let (status, html) = get_page(&app, &format!("/signup?invitation={token}")).await;
    assert_eq!(status, 200);
    assert!(html.contains("invitee@example.com"), "{html}");
    let (status, _) = get_page(&app, "/signup?invitation=ffff").await;
    assert_eq!(status, 400);
    let (status, html) = post_form(
        &app,
        "/signup",
        &[("invitation", &token), ("password", PASSWORD)],
    )
    .await;
    assert_eq!(status, 201, "{html}");
    // The page carried the token: it proved the mailbox.
    let user = app
        .store
        .user_by_email("invitee@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(user.email_verified_at.is_some());
    let (client, res) = login(&app, "invitee@example.com", PASSWORD).await;
    expect_json(res, 200).await;
    let mine = expect_json(
        app.call_with(
            &client,
            reqwest::Method::GET,
            "/users/@me/projects",
            None,
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(mine[0]["id"], p.id.as_str());
    assert_eq!(mine[0]["role"], "MEMBER");
}
