//! The Activity page over HTTP on both engines: the feed with links, the kind filter and the
//! date range, cursor pages, bad input beside its field (never a 500), the live stream (new
//! entries, resume by `Last-Event-ID`, never another project's), the cap on open streams and
//! the polling fallback, and the 404 of another team's project.

use std::time::Duration;

use reqwest::{Client, Response};
use serde_json::{Value, json};

use crate::both_engines;
use crate::dashboard::{get, page, project_in_browser};
use crate::helpers::{Engine, TestApp, TestProject, expect_json};
use crate::mail_setup::{message_ids, wait_status};

both_engines!(
    activity_page_lists_entries_with_their_links,
    activity_page_filters_by_kind_and_days,
    activity_page_pages_by_cursor,
    activity_page_bad_input_is_a_message_on_the_field,
    activity_stream_sends_new_entries_and_resumes_after_the_last_event_id,
    activity_streams_are_capped_per_project_and_the_page_can_poll,
    activity_of_another_project_is_the_404,
);

const WAIT: Duration = Duration::from_secs(15);

/// A project with the reserved sender domain `shop.test` and its owner's dashboard client.
pub async fn sending_project(app: &TestApp) -> (TestProject, Client) {
    let (p, c) = project_in_browser(app).await;
    expect_json(
        app.post("/domains", &p.secret_key, &json!({"domain": "shop.test"}))
            .await,
        201,
    )
    .await;
    (p, c)
}

/// Sends one email to `to` and waits until it is SENT; returns its id.
pub async fn send_one(app: &TestApp, p: &TestProject, to: &str) -> String {
    let body =
        json!({"to": to, "from": "hello@shop.test", "subject": "Hello", "body": "<p>Hi</p>"});
    let answer = expect_json(app.post("/v1/send", &p.secret_key, &body).await, 200).await;
    let id = message_ids(&answer).pop().expect("message id");
    wait_status(app, &p.secret_key, &id, &["SENT"], WAIT).await;
    id
}

pub async fn track(app: &TestApp, p: &TestProject, event: &str, email: &str) {
    let res = app
        .post(
            "/v1/track",
            &p.public_key,
            &json!({"event": event, "email": email}),
        )
        .await;
    assert!(res.status().is_success(), "{}", res.status());
}

/// The API's feed, newest first.
async fn api_feed(app: &TestApp, p: &TestProject, query: &str) -> Vec<Value> {
    let body = expect_json(
        app.get(&format!("/activity?{query}"), &p.secret_key).await,
        200,
    )
    .await;
    body["data"].as_array().expect("data").clone()
}

/// The rows of the activity table.
fn table(html: &str) -> &str {
    html.split("id=\"activity-rows\"")
        .nth(1)
        .and_then(|s| s.split("</tbody>").next())
        .expect("the activity table")
}

fn row_count(html: &str) -> usize {
    html.matches("<tr id=\"a-").count()
}

fn today(app: &TestApp) -> String {
    let ms = herald_core::clock::Clock::now(&*app.clock);
    herald_core::time::to_datetime(ms)
        .format("%Y-%m-%d")
        .to_string()
}

