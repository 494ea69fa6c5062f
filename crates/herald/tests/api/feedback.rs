//! Feedback and suppression (DECISIONS.md "Feedback, suppression"): SMTP-time rejections from
//! a real SMTP sink, the generic signed `POST /webhooks/notifications`, the suppression list at
//! acceptance and its lift, and the mailbox simulator. SNS is in `feedback_sns.rs`.

use std::time::Duration;

use herald_core::feedback::generic_signature;
use herald_core::ids::Uuid;
use reqwest::Response;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_error, expect_json};
use crate::mail_setup::{DOMAIN, MailWorld, mail_world, message_ids, send, wait_status};
pub use crate::mail_setup::{contact, message as email};

both_engines!(
    smtp_rejection_bounces_unsubscribes_and_suppresses,
    a_suppressed_recipient_is_skipped_and_the_other_still_goes,
    subscribing_again_lifts_the_suppression,
    generic_delivery_and_bounce_apply_once_and_never_move_back,
    generic_complaint_suppresses_and_transient_bounce_only_adds_history,
    generic_open_and_click_record_first_events,
    generic_signature_failures_are_refused,
    generic_unknown_message_is_404_and_bad_type_422,
    notifications_are_never_rate_limited,
    simulator_addresses_take_the_feedback_paths_without_a_transport,
);

pub const SECRET: &str = "feedback-test-secret";
pub const WAIT: Duration = Duration::from_secs(10);

/// A mail world whose generic notifications are signed with [`SECRET`].
pub async fn world(engine: Engine) -> MailWorld {
    mail_world(engine, |c| c.feedback_secret = Some(SECRET.into())).await
}

pub fn now_secs(app: &TestApp) -> i64 {
    herald_core::clock::Clock::now(&*app.clock) / 1000
}

/// Posts a generic notification signed with `secret` at `t` (seconds).
pub async fn post_signed(app: &TestApp, body: &Value, secret: &str, t: i64) -> Response {
    let raw = body.to_string();
    let sig = generic_signature(secret.as_bytes(), t, raw.as_bytes());
    app.client
        .post(app.url("/webhooks/notifications"))
        .header("content-type", "application/json")
        .header("Herald-Signature", format!("t={t},v1={sig}"))
        .body(raw)
        .send()
        .await
        .expect("request")
}

pub async fn notify(app: &TestApp, body: &Value) -> Response {
    post_signed(app, body, SECRET, now_secs(app)).await
}

/// Sends one message per recipient (contacts subscribed) and waits until each is SENT.
pub async fn sent(w: &MailWorld, to: &[&str]) -> Vec<String> {
    let body = json!({"to": to, "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B",
        "subscribed": true});
    let answer = expect_json(send(w, &body).await, 200).await;
    let ids = message_ids(&answer);
    for id in &ids {
        wait_status(&w.app, &w.project.secret_key, id, &["SENT"], WAIT).await;
    }
    ids
}

/// The names of the contact's events, newest first.
pub async fn event_names(w: &MailWorld, contact_id: &str) -> Vec<String> {
    let body = expect_json(
        w.app
            .get(
                &format!("/events/contact/{contact_id}"),
                &w.project.secret_key,
            )
            .await,
        200,
    )
    .await;
    body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect()
}

pub fn count(names: &[String], name: &str) -> usize {
    names.iter().filter(|n| *n == name).count()
}

/// The suppression reason of an address, read from the store.
pub async fn suppression(w: &MailWorld, email: &str) -> Option<String> {
    let project: Uuid = w.project.id.parse().unwrap();
    w.app
        .store
        .suppression(project, email)
        .await
        .unwrap()
        .map(|s| s.reason.as_str().to_owned())
}

