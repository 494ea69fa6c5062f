//! One bad row never resends others: a contact or a whole project deleted while its messages
//! are in flight (handed to the relay, its 250 held back) leaves every other message handed to
//! the transport exactly once and SENT.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::{
    DOMAIN, MailWorld, mail_world, message_ids, verify_domain, wait_queue_settled, wait_status,
};

both_engines!(
    deleting_a_contact_mid_delivery_resends_nothing,
    deleting_a_project_mid_delivery_resends_nothing,
);

/// Recipients (`to`) of one message each; their ids in the same order.
async fn send_to(w: &MailWorld, key: &str, domain: &str, to: &[String]) -> Vec<String> {
    let body = json!({"to": to, "from": format!("x@{domain}"), "subject": "S", "body": "B"});
    let ids = message_ids(&expect_json(w.app.post("/v1/send", key, &body).await, 200).await);
    assert_eq!(ids.len(), to.len());
    ids
}

/// How many times each recipient was handed to the relay.
fn handed_over(w: &MailWorld) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for m in w.sink.messages() {
        for r in m.rcpt_to {
            *n.entry(r).or_insert(0) += 1;
        }
    }
    n
}

/// Waits until the relay holds `n` messages (their 250 held back), i.e. all are in flight.
async fn wait_in_flight(w: &MailWorld, n: usize) {
    let got = w.sink.wait_for(n, Duration::from_secs(30)).await;
    assert_eq!(got.len(), n, "messages in flight at the relay");
}

/// After the replies are released: every id ends SENT, and every recipient was handed over
/// exactly once, also after more than a lease (a resend would come when the lease expires).
async fn assert_each_once(w: &MailWorld, key: &str, ids: &[String], to: &[String]) {
    for id in ids {
        wait_status(&w.app, key, id, &["SENT"], Duration::from_secs(30)).await;
    }
    // A message whose record was rolled back would go out again once its 1 s lease expired:
    // move the clock past every lease, then wait until no send job is left to claim.
    w.app.clock.advance(Duration::from_secs(3));
    wait_queue_settled(&w.app, Duration::from_secs(30)).await;
    let counts = handed_over(w);
    for r in to {
        assert_eq!(counts.get(r), Some(&1), "{r} handed over once: {counts:?}");
    }
}

fn recipients(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}@example.org")).collect()
}

async fn deleting_a_contact_mid_delivery_resends_nothing(engine: Engine) {
    let w = mail_world(engine, |c| c.send_lease_secs = 1.0).await;
    let key = w.project.secret_key.clone();
    w.sink.hold_replies(true);
    let to = recipients("c", 12);
    let ids = send_to(&w, &key, DOMAIN, &to).await;
    wait_in_flight(&w, to.len()).await;

    let doomed = expect_json(w.app.get(&format!("/emails/{}", ids[0]), &key).await, 200).await;
    let contact = doomed["contactId"].as_str().expect("contact id").to_owned();
    let res = w
        .app
        .call(
            Method::DELETE,
            &format!("/contacts/{contact}"),
            Some(&key),
            None,
        )
        .await;
    assert!(
        res.status().is_success(),
        "delete contact: {}",
        res.status()
    );

    w.sink.hold_replies(false);
    assert_each_once(&w, &key, &ids, &to).await;
    let gone = expect_json(w.app.get(&format!("/emails/{}", ids[0]), &key).await, 200).await;
    assert_eq!(gone["contactId"], Value::Null, "{gone}");
}

async fn deleting_a_project_mid_delivery_resends_nothing(engine: Engine) {
    let w = mail_world(engine, |c| c.send_lease_secs = 1.0).await;
    let key = w.project.secret_key.clone();
    let other = w.app.project().await;
    verify_domain(&w.app, &other, &w.dns, "other-mail.com").await;
    w.sink.hold_replies(true);
    let kept_to = recipients("keep", 8);
    let doomed_to = recipients("doomed", 8);
    let kept = send_to(&w, &key, DOMAIN, &kept_to).await;
    send_to(&w, &other.secret_key, "other-mail.com", &doomed_to).await;
    wait_in_flight(&w, kept_to.len() + doomed_to.len()).await;

    let res = w
        .app
        .call_with(
            &other.owner,
            Method::DELETE,
            &format!("/users/@me/projects/{}", other.id),
            None,
            None,
        )
        .await;
    assert!(
        res.status().is_success(),
        "delete project: {}",
        res.status()
    );

    w.sink.hold_replies(false);
    let mut all = kept_to.clone();
    all.extend(doomed_to);
    assert_each_once(&w, &key, &kept, &all).await;
}
