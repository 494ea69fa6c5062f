//! The Analytics page over HTTP on both engines: its figures equal `GET /analytics/*` for the
//! same range (7, 30, 90 days and custom), the deliverability state turns to warning and then
//! critical as bounce feedback arrives (with the alert on the home page and in Analytics),
//! bad custom days beside their field (never a 500), every tab empty, tenant isolation, and
//! the home page's cards linking here.

use std::time::Duration;

use reqwest::Client;
use serde_json::{Value, json};

use crate::both_engines;
use crate::dashboard::{get, page, project_in_browser};
use crate::dashboard_activity::track;
use crate::feedback::{SECRET, notify};
use crate::helpers::{Engine, TestApp, TestProject, expect_json};
use crate::mail_setup::{message_ids, wait_status};

both_engines!(
    analytics_overview_equals_the_api_for_every_range,
    deliverability_turns_to_warning_then_critical_as_bounces_arrive,
    analytics_bad_custom_days_are_messages_on_their_field,
    analytics_tabs_render_empty_and_show_only_their_project,
    engagement_lists_what_the_api_ranks,
);

const WAIT: Duration = Duration::from_secs(15);

/// An app that takes signed feedback, and a project sending from `shop.test`.
pub async fn feedback_world(engine: Engine) -> (TestApp, TestProject, Client) {
    let app = engine
        .app_with(|c| c.feedback_secret = Some(SECRET.into()))
        .await;
    let (p, c) = project_in_browser(&app).await;
    expect_json(
        app.post("/domains", &p.secret_key, &json!({"domain": "shop.test"}))
            .await,
        201,
    )
    .await;
    (app, p, c)
}

/// Sends one email to each of `n` new addresses and waits until all are SENT.
pub async fn send_many(app: &TestApp, p: &TestProject, n: usize) -> Vec<String> {
    let to: Vec<String> = (0..n).map(|i| format!("r{i}@example.com")).collect();
    let body = json!({"to": to, "from": "hello@shop.test", "subject": "News", "body": "<p>Hi</p>"});
    let answer = expect_json(app.post("/v1/send", &p.secret_key, &body).await, 200).await;
    let ids = message_ids(&answer);
    assert_eq!(ids.len(), n);
    for id in &ids {
        wait_status(app, &p.secret_key, id, &["SENT"], WAIT).await;
    }
    ids
}

pub async fn feedback(app: &TestApp, kind: &str, message: &str) {
    let mut body = json!({"type": kind, "messageId": message});
    if kind == "click" {
        body["url"] = json!("https://example.org/offer");
    }
    if kind == "bounce" {
        body["diagnostic"] = json!("smtp; 550 5.1.1 mailbox unknown");
    }
    expect_json(notify(app, &body).await, 200).await;
}

/// The value of an attribute of the first element carrying `marker`.
fn attr(html: &str, marker: &str, name: &str) -> String {
    let tag = html
        .split(marker)
        .nth(1)
        .and_then(|s| s.split('>').next())
        .unwrap_or_else(|| panic!("{marker} missing: {html}"));
    let full = format!("{marker}{tag}");
    full.split(&format!("{name}=\""))
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("{name} missing in {full}"))
        .to_owned()
}

/// The figure of the Overview card `label`.
fn figure(html: &str, label: &str) -> String {
    html.split(&format!("data-figure=\"{label}\">"))
        .nth(1)
        .and_then(|s| s.split('<').next())
        .unwrap_or_else(|| panic!("card {label} missing: {html}"))
        .to_owned()
}