fn history_statuses(m: &Value) -> Vec<String> {
    m["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["status"].as_str().unwrap().to_owned())
        .collect()
}

async fn smtp_rejection_bounces_unsubscribes_and_suppresses(engine: Engine) {
    let w = world(engine).await;
    w.sink.refuse_recipient("gone@example.org");
    let body = json!({"to": ["gone@example.org", "here@example.org"], "from": format!("x@{DOMAIN}"),
        "subject": "S", "body": "B", "subscribed": true});
    let answer = expect_json(send(&w, &body).await, 200).await;
    let ids = message_ids(&answer);
    let gone = wait_status(&w.app, &w.project.secret_key, &ids[0], &["BOUNCED"], WAIT).await;
    assert!(
        gone["lastError"].as_str().unwrap().starts_with("550 5.1.1"),
        "{gone}"
    );
    assert_eq!(gone["attempts"], 1, "not retried: {gone}");
    assert_eq!(
        history_statuses(&gone),
        ["PENDING", "SENDING", "BOUNCED"],
        "{gone}"
    );
    wait_status(&w.app, &w.project.secret_key, &ids[1], &["SENT"], WAIT).await;
    let contact_id = gone["contactId"].as_str().unwrap();
    assert_eq!(contact(&w, contact_id).await["subscribed"], false);
    let names = event_names(&w, contact_id).await;
    assert_eq!(count(&names, "email.bounce"), 1, "{names:?}");
    assert_eq!(count(&names, "contact.unsubscribed"), 1, "{names:?}");
    assert_eq!(count(&names, "email.sent"), 0, "{names:?}");
    assert_eq!(
        suppression(&w, "gone@example.org").await.as_deref(),
        Some("bounce")
    );
    assert_eq!(suppression(&w, "here@example.org").await, None);
    assert_eq!(w.sink.messages().len(), 1, "only the accepted recipient");
}

async fn a_suppressed_recipient_is_skipped_and_the_other_still_goes(engine: Engine) {
    let w = world(engine).await;
    w.sink.refuse_recipient("gone@example.org");
    let body = json!({"to": "gone@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let answer = expect_json(send(&w, &body).await, 200).await;
    wait_status(
        &w.app,
        &w.project.secret_key,
        &message_ids(&answer)[0],
        &["BOUNCED"],
        WAIT,
    )
    .await;
    let attempts_before = w.sink.attempts();

    let body = json!({"to": ["gone@example.org", "other@example.org"], "from": format!("x@{DOMAIN}"),
        "subject": "Again", "body": "B"});
    let answer = expect_json(send(&w, &body).await, 200).await;
    let emails = answer["data"]["emails"].as_array().unwrap();
    assert_eq!(emails[0]["skipped"], "suppressed", "{answer}");
    assert!(emails[1].get("skipped").is_none(), "{answer}");
    let ids = message_ids(&answer);
    let skipped = email(&w, &ids[0]).await;
    assert_eq!(skipped["status"], "SUPPRESSED");
    let detail = skipped["history"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("suppression list (bounce)"), "{skipped}");
    wait_status(&w.app, &w.project.secret_key, &ids[1], &["SENT"], WAIT).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rcpts: Vec<String> = w
        .sink
        .messages()
        .iter()
        .flat_map(|m| m.rcpt_to.clone())
        .collect();
    assert!(!rcpts.contains(&"gone@example.org".to_owned()), "{rcpts:?}");
    assert_eq!(
        w.sink.attempts(),
        attempts_before + 1,
        "only the other recipient was tried"
    );
}

async fn subscribing_again_lifts_the_suppression(engine: Engine) {
    let w = world(engine).await;
    let ids = sent(&w, &["back@example.org"]).await;
    let res = notify(
        &w.app,
        &json!({"type": "bounce", "messageId": ids[0],
        "diagnostic": "smtp; 550 5.1.1 mailbox unknown"}),
    )
    .await;
    expect_json(res, 200).await;
    assert_eq!(
        suppression(&w, "back@example.org").await.as_deref(),
        Some("bounce")
    );
    let contact_id = email(&w, &ids[0]).await["contactId"]
        .as_str()
        .unwrap()
        .to_owned();

    let again = json!({"to": "back@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let answer = expect_json(send(&w, &again).await, 200).await;
    assert_eq!(answer["data"]["emails"][0]["skipped"], "suppressed");

    let patched = w
        .app
        .patch(
            &format!("/contacts/{contact_id}"),
            &w.project.secret_key,
            &json!({"subscribed": true}),
        )
        .await;
    expect_json(patched, 200).await;
    assert_eq!(suppression(&w, "back@example.org").await, None);
    let names = event_names(&w, &contact_id).await;
    assert_eq!(names[0], "contact.subscribed", "{names:?}");

    let answer = expect_json(send(&w, &again).await, 200).await;
    assert!(
        answer["data"]["emails"][0].get("skipped").is_none(),
        "{answer}"
    );
    wait_status(
        &w.app,
        &w.project.secret_key,
        &message_ids(&answer)[0],
        &["SENT"],
        WAIT,
    )
    .await;
}

async fn generic_delivery_and_bounce_apply_once_and_never_move_back(engine: Engine) {
    let w = world(engine).await;
    let ids = sent(&w, &["d@example.org"]).await;
    let delivery = json!({"type": "delivery", "messageId": ids[0]});
    let t = now_secs(&w.app);
    let first = expect_json(post_signed(&w.app, &delivery, SECRET, t).await, 200).await;
    assert_eq!(first, json!({"success": true}));
    let m = email(&w, &ids[0]).await;
    assert_eq!(m["status"], "DELIVERED");
    let contact_id = m["contactId"].as_str().unwrap().to_owned();
    // The same signed request again: 200, nothing changes.
    expect_json(post_signed(&w.app, &delivery, SECRET, t).await, 200).await;
    assert_eq!(
        count(&event_names(&w, &contact_id).await, "email.delivery"),
        1
    );
    assert_eq!(
        history_statuses(&email(&w, &ids[0]).await),
        ["PENDING", "SENDING", "SENT", "DELIVERED"]
    );

    let bounce = json!({"type": "bounce", "messageId": ids[0], "bounceType": "permanent",
        "diagnostic": "smtp; 550 5.1.1 gone"});
    expect_json(notify(&w.app, &bounce).await, 200).await;
    let m = email(&w, &ids[0]).await;
    assert_eq!(m["status"], "BOUNCED");
    assert!(
        m["lastError"].as_str().unwrap().contains("550 5.1.1 gone"),
        "{m}"
    );
    assert_eq!(contact(&w, &contact_id).await["subscribed"], false);
    assert_eq!(
        suppression(&w, "d@example.org").await.as_deref(),
        Some("bounce")
    );
    // A late delivery (signed anew) never moves the status back.
    w.app.clock.advance(Duration::from_secs(1));
    expect_json(notify(&w.app, &delivery).await, 200).await;
    let m = email(&w, &ids[0]).await;
    assert_eq!(m["status"], "BOUNCED");
    let names = event_names(&w, &contact_id).await;
    assert_eq!(count(&names, "email.delivery"), 1, "{names:?}");
    assert_eq!(count(&names, "email.bounce"), 1, "{names:?}");
    assert_eq!(count(&names, "contact.unsubscribed"), 1, "{names:?}");
}

async fn generic_complaint_suppresses_and_transient_bounce_only_adds_history(engine: Engine) {
    let w = world(engine).await;
    let ids = sent(&w, &["soft@example.org", "angry@example.org"]).await;
    let soft = json!({"type": "bounce", "messageId": ids[0], "bounceType": "transient",
        "diagnostic": "452 4.2.2 mailbox full"});
    expect_json(notify(&w.app, &soft).await, 200).await;
    let m = email(&w, &ids[0]).await;
    assert_eq!(m["status"], "SENT", "a transient bounce moves nothing: {m}");
    let last = m["history"].as_array().unwrap().last().unwrap().clone();
    assert!(
        last["detail"]
            .as_str()
            .unwrap()
            .contains("transient bounce"),
        "{m}"
    );
    assert!(
        last["detail"].as_str().unwrap().contains("mailbox full"),
        "{m}"
    );
    let soft_contact = m["contactId"].as_str().unwrap().to_owned();
    assert_eq!(contact(&w, &soft_contact).await["subscribed"], true);
    assert_eq!(
        count(&event_names(&w, &soft_contact).await, "email.bounce"),
        0
    );
    assert_eq!(suppression(&w, "soft@example.org").await, None);

    let complaint =
        json!({"type": "complaint", "messageId": ids[1], "occurredAt": "2026-01-01T00:00:00Z"});
    expect_json(notify(&w.app, &complaint).await, 200).await;
    let m = email(&w, &ids[1]).await;
    assert_eq!(m["status"], "COMPLAINED");
    let angry = m["contactId"].as_str().unwrap().to_owned();
    assert_eq!(contact(&w, &angry).await["subscribed"], false);
    let names = event_names(&w, &angry).await;
    assert_eq!(count(&names, "email.complaint"), 1, "{names:?}");
    assert_eq!(count(&names, "contact.unsubscribed"), 1, "{names:?}");
    assert_eq!(
        suppression(&w, "angry@example.org").await.as_deref(),
        Some("complaint")
    );
}

async fn generic_open_and_click_record_first_events(engine: Engine) {
    let w = world(engine).await;
    let ids = sent(&w, &["reader@example.org"]).await;
    let click = json!({"type": "click", "messageId": ids[0], "url": "https://example.org/a"});
    expect_json(notify(&w.app, &click).await, 200).await;
    let m = email(&w, &ids[0]).await;
    assert_eq!(m["status"], "CLICKED");
    let contact_id = m["contactId"].as_str().unwrap().to_owned();
    w.app.clock.advance(Duration::from_secs(1));
    expect_json(
        notify(&w.app, &json!({"type": "open", "messageId": ids[0]})).await,
        200,
    )
    .await;
    assert_eq!(
        email(&w, &ids[0]).await["status"],
        "CLICKED",
        "never backwards"
    );
    let names = event_names(&w, &contact_id).await;
    assert_eq!(count(&names, "email.click"), 1, "{names:?}");
    assert_eq!(
        count(&names, "email.open"),
        1,
        "the click implied the open: {names:?}"
    );
    let events = expect_json(
        w.app
            .get(
                &format!("/events/contact/{contact_id}"),
                &w.project.secret_key,
            )
            .await,
        200,
    )
    .await;
    let clicked = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "email.click")
        .unwrap()
        .clone();
    assert_eq!(clicked["data"]["url"], "https://example.org/a");
    assert_eq!(clicked["data"]["messageId"], ids[0].as_str());
}

async fn generic_signature_failures_are_refused(engine: Engine) {
    // Without a configured secret, the generic format is refused whatever it carries.
    let unconfigured = mail_world(engine, |_| {}).await;
    let ids = sent(&unconfigured, &["a@example.org"]).await;
    let body = json!({"type": "delivery", "messageId": ids[0]});
    let res = post_signed(
        &unconfigured.app,
        &body,
        SECRET,
        now_secs(&unconfigured.app),
    )
    .await;
    expect_error(res, 401, "UNAUTHORIZED").await;

    let w = world(engine).await;
    let ids = sent(&w, &["a@example.org"]).await;
    let body = json!({"type": "delivery", "messageId": ids[0]});
    let t = now_secs(&w.app);
    let missing = w
        .app
        .client
        .post(w.app.url("/webhooks/notifications"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    expect_error(missing, 401, "UNAUTHORIZED").await;
    expect_error(
        post_signed(&w.app, &body, "another-secret", t).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    expect_error(
        post_signed(&w.app, &body, SECRET, t - 301).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    expect_error(
        post_signed(&w.app, &body, SECRET, t + 301).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    // A body changed after signing.
    let sig = generic_signature(SECRET.as_bytes(), t, body.to_string().as_bytes());
    let tampered = json!({"type": "bounce", "messageId": ids[0]}).to_string();
    let res = w
        .app
        .client
        .post(w.app.url("/webhooks/notifications"))
        .header("Herald-Signature", format!("t={t},v1={sig}"))
        .body(tampered)
        .send()
        .await
        .unwrap();
    expect_error(res, 401, "UNAUTHORIZED").await;
    for garbage in ["t=abc,v1=00", "v1=00", "nonsense"] {
        let res = w
            .app
            .client
            .post(w.app.url("/webhooks/notifications"))
            .header("Herald-Signature", garbage)
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        expect_error(res, 401, "UNAUTHORIZED").await;
    }
    assert_eq!(
        email(&w, &ids[0]).await["status"],
        "SENT",
        "nothing applied"
    );
    // Within 300 s of the server's clock it applies.
    expect_json(post_signed(&w.app, &body, SECRET, t - 299).await, 200).await;
    assert_eq!(email(&w, &ids[0]).await["status"], "DELIVERED");
}

async fn generic_unknown_message_is_404_and_bad_type_422(engine: Engine) {
    let w = world(engine).await;
    let ids = sent(&w, &["a@example.org"]).await;
    let unknown = json!({"type": "delivery", "messageId": herald_core::ids::new_id().to_string()});
    expect_error(notify(&w.app, &unknown).await, 404, "NOT_FOUND").await;
    let not_an_id = json!({"type": "delivery", "messageId": "nope"});
    expect_error(notify(&w.app, &not_an_id).await, 404, "NOT_FOUND").await;
    let bad_type = json!({"type": "exploded", "messageId": ids[0]});
    let e = expect_error(notify(&w.app, &bad_type).await, 422, "VALIDATION_ERROR").await;
    assert_eq!(e["error"]["errors"][0]["field"], "type");
    let bad_bounce = json!({"type": "bounce", "bounceType": "soft", "messageId": ids[0]});
    let e = expect_error(notify(&w.app, &bad_bounce).await, 422, "VALIDATION_ERROR").await;
    assert_eq!(e["error"]["errors"][0]["field"], "bounceType");
    // Signed but not JSON.
    let t = now_secs(&w.app);
    let raw = "not json";
    let sig = generic_signature(SECRET.as_bytes(), t, raw.as_bytes());
    let res = w
        .app
        .client
        .post(w.app.url("/webhooks/notifications"))
        .header("Herald-Signature", format!("t={t},v1={sig}"))
        .body(raw)
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "BAD_REQUEST").await;
    assert_eq!(email(&w, &ids[0]).await["status"], "SENT");
}

async fn notifications_are_never_rate_limited(engine: Engine) {
    let app = engine
        .app_with(|c| {
            c.feedback_secret = Some(SECRET.into());
            c.rate_limit_per_minute = 1;
        })
        .await;
    let p = app.project().await;
    for _ in 0..5 {
        // Even with the project's key attached, the webhook does not count.
        let res = app
            .client
            .post(app.url("/webhooks/notifications"))
            .bearer_auth(&p.secret_key)
            .header("Herald-Signature", "t=1,v1=00")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
        assert!(res.headers().get("ratelimit-limit").is_none());
    }
    // The limiter is on: the project's own routes are limited at once.
    expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    expect_error(
        app.get("/contacts", &p.secret_key).await,
        429,
        "RATE_LIMIT_EXCEEDED",
    )
    .await;
}

async fn simulator_addresses_take_the_feedback_paths_without_a_transport(engine: Engine) {
    let w = world(engine).await;
    let to = [
        "success@simulator.herald.test",
        "bounce+t1@simulator.herald.test",
        "complaint@simulator.herald.test",
        "suppressionlist@simulator.herald.test",
    ];
    let body = json!({"to": to, "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B",
        "subscribed": true});
    let answer = expect_json(send(&w, &body).await, 200).await;
    assert_eq!(
        answer["data"]["emails"][3]["skipped"], "suppressed",
        "{answer}"
    );
    let ids = message_ids(&answer);
    let key = &w.project.secret_key;
    let ok = wait_status(&w.app, key, &ids[0], &["DELIVERED"], WAIT).await;
    let bounced = wait_status(&w.app, key, &ids[1], &["BOUNCED"], WAIT).await;
    let complained = wait_status(&w.app, key, &ids[2], &["COMPLAINED"], WAIT).await;
    let listed = email(&w, &ids[3]).await;
    assert_eq!(listed["status"], "SUPPRESSED");
    for m in [&ok, &bounced, &complained, &listed] {
        assert_eq!(m["simulated"], true, "{m}");
    }
    assert_eq!(
        history_statuses(&ok),
        ["PENDING", "SENDING", "SENT", "DELIVERED"]
    );
    assert_eq!(
        history_statuses(&complained),
        ["PENDING", "SENDING", "SENT", "DELIVERED", "COMPLAINED"]
    );
    let names = event_names(&w, ok["contactId"].as_str().unwrap()).await;
    assert_eq!(count(&names, "email.sent"), 1, "{names:?}");
    assert_eq!(count(&names, "email.delivery"), 1, "{names:?}");
    for (m, event) in [(&bounced, "email.bounce"), (&complained, "email.complaint")] {
        let contact_id = m["contactId"].as_str().unwrap();
        assert_eq!(contact(&w, contact_id).await["subscribed"], false, "{m}");
        let names = event_names(&w, contact_id).await;
        assert_eq!(count(&names, event), 1, "{names:?}");
        assert_eq!(count(&names, "contact.unsubscribed"), 1, "{names:?}");
    }
    for address in &to[..3] {
        assert_eq!(
            suppression(&w, address).await,
            None,
            "simulated: never suppressed"
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(w.sink.attempts(), 0, "nothing reached the relay");
    // Not on the list: the next message to the bouncing address goes through the path again.
    let again = json!({"to": "bounce+t1@simulator.herald.test", "from": format!("x@{DOMAIN}"),
        "subject": "S", "body": "B"});
    let answer = expect_json(send(&w, &again).await, 200).await;
    assert!(
        answer["data"]["emails"][0].get("skipped").is_none(),
        "{answer}"
    );
    wait_status(&w.app, key, &message_ids(&answer)[0], &["BOUNCED"], WAIT).await;
}
