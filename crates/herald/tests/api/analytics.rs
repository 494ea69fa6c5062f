//! `/analytics/*` (DECISIONS.md "Activity and analytics"): the time series with every bucket
//! present, by day or hour, in UTC or an IANA zone; top tracked events; the campaign
//! endpoints' validation, empty answers, and 404 for an unknown or another project's
//! campaign; isolation.

use std::time::Duration;

use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, TestProject, error_fields, expect_error, expect_json};
use crate::mail_setup::{message_ids, outbox_project, wait_status};
use crate::track::tracked;

both_engines!(
    timeseries_counts_sends_per_bucket_in_utc_and_a_zone,
    top_events_rank_tracked_names,
    campaign_endpoints_validate_and_answer_zeros_without_campaigns,
    campaign_stats_of_an_unknown_or_foreign_campaign_is_404,
    analytics_parameters_are_validated,
);

const T0: &str = "2026-03-10T10:00:00.000Z";

async fn send_one(app: &TestApp, p: &TestProject, to: &str) {
    let body = json!({"to": to, "from": "news@shop.test", "subject": "Hi", "body": "<p>Hi</p>"});
    let answer = expect_json(app.post("/v1/send", &p.secret_key, &body).await, 200).await;
    let id = message_ids(&answer)[0].clone();
    wait_status(app, &p.secret_key, &id, &["SENT"], Duration::from_secs(15)).await;
}

async fn series(app: &TestApp, key: &str, query: &str) -> Vec<Value> {
    let body = expect_json(
        app.get(&format!("/analytics/timeseries?{query}"), key)
            .await,
        200,
    )
    .await;
    body["series"].as_array().cloned().expect("series")
}

fn column(series: &[Value], name: &str) -> Vec<i64> {
    series
        .iter()
        .map(|p| p[name].as_i64().expect("count"))
        .collect()
}

async fn timeseries_counts_sends_per_bucket_in_utc_and_a_zone(engine: Engine) {
    let app = engine.app().await;
    app.clock.set(herald_core::time::parse_iso(T0).unwrap());
    let p = outbox_project(&app).await;
    send_one(&app, &p, "a@example.org").await;
    send_one(&app, &p, "b@example.org").await;
    app.clock.advance(Duration::from_secs(26 * 3600));
    send_one(&app, &p, "c@example.org").await;
    let sk = &p.secret_key;

    let days = series(
        &app,
        sk,
        "from=2026-03-09T00:00:00Z&to=2026-03-12T00:00:00Z",
    )
    .await;
    let at: Vec<&str> = days.iter().map(|d| d["at"].as_str().unwrap()).collect();
    assert_eq!(
        at,
        vec![
            "2026-03-09T00:00:00.000Z",
            "2026-03-10T00:00:00.000Z",
            "2026-03-11T00:00:00.000Z"
        ]
    );
    assert_eq!(column(&days, "sent"), vec![0, 2, 1]);
    assert_eq!(column(&days, "opened"), vec![0, 0, 0]);

    let hours = series(
        &app,
        sk,
        "from=2026-03-10T00:00:00Z&to=2026-03-11T00:00:00Z&interval=hour",
    )
    .await;
    assert_eq!(hours.len(), 24);
    assert_eq!(hours[10]["sent"], 2, "{hours:?}");
    assert_eq!(column(&hours, "sent").iter().sum::<i64>(), 2);

    // India is UTC+5:30: its days start at 18:30 UTC the day before.
    let zoned = series(
        &app,
        sk,
        "from=2026-03-10T00:00:00Z&to=2026-03-12T00:00:00Z&tz=Asia/Kolkata",
    )
    .await;
    assert_eq!(zoned[0]["at"], "2026-03-09T18:30:00.000Z");
    assert_eq!(zoned.last().unwrap()["at"], "2026-03-11T18:30:00.000Z");
    assert_eq!(column(&zoned, "sent"), vec![2, 1, 0]);

    // A day later every slot above is closed and read from the rollup: the same counts, and
    // a send in the open slot still shows.
    app.clock.advance(Duration::from_secs(24 * 3600));
    let rolled = series(
        &app,
        sk,
        "from=2026-03-09T00:00:00Z&to=2026-03-12T00:00:00Z",
    )
    .await;
    assert_eq!(column(&rolled, "sent"), vec![0, 2, 1]);
    send_one(&app, &p, "d@example.org").await;
    let later = series(
        &app,
        sk,
        "from=2026-03-09T00:00:00Z&to=2026-03-14T00:00:00Z",
    )
    .await;
    assert_eq!(column(&later, "sent"), vec![0, 2, 1, 1, 0]);
    // A range starting inside a slot counts only from its start.
    let edge = series(
        &app,
        sk,
        "from=2026-03-10T10:07:00Z&to=2026-03-10T11:00:00Z&interval=hour",
    )
    .await;
    assert_eq!(column(&edge, "sent").iter().sum::<i64>(), 0, "{edge:?}");

    // Another project's series is all zeros.
    let other = app.project().await;
    let theirs = series(
        &app,
        &other.secret_key,
        "from=2026-03-09T00:00:00Z&to=2026-03-12T00:00:00Z",
    )
    .await;
    assert_eq!(column(&theirs, "sent"), vec![0, 0, 0]);
}

