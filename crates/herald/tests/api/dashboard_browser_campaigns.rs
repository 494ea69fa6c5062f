//! The campaign pages in a real headless Chromium, on both engines: the empty list, New
//! campaign (the sender on a verified domain, the body with its live preview, the live
//! recipient count), Create campaign, Send test into the outbox, Schedule at a time chosen in
//! the browser's time zone (shown in UTC too) behind a dialog that states the count, Cancel
//! campaign behind its dialog, a second campaign sent now, and its report whose stats move
//! after a tracked open and click. Every state passes `Page::check_page` (screenshots light
//! and dark, 1280 and 375 px, in target/screenshots).

use std::time::Duration;

use herald_testkit::browser::{Browser, Page};
use serde_json::json;

use crate::both_engines_with_browser;
use crate::browser_login::{log_in, owner_email};
use crate::campaigns::{seed, wait_campaign};
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::wait_status;

both_engines_with_browser!(a_campaign_is_written_tested_scheduled_cancelled_sent_and_measured);

const FRAME: &str = "preview-frame";
const HTMX_IDLE: &str =
    "!document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping, .htmx-added')";

/// Writes a campaign in New campaign and creates it.
async fn write_campaign(page: &mut Page, name: &str, subject: &str) {
    page.click_and_wait("a", Some("New campaign"))
        .await
        .unwrap();
    page.wait_for("document.querySelector('.code-editor .code-gutter')")
        .await
        .unwrap();
    page.fill("Name", name).await.unwrap();
    page.fill("Subject", subject).await.unwrap();
    page.fill("From", "news").await.unwrap();
    page.fill(
        "Body",
        "<h1>Hello {{firstName ?? \"there\"}}</h1>\n<p><a href=\"https://example.com/sale\">See the sale</a></p>",
    )
    .await
    .unwrap();
    page.wait_for_frame_text(FRAME, "Hello Ada")
        .await
        .expect("the body previewed for the sample contact");
    page.wait_for(&format!(
        "document.querySelector('#recipient-count').innerText.includes('3 contacts will receive it') && {HTMX_IDLE}"
    ))
    .await
    .unwrap();
}

