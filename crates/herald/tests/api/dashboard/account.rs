//! The account pages over HTTP: the links of account mail open dashboard pages (the old
//! addresses redirect there, in the mail's language, a GET spending no token); the account
//! page lists the sessions and ends others; deleting the account follows the ownership rule.

use reqwest::Method;
use serde_json::json;

use super::{PASSWORD, browser, get, location, page, post_form, project_in_browser, sign_up};
use crate::account_setup::{login, post_json, wait_mails};
use crate::both_engines;
use crate::helpers::{Engine, TestApp, cookie_client, expect_json};

both_engines!(
    the_verification_link_opens_the_dashboard_and_old_links_redirect,
    the_invitation_link_joins_the_project_through_the_dashboard,
    the_account_page_lists_sessions_and_ends_others,
    deleting_an_account_follows_the_ownership_rule,
);

/// The `Location` of a redirect of any 3xx.
fn redirect_to(res: &reqwest::Response) -> String {
    assert!(res.status().is_redirection(), "{}", res.status());
    res.headers()["location"].to_str().unwrap().to_owned()
}

async fn the_verification_link_opens_the_dashboard_and_old_links_redirect(engine: Engine) {
    let app = engine
        .app_with(|c| c.require_email_verification = true)
        .await;
    expect_json(
        post_json(
            &app,
            &cookie_client(),
            "/auth/signup",
            json!({"email": "verify@example.com", "password": PASSWORD}),
        )
        .await,
        201,
    )
    .await;
    let mail = &wait_mails(&app, "verify@example.com", "Verify", 1).await[0];
    assert!(
        mail.html.contains(&format!(
            "{}/app/verify-email?token=",
            app.config.public_url
        )),
        "the mail links the dashboard: {}",
        mail.html
    );
    let token = mail.token("verify-email?token");
    let c = browser();

    // A link of mail sent before: the same page under /app, token and language kept.
    let old = get(&app, &c, &format!("/verify-email?token={token}&lang=de")).await;
    assert_eq!(
        redirect_to(&old),
        format!("/app/verify-email?token={token}&lang=de")
    );
    let old = get(&app, &c, "/reset-password?token=abc").await;
    assert_eq!(redirect_to(&old), "/app/reset-password?token=abc");

    let (status, html) = page(
        get(
            &app,
            &c,
            &format!("/app/verify-email?token={token}&lang=de"),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    assert!(html.contains(r#"<html lang="de">"#), "{html}");
    assert!(html.contains("E-Mail-Adresse bestätigen"), "{html}");
    assert!(html.contains(r#"action="/app/verify-email""#), "{html}");
    let (_, res) = login(&app, "verify@example.com", PASSWORD).await;
    assert_eq!(res.status(), 403, "a GET verifies nothing");

    let (status, html) = page(
        post_form(
            &app,
            &c,
            "/app/verify-email",
            &[("token", &token), ("lang", "de")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("E-Mail-Adresse bestätigt"), "{html}");
    let (_, res) = login(&app, "verify@example.com", PASSWORD).await;
    assert_eq!(res.status(), 200, "verified: sign-in works");

    // Spent, and incomplete: 400 with the words of the mail.
    let (status, html) =
        page(post_form(&app, &c, "/app/verify-email", &[("token", &token)]).await).await;
    assert_eq!(status, 400);
    assert!(html.contains("already used"), "{html}");
    let (status, html) = page(get(&app, &c, "/app/verify-email").await).await;
    assert_eq!(status, 400);
    assert!(html.contains("This link is incomplete"), "{html}");
}

async fn the_invitation_link_joins_the_project_through_the_dashboard(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    expect_json(
        app.call_with(
            &p.owner,
            Method::POST,
            &format!("/projects/{}/members", p.id),
            None,
            Some(&json!({"email": "invitee@example.com"})),
        )
        .await,
        202,
    )
    .await;
    let mail = &wait_mails(&app, "invitee@example.com", "invited", 1).await[0];
    assert!(
        mail.html
            .contains(&format!("{}/app/signup?invitation=", app.config.public_url)),
        "{}",
        mail.html
    );
    let token = mail.token("signup?invitation");
    let c = browser();
    let old = get(&app, &c, &format!("/signup?invitation={token}")).await;
    assert_eq!(redirect_to(&old), format!("/app/signup?invitation={token}"));
    let (status, html) =
        page(get(&app, &c, &format!("/app/signup?invitation={token}")).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("invitee@example.com"), "{html}");
    let (status, _) = page(get(&app, &c, "/app/signup?invitation=ffff").await).await;
    assert_eq!(status, 400);

    let (status, html) = page(
        post_form(
            &app,
            &c,
            "/app/signup",
            &[
                ("invitation", &token),
                ("email", "invitee@example.com"),
                ("password", "short"),
            ],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-password-error""#),
        "{html}"
    );
    assert!(
        html.contains("invitee@example.com"),
        "the invitation stays: {html}"
    );
    let res = post_form(
        &app,
        &c,
        "/app/signup",
        &[
            ("invitation", &token),
            ("email", "invitee@example.com"),
            ("password", PASSWORD),
        ],
    )
    .await;
    assert_eq!(location(&res), format!("/app/p/{}/", p.id));
    let user = app
        .store
        .user_by_email("invitee@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(
        user.email_verified_at.is_some(),
        "the token proved the mailbox"
    );
}

/// The session handles of the "End session" buttons on the account page.
fn end_buttons(html: &str) -> Vec<String> {
    html.split(r#"action="/app/account/sessions/"#)
        .skip(1)
        .filter_map(|rest| rest.split_once("/revoke\""))
        .map(|(handle, _)| handle.to_owned())
        .collect()
}

async fn signed_in_again(app: &TestApp, email: &str) -> reqwest::Client {
    let c = browser();
    let res = post_form(
        app,
        &c,
        "/app/login",
        &[("email", email), ("password", PASSWORD)],
    )
    .await;
    assert_eq!(res.status().as_u16(), 303);
    c
}

async fn the_account_page_lists_sessions_and_ends_others(engine: Engine) {
    let app = engine.app().await;
    let first = sign_up(&app, "sessions@example.com").await;
    let second = signed_in_again(&app, "sessions@example.com").await;

    let (status, html) = page(get(&app, &first, "/app/account").await).await;
    assert_eq!(status, 200);
    assert_eq!(html.matches("This session").count(), 1, "{html}");
    let handles = end_buttons(&html);
    assert_eq!(
        handles.len(),
        1,
        "only the other session can be ended: {html}"
    );

    // Another user's handle ends nothing.
    let other = sign_up(&app, "other@example.com").await;
    let res = post_form(
        &app,
        &other,
        &format!("/app/account/sessions/{}/revoke", handles[0]),
        &[],
    )
    .await;
    assert_eq!(res.status().as_u16(), 404);
    assert_eq!(get(&app, &second, "/app/account").await.status(), 200);

    let res = post_form(
        &app,
        &first,
        &format!("/app/account/sessions/{}/revoke", handles[0]),
        &[],
    )
    .await;
    assert_eq!(location(&res), "/app/account?saved=session#sessions");
    let res = get(&app, &second, "/app/account").await;
    assert!(
        location(&res).starts_with("/app/login"),
        "the ended session is signed out"
    );
    assert_eq!(get(&app, &first, "/app/account").await.status(), 200);

    // "End all other sessions" keeps this one only.
    let third = signed_in_again(&app, "sessions@example.com").await;
    let fourth = signed_in_again(&app, "sessions@example.com").await;
    let res = post_form(&app, &first, "/app/account/sessions/revoke-others", &[]).await;
    assert_eq!(location(&res), "/app/account?saved=sessions#sessions");
    for c in [&third, &fourth] {
        assert!(location(&get(&app, c, "/app/account").await).starts_with("/app/login"));
    }
    let (_, html) = page(get(&app, &first, "/app/account?saved=sessions").await).await;
    assert!(end_buttons(&html).is_empty(), "{html}");
    assert!(html.contains("Other sessions ended"));
}

async fn deleting_an_account_follows_the_ownership_rule(engine: Engine) {
    let app = engine.app().await;
    let (p, owner) = project_in_browser(&app).await;
    let member = sign_up(&app, "member@example.com").await;
    expect_json(
        app.call_with(
            &p.owner,
            Method::POST,
            &format!("/projects/{}/members", p.id),
            None,
            Some(&json!({"email": "member@example.com", "role": "MEMBER"})),
        )
        .await,
        201,
    )
    .await;

    // The only owner of a shared project: refused, and the page says why.
    let (status, html) = page(get(&app, &owner, "/app/account").await).await;
    assert_eq!(status, 200);
    assert!(html.contains("You are the only owner of"), "{html}");
    let me: serde_json::Value = p
        .owner
        .get(app.url("/users/@me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let owner_address = me["email"].as_str().unwrap().to_owned();
    let (status, html) = page(
        post_form(
            &app,
            &owner,
            "/app/account/delete",
            &[("confirmation", &owner_address)],
        )
        .await,
    )
    .await;
    assert_eq!(status, 409, "{html}");
    assert!(html.contains("only owner of Test project"), "{html}");

    // A wrong confirmation: the message beside the field.
    let (status, html) = page(
        post_form(
            &app,
            &member,
            "/app/account/delete",
            &[("confirmation", "someone@example.com")],
        )
        .await,
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        html.contains(r#"aria-describedby="f-confirmation-error""#),
        "{html}"
    );

    // A member leaves: the project stays, with its owner.
    let res = post_form(
        &app,
        &member,
        "/app/account/delete",
        &[("confirmation", "member@example.com")],
    )
    .await;
    assert_eq!(location(&res), "/app/login?done=deleted");
    assert!(
        app.store
            .user_by_email("member@example.com")
            .await
            .unwrap()
            .is_none()
    );
    let (_, res) = login(&app, "member@example.com", PASSWORD).await;
    assert_eq!(res.status(), 401);
    let project_id = herald_core::ids::parse_id(&p.id).unwrap();
    assert!(app.store.project_by_id(project_id).await.unwrap().is_some());

    // Now the owner is its only member: the project goes with the account.
    let (_, html) = page(get(&app, &owner, "/app/account").await).await;
    assert!(!html.contains("You are the only owner of"), "{html}");
    assert!(
        html.contains("deleted with everything in them: <strong>Test project</strong>"),
        "{html}"
    );
    let res = post_form(
        &app,
        &owner,
        "/app/account/delete",
        &[("confirmation", &owner_address)],
    )
    .await;
    assert_eq!(location(&res), "/app/login?done=deleted");
    assert!(app.store.project_by_id(project_id).await.unwrap().is_none());
    assert!(location(&get(&app, &owner, "/app/account").await).starts_with("/app/login"));
}