async fn top_events_rank_tracked_names(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for (email, event) in [
        ("a@x.org", "signup"),
        ("b@x.org", "signup"),
        ("a@x.org", "purchase"),
    ] {
        tracked(&app, &p.public_key, json!({"email": email, "event": event})).await;
    }
    let top = expect_json(app.get("/analytics/top-events", &p.secret_key).await, 200).await;
    assert_eq!(
        top["events"],
        json!([{"name": "signup", "count": 2}, {"name": "purchase", "count": 1}])
    );
    let one = expect_json(
        app.get("/analytics/top-events?limit=1", &p.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(one["events"].as_array().map(Vec::len), Some(1));
    let other = app.project().await;
    let none = expect_json(
        app.get("/analytics/top-events", &other.secret_key).await,
        200,
    )
    .await;
    assert_eq!(none["events"], json!([]));
}

async fn campaign_endpoints_validate_and_answer_zeros_without_campaigns(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let top = expect_json(
        app.get("/analytics/top-campaigns?metric=opened", sk).await,
        200,
    )
    .await;
    assert_eq!(top, json!({"metric": "opened", "campaigns": []}));
    // A campaign not sent yet: zeros.
    let c = campaign_on(&app, &p, "shop.test").await;
    let stats = expect_json(
        app.get(&format!("/analytics/campaign-stats?campaignId={c}"), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(stats["campaignId"], c.as_str());
    assert_eq!(stats["totalRecipients"], 0);
    assert_eq!(stats["openRate"], 0.0);
    for (path, field) in [
        ("/analytics/top-campaigns?metric=bogus", "metric"),
        ("/analytics/top-campaigns?limit=0", "limit"),
        ("/analytics/campaign-stats", "campaignId"),
        ("/analytics/campaign-stats?campaignId=nope", "campaignId"),
    ] {
        let body = expect_error(app.get(path, sk).await, 422, "VALIDATION_ERROR").await;
        assert_eq!(error_fields(&body), vec![field], "{path}");
    }
}

/// A DRAFT campaign of `p` sending from `domain` (a reserved name, verified at once with the
/// local outbox); returns its id.
async fn campaign_on(app: &TestApp, p: &TestProject, domain: &str) -> String {
    let sk = &p.secret_key;
    expect_json(
        app.post("/domains", sk, &json!({"domain": domain})).await,
        201,
    )
    .await;
    let mut body = crate::campaigns::body("Measured");
    body["from"] = json!(format!("news@{domain}"));
    crate::campaigns::create(app, sk, &body).await["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn campaign_stats_of_an_unknown_or_foreign_campaign_is_404(engine: Engine) {
    let app = engine.app().await;
    let (a, b) = (app.project().await, app.project().await);
    let theirs = campaign_on(&app, &b, "theirs.test").await;
    let unknown = "01900000-0000-7000-8000-000000000001";
    for id in [unknown, theirs.as_str()] {
        let path = format!("/analytics/campaign-stats?campaignId={id}");
        expect_error(
            app.get(&path, &a.secret_key).await,
            404,
            "CAMPAIGN_NOT_FOUND",
        )
        .await;
    }
    // The owner still reads it.
    let path = format!("/analytics/campaign-stats?campaignId={theirs}");
    expect_json(app.get(&path, &b.secret_key).await, 200).await;
}

async fn analytics_parameters_are_validated(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    for (query, field) in [
        ("interval=week", "interval"),
        ("tz=Mars/Base", "tz"),
        ("from=yesterday", "from"),
        ("to=2026-13-01", "to"),
        ("from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z", "from"),
        (
            "from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&interval=hour",
            "from",
        ),
    ] {
        let body = expect_error(
            app.get(&format!("/analytics/timeseries?{query}"), sk).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&body), vec![field], "{query}");
    }
    // The default is the last 30 days by day.
    let body = expect_json(app.get("/analytics/timeseries", sk).await, 200).await;
    let n = body["series"].as_array().map_or(0, Vec::len);
    assert!((30..=31).contains(&n), "{n}");
}
