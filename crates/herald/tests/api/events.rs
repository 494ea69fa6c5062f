//! The Events resource: `GET /events` (keyset pages, filters), `/events/stats` (a `days`
//! window on the server's Clock), `/events/names`, `/events/:name/usage`, `DELETE
//! /events/:name`, and tenant isolation of all of them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};
use crate::track::tracked;

both_engines!(
    events_are_listed_newest_first_by_cursor_and_filtered,
    stats_count_each_name_within_the_window,
    names_and_usage_list_tracked_names_only,
    deleting_a_name_removes_only_its_tracked_events,
    another_project_never_sees_or_deletes_these_events,
);

/// Every page of `path` (which has no query yet) with `limit`; the ids, and the pages' count.
async fn all_pages(app: &TestApp, key: &str, path: &str, limit: u32) -> (Vec<Value>, usize) {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut out = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}{sep}limit={limit}&cursor={c}"),
            None => format!("{path}{sep}limit={limit}"),
        };
        let page = expect_json(app.get(&url, key).await, 200).await;
        pages += 1;
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= limit as usize);
        out.extend(data.iter().cloned());
        assert_eq!(page["hasMore"], page["cursor"].is_string(), "{page}");
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (out, pages),
        }
    }
}

async fn events_are_listed_newest_first_by_cursor_and_filtered(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let mut ids = Vec::new();
    let mut contacts = Vec::new();
    for i in 0..7 {
        let name = if i % 2 == 0 { "page-view" } else { "purchase" };
        let email = format!("u{}@example.com", i % 3);
        let got = tracked(
            &app,
            &p.public_key,
            json!({"event": name, "email": email, "data": {"i": i}}),
        )
        .await;
        ids.push(got["event"].as_str().unwrap().to_owned());
        contacts.push(got["contact"].as_str().unwrap().to_owned());
    }
    // A subscription flip records a system event: never listed here.
    tracked(
        &app,
        &p.public_key,
        json!({"event": "opt-out", "email": "u0@example.com", "subscribed": false}),
    )
    .await;

    let (all, pages) = all_pages(&app, &p.secret_key, "/events", 3).await;
    assert_eq!(pages, 3);
    let names: Vec<&str> = all.iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(names.len(), 8);
    assert_eq!(names[0], "opt-out");
    assert!(
        !names.iter().any(|n| n.starts_with("contact.")),
        "{names:?}"
    );
    let listed: Vec<&str> = all[1..].iter().filter_map(|e| e["id"].as_str()).collect();
    let mut newest_first: Vec<&str> = ids.iter().map(String::as_str).collect();
    newest_first.reverse();
    assert_eq!(listed, newest_first);
    let e = &all[1];
    assert_eq!(e["name"], "page-view");
    assert_eq!(e["email"], "u0@example.com");
    assert_eq!(e["contactId"], contacts[6].as_str());
    assert_eq!(e["data"], json!({"i": 6}));
    assert_eq!(e["tracked"], true);
    assert!(e["createdAt"].is_string());

    let (purchases, _) = all_pages(&app, &p.secret_key, "/events?name=purchase", 2).await;
    assert_eq!(purchases.len(), 3);
    assert!(purchases.iter().all(|e| e["name"] == "purchase"));
    let c1 = &contacts[1];
    let (of_c1, _) = all_pages(&app, &p.secret_key, &format!("/events?contactId={c1}"), 10).await;
    let of_c1: Vec<i64> = of_c1
        .iter()
        .filter_map(|e| e["data"]["i"].as_i64())
        .collect();
    assert_eq!(of_c1, [4, 1]);
    let (both, _) = all_pages(
        &app,
        &p.secret_key,
        &format!("/events?contactId={c1}&name=purchase"),
        10,
    )
    .await;
    assert_eq!(both.len(), 1);

    // Bad parameters are 422 on their field.
    for (q, field) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("cursor=nope", "cursor"),
        ("contactId=nope", "contactId"),
    ] {
        let err = expect_error(
            app.get(&format!("/events?{q}"), &p.secret_key).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&err), [field], "{q}");
    }
}

async fn stats_count_each_name_within_the_window(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let pk = &p.public_key;
    for email in ["a@example.com", "b@example.com", "a@example.com"] {
        tracked(&app, pk, json!({"event": "login", "email": email})).await;
    }
    tracked(
        &app,
        pk,
        json!({"event": "export", "email": "a@example.com"}),
    )
    .await;
    // Ten days later (the server's Clock), more of them.
    app.clock.advance(Duration::from_secs(10 * 86_400));
    let last = tracked(
        &app,
        pk,
        json!({"event": "login", "email": "c@example.com"}),
    )
    .await;
    tracked(
        &app,
        pk,
        json!({"event": "invite", "email": "c@example.com"}),
    )
    .await;

    let stats = expect_json(app.get("/events/stats", &p.secret_key).await, 200).await;
    assert_eq!(stats["days"], 30);
    assert_eq!(stats["totalEvents"], 6);
    let rows = stats["events"].as_array().unwrap();
    assert_eq!(rows[0]["name"], "login", "most frequent first: {stats}");
    assert_eq!(rows[0]["count"], 4);
    assert_eq!(rows[0]["uniqueContacts"], 3);
    assert_eq!(rows[0]["lastSeen"], last["timestamp"]);
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["login", "export", "invite"]);

    let recent = expect_json(app.get("/events/stats?days=5", &p.secret_key).await, 200).await;
    assert_eq!(recent["totalEvents"], 2, "{recent}");
    let rows = recent["events"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r["count"] == 1 && r["uniqueContacts"] == 1)
    );
    for bad in ["days=0", "days=366", "days=x"] {
        let err = expect_error(
            app.get(&format!("/events/stats?{bad}"), &p.secret_key)
                .await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&err), ["days"]);
    }
}

