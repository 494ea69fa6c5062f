//! A fan-out that stops on its own is not a cancel (DECISIONS.md "Campaigns"), on both
//! engines: the billing limit reached in the middle of a fan-out leaves what was queued, and
//! billed, to be delivered (none of it SUPPRESSED), and the campaign ends SENT with
//! `stoppedReason` BILLING_LIMIT, `totalRecipients` counting what was queued, and a
//! `campaign.stopped` activity entry; a SEGMENT audience whose segment is gone stops the
//! fan-out with AUDIENCE_ERROR the same way.

use std::time::Duration;

use herald_core::clock::Clock;
use herald_core::ids::Uuid;
use reqwest::Method;
use serde_json::{Value, json};

use crate::both_engines;
use crate::campaigns::{body, create, get, schedule, seed, wait_campaign};
use crate::helpers::{Engine, TestApp, expect_json};
use crate::mail_setup::{mail_world, outbox_project};

both_engines!(
    the_billing_limit_reached_mid_fan_out_delivers_what_was_queued_and_ends_sent,
    a_deleted_segment_stops_the_fan_out_with_an_audience_error,
);

/// Every message of the campaign's first page of `/emails`: their statuses.
async fn statuses(app: &TestApp, key: &str, id: &str) -> Vec<String> {
    let emails = expect_json(
        app.get(&format!("/emails?campaignId={id}&limit=100"), key)
            .await,
        200,
    )
    .await;
    emails["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| m["status"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The project's `campaign.stopped` activity entries.
async fn stopped_entries(app: &TestApp, key: &str) -> Vec<Value> {
    let feed = expect_json(app.get("/activity?type=campaign.stopped", key).await, 200).await;
    feed["data"].as_array().cloned().expect("data")
}

/// Waits until the campaign is no longer SCHEDULED or SENDING.
async fn wait_settled(app: &TestApp, key: &str, id: &str) -> Value {
    wait_campaign(app, key, id, Duration::from_secs(60), |c| {
        c["status"] != "SCHEDULED" && c["status"] != "SENDING"
    })
    .await
}

async fn the_billing_limit_reached_mid_fan_out_delivers_what_was_queued_and_ends_sent(
    engine: Engine,
) {
    // Pages of 4 against a limit of 15: 4, 8, 12 queued, the fourth page would make 16.
    let w = mail_world(engine, |c| c.campaign_page_size = 4).await;
    let (app, p) = (&w.app, &w.project);
    let sk = &p.secret_key;
    seed(
        app,
        &p.id,
        10,
        true,
        |i| format!("a{i}@example.org"),
        |_| json!({}),
    )
    .await;
    let path = format!("/users/@me/projects/{}/billing-limits", p.id);
    let limits = json!({"campaigns": 15});
    let res = app
        .call_with(&p.owner, Method::PUT, &path, None, Some(&limits))
        .await;
    expect_json(res, 200).await;
    // Ten fit when it is scheduled; ten more join the audience before its time comes.
    let c = create(app, sk, &body("Capped")).await;
    let id = c["id"].as_str().unwrap();
    schedule(app, sk, id, app.clock.now() + 3_600_000).await;
    seed(
        app,
        &p.id,
        10,
        true,
        |i| format!("b{i}@example.org"),
        |_| json!({}),
    )
    .await;
    app.clock.advance(Duration::from_secs(2 * 3600));

    let done = wait_settled(app, sk, id).await;
    assert_eq!(done["status"], "SENT", "{done}");
    assert_eq!(done["stoppedReason"], "BILLING_LIMIT", "{done}");
    assert_eq!(done["totalRecipients"], 12, "{done}");
    assert!(done["sentAt"].is_string(), "{done}");
    assert!(done["cancelledAt"].is_null(), "{done}");
    assert!(done["error"].as_str().unwrap().contains("limit"), "{done}");
    w.sink.wait_for(12, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(w.sink.messages().len(), 12);
    let statuses = statuses(app, sk, id).await;
    assert_eq!(statuses.len(), 12, "{statuses:?}");
    assert!(statuses.iter().all(|s| s == "SENT"), "{statuses:?}");
    let consumption = expect_json(
        app.call_with(
            &p.owner,
            Method::GET,
            &format!("/users/@me/projects/{}/billing-consumption", p.id),
            None,
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(consumption["campaigns"], 12, "{consumption}");
    let entries = stopped_entries(app, sk).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    let data = &entries[0]["data"];
    assert_eq!(data["campaignId"], id);
    assert_eq!(data["reason"], "BILLING_LIMIT");
    assert_eq!(data["queued"], 12);
    assert_eq!(data["name"], "Capped");
    // The unfiltered feed shows it too.
    let all = expect_json(app.get("/activity", sk).await, 200).await;
    assert!(
        all["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "campaign.stopped"),
        "{all}"
    );
}

async fn a_deleted_segment_stops_the_fan_out_with_an_audience_error(engine: Engine) {
    // No workers: the fan-out and the SENT check are run by hand.
    let app = engine.app_with(|c| c.workers = false).await;
    let p = outbox_project(&app).await;
    let sk = &p.secret_key;
    seed(
        &app,
        &p.id,
        5,
        true,
        |i| format!("s{i}@example.org"),
        |_| json!({"plan": "pro"}),
    )
    .await;
    let segment = expect_json(
        app.post(
            "/segments",
            sk,
            &json!({"name": "Pro", "filters": {"operator": "AND", "conditions": [
                {"field": "data.plan", "operator": "equals", "value": "pro"}]}}),
        )
        .await,
        201,
    )
    .await;
    let segment_id = segment["id"].as_str().unwrap();
    let mut b = body("To the pros");
    b["from"] = json!("news@shop.test");
    b["audienceType"] = json!("SEGMENT");
    b["segmentId"] = json!(segment_id);
    let id = create(&app, sk, &b).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let sent = expect_json(
        app.post(&format!("/campaigns/{id}/send"), sk, &json!({}))
            .await,
        200,
    )
    .await;
    assert_eq!(sent["data"]["status"], "SENDING");
    // The API refuses to delete a segment an active campaign uses; the store does not ask.
    let project: Uuid = p.id.parse().unwrap();
    let deleted = app
        .store
        .delete_segment(project, segment_id.parse().unwrap())
        .await
        .unwrap();
    assert!(deleted);

    assert!(app.engine.fan_out_due().await.unwrap(), "a fan-out was due");
    let stopped = get(&app, sk, &id).await;
    assert_eq!(stopped["status"], "SENDING", "not a cancel: {stopped}");
    assert_eq!(stopped["stoppedReason"], "AUDIENCE_ERROR", "{stopped}");
    assert_eq!(stopped["totalRecipients"], 0, "{stopped}");
    assert!(
        stopped["error"].as_str().unwrap().contains("segment"),
        "{stopped}"
    );
    let entries = stopped_entries(&app, sk).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["data"]["reason"], "AUDIENCE_ERROR");
    assert_eq!(entries[0]["data"]["campaignId"], id.as_str());
    // Nothing left to deliver: the SENT check ends it.
    herald_store::campaigns::finish_sent(&app.store, app.clock.now())
        .await
        .unwrap();
    let done = get(&app, sk, &id).await;
    assert_eq!(done["status"], "SENT", "{done}");
    assert_eq!(done["stoppedReason"], "AUDIENCE_ERROR", "{done}");
    assert!(!app.engine.fan_out_due().await.unwrap(), "the job is done");
}
