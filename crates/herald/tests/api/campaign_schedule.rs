//! A scheduled campaign over HTTP, on both engines: it cannot be deleted, nor can any segment
//! its audience depends on (directly, through a FILTERED audience's `segment.<id>` leaf, or
//! through another segment's tree); cancelling it removes it from `/activity/upcoming` and
//! nothing is sent when its time comes; SEGMENT and FILTERED audiences reach subscribed
//! contacts only; a campaign whose segment is gone cannot be sent.

use std::time::Duration;

use herald_core::clock::Clock;
use serde_json::{Value, json};

use crate::both_engines;
use crate::campaigns::{body, create, get, schedule, seed, send_now, wait_campaign};
use crate::helpers::{Engine, TestApp, expect_error, expect_json};
use crate::mail_setup::{deliveries, mail_world};

both_engines!(
    a_scheduled_campaign_holds_its_segments_until_cancelled,
    segment_and_filtered_audiences_reach_subscribed_contacts_only,
);

async fn segment(app: &TestApp, key: &str, name: &str, filters: Value) -> String {
    let s = expect_json(
        app.post("/segments", key, &json!({"name": name, "filters": filters}))
            .await,
        201,
    )
    .await;
    s["id"].as_str().unwrap().to_owned()
}

fn plan_is(plan: &str) -> Value {
    json!({"operator": "AND", "conditions": [
        {"field": "data.plan", "operator": "equals", "value": plan}]})
}

fn member_of(id: &str) -> Value {
    json!({"operator": "AND", "conditions": [
        {"field": format!("segment.{id}"), "operator": "memberOfSegment"}]})
}

async fn a_scheduled_campaign_holds_its_segments_until_cancelled(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    seed(
        app,
        &w.project.id,
        3,
        true,
        |i| format!("h{i}@example.org"),
        |_| json!({"plan": "pro"}),
    )
    .await;
    // The campaign's FILTERED audience names `via`, whose own tree names `pro`.
    let pro = segment(app, sk, "Pro", plan_is("pro")).await;
    let via = segment(app, sk, "Via pro", member_of(&pro)).await;
    let unrelated = segment(app, sk, "Free", plan_is("free")).await;
    let mut b = body("Held");
    b["audienceType"] = json!("FILTERED");
    b["audienceFilter"] = member_of(&via);
    let id = create(app, sk, &b).await["id"].as_str().unwrap().to_owned();
    schedule(app, sk, &id, app.clock.now() + 3_600_000).await;

    expect_error(
        app.delete(&format!("/campaigns/{id}"), sk).await,
        409,
        "CONFLICT",
    )
    .await;
    for held in [&via, &pro] {
        expect_error(
            app.delete(&format!("/segments/{held}"), sk).await,
            409,
            "CONFLICT",
        )
        .await;
    }
    let res = app.delete(&format!("/segments/{unrelated}"), sk).await;
    assert_eq!(res.status(), 204);

    let cancelled = expect_json(
        app.post(&format!("/campaigns/{id}/cancel"), sk, &json!({}))
            .await,
        200,
    )
    .await;
    assert_eq!(cancelled["data"]["status"], "CANCELLED");
    let upcoming = expect_json(app.get("/activity/upcoming", sk).await, 200).await;
    assert_eq!(upcoming["campaigns"], json!([]), "{upcoming}");
    // Its time comes and goes: the workers poll every 500 ms, three rounds pass.
    app.clock.advance(Duration::from_secs(2 * 3_600));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(w.sink.messages().len(), 0);
    let c = get(app, sk, &id).await;
    assert_eq!(c["status"], "CANCELLED", "{c}");
    assert_eq!(c["totalRecipients"], 0, "{c}");
    // No longer held: the segments and the campaign can go.
    for held in [&via, &pro] {
        let res = app.delete(&format!("/segments/{held}"), sk).await;
        assert_eq!(res.status(), 204);
    }
    let deleted = expect_json(app.delete(&format!("/campaigns/{id}"), sk).await, 200).await;
    assert_eq!(deleted["success"], true);
}

async fn segment_and_filtered_audiences_reach_subscribed_contacts_only(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    for subscribed in [true, false] {
        let tag = if subscribed { "in" } else { "out" };
        seed(
            app,
            &w.project.id,
            4,
            subscribed,
            |i| format!("{tag}{i}@example.org"),
            |_| json!({"plan": "pro"}),
        )
        .await;
    }
    let pro = segment(app, sk, "Pro", plan_is("pro")).await;
    let mut to_segment = body("To the segment");
    to_segment["audienceType"] = json!("SEGMENT");
    to_segment["segmentId"] = json!(pro);
    let mut filtered = body("Filtered");
    filtered["audienceType"] = json!("FILTERED");
    filtered["audienceFilter"] = plan_is("pro");
    for b in [to_segment.clone(), filtered] {
        let id = create(app, sk, &b).await["id"].as_str().unwrap().to_owned();
        send_now(app, sk, &id).await;
        let done = wait_campaign(app, sk, &id, Duration::from_secs(60), |c| {
            c["status"] == "SENT"
        })
        .await;
        assert_eq!(done["totalRecipients"], 4, "{done}");
    }
    crate::mail_setup::wait_queue_settled(app, Duration::from_secs(60)).await;
    let counts = deliveries(&w.sink);
    assert_eq!(counts.len(), 4, "{counts:?}");
    for (rcpt, n) in &counts {
        assert!(rcpt.starts_with("in"), "{rcpt} is unsubscribed");
        assert_eq!(*n, 2, "{rcpt}: once per campaign");
    }

    // A campaign whose segment was deleted cannot be sent.
    let id = create(app, sk, &to_segment).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = app.delete(&format!("/segments/{pro}"), sk).await;
    assert_eq!(res.status(), 204);
    expect_error(
        app.post(&format!("/campaigns/{id}/send"), sk, &json!({}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(get(app, sk, &id).await["status"], "DRAFT");
}
