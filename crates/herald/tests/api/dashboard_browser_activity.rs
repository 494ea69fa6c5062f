//! Activity and Analytics in a real headless Chromium, on both engines: a new send appears
//! on the open Activity page without a reload (server-sent events), and by polling when the
//! project's streams are all taken; the Analytics figures equal `GET /analytics/timeseries`
//! for the range the page shows, by preset and custom days (a bad day beside its field); the
//! Deliverability tab turns to warning once bounce feedback passes 5 %, with the alert on the
//! home page. Every state passes `Page::check_page` (screenshots in target/screenshots).

use herald_testkit::browser::{Browser, Page};
use serde_json::{Value, json};

use crate::both_engines_with_browser;
use crate::browser_login::{log_in_at, log_in_owner, owner_email};
use crate::dashboard_analytics::{feedback, send_many};
use crate::feedback::SECRET;
use crate::helpers::{Engine, TestApp, TestProject, expect_json};

both_engines_with_browser!(
    activity_shows_a_new_send_without_reload,
    activity_stream_survives_a_server_restart,
    activity_polls_when_the_streams_are_taken,
    analytics_in_the_browser_equals_the_api_and_warns_past_five_percent,
);

async fn world(engine: Engine) -> (TestApp, TestProject) {
    let app = engine
        .browser_app_with(|c| c.feedback_secret = Some(SECRET.into()))
        .await;
    let p = app.project().await;
    expect_json(
        app.post("/domains", &p.secret_key, &json!({"domain": "shop.test"}))
            .await,
        201,
    )
    .await;
    (app, p)
}

async fn send(app: &TestApp, p: &TestProject, to: &str) {
    let body =
        json!({"to": to, "from": "hello@shop.test", "subject": "Hello", "body": "<p>Hi</p>"});
    expect_json(app.post("/v1/send", &p.secret_key, &body).await, 200).await;
}

/// True once the activity table holds a row with both texts.
fn row_with(a: &str, b: &str) -> String {
    format!(
        "[...document.querySelectorAll('#activity-rows tr')].some(r => r.innerText.includes('{a}') && r.innerText.includes('{b}'))"
    )
}

async fn activity_shows_a_new_send_without_reload(engine: Engine) {
    let (app, p) = world(engine).await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in_owner(&page, &app, &p).await;
    page.click_and_wait("a", Some("Activity")).await.unwrap();
    assert_eq!(page.text("h1").await.unwrap(), "Activity");
    page.wait_for("document.getElementById('live-status').innerText.startsWith('Live')")
        .await
        .expect("the live stream opens");
    page.check_page(&app.base, "activity-empty").await;

    // A mark on this document: a reload would lose it.
    page.eval("window.__stillHere = 'yes'").await.unwrap();
    send(&app, &p, "live@example.com").await;
    page.wait_for(&row_with("Email sent", "live@example.com"))
        .await
        .expect("the send appears without a reload");
    assert_eq!(page.eval("window.__stillHere").await.unwrap(), "yes");
    assert_eq!(
        page.eval("document.getElementById('activity-empty') === null")
            .await
            .unwrap(),
        true,
        "the empty state left"
    );
    // A tracked event follows, newest on top, and links to its contact.
    let res = app
        .post(
            "/v1/track",
            &p.public_key,
            &json!({"event": "signup", "email": "live@example.com"}),
        )
        .await;
    assert!(res.status().is_success());
    page.wait_for("document.querySelector('#activity-rows tr').innerText.includes('Event signup')")
        .await
        .expect("the tracked event on top");
    assert_eq!(page.eval("window.__stillHere").await.unwrap(), "yes");
    each_entry_once(&page, &app, &p).await;
    page.check_page(&app.base, "activity-live").await;

    // The row's contact link opens the contact.
    page.click_and_wait("#activity-rows a", Some("live@example.com"))
        .await
        .unwrap();
    assert_eq!(page.text("h1").await.unwrap(), "live@example.com");

    // Back on Activity, the kind filter narrows the list (a plain GET form).
    page.goto(&app.url(&format!("/app/p/{}/activity", p.id)))
        .await
        .unwrap();
    page.eval("document.getElementById('f-type').value = 'event'")
        .await
        .unwrap();
    page.click_and_wait("button", Some("Apply")).await.unwrap();
    assert!(page.url().await.unwrap().contains("type=event"));
    let text = page.text("#activity-rows").await.unwrap();
    assert!(
        text.contains("Event signup") && !text.contains("Email sent"),
        "{text}"
    );
    // A bad day shows beside its field.
    page.fill("From", "").await.unwrap();
    page.eval("document.getElementById('f-to').type = 'text'")
        .await
        .unwrap();
    page.fill("To", "someday").await.unwrap();
    page.click_and_wait("button", Some("Apply")).await.unwrap();
    assert!(
        page.text("#f-to-error")
            .await
            .unwrap()
            .contains("Enter a date as YYYY-MM-DD"),
        "the message beside To"
    );
    expect_only_the_422(&mut page);
    page.check_page(&app.base, "activity-bad-date").await;
}

