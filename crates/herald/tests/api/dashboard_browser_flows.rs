//! The dashboard's longer paths in a real headless Chromium, on both engines: a CSV import
//! with its progress bar and row report, bulk actions on selected rows and on all that
//! match, Settings → Domains (records, copy buttons, Verify) and API keys (regenerated after
//! the in-page confirmation, the secret shown once), the 404 of another user's project, the
//! account page (sessions, delete after a dialog), Settings → Billing with payments on
//! (usage, a monthly limit saved, the checkout link), and the keyboard paths with a visible
//! focus ring. Every page passes `Page::check_page` (same origin, no errors, no sideways
//! scroll at 375 px; screenshots light and dark in target/screenshots).

use herald_testkit::browser::{Browser, Page};
use herald_testkit::dns_server::DnsServer;
use reqwest::Method;
use serde_json::{Value, json};

use crate::both_engines_with_browser;
use crate::browser_login::{log_in, owner_email};
use crate::dashboard::PASSWORD;
use crate::helpers::{Engine, expect_json};

both_engines_with_browser!(
    contacts_import_and_bulk_actions_in_the_browser,
    settings_domains_and_keys_in_the_browser,
    another_users_project_is_the_404_page,
    the_account_page_in_the_browser,
    the_keyboard_reaches_the_forms_and_the_navigation_with_a_focus_ring,
    the_billing_tab_in_the_browser,
);

/// Waits until the job region stopped polling (the job ended); its text.
async fn finished_job(page: &Page) -> String {
    page.wait_for(
        "document.querySelector('#job-progress') && !document.querySelector('#job-progress').hasAttribute('hx-get')",
    )
    .await
    .unwrap();
    page.text("#job-progress").await.unwrap()
}

async fn contacts_import_and_bulk_actions_in_the_browser(engine: Engine) {
    let app = engine.browser_app().await;
    let p = app.project().await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in(&page, &app, &owner_email(&app, &p).await).await;
    page.click_and_wait("nav[aria-label=Main] a", Some("Contacts"))
        .await
        .unwrap();

    // Import: the dialog, a chosen file, then the progress bar and the row report.
    page.click("button", Some("Import")).await.unwrap();
    page.wait_for("document.querySelector('dialog#import[open]')")
        .await
        .unwrap();
    page.check_page(&app.base, "dashboard-import-dialog").await;
    // The modal dims the page behind it (the dialog's ::backdrop, as the browser draws it).
    let backdrop = page
        .eval("getComputedStyle(document.querySelector('dialog#import'), '::backdrop').backgroundColor")
        .await
        .unwrap();
    assert_eq!(backdrop, json!("rgba(15, 23, 42, 0.45)"), "the backdrop");
    let csv = "email,plan,seats\nann@example.com,pro,3\nnot-an-email,free,1\nbob@example.com,team,12\ncid@example.com,free,1\n";
    page.choose_file("CSV file", "people.csv", csv)
        .await
        .unwrap();
    page.click_and_wait("dialog[open] button", Some("Import"))
        .await
        .unwrap();
    assert!(page.url().await.unwrap().contains("?import="));
    let report = finished_job(&page).await;
    assert!(report.contains("3 imported"), "{report}");
    assert!(report.contains("1 refused"), "{report}");
    assert!(
        report.contains("Line 3"),
        "the refused row's line: {report}"
    );
    assert_eq!(
        page.eval("Math.round(document.querySelector('#job-progress progress').value)")
            .await
            .unwrap(),
        json!(100),
        "the bar is full"
    );
    page.check_page(&app.base, "dashboard-import-report").await;

    // Selected rows → Unsubscribe, as a job whose progress shows.
    page.click_and_wait("a", Some("Show the updated list"))
        .await
        .unwrap();
    let list = page.text("table").await.unwrap();
    assert!(list.contains("ann@example.com"), "{list}");
    page.check_page(&app.base, "dashboard-contacts-full").await;
    for who in ["ann@example.com", "bob@example.com"] {
        page.click(&format!("input[aria-label='Select {who}']"), None)
            .await
            .unwrap();
    }
    page.click_and_wait("button", Some("Unsubscribe"))
        .await
        .unwrap();
    let done = finished_job(&page).await;
    assert!(done.contains("2 changed"), "{done}");
    page.check_page(&app.base, "dashboard-bulk-done").await;
    let ann = app.contact_by_email(&p.secret_key, "ann@example.com").await;
    assert_eq!(ann["subscribed"], false);
    let cid = app.contact_by_email(&p.secret_key, "cid@example.com").await;
    assert_eq!(cid["subscribed"], true, "an unselected row is untouched");

    // All that match → Delete: a second step says what it deletes, then the job.
    page.click_and_wait("nav[aria-label=Main] a", Some("Contacts"))
        .await
        .unwrap();
    page.click("input[name=all]", None).await.unwrap();
    page.click_and_wait("#bulk-form button", Some("Delete"))
        .await
        .unwrap();
    let question = page.body_text().await.unwrap();
    assert!(
        question.contains("Delete 3 contacts and their events? This cannot be undone."),
        "{question}"
    );
    page.check_page(&app.base, "dashboard-bulk-confirm").await;
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 3, "nothing deleted before confirming");
    page.click_and_wait("button", Some("Delete contacts"))
        .await
        .unwrap();
    let done = finished_job(&page).await;
    assert!(done.contains("3 changed"), "{done}");
    let list = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 0);
    page.goto(&app.url(&format!("/app/p/{}/contacts", p.id)))
        .await
        .unwrap();
    assert!(page.body_text().await.unwrap().contains("No contacts yet"));
}

