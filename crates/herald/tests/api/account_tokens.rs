//! Sessions and the mailed tokens: revocable sessions, email verification, password reset,
//! the hourly mail limit and answers that do not reveal accounts.

use reqwest::Method;
use serde_json::json;

use crate::account_setup::{PASSWORD, login, me_status, post_json, wait_mails};
use crate::both_engines;
use crate::helpers::{Engine, cookie_client, expect_error, expect_json};

both_engines!(
    logout_ends_the_session_server_side,
    signup_mails_a_verification_link_that_works_once,
    a_verification_token_expires_after_a_day,
    password_reset_sets_the_password_and_ends_every_session,
    a_reset_token_expires_after_an_hour_and_works_once,
    request_endpoints_do_not_reveal_accounts,
    at_most_three_account_mails_per_hour_per_address,
    required_verification_blocks_sign_in_until_verified,
);

async fn logout_ends_the_session_server_side(engine: Engine) {
    let app = engine.app().await;
    let client = app.signup("leave@example.com").await;
    // The cookie value, replayed after logout by another client.
    let (other, res) = login(&app, "leave@example.com", PASSWORD).await;
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_owned();
    let token = cookie
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("herald_session=")
        .to_owned();
    assert_eq!(me_status(&app, &other).await, 200);
    let res = app
        .call_with(&other, Method::GET, "/auth/logout", None, None)
        .await;
    assert_eq!(res.status(), 200);
    let replay = app
        .client
        .get(app.url("/users/@me"))
        .header("cookie", format!("herald_session={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        replay.status(),
        401,
        "a logged-out session is dead server-side"
    );
    let bearer = app
        .client
        .get(app.url("/users/@me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status(), 401, "also as a bearer token");
    assert_eq!(
        me_status(&app, &client).await,
        200,
        "other sessions live on"
    );
}

async fn signup_mails_a_verification_link_that_works_once(engine: Engine) {
    let app = engine.app().await;
    app.signup("fresh@example.com").await;
    let mails = wait_mails(&app, "fresh@example.com", "Verify", 1).await;
    let token = mails[0].token("verify-email?token");
    assert_eq!(token.len(), 64);
    assert!(mails[0].html.contains(&format!(
        "{}/app/verify-email?token=",
        app.config.public_url
    )));
    let c = cookie_client();
    let body = json!({"token": token});
    expect_json(
        post_json(&app, &c, "/auth/verify-email", body.clone()).await,
        200,
    )
    .await;
    let reused = post_json(&app, &c, "/auth/verify-email", body).await;
    expect_error(reused, 400, "INVALID_TOKEN").await;
    let bad = post_json(&app, &c, "/auth/verify-email", json!({"token": "00ff"})).await;
    expect_error(bad, 400, "INVALID_TOKEN").await;
    let missing = post_json(&app, &c, "/auth/verify-email", json!({})).await;
    expect_error(missing, 422, "VALIDATION_ERROR").await;
}

async fn a_verification_token_expires_after_a_day(engine: Engine) {
    let app = engine.app().await;
    app.signup("late@example.com").await;
    let token =
        wait_mails(&app, "late@example.com", "Verify", 1).await[0].token("verify-email?token");
    app.clock
        .advance(std::time::Duration::from_secs(24 * 3600 + 1));
    let res = post_json(
        &app,
        &cookie_client(),
        "/auth/verify-email",
        json!({"token": token}),
    )
    .await;
    expect_error(res, 400, "INVALID_TOKEN").await;
}

async fn password_reset_sets_the_password_and_ends_every_session(engine: Engine) {
    let app = engine.app().await;
    let first = app.signup("forgot@example.com").await;
    let (second, _) = login(&app, "forgot@example.com", PASSWORD).await;
    let c = cookie_client();
    let res = post_json(
        &app,
        &c,
        "/auth/request-password-reset",
        json!({"email": "forgot@example.com"}),
    )
    .await;
    expect_json(res, 200).await;
    let token =
        wait_mails(&app, "forgot@example.com", "Reset", 1).await[0].token("reset-password?token");
    let short = post_json(
        &app,
        &c,
        "/auth/reset-password",
        json!({"token": token, "password": "short"}),
    )
    .await;
    expect_error(short, 422, "VALIDATION_ERROR").await;
    let body = json!({"token": token, "password": "a brand new password"});
    expect_json(post_json(&app, &c, "/auth/reset-password", body).await, 200).await;
    assert_eq!(me_status(&app, &first).await, 401);
    assert_eq!(me_status(&app, &second).await, 401);
    let (_, old) = login(&app, "forgot@example.com", PASSWORD).await;
    expect_error(old, 401, "INVALID_CREDENTIALS").await;
    let (fresh, new) = login(&app, "forgot@example.com", "a brand new password").await;
    expect_json(new, 200).await;
    assert_eq!(me_status(&app, &fresh).await, 200);
}

async fn a_reset_token_expires_after_an_hour_and_works_once(engine: Engine) {
    let app = engine.app().await;
    app.signup("twice@example.com").await;
    let c = cookie_client();
    for _ in 0..2 {
        let res = post_json(
            &app,
            &c,
            "/auth/request-password-reset",
            json!({"email": "twice@example.com"}),
        )
        .await;
        expect_json(res, 200).await;
    }
    let mails = wait_mails(&app, "twice@example.com", "Reset", 2).await;
    let (a, b) = (
        mails[0].token("reset-password?token"),
        mails[1].token("reset-password?token"),
    );
    let body = |t: &str| json!({"token": t, "password": "another password 1"});
    expect_json(
        post_json(&app, &c, "/auth/reset-password", body(&a)).await,
        200,
    )
    .await;
    let reused = post_json(&app, &c, "/auth/reset-password", body(&a)).await;
    expect_error(reused, 400, "INVALID_TOKEN").await;
    app.clock.advance(std::time::Duration::from_secs(3601));
    let expired = post_json(&app, &c, "/auth/reset-password", body(&b)).await;
    expect_error(expired, 400, "INVALID_TOKEN").await;
}

async fn request_endpoints_do_not_reveal_accounts(engine: Engine) {
    let app = engine.app().await;
    app.signup("known@example.com").await;
    let c = cookie_client();
    for path in ["/auth/request-password-reset", "/auth/request-verification"] {
        let known = expect_json(
            post_json(&app, &c, path, json!({"email": "known@example.com"})).await,
            200,
        )
        .await;
        let unknown = expect_json(
            post_json(&app, &c, path, json!({"email": "nobody@example.com"})).await,
            200,
        )
        .await;
        assert_eq!(known, unknown, "{path}");
        let bad = post_json(&app, &c, path, json!({"email": "not an address"})).await;
        let body = expect_error(bad, 422, "VALIDATION_ERROR").await;
        assert_eq!(crate::helpers::error_fields(&body), vec!["email"]);
    }
    // The known address got its mails; the unknown one none.
    wait_mails(&app, "known@example.com", "Reset", 1).await;
    assert!(crate::account_setup::mails_to(&app, "nobody@example.com").is_empty());
}

async fn at_most_three_account_mails_per_hour_per_address(engine: Engine) {
    let app = engine.app().await;
    app.signup("busy@example.com").await; // the verification mail is the first
    let c = cookie_client();
    for _ in 0..4 {
        let res = post_json(
            &app,
            &c,
            "/auth/request-password-reset",
            json!({"email": "busy@example.com"}),
        )
        .await;
        expect_json(res, 200).await;
    }
    crate::mail_setup::wait_queue_settled(&app, std::time::Duration::from_secs(20)).await;
    assert_eq!(
        crate::account_setup::mails_to(&app, "busy@example.com").len(),
        3
    );
    app.clock.advance(std::time::Duration::from_secs(3601));
    let res = post_json(
        &app,
        &c,
        "/auth/request-password-reset",
        json!({"email": "busy@example.com"}),
    )
    .await;
    expect_json(res, 200).await;
    wait_mails(&app, "busy@example.com", "", 4).await;
}

async fn required_verification_blocks_sign_in_until_verified(engine: Engine) {
    let app = engine
        .app_with(|c| c.require_email_verification = true)
        .await;
    let c = cookie_client();
    let res = post_json(
        &app,
        &c,
        "/auth/signup",
        json!({"email": "strict@example.com", "password": PASSWORD}),
    )
    .await;
    assert!(
        res.headers().get("set-cookie").is_none(),
        "no session before verification"
    );
    expect_json(res, 201).await;
    let (_, res) = login(&app, "strict@example.com", PASSWORD).await;
    expect_error(res, 403, "EMAIL_VERIFICATION_REQUIRED").await;
    let token =
        wait_mails(&app, "strict@example.com", "Verify", 1).await[0].token("verify-email?token");
    expect_json(
        post_json(&app, &c, "/auth/verify-email", json!({"token": token})).await,
        200,
    )
    .await;
    let (client, res) = login(&app, "strict@example.com", PASSWORD).await;
    expect_json(res, 200).await;
    assert_eq!(me_status(&app, &client).await, 200);
}
