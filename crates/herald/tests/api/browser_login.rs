//! Signing in through the dashboard's login form, shared by the browser tests: the project
//! owner's address (as `GET /users/@me` gives it) and the form filled with the test password.

use herald_testkit::browser::Page;
use reqwest::Method;

use crate::dashboard::PASSWORD;
use crate::helpers::{TestApp, TestProject, expect_json};

/// The address the project's owner signs in with.
pub async fn owner_email(app: &TestApp, p: &TestProject) -> String {
    let me = expect_json(
        app.call_with(&p.owner, Method::GET, "/users/@me", None, None)
            .await,
        200,
    )
    .await;
    me["email"].as_str().expect("email").to_owned()
}

/// Signs `email` in through the login form of the server at `base`, and checks the page left
/// the form.
pub async fn log_in_at(page: &Page, base: &str, email: &str) {
    page.goto(&format!("{base}/app/login")).await.unwrap();
    page.fill("Email", email).await.unwrap();
    page.fill("Password", PASSWORD).await.unwrap();
    page.click_and_wait("button", Some("Log in")).await.unwrap();
    assert!(
        !page.url().await.unwrap().contains("/app/login"),
        "signed in: {}",
        page.body_text().await.unwrap()
    );
}

/// Signs `email` in on the test app.
pub async fn log_in(page: &Page, app: &TestApp, email: &str) {
    log_in_at(page, &app.base, email).await;
}

/// Signs the project's owner in on the test app.
pub async fn log_in_owner(page: &Page, app: &TestApp, p: &TestProject) {
    log_in(page, app, &owner_email(app, p).await).await;
}
