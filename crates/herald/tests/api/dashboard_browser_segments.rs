//! The segment pages in a real headless Chromium, on both engines: a two-group segment built
//! with the filter builder (rows added in place by htmx, the live count as you type) whose
//! count matches `GET /segments/:id`; a bad value shown on its row, live and after Create; a
//! static segment's members added by search and removed. Every state passes
//! `Page::check_page` (screenshots at 1280 and 375 px, light and dark).

use herald_testkit::browser::{Browser, Page};
use serde_json::json;

use crate::both_engines_with_browser;
use crate::browser_login::log_in_owner;
use crate::helpers::{Engine, TestApp, TestProject, expect_json};

both_engines_with_browser!(
    a_two_group_segment_counts_in_the_page_as_the_api_does,
    a_bad_value_shows_on_its_row,
    static_segment_members_are_added_and_removed_in_the_browser,
);

async fn people(app: &TestApp, p: &TestProject) {
    for (email, plan, logins) in [
        ("ann@example.com", "pro", 12),
        ("bob@example.com", "free", 30),
        ("cid@example.com", "enterprise", 9),
        ("dee@example.com", "pro", 1),
        ("eve@example.com", "enterprise", 2),
    ] {
        app.create_contact(
            &p.secret_key,
            json!({"email": email, "data": {"plan": plan, "logins": logins}}),
        )
        .await;
    }
}

fn control(name: &str) -> String {
    format!("document.querySelector('[name=\"{name}\"]')")
}

/// True once htmx has no request running and has settled what it swapped in (handlers
/// attached to the new controls).
const HTMX_IDLE: &str =
    "!document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping, .htmx-added')";

/// Chooses `value` in the select named `name`, as a user would (its `change` event), and
/// waits until the builder has been re-rendered for it (a field or an operator).
async fn choose(page: &Page, name: &str, value: &str) {
    page.eval(&format!(
        "(() => {{ document.querySelector('.filter-builder').dataset.old = '1';
           const s = {}; s.value = {value:?}; s.dispatchEvent(new Event('change', {{ bubbles: true }})); }})()",
        control(name)
    ))
    .await
    .unwrap();
    page.wait_for(&format!(
        "!document.querySelector('.filter-builder').dataset.old && {c} && {c}.value === {value:?} && {HTMX_IDLE}",
        c = control(name)
    ))
    .await
    .unwrap();
}

/// Types `text` into the input named `name` (focus, the text, its `input` event).
async fn type_into(page: &Page, name: &str, text: &str) {
    page.eval(&format!(
        "(() => {{ const i = {}; i.focus(); i.value = {text:?}; i.dispatchEvent(new Event('input', {{ bubbles: true }})); }})()",
        control(name)
    ))
    .await
    .unwrap();
}

/// Clicks the builder button with `value` and waits for the element named `then`.
async fn builder_button(page: &Page, value: &str, then: &str) {
    page.click(&format!("button[value='{value}']"), None)
        .await
        .unwrap();
    page.wait_for(&format!("{} && {HTMX_IDLE}", control(then)))
        .await
        .unwrap();
}