async fn settings_domains_and_keys_in_the_browser(engine: Engine) {
    let dns = DnsServer::start().await.unwrap();
    let resolver = dns.addr();
    let app = engine
        .browser_app_with(|c| {
            c.dns_resolver = Some(resolver);
            c.dns_timeout_secs = 0.3;
        })
        .await;
    let p = app.project().await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    page.grant_clipboard(&app.base).await.unwrap();
    log_in(&page, &app, &owner_email(&app, &p).await).await;
    page.click_and_wait("nav[aria-label=Main] a", Some("Settings"))
        .await
        .unwrap();
    page.click_and_wait("nav[aria-label=Settings] a", Some("Domains"))
        .await
        .unwrap();
    page.check_page(&app.base, "dashboard-domains-empty").await;

    page.fill("Domain", "mail.acme-browser.com").await.unwrap();
    page.click_and_wait("button", Some("Add domain"))
        .await
        .unwrap();
    let shown = page.body_text().await.unwrap();
    assert!(
        shown.contains("_domainkey.mail.acme-browser.com"),
        "{shown}"
    );
    assert!(shown.contains("Not checked"), "before Verify: {shown}");
    let copies = page
        .eval("document.querySelectorAll('table button[data-copy]').length")
        .await
        .unwrap();
    assert!(copies.as_u64().unwrap_or(0) >= 6, "{copies}");
    // A copy button copies the value next to it. The system clipboard is shared with the
    // browser of this test's other engine, running at the same time: a copy of theirs may land
    // between this click and the read, so a mismatch is tried again a few times.
    let first_name = page.text("table tbody tr td code").await.unwrap();
    let mut copied = Value::Null;
    for _ in 0..5 {
        page.click("table button[data-copy]", None).await.unwrap();
        page.wait_for("document.querySelector('table button[data-copy]').innerText === 'Copied'")
            .await
            .unwrap();
        copied = page.eval("navigator.clipboard.readText()").await.unwrap();
        if copied == json!(first_name) {
            break;
        }
        // The button says Copied for 1.5 s; click again once it is back to its label.
        page.wait_for("document.querySelector('table button[data-copy]').innerText !== 'Copied'")
            .await
            .unwrap();
    }
    assert_eq!(copied, json!(first_name));
    page.check_page(&app.base, "dashboard-domains").await;

    // Publish the DKIM record only, as the table shows it; Verify then tells each apart.
    let dkim = page
        .eval("[...document.querySelectorAll('table tbody tr')].map(r => [...r.querySelectorAll('code')].map(c => c.innerText)).find(c => c[0].includes('_domainkey'))")
        .await
        .unwrap();
    let (Some(name), Some(value)) = (dkim[0].as_str(), dkim[1].as_str()) else {
        panic!("no DKIM row: {dkim}");
    };
    dns.set_txt(name, vec![value.to_owned()]);
    page.click_and_wait("button", Some("Verify")).await.unwrap();
    let statuses = page
        .eval("[...document.querySelectorAll('table tbody tr td:last-child')].map(td => td.innerText.trim())")
        .await
        .unwrap();
    let statuses: Vec<&str> = statuses
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!statuses.is_empty());
    assert!(
        statuses
            .iter()
            .all(|s| ["Found", "Missing", "Wrong value"].contains(s)),
        "a status per record after Verify: {statuses:?}"
    );
    assert!(statuses.contains(&"Found"), "the DKIM record: {statuses:?}");
    assert!(statuses.contains(&"Missing"), "the others: {statuses:?}");
    assert!(page.body_text().await.unwrap().contains("Not verified"));
    page.check_page(&app.base, "dashboard-domains-verified")
        .await;

    // Keys: the dialog asks first; the new secret shows once.
    page.click_and_wait("nav[aria-label=Settings] a", Some("API keys"))
        .await
        .unwrap();
    page.check_page(&app.base, "dashboard-keys").await;
    page.click("button", Some("Regenerate keys")).await.unwrap();
    page.wait_for("document.querySelector('dialog[open]')")
        .await
        .unwrap();
    assert!(
        page.text("dialog[open]")
            .await
            .unwrap()
            .contains("The current keys stop working at once")
    );
    page.check_page(&app.base, "dashboard-keys-confirm").await;
    page.click_and_wait("dialog[open] button", Some("Regenerate keys"))
        .await
        .unwrap();
    let secret = page.text("#new-secret").await.unwrap();
    assert!(secret.starts_with("sk_") && secret.len() == 51, "{secret}");
    assert_ne!(secret, p.secret_key);
    expect_json(app.get("/contacts", &secret).await, 200).await;
    assert_eq!(
        app.get("/contacts", &p.secret_key).await.status(),
        401,
        "the old key stopped working"
    );
    page.check_page(&app.base, "dashboard-keys-new-secret")
        .await;
    page.goto(&app.url(&format!("/app/p/{}/settings?tab=keys", p.id)))
        .await
        .unwrap();
    assert!(
        !page.body_text().await.unwrap().contains(&secret),
        "shown once"
    );
}

