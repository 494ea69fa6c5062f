//! `POST /users/@me/password`, on both engines: the current password is checked, the new one
//! follows the signup rule, the caller's session stays and every other session ends; the old
//! password no longer signs in, the new one does.

use reqwest::Method;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, cookie_client, error_fields, expect_error, expect_json};

both_engines!(changing_the_password_ends_the_other_sessions);

async fn changing_the_password_ends_the_other_sessions(engine: Engine) {
    let app = engine.app().await;
    let email = "pw-change@example.com";
    let first = app.signup(email).await;
    let login = |password: &'static str| {
        let app = &app;
        async move {
            let client = cookie_client();
            let res = app
                .call_with(
                    &client,
                    Method::POST,
                    "/auth/login",
                    None,
                    Some(&json!({"email": email, "password": password})),
                )
                .await;
            (client, res.status().as_u16())
        }
    };
    let (second, status) = login("correct horse battery").await;
    assert_eq!(status, 200);
    let change = |current: &str, new: &str| json!({"currentPassword": current, "newPassword": new});
    let path = "/users/@me/password";
    let e = expect_error(
        app.call_with(
            &first,
            Method::POST,
            path,
            None,
            Some(&change("wrong password", "a new long password")),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["currentPassword"]);
    let e = expect_error(
        app.call_with(
            &first,
            Method::POST,
            path,
            None,
            Some(&change("correct horse battery", "short")),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["newPassword"]);
    let done = expect_json(
        app.call_with(
            &first,
            Method::POST,
            path,
            None,
            Some(&change("correct horse battery", "a new long password")),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(done["success"], true);
    // The caller stays signed in; the other session is over.
    expect_json(
        app.call_with(&first, Method::GET, "/users/@me", None, None)
            .await,
        200,
    )
    .await;
    let res = app
        .call_with(&second, Method::GET, "/users/@me", None, None)
        .await;
    assert_eq!(res.status(), 401);
    assert_eq!(login("correct horse battery").await.1, 401);
    assert_eq!(login("a new long password").await.1, 200);
    // Without a session: 401.
    let res = app
        .call(
            Method::POST,
            path,
            None,
            Some(&change("a new long password", "another long one")),
        )
        .await;
    assert_eq!(res.status(), 401);
}