fn count(n: i64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn pct(part: i64, whole: i64) -> String {
    if whole == 0 {
        "—".to_owned()
    } else {
        format!("{:.1} %", part as f64 * 100.0 / whole as f64)
    }
}

fn sum(series: &[Value], key: &str) -> i64 {
    series.iter().map(|p| p[key].as_i64().unwrap_or(0)).sum()
}

async fn analytics_overview_equals_the_api_for_every_range(engine: Engine) {
    let (app, p, c) = feedback_world(engine).await;
    let ids = send_many(&app, &p, 12).await;
    for id in &ids[..5] {
        feedback(&app, "open", id).await;
    }
    for id in &ids[4..7] {
        feedback(&app, "click", id).await;
    }
    feedback(&app, "bounce", &ids[11]).await;
    let base = format!("/app/p/{}/analytics", p.id);
    let today = herald_core::time::to_datetime(herald_core::clock::Clock::now(&*app.clock))
        .format("%Y-%m-%d")
        .to_string();
    for query in [
        "".to_owned(),
        "range=7".to_owned(),
        "range=30".to_owned(),
        "range=90".to_owned(),
        format!("range=custom&from={today}&to={today}"),
        "range=custom&from=2026-01-01&to=2026-01-31".to_owned(),
    ] {
        let (status, html) = page(get(&app, &c, &format!("{base}?{query}")).await).await;
        assert_eq!(status, 200, "{query}: {html}");
        let from = attr(&html, "id=\"range\"", "data-from");
        let to = attr(&html, "id=\"range\"", "data-to");
        let api = expect_json(
            app.get(
                &format!("/analytics/timeseries?from={from}&to={to}&interval=day"),
                &p.secret_key,
            )
            .await,
            200,
        )
        .await;
        let series = api["series"].as_array().expect("series").clone();
        let (sent, opened, clicked) = (
            sum(&series, "sent"),
            sum(&series, "opened"),
            sum(&series, "clicked"),
        );
        assert_eq!(figure(&html, "Sent"), count(sent), "{query}");
        assert_eq!(figure(&html, "Delivered"), count(sum(&series, "delivered")));
        assert_eq!(figure(&html, "Opens"), count(opened), "{query}");
        assert_eq!(figure(&html, "Clicks"), count(clicked), "{query}");
        assert_eq!(figure(&html, "Bounces"), count(sum(&series, "bounced")));
        assert_eq!(figure(&html, "Open rate"), pct(opened, sent), "{query}");
        assert_eq!(figure(&html, "Click rate"), pct(clicked, sent), "{query}");
        // Every day of the series is a row of the table, with the same figures.
        assert_eq!(
            html.matches("<tr data-at=").count(),
            series.len(),
            "{query}"
        );
        for point in &series {
            let at = point["at"].as_str().expect("at");
            let row = html
                .split(&format!("<tr data-at=\"{at}\">"))
                .nth(1)
                .and_then(|s| s.split("</tr>").next())
                .unwrap_or_else(|| panic!("day {at} missing"));
            let cells: Vec<&str> = row
                .split("<td class=\"num\">")
                .skip(1)
                .filter_map(|s| s.split('<').next())
                .collect();
            let want: Vec<String> = ["sent", "delivered", "opened", "clicked", "bounced"]
                .iter()
                .map(|k| count(point[k].as_i64().unwrap_or(0)))
                .collect();
            assert_eq!(cells, want, "{query} {at}");
        }
        if query.contains("2026-01-01") {
            assert_eq!(sent, 0, "a past month holds nothing");
        } else {
            assert_eq!(sent, 12, "{query}");
            assert_eq!(opened, 7, "{query}: five opens, and two clicks without one");
            assert_eq!(clicked, 3, "{query}");
        }
    }
    // The range presets keep the tab; the tabs keep the range.
    let (_, html) = page(get(&app, &c, &format!("{base}?tab=deliverability&range=7")).await).await;
    assert!(html.contains(&format!("href=\"{base}?tab=deliverability&#38;range=90\"")));
    assert!(html.contains(&format!("href=\"{base}?tab=overview&#38;range=7\"")));
}

/// The bounce rate's words on the Deliverability tab.
fn bounce_words(html: &str) -> String {
    html.split("data-level=\"Bounce rate, this range\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .unwrap_or_else(|| panic!("no bounce level: {html}"))
        .to_owned()
}

async fn deliverability_turns_to_warning_then_critical_as_bounces_arrive(engine: Engine) {
    let (app, p, c) = feedback_world(engine).await;
    let ids = send_many(&app, &p, 19).await;
    let tab = format!("/app/p/{}/analytics?tab=deliverability&range=30", p.id);
    let home = format!("/app/p/{}/", p.id);
    let (status, html) = page(get(&app, &c, &tab).await).await;
    assert_eq!(status, 200);
    assert_eq!(
        bounce_words(&html),
        "Healthy: under the warning threshold of 5 %"
    );
    assert!(!html.contains("role=\"alert\""), "no alert while healthy");
    assert!(html.contains("<td class=\"num\">5 %</td><td class=\"num\">10 %</td>"));
    assert!(html.contains("<td class=\"num\">0.075 %</td><td class=\"num\">0.15 %</td>"));

    // One bounce in 19: 5.3 %, past the warning threshold of 5 %.
    feedback(&app, "bounce", &ids[0]).await;
    let (_, html) = page(get(&app, &c, &tab).await).await;
    assert_eq!(
        bounce_words(&html),
        "Warning: at or above the warning threshold of 5 %"
    );
    assert!(
        html.contains("stat-trend warn"),
        "shown in the warning colour"
    );
    assert!(html.contains("<span class=\"badge warning\">Warning</span>"));
    assert!(html.contains("1 bounced of 19 sent"));
    assert!(
        html.contains("class=\"alert warning\" role=\"alert\""),
        "{html}"
    );
    assert!(html.contains("Bounce rate, 30 days is 5.3 %"));
    let (_, home_html) = page(get(&app, &c, &home).await).await;
    assert!(home_html.contains("class=\"alert warning\" role=\"alert\""));
    assert!(home_html.contains("Bounce rate, 30 days is 5.3 % (1 bounced of 19 sent)"));
    assert!(home_html.contains("Warning: at or above the warning threshold of 5 %"));
    // The API's security report counts the same messages.
    let report = expect_json(
        p.owner
            .get(app.url(&format!("/projects/{}/security", p.id)))
            .send()
            .await
            .expect("security"),
        200,
    )
    .await;
    assert_eq!(report["last7Days"]["sent"], 19);
    assert_eq!(report["last7Days"]["bounced"], 1);

    // A second: 10.5 %, critical.
    feedback(&app, "bounce", &ids[1]).await;
    let (_, html) = page(get(&app, &c, &tab).await).await;
    assert_eq!(
        bounce_words(&html),
        "Critical: at or above the critical threshold of 10 %"
    );
    assert!(html.contains("<span class=\"badge danger\">Critical</span>"));
    assert!(html.contains("class=\"alert danger\" role=\"alert\""));
    let (_, home_html) = page(get(&app, &c, &home).await).await;
    assert!(home_html.contains("class=\"alert danger\" role=\"alert\""));
}

async fn analytics_bad_custom_days_are_messages_on_their_field(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/analytics", p.id);
    for (query, field, message) in [
        (
            "range=custom&from=nope",
            "from",
            "Enter a date as YYYY-MM-DD",
        ),
        (
            "range=custom&from=",
            "from",
            "Enter the first day of the range.",
        ),
        (
            "range=custom&from=2026-01-01&to=31.01.2026",
            "to",
            "Enter a date as YYYY-MM-DD",
        ),
        (
            "tab=audience&range=custom&from=2026-03-10&to=2026-03-01",
            "to",
            "The end date is before the start date.",
        ),
        (
            "tab=deliverability&range=custom&from=1971-01-01&to=2026-01-01",
            "from",
            "the range has too many buckets (at most 2000)",
        ),
    ] {
        let (status, html) = page(get(&app, &c, &format!("{base}?{query}")).await).await;
        assert_eq!(status, 422, "{query}: {html}");
        let input = html
            .split(&format!("<input id=\"f-{field}\""))
            .nth(1)
            .and_then(|s| s.split('>').next())
            .unwrap_or_else(|| panic!("{query}: no {field} input"));
        assert!(input.contains("aria-invalid=\"true\""), "{query}: {input}");
        assert!(
            html.contains(&format!(
                "<p class=\"field-error\" id=\"f-{field}-error\">{message}"
            )),
            "{query}: {html}"
        );
    }
    // An unknown tab or range falls back to Overview over 30 days.
    let (status, html) = page(get(&app, &c, &format!("{base}?tab=nope&range=12")).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("Last 30 days"));
    assert!(html.contains("aria-current=\"page\">Overview</a>"));
}

async fn analytics_tabs_render_empty_and_show_only_their_project(engine: Engine) {
    let (app, b, _) = feedback_world(engine).await;
    let (a, ca) = project_in_browser(&app).await;
    // B sends and tracks; A has nothing.
    send_many(&app, &b, 3).await;
    track(&app, &b, "b-only-event", "b@example.com").await;
    let base = format!("/app/p/{}/analytics", a.id);
    for (tab, empty) in [
        ("overview", "data-figure=\"Sent\">0<"),
        ("engagement", "No event tracked yet."),
        ("deliverability", "0 bounced of 0 sent"),
        ("audience", "<p class=\"stat-value\">0</p>"),
    ] {
        let (status, html) = page(get(&app, &ca, &format!("{base}?tab={tab}")).await).await;
        assert_eq!(status, 200, "{tab}");
        assert!(html.contains(empty), "{tab}: {html}");
        assert!(!html.contains("b-only-event"), "{tab}");
        assert!(html.contains(&format!("aria-current=\"page\">{}", title(tab))));
    }
    // A's user cannot open B's analytics.
    let res = get(&app, &ca, &format!("/app/p/{}/analytics", b.id)).await;
    assert_eq!(res.status(), 404);
    // The home page's cards link to their tabs.
    let (_, home) = page(get(&app, &ca, &format!("/app/p/{}/", a.id)).await).await;
    for href in [
        "analytics?tab=overview&#38;range=30\">Emails sent, 30 days",
        "analytics?tab=deliverability&#38;range=30\">Bounce rate, 30 days",
        "analytics?tab=audience&#38;range=30\">Contacts",
    ] {
        assert!(home.contains(href), "{href}: {home}");
    }
}

fn title(tab: &str) -> String {
    let mut c = tab.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

async fn engagement_lists_what_the_api_ranks(engine: Engine) {
    let (app, p, c) = feedback_world(engine).await;
    let ids = send_many(&app, &p, 2).await;
    feedback(&app, "click", &ids[0]).await;
    feedback(&app, "click", &ids[1]).await;
    for (event, n) in [("login", 3), ("purchase", 1)] {
        for i in 0..n {
            track(&app, &p, event, &format!("e{i}@example.com")).await;
        }
    }
    let (status, html) = page(
        get(
            &app,
            &c,
            &format!("/app/p/{}/analytics?tab=engagement", p.id),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    let api = expect_json(app.get("/analytics/top-events", &p.secret_key).await, 200).await;
    let events = api["events"].as_array().expect("events");
    assert_eq!(events.len(), 2);
    let section = html
        .split("id=\"top-events-heading\"")
        .nth(1)
        .expect("top events");
    let mut at = 0;
    for e in events {
        let row = format!(
            "{}</a></td><td class=\"num\">{}</td>",
            e["name"].as_str().expect("name"),
            e["count"]
        );
        let found = section[at..]
            .find(&row)
            .unwrap_or_else(|| panic!("{row} missing or out of order: {section}"));
        at += found + row.len();
    }
    assert!(html.contains("https://example.org/offer</td><td class=\"num\">2</td>"));
    assert!(html.contains("No campaign has been opened yet."));
    // The link counts are kept as events are written and deleted (migration 0035): deleting
    // a contact takes its click along, and a reset takes every click.
    let r0 = app.contact_by_email(&p.secret_key, "r0@example.com").await;
    let gone = app
        .delete(
            &format!("/contacts/{}", r0["id"].as_str().expect("id")),
            &p.secret_key,
        )
        .await;
    assert!(gone.status().is_success(), "{}", gone.status());
    let engagement = format!("/app/p/{}/analytics?tab=engagement", p.id);
    let (_, html) = page(get(&app, &c, &engagement).await).await;
    assert!(
        html.contains("https://example.org/offer</td><td class=\"num\">1</td>"),
        "one click after the delete: {html}"
    );
    // A click on another message counts again (a repeated notification of one click does not).
    let body = json!({"to": "r9@example.com", "from": "hello@shop.test", "subject": "News", "body": "<p>Hi</p>"});
    let more =
        message_ids(&expect_json(app.post("/v1/send", &p.secret_key, &body).await, 200).await);
    wait_status(&app, &p.secret_key, &more[0], &["SENT"], WAIT).await;
    feedback(&app, "click", &more[0]).await;
    let (_, html) = page(get(&app, &c, &engagement).await).await;
    assert!(html.contains("https://example.org/offer</td><td class=\"num\">2</td>"));
    app.store
        .reset_project(p.id.parse().expect("project id"))
        .await
        .expect("reset");
    let (_, html) = page(get(&app, &c, &engagement).await).await;
    assert!(!html.contains("https://example.org/offer"), "{html}");
}
