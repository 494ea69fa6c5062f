//! `GET /campaigns/:id/stats` on both engines: every stage counted once per message (a second
//! open, or the open a click implies, adds nothing), from the feedback of a real delivery,
//! with rates as fractions of `sent`; a contact the campaign's mail unsubscribed (here by a
//! permanent bounce and by a complaint) counts as unsubscribed. The counts are kept by triggers
//! as events are written and deleted (migration 0031): deleting a contact takes its events, and
//! their stages, out of the stats.

use std::time::Duration;

use serde_json::{Value, json};

use crate::both_engines;
use crate::campaigns::{body, create, seed, send_now, wait_campaign};
use crate::feedback::{notify, world};
use crate::helpers::{Engine, expect_json};

both_engines!(stats_count_each_stage_once_with_rates_of_sent);

async fn stats_count_each_stage_once_with_rates_of_sent(engine: Engine) {
    let w = world(engine).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    seed(
        app,
        &w.project.id,
        4,
        true,
        |i| format!("r{i}@example.org"),
        |_| json!({}),
    )
    .await;
    let id = create(app, sk, &body("Measured")).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    send_now(app, sk, &id).await;
    wait_campaign(app, sk, &id, Duration::from_secs(60), |c| {
        c["status"] == "SENT"
    })
    .await;
    let emails = expect_json(
        app.get(&format!("/emails?campaignId={id}&limit=100"), sk)
            .await,
        200,
    )
    .await;
    let message_of = |rcpt: &str| -> String {
        emails["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["to"] == rcpt)
            .unwrap_or_else(|| panic!("no message to {rcpt}: {emails}"))["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let m: Vec<String> = (0..4)
        .map(|i| message_of(&format!("r{i}@example.org")))
        .collect();
    let feedback: Vec<Value> = vec![
        json!({"type": "delivery", "messageId": m[0]}),
        json!({"type": "delivery", "messageId": m[1]}),
        json!({"type": "delivery", "messageId": m[2]}),
        json!({"type": "open", "messageId": m[0]}),
        json!({"type": "open", "messageId": m[0]}),
        json!({"type": "click", "messageId": m[1], "url": "https://example.org/a"}),
        json!({"type": "bounce", "messageId": m[3], "bounceType": "permanent",
            "diagnostic": "smtp; 550 5.1.1 gone"}),
        json!({"type": "complaint", "messageId": m[2]}),
    ];
    for f in &feedback {
        app.clock.advance(Duration::from_secs(1));
        expect_json(notify(app, f).await, 200).await;
    }

    let stats = expect_json(app.get(&format!("/campaigns/{id}/stats"), sk).await, 200).await;
    let want = [
        ("totalRecipients", 4.0),
        ("sent", 4.0),
        ("delivered", 3.0),
        ("opened", 2.0),
        ("clicked", 1.0),
        ("bounced", 1.0),
        ("complained", 1.0),
        ("deliveryRate", 0.75),
        ("openRate", 0.5),
        ("clickRate", 0.25),
        ("bounceRate", 0.25),
        ("complaintRate", 0.25),
        // The permanent bounce and the complaint each unsubscribed their contact
        // (DECISIONS.md "Feedback, suppression"): both count as the campaign's unsubscribes.
        ("unsubscribed", 2.0),
        ("unsubscribeRate", 0.5),
    ];
    for (field, n) in want {
        assert_eq!(stats[field].as_f64(), Some(n), "{field}: {stats}");
    }
    // A contact deleted takes its events along (GDPR erasure): r0's message keeps counting as
    // a recipient, but no longer as sent, delivered or opened.
    let r0 = app.contact_by_email(sk, "r0@example.org").await;
    let gone = app
        .delete(&format!("/contacts/{}", r0["id"].as_str().unwrap()), sk)
        .await;
    assert!(gone.status().is_success(), "{}", gone.status());
    let stats = expect_json(app.get(&format!("/campaigns/{id}/stats"), sk).await, 200).await;
    for (field, n) in [
        ("totalRecipients", 4.0),
        ("sent", 3.0),
        ("delivered", 2.0),
        ("opened", 1.0),
        ("clicked", 1.0),
    ] {
        assert_eq!(
            stats[field].as_f64(),
            Some(n),
            "{field} after the delete: {stats}"
        );
    }
}
