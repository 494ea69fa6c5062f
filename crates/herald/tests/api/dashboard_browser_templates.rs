//! The templates pages in a real headless Chromium, on both engines: the empty list, New
//! template with the code editor (line numbers, highlighting), the preview changing as the
//! user types (the sandboxed frame, the subject, the variables and the plain text; the sample
//! contact edited), a bad value shown beside its field with the typed values kept, the
//! template created, Send test arriving in the outbox, and the list. Every state passes
//! `Page::check_page` (screenshots light and dark, 1280 and 375 px, in target/screenshots).

use std::time::Duration;

use herald_testkit::browser::Browser;
use serde_json::json;

use crate::both_engines_with_browser;
use crate::browser_login::{log_in, owner_email};
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::wait_status;

both_engines_with_browser!(a_template_is_written_previewed_created_and_tested_in_the_browser);

const FRAME: &str = "preview-frame";

async fn a_template_is_written_previewed_created_and_tested_in_the_browser(engine: Engine) {
    let app = engine.browser_app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    expect_json(
        app.post("/domains", sk, &json!({"domain": "shop.test"}))
            .await,
        201,
    )
    .await;
    let me = owner_email(&app, &p).await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in(&page, &app, &me).await;

    page.click_and_wait("nav[aria-label=Main] a", Some("Templates"))
        .await
        .unwrap();
    assert!(
        page.text("table")
            .await
            .unwrap()
            .contains("No templates yet."),
        "the empty state"
    );
    page.check_page(&app.base, "dashboard-templates-empty")
        .await;

    // New template: the editor is enhanced, and the preview follows the typing.
    page.click_and_wait("a", Some("New template"))
        .await
        .unwrap();
    page.wait_for("document.querySelector('.code-editor .code-gutter')")
        .await
        .unwrap();
    page.wait_for_frame_text(FRAME, "Hello Ada")
        .await
        .expect("the starter body, previewed at load for the sample contact");
    page.fill("Name", "Welcome").await.unwrap();
    page.fill("Subject", "Hi {{firstName ?? \"there\"}}")
        .await
        .unwrap();
    page.fill(
        "Body",
        "<h1>Hello {{firstName}}</h1>\n<p>You are on {{plan ?? \"the free plan\"}}.</p>\n<!-- note -->\n<a href=\"https://example.com/start\">Start</a>",
    )
    .await
    .unwrap();
    let frame = page
        .wait_for_frame_text(FRAME, "You are on the free plan.")
        .await
        .unwrap();
    assert!(frame.contains("Hello Ada"), "{frame}");
    page.wait_for("document.querySelector('#preview-subject').innerText.includes('Hi Ada')")
        .await
        .unwrap();
    let details = page.text("#preview-info").await.unwrap();
    assert!(details.contains("plan"), "{details}");
    assert!(
        details.contains("the free plan"),
        "the fallback listed: {details}"
    );
    assert_eq!(
        page.eval("document.querySelector('.code-gutter').textContent.trim().split('\\n').length")
            .await
            .unwrap(),
        json!(4),
        "a number per line"
    );
    assert_eq!(
        page.eval("[...document.querySelectorAll('.code-layer .tok-var')].map(e => e.textContent)")
            .await
            .unwrap(),
        json!(["{{firstName}}", "{{plan ?? \"the free plan\"}}"]),
        "variables highlighted"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('.code-layer .tok-comment').length")
            .await
            .unwrap(),
        json!(1)
    );
    page.eval("document.querySelector('.plain-text').open = true")
        .await
        .unwrap();
    let text = page.text(".plain-text pre").await.unwrap();
    assert!(text.contains("Start (https://example.com/start)"), "{text}");

    // The sample contact is the user's to edit.
    page.fill("Sample data", r#"{"firstName": "Grace", "plan": "Pro"}"#)
        .await
        .unwrap();
    let frame = page
        .wait_for_frame_text(FRAME, "Hello Grace")
        .await
        .unwrap();
    assert!(frame.contains("You are on Pro."), "{frame}");
    page.wait_for("document.querySelector('#preview-subject').innerText.includes('Hi Grace')")
        .await
        .unwrap();
    page.check_page(&app.base, "dashboard-template-editor")
        .await;

    // A bad value: beside its field, the rest kept.
    page.fill("Name", "").await.unwrap();
    page.click_and_wait("button", Some("Create template"))
        .await
        .unwrap();
    assert_eq!(
        page.attribute_of("Name", "aria-invalid")
            .await
            .unwrap()
            .as_deref(),
        Some("true")
    );
    assert_eq!(
        page.attribute_of("Name", "aria-describedby")
            .await
            .unwrap()
            .as_deref(),
        Some("f-name-error")
    );
    assert_eq!(
        page.text("#f-name-error").await.unwrap(),
        "name must not be empty"
    );
    assert!(
        page.value_of("Body")
            .await
            .unwrap()
            .contains("Hello {{firstName}}")
    );
    assert!(
        page.value_of("Sample data")
            .await
            .unwrap()
            .contains("Grace")
    );
    page.wait_for_frame_text(FRAME, "Hello Grace")
        .await
        .unwrap();
    // The refused post answered 422, which the browser logs; nothing else went wrong.
    let errors = page.errors();
    assert!(
        errors.len() == 1 && errors[0].contains("status of 422"),
        "{errors:?}"
    );
    page.check_page(&app.base, "dashboard-template-error").await;

    page.fill("Name", "Welcome").await.unwrap();
    page.fill("From", "news@shop.test").await.unwrap();
    page.click_and_wait("button", Some("Create template"))
        .await
        .unwrap();
    assert!(page.body_text().await.unwrap().contains("Template created"));
    assert_eq!(page.text("h1").await.unwrap(), "Welcome");
    page.wait_for_frame_text(FRAME, "Hello Ada").await.unwrap();

    // Send test, to the signed-in member, through the send path into the outbox.
    assert_eq!(page.value_of("Email").await.unwrap(), me);
    page.click_and_wait("button", Some("Send test"))
        .await
        .unwrap();
    let notice = page.text(".toast").await.unwrap();
    assert_eq!(notice, format!("Test sent to {me}"));
    page.check_page(&app.base, "dashboard-template-saved").await;
    let emails = expect_json(app.get("/emails", sk).await, 200).await;
    assert_eq!(emails["data"][0]["subject"], "[Test] Hi there", "{emails}");
    let id = emails["data"][0]["id"].as_str().unwrap().to_owned();
    wait_status(&app, sk, &id, &["SENT"], Duration::from_secs(15)).await;
    let eml = std::fs::read_to_string(app.config.data_dir.join("outbox").join(format!("{id}.eml")))
        .expect("the test in the outbox");
    assert!(eml.contains("Hello"), "{eml}");

    page.click_and_wait("a", Some("Templates")).await.unwrap();
    let list = page.text("table").await.unwrap();
    assert!(
        list.contains("Welcome") && list.contains("Transactional"),
        "{list}"
    );
    page.check_page(&app.base, "dashboard-templates-list").await;
}