async fn track_event(app: &TestApp, p: &TestProject, event: &str) {
    let body = json!({"event": event, "email": "restart@example.com"});
    let res = app.post("/v1/track", &p.public_key, &body).await;
    assert!(res.status().is_success(), "{}", res.status());
}

/// The page shows each entry of the project once, as many as `GET /activity` lists.
async fn each_entry_once(page: &Page, app: &TestApp, p: &TestProject) {
    let rows = page
        .eval("document.querySelectorAll('#activity-rows tr').length")
        .await
        .unwrap();
    let api = expect_json(app.get("/activity", &p.secret_key).await, 200).await;
    assert_eq!(
        rows.as_u64(),
        api["data"].as_array().map(|d| d.len() as u64),
        "each entry once: {api}"
    );
}

/// The browser watches Activity on a real `herald serve` process (on the test app's
/// database) that is stopped and started again on its port: the entries written while it was
/// down appear after it is back, without a reload, and none twice.
async fn activity_stream_survives_a_server_restart(engine: Engine) {
    let (app, p) = world(engine).await;
    let mut node = crate::cluster::cluster_of(&app.config);
    let i = node.start("all", &[]).await.expect("a node starts");
    let base = node.nodes[i].base();
    let browser = Browser::start().await.unwrap();
    let page = browser.new_page().await.unwrap();
    log_in_at(&page, &base, &owner_email(&app, &p).await).await;
    page.goto(&format!("{base}/app/p/{}/activity", p.id))
        .await
        .unwrap();
    page.wait_for("document.getElementById('live-status').innerText.startsWith('Live')")
        .await
        .expect("the live stream opens");
    page.eval("window.__stillHere = 'yes'").await.unwrap();
    track_event(&app, &p, "before").await;
    page.wait_for(&row_with("Event before", "restart@example.com"))
        .await
        .expect("an entry arrives live");

    node.stop(i, std::time::Duration::from_secs(30))
        .await
        .expect("a graceful stop");
    track_event(&app, &p, "during").await;
    node.restart(i).await.expect("the node starts again");
    page.wait_for(&row_with("Event during", "restart@example.com"))
        .await
        .expect("the entry written while the server was down arrives");
    track_event(&app, &p, "after").await;
    page.wait_for(&row_with("Event after", "restart@example.com"))
        .await
        .expect("entries keep arriving after the restart");
    assert_eq!(page.eval("window.__stillHere").await.unwrap(), "yes");
    each_entry_once(&page, &app, &p).await;
    node.stop(i, std::time::Duration::from_secs(30))
        .await
        .expect("a graceful stop");
}

async fn activity_polls_when_the_streams_are_taken(engine: Engine) {
    let (app, p) = world(engine).await;
    // Every stream of the project is taken (by the owner's other tabs).
    let path = format!("/app/p/{}/activity/stream", p.id);
    let mut held = Vec::new();
    for _ in 0..herald_web::live::STREAMS_PER_PROJECT {
        let res = p.owner.get(app.url(&path)).send().await.unwrap();
        assert_eq!(res.status(), 200);
        held.push(res);
    }
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in_owner(&page, &app, &p).await;
    page.goto(&app.url(&format!("/app/p/{}/activity", p.id)))
        .await
        .unwrap();
    page.wait_for(
        "document.getElementById('live-status').innerText.startsWith('Checking for new entries')",
    )
    .await
    .expect("the page falls back to polling");
    // The refused stream is the only error the page saw.
    let errors = page.errors();
    assert!(
        errors
            .iter()
            .all(|e| e.contains("429") || e.contains("activity/stream")),
        "{errors:?}"
    );
    page.eval("window.__stillHere = 'yes'").await.unwrap();
    send(&app, &p, "polled@example.com").await;
    page.wait_for(&row_with("Email sent", "polled@example.com"))
        .await
        .expect("the send appears by polling");
    assert_eq!(page.eval("window.__stillHere").await.unwrap(), "yes");
    let _ = page.errors();
    page.check_page(&app.base, "activity-polling").await;
    drop(held);
}

