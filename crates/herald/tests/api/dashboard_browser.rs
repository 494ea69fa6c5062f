//! The dashboard in a real headless Chromium: a newcomer signs up, creates a project, adds a
//! contact and opens it, then settings; on every page nothing loads from elsewhere, no script
//! error or CSP violation shows, nothing scrolls sideways at 375 px, and screenshots are
//! taken light and dark (target/screenshots/dashboard-*.png).

use herald_testkit::browser::Browser;

use crate::both_engines_with_browser;
use crate::helpers::Engine;

both_engines_with_browser!(a_newcomer_signs_up_creates_a_project_and_adds_a_contact);

async fn a_newcomer_signs_up_creates_a_project_and_adds_a_contact(engine: Engine) {
    let app = engine.browser_app().await;
    let origin = app.base.clone();
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();

    page.goto(&app.url("/app/signup")).await.unwrap();
    page.check_page(&origin, "dashboard-signup").await;
    page.fill("Email", "owner@example.com").await.unwrap();
    page.fill("Password", "correct horse battery")
        .await
        .unwrap();
    page.click_and_wait("button", Some("Sign up"))
        .await
        .unwrap();
    assert!(
        page.url().await.unwrap().ends_with("/app/projects/new"),
        "{}",
        page.url().await.unwrap()
    );
    page.check_page(&origin, "dashboard-project-new").await;

    page.fill("Name", "Acme").await.unwrap();
    page.click_and_wait("button", Some("Create project"))
        .await
        .unwrap();
    let shown = page.body_text().await.unwrap();
    assert!(
        shown.contains("sk_"),
        "the secret key is shown once: {shown}"
    );
    page.check_page(&origin, "dashboard-project-created").await;

    page.goto(&app.url("/app/")).await.unwrap();
    assert!(page.url().await.unwrap().contains("/app/p/"));
    page.check_page(&origin, "dashboard-home").await;
    // The first-send snippet wraps inside its box: nothing of it hidden past its right edge
    // (an overlay scrollbar made the cut look final), at desktop width and at 375 px.
    for width in [1280, 375] {
        page.set_viewport(width, 900).await.unwrap();
        let fits = page
            .eval(
                "(() => { const s = document.getElementById('snippet'); \
                 const box = s.closest('.panel').getBoundingClientRect(); \
                 return s.scrollWidth <= s.clientWidth \
                     && s.getBoundingClientRect().right <= box.right + 0.5; })()",
            )
            .await
            .unwrap();
        assert_eq!(
            fits,
            serde_json::Value::Bool(true),
            "snippet cut at {width} px"
        );
    }
    page.set_viewport(1280, 900).await.unwrap();
    // The keyboard reaches the page with a visible focus (the skip link first).
    page.press("Tab").await.unwrap();
    let focused = page.focused().await.unwrap();
    assert!(!focused.nothing && focused.ring, "{focused:?}");

    page.click_and_wait("nav[aria-label=Main] a", Some("Contacts"))
        .await
        .unwrap();
    page.check_page(&origin, "dashboard-contacts-empty").await;
    page.click("button", Some("New contact")).await.unwrap();
    page.wait_for("document.querySelector('dialog[open]')")
        .await
        .unwrap();
    page.fill("Email", "ada@example.com").await.unwrap();
    page.click_and_wait("button", Some("Create contact"))
        .await
        .unwrap();
    // A new contact opens its page.
    assert!(page.url().await.unwrap().contains("/contacts/"));
    assert!(page.body_text().await.unwrap().contains("ada@example.com"));
    page.check_page(&origin, "dashboard-contact").await;

    page.click_and_wait("nav[aria-label=Main] a", Some("Contacts"))
        .await
        .unwrap();
    page.check_page(&origin, "dashboard-contacts").await;
    page.click_and_wait("a", Some("ada@example.com"))
        .await
        .unwrap();
    assert!(page.url().await.unwrap().contains("/contacts/"));

    page.click_and_wait("nav[aria-label=Main] a", Some("Settings"))
        .await
        .unwrap();
    page.check_page(&origin, "dashboard-settings").await;
}
