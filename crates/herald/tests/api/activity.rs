//! The activity feed: contact events and project entries in one newest-first keyset list, its
//! filters, counts over time windows (driven by the test clock), and tenant isolation.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, TestProject, expect_error, expect_json};
use crate::mail_setup::{message_ids, outbox_project, wait_status};

both_engines!(
    feed_shows_sends_subscription_changes_tracked_events_and_domains,
    feed_pages_filter_and_count,
    feed_of_another_project_is_empty,
);

async fn feed(app: &TestApp, p: &TestProject, query: &str) -> Value {
    expect_json(
        app.get(&format!("/activity{query}"), &p.secret_key).await,
        200,
    )
    .await
}

/// A project with one sent message, one unsubscribe and one tracked event; returns the
/// contact id and the message id.
async fn busy_project(app: &TestApp) -> (TestProject, String, String) {
    let p = outbox_project(app).await;
    let sk = &p.secret_key;
    app.create_contact(
        sk,
        json!({"email": "reader@example.org", "subscribed": true}),
    )
    .await;
    let body = json!({"to": "reader@example.org", "from": "news@shop.test", "subject": "Hi", "body": "<p>Hi</p>"});
    let answer = expect_json(app.post("/v1/send", sk, &body).await, 200).await;
    let message = message_ids(&answer)[0].clone();
    let sent = wait_status(app, sk, &message, &["SENT"], Duration::from_secs(15)).await;
    let contact = sent["contactId"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| {
            answer["data"]["contacts"][0]["id"]
                .as_str()
                .map(str::to_owned)
        })
        .expect("the send names its contact");
    expect_json(
        app.patch(
            &format!("/contacts/{contact}"),
            sk,
            &json!({"subscribed": false}),
        )
        .await,
        200,
    )
    .await;
    expect_json(
        app.post(
            "/v1/track",
            &p.public_key,
            &json!({"event": "signed_up", "email": "reader@example.org", "data": {"plan": "pro"}}),
        )
        .await,
        200,
    )
    .await;
    (p, contact, message)
}

async fn feed_shows_sends_subscription_changes_tracked_events_and_domains(engine: Engine) {
    let app = engine.app().await;
    let (p, contact, message) = busy_project(&app).await;
    let page = feed(&app, &p, "?limit=100").await;
    let data = page["data"].as_array().unwrap();
    let types: Vec<&str> = data.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        &types[..3],
        ["event", "contact.unsubscribed", "email.sent"],
        "newest first: {page}"
    );
    let tracked = &data[0];
    assert_eq!(
        tracked["data"],
        json!({"name": "signed_up", "data": {"plan": "pro"}})
    );
    assert_eq!(tracked["contactId"], contact.as_str());
    assert_eq!(tracked["email"], "reader@example.org");
    assert_eq!(tracked["messageId"], Value::Null);
    let sent = &data[2];
    assert_eq!(sent["messageId"], message.as_str(), "{sent}");
    assert_eq!(sent["campaignId"], Value::Null);
    assert_eq!(sent["email"], "reader@example.org");
    assert!(sent["createdAt"].as_str().unwrap().ends_with('Z'));
    let types: HashSet<String> = feed(&app, &p, "/types").await["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_owned())
        .collect();
    for t in ["event", "contact.unsubscribed", "email.sent"] {
        assert!(types.contains(t), "{t} in {types:?}");
    }
    let upcoming = feed(&app, &p, "/upcoming").await;
    assert_eq!(upcoming, json!({"campaigns": [], "executions": []}));
}

async fn feed_pages_filter_and_count(engine: Engine) {
    let app = engine.app().await;
    let (p, contact, _) = busy_project(&app).await;
    let all = feed(&app, &p, "?limit=100").await["data"]
        .as_array()
        .unwrap()
        .len();
    // One entry per page: every entry once, in order, and the last page says so.
    let mut seen = Vec::new();
    let mut query = "?limit=1".to_owned();
    loop {
        let page = feed(&app, &p, &query).await;
        seen.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["id"].as_str().unwrap().to_owned()),
        );
        match page["cursor"].as_str() {
            Some(c) => {
                assert_eq!(page["hasMore"], true);
                query = format!("?limit=1&cursor={c}");
            }
            None => {
                assert_eq!(page["hasMore"], false);
                break;
            }
        }
    }
    assert_eq!(seen.len(), all);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), all, "no repeats");
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted, "newest first across both tables");

    let only = |page: &Value, t: &str| {
        let d = page["data"].as_array().unwrap();
        !d.is_empty() && d.iter().all(|e| e["type"] == t)
    };
    assert!(only(
        &feed(&app, &p, "?type=email.sent").await,
        "email.sent"
    ));
    assert!(only(&feed(&app, &p, "?type=event").await, "event"));
    let mine = feed(&app, &p, &format!("?contactId={contact}&limit=100")).await;
    assert!(
        mine["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["contactId"] == contact.as_str())
    );
    let other_contact = uuid::Uuid::now_v7();
    let none = feed(&app, &p, &format!("?contactId={other_contact}")).await;
    assert_eq!(none["data"], json!([]));
    let body = expect_error(
        app.get("/activity?contactId=nope", &p.secret_key).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(body["error"]["errors"][0]["field"], "contactId", "{body}");
    expect_error(
        app.get("/activity?cursor=AAAA", &p.secret_key).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;

    let stats = feed(&app, &p, "/stats").await;
    assert_eq!(stats["email.sent"], 1, "{stats}");
    assert_eq!(stats["contact.unsubscribed"], 1, "{stats}");
    assert_eq!(stats["event"], 1, "{stats}");
    let recent = feed(&app, &p, "/recent-count?minutes=5").await;
    assert_eq!(recent["count"].as_i64().unwrap(), all as i64, "{recent}");
    // Time passes: the windows empty, the feed itself keeps everything.
    app.clock.advance(Duration::from_secs(8 * 86_400));
    assert_eq!(feed(&app, &p, "/stats").await, json!({}));
    assert_eq!(feed(&app, &p, "/stats?days=30").await["email.sent"], 1);
    assert_eq!(feed(&app, &p, "/recent-count").await["count"], 0);
    expect_error(
        app.get("/activity/stats?days=0", &p.secret_key).await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
}

async fn feed_of_another_project_is_empty(engine: Engine) {
    let app = engine.app().await;
    let (_, contact, _) = busy_project(&app).await;
    let other = app.project().await;
    assert_eq!(feed(&app, &other, "").await["data"], json!([]));
    assert_eq!(
        feed(&app, &other, &format!("?contactId={contact}")).await["data"],
        json!([])
    );
    assert_eq!(feed(&app, &other, "/types").await["types"], json!([]));
    assert_eq!(feed(&app, &other, "/stats").await, json!({}));
    assert_eq!(feed(&app, &other, "/recent-count").await["count"], 0);
}