async fn a_two_group_segment_counts_in_the_page_as_the_api_does(engine: Engine) {
    let app = engine.browser_app().await;
    let p = app.project().await;
    people(&app, &p).await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in_owner(&page, &app, &p).await;
    page.click_and_wait("nav[aria-label=Main] a", Some("Segments"))
        .await
        .unwrap();
    assert!(page.body_text().await.unwrap().contains("No segments yet"));
    page.check_page(&app.base, "dashboard-segments-empty").await;
    page.click_and_wait("a", Some("New segment")).await.unwrap();
    page.fill("Name", "Engaged paying").await.unwrap();
    assert_eq!(page.text(".fb-count").await.unwrap(), "5 contacts match");

    // Root AND: subscribed (the starter row), an OR group of two plans, logins > 5.
    builder_button(
        &page,
        "add-group:filters",
        "filters.conditions.1.conditions.0.field",
    )
    .await;
    choose(
        &page,
        "filters.conditions.1.conditions.0.field",
        "data.plan",
    )
    .await;
    type_into(&page, "filters.conditions.1.conditions.0.value", "pro").await;
    builder_button(
        &page,
        "add-row:filters.conditions.1",
        "filters.conditions.1.conditions.1.field",
    )
    .await;
    // The new row has the focus, and the typed value of the row above survived the swap.
    assert_eq!(
        page.eval("document.activeElement.name").await.unwrap(),
        json!("filters.conditions.1.conditions.1.field")
    );
    assert_eq!(
        page.eval(&format!(
            "{}.value",
            control("filters.conditions.1.conditions.0.value")
        ))
        .await
        .unwrap(),
        json!("pro")
    );
    choose(
        &page,
        "filters.conditions.1.conditions.1.field",
        "data.plan",
    )
    .await;
    type_into(
        &page,
        "filters.conditions.1.conditions.1.value",
        "enterprise",
    )
    .await;
    builder_button(&page, "add-row:filters", "filters.conditions.2.field").await;
    choose(&page, "filters.conditions.2.field", "data.logins").await;
    choose(&page, "filters.conditions.2.operator", "greaterThan").await;
    type_into(&page, "filters.conditions.2.value", "5").await;
    // The live count follows the typing (debounced): ann (pro, 12) and cid (enterprise, 9).
    page.wait_for("document.querySelector('.fb-count').innerText === '2 contacts match'")
        .await
        .unwrap();
    assert!(page.errors().is_empty());
    page.check_page(&app.base, "dashboard-segment-builder")
        .await;

    page.click_and_wait("button", Some("Create segment"))
        .await
        .unwrap();
    let url = page.url().await.unwrap();
    let id = url.rsplit('/').next().unwrap().to_owned();
    let api = expect_json(
        app.get(&format!("/segments/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(api["memberCount"], 2, "{api}");
    assert_eq!(page.text(".fb-count").await.unwrap(), "2 contacts match");
    assert_eq!(
        api["filters"]["conditions"][1]["operator"], "OR",
        "the nested group: {api}"
    );
    let members = page.text("#members table").await.unwrap();
    assert!(members.contains("ann@example.com") && members.contains("cid@example.com"));
    assert!(!members.contains("bob@example.com"));
    page.check_page(&app.base, "dashboard-segment").await;

    // Remove the OR group in place: the count grows to every subscribed contact with logins > 5.
    page.click("button[value='remove:filters.conditions.1']", None)
        .await
        .unwrap();
    page.wait_for("document.querySelector('.fb-count').innerText === '3 contacts match'")
        .await
        .unwrap();
    page.click_and_wait("button", Some("Save")).await.unwrap();
    let api = expect_json(
        app.get(&format!("/segments/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(api["memberCount"], 3);
    page.click_and_wait("nav[aria-label=Main] a", Some("Segments"))
        .await
        .unwrap();
    assert!(page.text("table").await.unwrap().contains("Engaged paying"));
    page.check_page(&app.base, "dashboard-segments").await;
}

async fn a_bad_value_shows_on_its_row(engine: Engine) {
    let app = engine.browser_app().await;
    let p = app.project().await;
    people(&app, &p).await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in_owner(&page, &app, &p).await;
    page.goto(&app.url(&format!("/app/p/{}/segments/new", p.id)))
        .await
        .unwrap();
    page.fill("Name", "Heavy users").await.unwrap();
    builder_button(&page, "add-row:filters", "filters.conditions.1.field").await;
    choose(&page, "filters.conditions.1.field", "data.logins").await;
    type_into(&page, "filters.conditions.1.value", "lots").await;
    // Live: the message appears beside the second row, and the count area names it.
    page.wait_for(
        "document.querySelector('#fb-filters-conditions-1-error').innerText === 'value must be a number for this field'",
    )
    .await
    .unwrap();
    assert!(
        page.eval("document.querySelector('#fb-filters-conditions-0-error').hidden")
            .await
            .unwrap()
            == json!(true)
    );
    assert!(
        page.text(".fb-count")
            .await
            .unwrap()
            .starts_with("Condition 2:")
    );
    page.check_page(&app.base, "dashboard-segment-bad-value-live")
        .await;
    // Create: refused, the row marked, the typed values kept.
    page.click_and_wait("button", Some("Create segment"))
        .await
        .unwrap();
    assert_eq!(
        page.eval(&format!(
            "{}.getAttribute('aria-invalid')",
            control("filters.conditions.1.value")
        ))
        .await
        .unwrap(),
        json!("true")
    );
    assert_eq!(page.value_of("Name").await.unwrap(), "Heavy users");
    // The page's own status is the one error the browser reports.
    let errors = page.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("422 (Unprocessable Entity)"),
        "{errors:?}"
    );
    page.check_page(&app.base, "dashboard-segment-bad-value")
        .await;
    let list = expect_json(app.get("/segments", &p.secret_key).await, 200).await;
    assert_eq!(list.as_array().unwrap().len(), 0);
}

async fn static_segment_members_are_added_and_removed_in_the_browser(engine: Engine) {
    let app = engine.browser_app().await;
    let p = app.project().await;
    people(&app, &p).await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in_owner(&page, &app, &p).await;
    page.goto(&app.url(&format!("/app/p/{}/segments/new", p.id)))
        .await
        .unwrap();
    page.fill("Name", "Beta testers").await.unwrap();
    page.click("input[value=STATIC]", None).await.unwrap();
    // A static segment has no conditions: the builder gives way to a note.
    assert_eq!(
        page.eval("getComputedStyle(document.querySelector('.filter-builder')).display")
            .await
            .unwrap(),
        json!("none")
    );
    page.click_and_wait("button", Some("Create segment"))
        .await
        .unwrap();
    assert!(page.body_text().await.unwrap().contains("No members yet"));
    page.fill("Find contacts", "ann").await.unwrap();
    page.click_and_wait("button", Some("Search")).await.unwrap();
    page.check_page(&app.base, "dashboard-segment-static-search")
        .await;
    page.click_and_wait("button[aria-label='Add ann@example.com']", None)
        .await
        .unwrap();
    page.fill("Find contacts", "cid").await.unwrap();
    page.click_and_wait("button", Some("Search")).await.unwrap();
    page.click_and_wait("button[aria-label='Add cid@example.com']", None)
        .await
        .unwrap();
    let members = page.text("#members table").await.unwrap();
    assert!(
        members.contains("ann@example.com") && members.contains("cid@example.com"),
        "{members}"
    );
    page.check_page(&app.base, "dashboard-segment-static").await;
    page.click_and_wait("button[aria-label='Remove ann@example.com']", None)
        .await
        .unwrap();
    let members = page.text("#members table").await.unwrap();
    assert!(!members.contains("ann@example.com") && members.contains("cid@example.com"));
    let url = page.url().await.unwrap();
    let id = url
        .split('?')
        .next()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let api = expect_json(
        app.get(&format!("/segments/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(api["memberCount"], 1);
}
