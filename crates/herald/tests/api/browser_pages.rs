//! The account pages in a real headless Chromium (herald_testkit::browser): a user opens the
//! reset link of a mail sent before the links named the dashboard (it redirects to
//! `/app/reset-password`), types a new password and signs in with it. Along the way, what
//! every page must hold in a browser: nothing loaded from another origin, no script error or
//! Content-Security-Policy violation, the keyboard reaches the form with a visible focus, and
//! nothing scrolls sideways at 375 px, light and dark.

use herald_testkit::browser::Browser;
use serde_json::json;

use crate::account_setup::{login, post_json, wait_mails};
use crate::both_engines_with_browser;
use crate::helpers::{Engine, TestApp, cookie_client, expect_json};

both_engines_with_browser!(the_reset_link_sets_a_password_in_the_browser);

const LABEL: &str = "New password (8 to 256 characters)";

async fn reset_link(app: &TestApp, email: &str) -> String {
    app.signup(email).await;
    expect_json(
        post_json(
            app,
            &cookie_client(),
            "/auth/request-password-reset",
            json!({ "email": email }),
        )
        .await,
        200,
    )
    .await;
    let token = wait_mails(app, email, "Reset", 1).await[0].token("reset-password?token");
    app.url(&format!("/reset-password?token={token}"))
}

async fn the_reset_link_sets_a_password_in_the_browser(engine: Engine) {
    let app = engine.browser_app().await;
    let link = reset_link(&app, "browser-reset@example.com").await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    page.goto(&link).await.unwrap();
    assert_eq!(page.text("h1").await.unwrap(), "Choose a new password");
    page.check_page(&app.base, "account-reset").await;

    // By keyboard: the first Tab stop is the password field, with a focus ring.
    page.press("Tab").await.unwrap();
    let focused = page.focused().await.unwrap();
    assert_eq!(focused.tag, "input", "{focused:?}");
    assert_eq!(
        page.attribute_of(LABEL, "type").await.unwrap().as_deref(),
        Some("password")
    );

    page.fill(LABEL, "a browser password").await.unwrap();
    assert_eq!(page.value_of(LABEL).await.unwrap(), "a browser password");
    page.click_and_wait("button", Some("Set password"))
        .await
        .unwrap();
    assert_eq!(page.text("h1").await.unwrap(), "Log in");
    assert!(
        page.body_text()
            .await
            .unwrap()
            .contains("Your password is changed")
    );
    page.check_page(&app.base, "account-reset-done").await;

    // The checks can fail: an image from elsewhere is a CSP violation the page reports.
    page.eval("document.body.appendChild(Object.assign(document.createElement('img'), {src: 'http://192.0.2.1/x.png'})) && 1")
        .await
        .unwrap();
    page.wait_for("true").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let errors = page.errors();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("Content Security Policy") || e.contains("192.0.2.1")),
        "{errors:?}"
    );

    let (_, res) = login(&app, "browser-reset@example.com", "a browser password").await;
    assert_eq!(
        res.status(),
        200,
        "the password typed in the browser signs in"
    );
}