async fn activity_page_lists_entries_with_their_links(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/activity", p.id);
    let (status, html) = page(get(&app, &c, &base).await).await;
    assert_eq!(status, 200);
    assert!(html.contains("Nothing has happened yet"), "{html}");
    assert!(
        html.contains("aria-current=\"page\">"),
        "Activity is the current section"
    );
    expect_json(
        app.post("/domains", &p.secret_key, &json!({"domain": "shop.test"}))
            .await,
        201,
    )
    .await;

    let message = send_one(&app, &p, "ada@example.com").await;
    track(&app, &p, "signup", "ada@example.com").await;
    let feed = api_feed(&app, &p, "").await;
    let (status, html) = page(get(&app, &c, &base).await).await;
    assert_eq!(status, 200);
    // Every entry of the API's first page is a row, in the same order.
    let ids: Vec<&str> = feed.iter().filter_map(|e| e["id"].as_str()).collect();
    let positions: Vec<usize> = ids
        .iter()
        .map(|id| {
            html.find(&format!("<tr id=\"a-{id}\""))
                .unwrap_or_else(|| panic!("row {id} missing: {html}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "newest first");
    let sent = feed
        .iter()
        .find(|e| e["type"] == "email.sent")
        .expect("email.sent in the feed");
    let contact = sent["contactId"].as_str().expect("contact");
    assert!(html.contains("Email sent"));
    assert!(html.contains("Event signup"));
    assert!(html.contains(&format!(
        "href=\"/app/p/{}/contacts/{contact}\">ada@example.com</a>",
        p.id
    )));
    assert!(
        html.contains(&format!(
            "href=\"/app/p/{}/contacts/{contact}#email-{message}\">Email</a>",
            p.id
        )),
        "the send links to its email on the contact's page: {html}"
    );
    // That anchor exists on the contact's page.
    let (_, contact_html) =
        page(get(&app, &c, &format!("/app/p/{}/contacts/{contact}", p.id)).await).await;
    assert!(contact_html.contains(&format!("id=\"email-{message}\"")));
    // The live feed starts after the newest row.
    assert!(
        html.contains(&format!("data-after=\"{}\"", ids[0])),
        "{html}"
    );
    assert!(html.contains(&format!("data-stream=\"/app/p/{}/activity/stream?\"", p.id)));
}

async fn activity_page_filters_by_kind_and_days(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = sending_project(&app).await;
    send_one(&app, &p, "bo@example.com").await;
    track(&app, &p, "purchase", "bo@example.com").await;
    let base = format!("/app/p/{}/activity", p.id);

    let (status, html) = page(get(&app, &c, &format!("{base}?type=event")).await).await;
    assert_eq!(status, 200);
    assert!(table(&html).contains("Event purchase"));
    assert!(!table(&html).contains("Email sent"), "{html}");
    assert!(html.contains("<option value=\"event\" selected>Tracked events</option>"));
    let (_, html) = page(get(&app, &c, &format!("{base}?type=email.sent")).await).await;
    assert!(table(&html).contains("Email sent"));
    assert!(!table(&html).contains("Event purchase"));
    assert_eq!(
        row_count(&html),
        api_feed(&app, &p, "type=email.sent").await.len()
    );

    // Today holds both; the days after today hold nothing.
    let day = today(&app);
    let (_, html) = page(get(&app, &c, &format!("{base}?from={day}&to={day}")).await).await;
    assert_eq!(row_count(&html), api_feed(&app, &p, "").await.len());
    let later = herald_core::time::to_datetime(
        herald_core::clock::Clock::now(&*app.clock) + 2 * 86_400_000,
    )
    .format("%Y-%m-%d")
    .to_string();
    let (status, html) = page(get(&app, &c, &format!("{base}?from={later}")).await).await;
    assert_eq!(status, 200);
    assert_eq!(row_count(&html), 0);
    assert!(html.contains("Nothing matches these filters"));
    // A range ending before today is not live.
    let (_, html) = page(get(&app, &c, &format!("{base}?to=2020-01-01")).await).await;
    assert!(
        !html.contains("data-stream="),
        "a past range does not stream"
    );
    assert_eq!(row_count(&html), 0);
}

async fn activity_page_pages_by_cursor(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    for i in 0..56 {
        track(&app, &p, &format!("step-{i}"), "pager@example.com").await;
    }
    let total = 56 + api_feed(&app, &p, "type=contact.subscribed").await.len();
    let base = format!("/app/p/{}/activity", p.id);
    let (_, first) = page(get(&app, &c, &base).await).await;
    assert_eq!(row_count(&first), 50);
    let next = first
        .split("href=\"")
        .filter_map(|s| s.split('"').next())
        .find(|h| h.contains("after=") && h.contains("back=first"))
        .expect("a Next link")
        .replace("&#38;", "&");
    let (status, second) = page(get(&app, &c, &next).await).await;
    assert_eq!(status, 200);
    assert_eq!(row_count(&second), total - 50);
    assert!(second.contains("Page 2"));
    assert!(second.contains(">Previous</a>"));
    assert!(
        !second.contains("data-stream="),
        "a later page does not stream"
    );
    // No row is on both pages.
    for id in first
        .split("<tr id=\"a-")
        .skip(1)
        .filter_map(|s| s.split('"').next())
    {
        assert!(!second.contains(id), "{id} on both pages");
    }
}

async fn activity_page_bad_input_is_a_message_on_the_field(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    let base = format!("/app/p/{}/activity", p.id);
    for (query, field, message) in [
        ("from=yesterday", "from", "Enter a date as YYYY-MM-DD"),
        ("to=2026-02-30", "to", "Enter a date as YYYY-MM-DD"),
        (
            "from=2026-11-10&to=2026-11-01",
            "to",
            "The end date is before the start date.",
        ),
    ] {
        let (status, html) = page(get(&app, &c, &format!("{base}?{query}")).await).await;
        assert_eq!(status, 422, "{query}");
        assert!(
            html.contains(&format!("id=\"f-{field}\"")),
            "{query}: the field is there"
        );
        let input = html
            .split(&format!("<input id=\"f-{field}\""))
            .nth(1)
            .and_then(|s| s.split('>').next())
            .expect("the input");
        assert!(input.contains("aria-invalid=\"true\""), "{query}: {input}");
        assert!(input.contains(&format!("aria-describedby=\"f-{field}-error\"")));
        assert!(
            html.contains(&format!(
                "<p class=\"field-error\" id=\"f-{field}-error\">{message}"
            )),
            "{query}: {html}"
        );
    }
    // The typed value is kept (escaped).
    let (_, html) = page(get(&app, &c, &format!("{base}?from=%3Cb%3E")).await).await;
    assert!(
        html.contains("value=\"&#60;b&#62;\"") || html.contains("value=\"&lt;b&gt;\""),
        "{html}"
    );
    // A cursor that is not this project's: a message, not a 500.
    let (status, html) = page(get(&app, &c, &format!("{base}?after=not-a-cursor")).await).await;
    assert_eq!(status, 422);
    assert!(html.contains("This page link is out of date"), "{html}");
    // A kind that does not exist is simply empty; an absurdly long one is refused politely.
    let (status, _) = page(get(&app, &c, &format!("{base}?type=nothing.here")).await).await;
    assert_eq!(status, 200);
    let long = "x".repeat(150);
    let (status, html) = page(get(&app, &c, &format!("{base}?type={long}")).await).await;
    assert_eq!(status, 422);
    assert!(html.contains("type is at most 100 characters"));
    // The polling fallback needs an entry id.
    let res = get(&app, &c, &format!("{base}/live?after=nope")).await;
    assert_eq!(res.status(), 422);
}

/// Reads a server-sent event stream until `done` holds for what arrived (or panics).
async fn read_until(res: &mut Response, done: impl Fn(&str) -> bool) -> String {
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done(&text) {
        let chunk = tokio::time::timeout_at(deadline, res.chunk())
            .await
            .unwrap_or_else(|_| panic!("the stream did not deliver in time; got: {text}"))
            .expect("stream chunk")
            .expect("the stream ended early");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    text
}

/// No entry id is sent twice on one stream (the page also drops rows it already shows).
fn assert_each_entry_once(text: &str) {
    let ids: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{text}");
}

async fn open_stream(app: &TestApp, c: &Client, path: &str, last: Option<&str>) -> Response {
    let mut req = c.get(app.url(path)).header("accept", "text/event-stream");
    if let Some(id) = last {
        req = req.header("last-event-id", id);
    }
    req.send().await.expect("stream")
}

async fn activity_stream_sends_new_entries_and_resumes_after_the_last_event_id(engine: Engine) {
    let app = engine.app().await;
    let (a, ca) = project_in_browser(&app).await;
    let (b, _) = project_in_browser(&app).await;
    track(&app, &a, "before", "first@example.com").await;
    let newest = api_feed(&app, &a, "").await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let stream_path = format!("/app/p/{}/activity/stream?after={newest}", a.id);
    let mut res = open_stream(&app, &ca, &stream_path, None).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    read_until(&mut res, |t| t.contains("retry:")).await;

    // Another project's entry first, then ours: only ours arrives.
    track(&app, &b, "secret-b", "bee@example.com").await;
    track(&app, &a, "arrived", "second@example.com").await;
    let text = read_until(&mut res, |t| t.contains("Event arrived")).await;
    assert!(text.contains("event: entry"), "{text}");
    assert!(
        !text.contains("secret-b") && !text.contains("bee@example.com"),
        "{text}"
    );
    assert_each_entry_once(&text);
    let arrived = api_feed(&app, &a, "type=event").await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(text.contains(&format!("id: {arrived}")), "{text}");
    drop(res);

    // Reconnecting (a server restart) with Last-Event-ID sends what came after it, once.
    track(&app, &a, "while-away", "third@example.com").await;
    let mut res = open_stream(&app, &ca, &stream_path, Some(&arrived)).await;
    assert_eq!(res.status(), 200);
    let text = read_until(&mut res, |t| t.contains("Event while-away")).await;
    assert_each_entry_once(&text);
    // A kind filter holds on the stream too.
    let mut filtered = open_stream(
        &app,
        &ca,
        &format!(
            "/app/p/{}/activity/stream?type=email.sent&after={newest}",
            a.id
        ),
        None,
    )
    .await;
    let text = read_until(&mut filtered, |t| t.contains("retry:")).await;
    track(&app, &a, "not-a-send", "fourth@example.com").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let more = tokio::time::timeout(Duration::from_millis(500), filtered.chunk()).await;
    let later = match more {
        Ok(Ok(Some(c))) => String::from_utf8_lossy(&c).into_owned(),
        _ => String::new(),
    };
    assert!(
        !text.contains("Event") && !later.contains("Event"),
        "{text}{later}"
    );
}

async fn activity_streams_are_capped_per_project_and_the_page_can_poll(engine: Engine) {
    let app = engine.app().await;
    let (p, c) = project_in_browser(&app).await;
    track(&app, &p, "start", "cap@example.com").await;
    let newest = api_feed(&app, &p, "").await[0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let path = format!("/app/p/{}/activity/stream?after={newest}", p.id);
    let cap = herald_web::live::STREAMS_PER_PROJECT;
    let mut open = Vec::new();
    for _ in 0..cap {
        let mut res = open_stream(&app, &c, &path, None).await;
        assert_eq!(res.status(), 200);
        read_until(&mut res, |t| t.contains("retry:")).await;
        open.push(res);
    }
    let refused = open_stream(&app, &c, &path, None).await;
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    assert!(
        refused
            .text()
            .await
            .unwrap_or_default()
            .contains("too many live activity streams")
    );
    // Another project is not affected by this one's streams.
    let (q, cq) = project_in_browser(&app).await;
    let other = open_stream(&app, &cq, &format!("/app/p/{}/activity/stream", q.id), None).await;
    assert_eq!(other.status(), 200);
    // The polling fallback answers the rows after the page's newest.
    track(&app, &p, "polled", "cap@example.com").await;
    let res = get(
        &app,
        &c,
        &format!("/app/p/{}/activity/live?after={newest}", p.id),
    )
    .await;
    assert_eq!(res.status(), 200);
    let rows = res.text().await.unwrap_or_default();
    assert!(rows.contains("Event polled"), "{rows}");
    assert!(!rows.contains("Event start"), "{rows}");
    // A closed stream frees its place.
    drop(open.pop());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let res = open_stream(&app, &c, &path, None).await;
        if res.status() == 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "a closed stream never freed its place"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn activity_of_another_project_is_the_404(engine: Engine) {
    let app = engine.app().await;
    let (a, _) = project_in_browser(&app).await;
    let (b, cb) = project_in_browser(&app).await;
    track(&app, &a, "only-a", "only-a-contact@example.com").await;
    for path in [
        format!("/app/p/{}/activity", a.id),
        format!("/app/p/{}/activity/stream", a.id),
        format!(
            "/app/p/{}/activity/live?after=00000000-0000-7000-8000-000000000000",
            a.id
        ),
    ] {
        let res = get(&app, &cb, &path).await;
        assert_eq!(res.status(), 404, "{path}");
        let body = res.text().await.unwrap_or_default();
        assert!(!body.contains("only-a"), "{path}");
    }
    // B's own page never shows A's entries.
    let (_, html) = page(get(&app, &cb, &format!("/app/p/{}/activity", b.id)).await).await;
    assert!(!html.contains("only-a"));
}