async fn a_campaign_is_written_tested_scheduled_cancelled_sent_and_measured(engine: Engine) {
    let app = engine.browser_app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    expect_json(
        app.post("/domains", sk, &json!({"domain": "shop.test"}))
            .await,
        201,
    )
    .await;
    seed(
        &app,
        &p.id,
        3,
        true,
        |i| format!("r{i}@example.org"),
        |_| json!({"firstName": "Grace"}),
    )
    .await;
    seed(
        &app,
        &p.id,
        1,
        false,
        |i| format!("gone{i}@example.org"),
        |_| json!({}),
    )
    .await;
    let me = owner_email(&app, &p).await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in(&page, &app, &me).await;

    page.click_and_wait("nav[aria-label=Main] a", Some("Campaigns"))
        .await
        .unwrap();
    assert!(
        page.text("table")
            .await
            .unwrap()
            .contains("No campaigns yet."),
        "the empty state"
    );
    page.check_page(&app.base, "dashboard-campaigns-empty")
        .await;

    // New campaign: the preview follows the body, the count follows the audience.
    write_campaign(&mut page, "Spring sale", "Hi {{firstName ?? \"friend\"}}").await;
    page.wait_for("document.querySelector('#preview-subject').innerText.includes('Hi Ada')")
        .await
        .unwrap();
    page.click("label", Some("A segment")).await.unwrap();
    page.wait_for(&format!(
        "document.querySelector('#recipient-count').innerText.includes('segmentId is required') && {HTMX_IDLE}"
    ))
    .await
    .unwrap();
    // Conditions: the filter builder appears; its starter (subscribed) counts the same three.
    page.click("label", Some("Contacts matching conditions"))
        .await
        .unwrap();
    page.wait_for(&format!(
        "document.querySelector('#recipient-count').innerText.includes('3 contacts will receive it') \
         && document.querySelector('.audience-filter').offsetHeight > 0 && {HTMX_IDLE}"
    ))
    .await
    .unwrap();
    page.check_page(&app.base, "dashboard-campaign-filtered")
        .await;
    page.click("label", Some("All contacts")).await.unwrap();
    page.wait_for(&format!(
        "document.querySelector('#recipient-count').innerText.includes('3 contacts will receive it') && {HTMX_IDLE}"
    ))
    .await
    .unwrap();
    page.check_page(&app.base, "dashboard-campaign-new").await;
    page.click_and_wait("button", Some("Create campaign"))
        .await
        .unwrap();
    assert!(page.body_text().await.unwrap().contains("Campaign created"));
    assert_eq!(page.text("h1").await.unwrap(), "Spring sale");
    let id = page
        .url()
        .await
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    let saved = expect_json(app.get(&format!("/campaigns/{id}"), sk).await, 200).await;
    assert_eq!(saved["from"], "news@shop.test", "{saved}");

    // Send test: to the signed-in user, through the send path into the outbox.
    assert_eq!(page.value_of("Email").await.unwrap(), me);
    page.click_and_wait("button", Some("Send test"))
        .await
        .unwrap();
    assert_eq!(
        page.text(".toast").await.unwrap(),
        format!("Test sent to {me}")
    );
    let emails = expect_json(app.get("/emails", sk).await, 200).await;
    assert_eq!(emails["data"][0]["subject"], "[Test] Hi friend", "{emails}");
    page.check_page(&app.base, "dashboard-campaign-draft").await;

    // Schedule: a time in the browser's zone, said in UTC too; the dialog states the count.
    page.eval(
        "(() => { const i = document.querySelector('#f-sendAt'); i.value = '2099-06-01T09:30';
           i.dispatchEvent(new Event('input', { bubbles: true })); })()",
    )
    .await
    .unwrap();
    let hint = page.text("#f-sendAt-hint").await.unwrap();
    assert!(hint.contains("UTC"), "{hint}");
    page.click("button", Some("Schedule")).await.unwrap();
    page.wait_for("document.querySelector('dialog[open]')")
        .await
        .unwrap();
    let ask = page.text("dialog[open]").await.unwrap();
    assert!(ask.contains("Schedule to 3 contacts"), "{ask}");
    page.click_and_wait("dialog button", Some("Schedule"))
        .await
        .unwrap();
    assert!(page.body_text().await.unwrap().contains("Scheduled"));
    let c = expect_json(app.get(&format!("/campaigns/{id}"), sk).await, 200).await;
    assert_eq!(c["status"], "SCHEDULED", "{c}");
    let when = page.text("time[data-local]").await.unwrap();
    assert!(when.contains("UTC"), "local time with UTC: {when}");
    page.check_page(&app.base, "dashboard-campaign-scheduled")
        .await;

    // Cancel campaign, behind its dialog.
    page.click("button", Some("Cancel campaign")).await.unwrap();
    page.wait_for("document.querySelector('dialog[open]')")
        .await
        .unwrap();
    page.click_and_wait("dialog button", Some("Cancel campaign"))
        .await
        .unwrap();
    let c = expect_json(app.get(&format!("/campaigns/{id}"), sk).await, 200).await;
    assert_eq!(c["status"], "CANCELLED", "{c}");
    assert!(page.body_text().await.unwrap().contains("Cancelled"));

    // A second campaign, sent now.
    page.click_and_wait("a", Some("Campaigns")).await.unwrap();
    write_campaign(
        &mut page,
        "Spring sale, take two",
        "Hi {{firstName ?? \"friend\"}}",
    )
    .await;
    page.click_and_wait("button", Some("Create campaign"))
        .await
        .unwrap();
    let id = page
        .url()
        .await
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    page.click("button", Some("Send now")).await.unwrap();
    page.wait_for("document.querySelector('dialog[open]')")
        .await
        .unwrap();
    let ask = page.text("dialog[open]").await.unwrap();
    assert!(ask.contains("Send to 3 contacts now?"), "{ask}");
    page.click_and_wait("dialog button", Some("Send now"))
        .await
        .unwrap();
    wait_campaign(&app, sk, &id, Duration::from_secs(60), |c| {
        c["status"] == "SENT"
    })
    .await;
    // The progress fragment polls until the send ends, then the badge says so after a reload.
    page.wait_for("!document.querySelector('#campaign-progress[hx-get]')")
        .await
        .unwrap();
    page.goto(&page.url().await.unwrap()).await.unwrap();
    assert!(page.text(".page-header").await.unwrap().contains("Sent"));

    // A tracked open and click of one recipient's mail move the stats.
    let emails = expect_json(
        app.get(&format!("/emails?campaignId={id}&limit=10"), sk)
            .await,
        200,
    )
    .await;
    let first = emails["data"][0]["id"].as_str().unwrap().to_owned();
    wait_status(&app, sk, &first, &["SENT"], Duration::from_secs(15)).await;
    let eml = std::fs::read_to_string(
        app.config
            .data_dir
            .join("outbox")
            .join(format!("{first}.eml")),
    )
    .expect("in the outbox")
    .replace("=\r\n", "")
    .replace("=3D", "=");
    let path_of = |marker: &str| -> String {
        let at = eml
            .find(marker)
            .unwrap_or_else(|| panic!("no {marker} in {eml}"));
        let token: String = eml[at + marker.len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            .collect();
        format!("{marker}{token}")
    };
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let open = plain
        .get(app.url(&path_of("/t/open/")))
        .send()
        .await
        .unwrap();
    assert_eq!(open.status().as_u16(), 200);
    let click = plain
        .get(app.url(&path_of("/t/click/")))
        .send()
        .await
        .unwrap();
    assert_eq!(click.status().as_u16(), 302);
    page.goto(&page.url().await.unwrap()).await.unwrap();
    let stats = page.text("#campaign-progress").await.unwrap();
    let stats = stats.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(stats.contains("Opened 1 33.3 % of sent"), "{stats}");
    assert!(stats.contains("Clicked 1 33.3 % of sent"), "{stats}");
    let links = page.text("#links-heading + .table-wrap").await.unwrap();
    assert!(links.contains("https://example.com/sale"), "{links}");
    let recipients = page.text("#recipients table").await.unwrap();
    assert!(recipients.contains("Yes"), "{recipients}");
    page.check_page(&app.base, "dashboard-campaign-report")
        .await;

    page.click_and_wait("a", Some("Campaigns")).await.unwrap();
    let list = page.text("table").await.unwrap();
    assert!(
        list.contains("Cancelled") && list.contains("Sent"),
        "{list}"
    );
    page.check_page(&app.base, "dashboard-campaigns-list").await;
}