async fn names_and_usage_list_tracked_names_only(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let empty = expect_json(app.get("/events/names", &p.secret_key).await, 200).await;
    assert_eq!(empty, json!({"names": []}));
    for (event, email) in [
        ("signup", "a@example.com"),
        ("Checkout Started", "a@example.com"),
        ("signup", "b@example.com"),
    ] {
        tracked(&app, &p.public_key, json!({"event": event, "email": email})).await;
    }
    tracked(
        &app,
        &p.public_key,
        json!({"event": "signup", "email": "a@example.com", "subscribed": false}),
    )
    .await;
    let names = expect_json(app.get("/events/names", &p.secret_key).await, 200).await;
    assert_eq!(names, json!({"names": ["Checkout Started", "signup"]}));

    let usage = expect_json(app.get("/events/signup/usage", &p.secret_key).await, 200).await;
    assert_eq!(
        usage,
        json!({"event": "signup", "count": 3, "workflows": [], "segments": [], "campaigns": []})
    );
    let usage = expect_json(
        app.get("/events/Checkout%20Started/usage", &p.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(usage["event"], "Checkout Started");
    assert_eq!(usage["count"], 1);
    let usage = expect_json(app.get("/events/never/usage", &p.secret_key).await, 200).await;
    assert_eq!(usage["count"], 0);
}

async fn deleting_a_name_removes_only_its_tracked_events(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let pk = &p.public_key;
    for i in 0..5 {
        tracked(
            &app,
            pk,
            json!({"event": "temp", "email": format!("d{i}@example.com")}),
        )
        .await;
    }
    let keep = tracked(
        &app,
        pk,
        json!({"event": "keep", "email": "d0@example.com"}),
    )
    .await;
    tracked(
        &app,
        pk,
        json!({"event": "temp", "email": "d0@example.com", "subscribed": false}),
    )
    .await;

    // System names are refused; the public key cannot delete.
    for name in ["email.sent", "contact.unsubscribed", "segment.vip.exit"] {
        let err = expect_error(
            app.delete(&format!("/events/{name}"), &p.secret_key).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(
            err["error"]["errors"][0]["code"], "reserved_event",
            "{name}"
        );
    }
    expect_error(app.delete("/events/temp", pk).await, 401, "INVALID_API_KEY").await;

    let gone = expect_json(app.delete("/events/temp", &p.secret_key).await, 200).await;
    assert_eq!(gone, json!({"event": "temp", "deleted": 6}));
    let again = expect_json(app.delete("/events/temp", &p.secret_key).await, 200).await;
    assert_eq!(again["deleted"], 0);
    let names = expect_json(app.get("/events/names", &p.secret_key).await, 200).await;
    assert_eq!(names, json!({"names": ["keep"]}));
    // The contact's system event (its unsubscription) and its other events stay.
    let events = expect_json(
        app.get(
            &format!("/events/contact/{}", keep["contact"].as_str().unwrap()),
            &p.secret_key,
        )
        .await,
        200,
    )
    .await;
    let names: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["contact.unsubscribed", "keep"]);
    let contacts = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(contacts["total"], 5, "contacts are not deleted with events");
}

async fn another_project_never_sees_or_deletes_these_events(engine: Engine) {
    let app = engine.app().await;
    let a = app.project().await;
    let b = app.project().await;
    let got = tracked(
        &app,
        &a.public_key,
        json!({"event": "secret-plan", "email": "shared@example.com"}),
    )
    .await;
    tracked(
        &app,
        &a.public_key,
        json!({"event": "secret-plan", "email": "other@example.com"}),
    )
    .await;
    let contact_a = got["contact"].as_str().unwrap();
    // The same address in B is another contact.
    let got_b = tracked(
        &app,
        &b.public_key,
        json!({"event": "b-only", "email": "shared@example.com"}),
    )
    .await;
    assert_ne!(got_b["contact"], got["contact"]);

    let sk = &b.secret_key;
    let list = expect_json(app.get("/events", sk).await, 200).await;
    let names: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["b-only"]);
    let list = expect_json(
        app.get(&format!("/events?contactId={contact_a}"), sk).await,
        200,
    )
    .await;
    assert_eq!(list["data"], json!([]));
    let list = expect_json(app.get("/events?name=secret-plan", sk).await, 200).await;
    assert_eq!(list["data"], json!([]));
    let names = expect_json(app.get("/events/names", sk).await, 200).await;
    assert_eq!(names, json!({"names": ["b-only"]}));
    let stats = expect_json(app.get("/events/stats", sk).await, 200).await;
    assert_eq!(stats["totalEvents"], 1);
    let usage = expect_json(app.get("/events/secret-plan/usage", sk).await, 200).await;
    assert_eq!(usage["count"], 0);
    expect_error(
        app.get(&format!("/events/contact/{contact_a}"), sk).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    // A's cursor is not B's.
    let page = expect_json(app.get("/events?limit=1", &a.secret_key).await, 200).await;
    let cursor = page["cursor"].as_str().unwrap();
    let err = expect_error(
        app.get(&format!("/events?cursor={cursor}"), sk).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&err), ["cursor"]);
    // B deleting the name removes none of A's.
    let gone = expect_json(app.delete("/events/secret-plan", sk).await, 200).await;
    assert_eq!(gone["deleted"], 0);
    let usage = expect_json(
        app.get("/events/secret-plan/usage", &a.secret_key).await,
        200,
    )
    .await;
    assert_eq!(usage["count"], 2);
}