/// The sum of `key` over the API's series for the range the page shows.
async fn api_totals(app: &TestApp, p: &TestProject, page: &Page) -> Value {
    let from = page
        .eval("document.getElementById('range').dataset.from")
        .await
        .unwrap();
    let to = page
        .eval("document.getElementById('range').dataset.to")
        .await
        .unwrap();
    let api = expect_json(
        app.get(
            &format!(
                "/analytics/timeseries?from={}&to={}",
                from.as_str().unwrap(),
                to.as_str().unwrap()
            ),
            &p.secret_key,
        )
        .await,
        200,
    )
    .await;
    let mut totals = json!({});
    for key in ["sent", "delivered", "opened", "clicked", "bounced"] {
        let sum: i64 = api["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s[key].as_i64().unwrap_or(0))
            .sum();
        totals[key] = json!(sum);
    }
    totals
}

async fn card(page: &Page, label: &str) -> String {
    page.eval(&format!(
        "document.querySelector('[data-figure=\"{label}\"]').innerText"
    ))
    .await
    .unwrap()
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

async fn analytics_in_the_browser_equals_the_api_and_warns_past_five_percent(engine: Engine) {
    let (app, p) = world(engine).await;
    let ids = send_many(&app, &p, 19).await;
    for id in &ids[..8] {
        feedback(&app, "open", id).await;
    }
    for id in &ids[..3] {
        feedback(&app, "click", id).await;
    }
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in_owner(&page, &app, &p).await;
    // The home page's card leads to Analytics.
    page.click_and_wait("a", Some("Emails sent, 30 days"))
        .await
        .unwrap();
    assert_eq!(page.text("h1").await.unwrap(), "Analytics");
    for (label, key) in [
        ("Sent", "sent"),
        ("Opens", "opened"),
        ("Clicks", "clicked"),
        ("Bounces", "bounced"),
    ] {
        let totals = api_totals(&app, &p, &page).await;
        assert_eq!(card(&page, label).await, totals[key].to_string(), "{label}");
    }
    assert_eq!(card(&page, "Open rate").await, "42.1 %", "8 of 19");
    page.check_page(&app.base, "analytics-overview").await;
    charts_open_on_their_newest_days(&page).await;

    // The 7-day preset, then a custom range of today only.
    page.click_and_wait("a", Some("7 days")).await.unwrap();
    let totals = api_totals(&app, &p, &page).await;
    assert_eq!(card(&page, "Sent").await, totals["sent"].to_string());
    let today = page
        .eval("document.getElementById('f-to').value")
        .await
        .unwrap();
    let today = today.as_str().unwrap().to_owned();
    page.eval(&format!(
        "document.getElementById('f-from').value = '{today}'"
    ))
    .await
    .unwrap();
    page.click_and_wait("button", Some("Show range"))
        .await
        .unwrap();
    assert!(page.url().await.unwrap().contains("range=custom"));
    let totals = api_totals(&app, &p, &page).await;
    assert_eq!(totals["sent"], 19);
    assert_eq!(card(&page, "Sent").await, "19");
    // A bad custom day: the message beside From, no 500.
    page.eval("document.getElementById('f-from').type = 'text'")
        .await
        .unwrap();
    page.fill("From", "31/12/2026").await.unwrap();
    page.click_and_wait("button", Some("Show range"))
        .await
        .unwrap();
    assert!(
        page.text("#f-from-error")
            .await
            .unwrap()
            .contains("Enter a date as YYYY-MM-DD")
    );
    expect_only_the_422(&mut page);
    page.check_page(&app.base, "analytics-bad-range").await;

    // Engagement and Audience render.
    page.goto(&app.url(&format!("/app/p/{}/analytics", p.id)))
        .await
        .unwrap();
    page.click_and_wait("a", Some("Engagement")).await.unwrap();
    assert!(
        page.body_text()
            .await
            .unwrap()
            .contains("https://example.org/offer")
    );
    page.check_page(&app.base, "analytics-engagement").await;
    page.click_and_wait("a", Some("Audience")).await.unwrap();
    assert!(
        page.body_text()
            .await
            .unwrap()
            .contains("Contacts over time")
    );
    page.check_page(&app.base, "analytics-audience").await;

    // Deliverability: healthy, then one bounce in 19 (5.3 %) is a warning.
    page.click_and_wait("a", Some("Deliverability"))
        .await
        .unwrap();
    let level = "document.querySelector('[data-level^=\"Bounce rate\"]').innerText";
    assert!(
        page.eval(level)
            .await
            .unwrap()
            .as_str()
            .unwrap()
            .starts_with("Healthy")
    );
    page.check_page(&app.base, "analytics-deliverability-healthy")
        .await;
    feedback(&app, "bounce", &ids[18]).await;
    page.goto(&page.url().await.unwrap()).await.unwrap();
    assert_eq!(
        page.eval(level).await.unwrap(),
        "Warning: at or above the warning threshold of 5 %"
    );
    let colour = page
        .eval("getComputedStyle(document.querySelector('[data-level^=\"Bounce rate\"]')).color")
        .await
        .unwrap();
    let warning = page
        .eval("getComputedStyle(document.documentElement).getPropertyValue('--warning').trim()")
        .await
        .unwrap();
    assert!(
        same_colour(
            colour.as_str().unwrap_or(""),
            warning.as_str().unwrap_or("")
        ),
        "{colour} is the warning colour {warning}"
    );
    assert!(
        page.text("[role=alert]")
            .await
            .unwrap()
            .contains("Bounce rate, 30 days is 5.3 %")
    );
    page.check_page(&app.base, "analytics-deliverability-warning")
        .await;
    page.click_and_wait("a", Some("Home")).await.unwrap();
    assert!(
        page.text("[role=alert]")
            .await
            .unwrap()
            .contains("Bounce rate, 30 days is 5.3 %"),
        "the alert on the home page"
    );
    page.check_page(&app.base, "home-bounce-warning").await;
}

/// The refused form answered 422, which the browser logs; nothing else went wrong.
/// At 375 px the charts are wider than their panels: loaded there, each one shows its right
/// end (the newest days), and so does one that narrows from a wide window.
async fn charts_open_on_their_newest_days(page: &Page) {
    const AT_END: &str = "[...document.querySelectorAll('.chart-scroll')].map(b => \
        b.scrollWidth > b.clientWidth && b.scrollLeft + b.clientWidth >= b.scrollWidth - 1)";
    let url = page.eval("location.href").await.unwrap();
    page.set_viewport(375, 900).await.unwrap();
    page.goto(url.as_str().unwrap()).await.unwrap();
    let ends = page.eval(AT_END).await.unwrap();
    assert_eq!(ends, json!([true, true, true]), "loaded at 375 px");
    page.set_viewport(1280, 900).await.unwrap();
    page.goto(url.as_str().unwrap()).await.unwrap();
    page.set_viewport(375, 900).await.unwrap();
    // (the resize event comes with the next frame)
    page.wait_for(&format!("{AT_END}.every(Boolean)"))
        .await
        .expect("narrowed to 375 px: every chart at its end");
    page.set_viewport(1280, 900).await.unwrap();
}

fn expect_only_the_422(page: &mut Page) {
    let errors = page.errors();
    assert!(
        errors.len() == 1 && errors[0].contains("status of 422"),
        "{errors:?}"
    );
}

/// `rgb(217, 119, 6)` and `#d97706` name the same colour.
fn same_colour(rgb: &str, hex: &str) -> bool {
    let Some(h) = hex.strip_prefix('#') else {
        return false;
    };
    let parts: Vec<u8> = (0..3)
        .filter_map(|i| u8::from_str_radix(h.get(i * 2..i * 2 + 2)?, 16).ok())
        .collect();
    rgb == format!(
        "rgb({}, {}, {})",
        parts.first().unwrap_or(&0),
        parts.get(1).unwrap_or(&0),
        parts.get(2).unwrap_or(&0)
    )
}