async fn another_users_project_is_the_404_page(engine: Engine) {
    let app = engine.browser_app().await;
    let mine = app.project().await;
    let theirs = app.project().await;
    let renamed = expect_json(
        app.call_with(
            &theirs.owner,
            Method::PATCH,
            &format!("/users/@me/projects/{}", theirs.id),
            None,
            Some(&json!({"name": "Their secret launch"})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(renamed["name"], "Their secret launch");
    app.create_contact(&theirs.secret_key, json!({"email": "vip@their.example"}))
        .await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in(&page, &app, &owner_email(&app, &mine).await).await;
    for path in ["", "contacts", "settings"] {
        page.goto(&app.url(&format!("/app/p/{}/{path}", theirs.id)))
            .await
            .unwrap();
        assert_eq!(page.text("h1").await.unwrap(), "Page not found", "{path}");
        // The page's own status is the one error the browser reports.
        let errors = page.errors();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("404 (Not Found)"), "{errors:?}");
        let html = page
            .eval("document.documentElement.outerHTML")
            .await
            .unwrap();
        let html = html.as_str().unwrap();
        for secret in [
            "Their secret launch",
            "vip@their.example",
            theirs.public_key.as_str(),
            theirs.id.as_str(),
        ] {
            assert!(!html.contains(secret), "{path} shows {secret}");
        }
    }
    page.check_page(&app.base, "dashboard-404").await;
}

async fn the_account_page_in_the_browser(engine: Engine) {
    let app = engine.browser_app().await;
    let email = "leaving@example.com";
    app.signup(email).await; // a second session, from elsewhere
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in(&page, &app, email).await;
    page.goto(&app.url("/app/account")).await.unwrap();
    let shown = page.text("#sessions").await.unwrap();
    assert!(shown.contains("This session"), "{shown}");
    page.check_page(&app.base, "dashboard-account").await;

    page.click_and_wait("button", Some("End session"))
        .await
        .unwrap();
    assert!(page.body_text().await.unwrap().contains("Session ended"));
    assert_eq!(
        page.eval("document.querySelectorAll('#sessions tbody tr').length")
            .await
            .unwrap(),
        json!(1)
    );

    // Delete: the typed address, then a dialog in the page (never window.confirm).
    page.eval("window.confirm = () => { throw new Error('window.confirm used'); }; 1")
        .await
        .unwrap();
    page.fill("Type your email address to confirm", email)
        .await
        .unwrap();
    page.click("#delete button", Some("Delete account"))
        .await
        .unwrap();
    page.wait_for("document.querySelector('dialog[open]')")
        .await
        .unwrap();
    assert!(
        page.text("dialog[open]")
            .await
            .unwrap()
            .contains("Delete the account leaving@example.com?")
    );
    page.check_page(&app.base, "dashboard-account-delete-confirm")
        .await;
    page.click_and_wait("dialog[open] button", Some("Delete account"))
        .await
        .unwrap();
    assert!(page.url().await.unwrap().contains("/app/login"));
    assert!(
        page.body_text()
            .await
            .unwrap()
            .contains("Your account is deleted.")
    );
    assert!(app.store.user_by_email(email).await.unwrap().is_none());
}

async fn the_keyboard_reaches_the_forms_and_the_navigation_with_a_focus_ring(engine: Engine) {
    let app = engine.browser_app().await;
    let p = app.project().await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();

    // The login form by Tab: Email, Password, then the button, each with a ring.
    page.goto(&app.url("/app/login")).await.unwrap();
    let mut stops = Vec::new();
    for _ in 0..3 {
        page.press("Tab").await.unwrap();
        let f = page.focused().await.unwrap();
        assert!(f.ring, "no focus ring on {f:?}");
        stops.push((f.tag, f.name));
    }
    assert_eq!(
        stops,
        [
            ("input".to_owned(), "Email".to_owned()),
            ("input".to_owned(), "Password".to_owned()),
            ("button".to_owned(), "Log in".to_owned()),
        ]
    );
    page.check_page(&app.base, "dashboard-login").await;

    // Typed and sent from the keyboard alone.
    page.press("Shift+Tab").await.unwrap();
    page.press("Shift+Tab").await.unwrap();
    page.fill("Email", &owner_email(&app, &p).await)
        .await
        .unwrap();
    page.fill("Password", PASSWORD).await.unwrap();
    page.navigating(page.press("Enter")).await.unwrap();
    assert!(page.url().await.unwrap().contains(&p.id));

    // The skip link first, then the project switcher, then the nine sections in order.
    page.press("Tab").await.unwrap();
    let skip = page.focused().await.unwrap();
    assert_eq!(skip.name, "Skip to content");
    assert!(skip.ring, "{skip:?}");
    let mut names = Vec::new();
    for _ in 0..12 {
        page.press("Tab").await.unwrap();
        let f = page.focused().await.unwrap();
        assert!(f.ring, "no focus ring on {f:?}");
        names.push(f.name);
    }
    let sections = [
        "Home",
        "Contacts",
        "Segments",
        "Templates",
        "Campaigns",
        "Workflows",
        "Activity",
        "Analytics",
        "Settings",
    ];
    let start = names
        .iter()
        .position(|n| n == "Home")
        .unwrap_or_else(|| panic!("Home is reached by Tab: {names:?}"));
    assert_eq!(names[start..start + 9], sections, "{names:?}");
    // Enter on a focused link opens it.
    for _ in 0..12 {
        if page.focused().await.unwrap().name == "Contacts" {
            break;
        }
        page.press("Shift+Tab").await.unwrap();
    }
    page.navigating(page.press("Enter")).await.unwrap();
    assert!(page.url().await.unwrap().ends_with("/contacts"));
}

/// Settings → Billing with payments on (a Stripe stand-in): the month's usage, a monthly limit
/// saved through the form and read back by the API, and Subscribe giving the provider's link.
async fn the_billing_tab_in_the_browser(engine: Engine) {
    let stripe = crate::payments::stand_in::StripeStandIn::start().await;
    let app = engine
        .browser_app_with(|c| crate::payments::use_stripe(c, &stripe.base))
        .await;
    let p = app.project().await;
    let browser = Browser::start().await.unwrap();
    let mut page = browser.new_page().await.unwrap();
    log_in(&page, &app, &owner_email(&app, &p).await).await;
    page.click_and_wait("nav[aria-label=Main] a", Some("Settings"))
        .await
        .unwrap();
    page.click_and_wait("nav[aria-label=Settings] a", Some("Billing"))
        .await
        .unwrap();
    let shown = page.body_text().await.unwrap();
    assert!(shown.contains("This month"), "{shown}");
    assert!(shown.contains("No subscription yet"), "{shown}");
    assert!(shown.contains("No invoices yet"), "{shown}");
    page.check_page(&app.base, "dashboard-billing-empty").await;

    // The first row is transactional mail: a limit typed with a separator is saved.
    page.fill("Monthly limit", "1,000").await.unwrap();
    page.click_and_wait("button", Some("Save")).await.unwrap();
    assert!(page.url().await.unwrap().contains("notice=limits"));
    let limits = expect_json(
        app.call_with(
            &p.owner,
            Method::GET,
            &format!("/users/@me/projects/{}/billing-limits", p.id),
            None,
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(limits["transactional"], 1000, "{limits}");
    assert!(
        page.body_text().await.unwrap().contains("0 of 1,000"),
        "the limit shows against the usage"
    );

    // Subscribe: the provider's checkout, as a link (the page's CSP keeps forms on Herald).
    page.click_and_wait("button", Some("Subscribe"))
        .await
        .unwrap();
    page.wait_for("document.querySelector('a[rel=noopener]') !== null")
        .await
        .unwrap();
    let href = page
        .eval("document.querySelector('.alert.success a').getAttribute('href')")
        .await
        .unwrap();
    assert!(
        href.as_str().is_some_and(|h| h.starts_with("https://")),
        "{href}"
    );
    page.check_page(&app.base, "dashboard-billing").await;
}
