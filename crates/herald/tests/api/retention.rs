//! Retention: bodies and attachments go after `retention_days` (metadata and history stay),
//! idempotency keys after 24 h, finished jobs after 7 days; time is moved with the test clock
//! and the purge is the one the engine's periodic task runs.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::Method;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_error, expect_json};
use crate::mail_setup::{DOMAIN, mail_world, message_ids, send, wait_status};

both_engines!(
    bodies_and_attachments_are_purged_after_the_retention_period,
    idempotency_keys_are_purged_after_a_day,
    finished_jobs_are_purged_after_a_week,
);

const WAIT: Duration = Duration::from_secs(20);
const DAY: Duration = Duration::from_secs(24 * 3600);

async fn bodies_and_attachments_are_purged_after_the_retention_period(engine: Engine) {
    let w = mail_world(engine, |c| c.retention_days = 30).await;
    let (sk, project) = (&w.project.secret_key, w.project.id.parse().unwrap());
    let file = STANDARD.encode(b"quarterly numbers");
    let mail = |to: &str| {
        json!({"to": to, "from": format!("x@{DOMAIN}"), "subject": "Numbers", "body": "<p>Secret body</p>",
            "attachments": [{"filename": "q.txt", "contentType": "text/plain", "content": file}]})
    };
    let old =
        message_ids(&expect_json(send(&w, &mail("old@example.org")).await, 200).await)[0].clone();
    wait_status(&w.app, sk, &old, &["SENT"], WAIT).await;
    w.app.clock.advance(20 * DAY);
    let newer =
        message_ids(&expect_json(send(&w, &mail("new@example.org")).await, 200).await)[0].clone();
    wait_status(&w.app, sk, &newer, &["SENT"], WAIT).await;

    // Day 31: the old message is past retention, the newer one (same blob) is not.
    w.app.clock.advance(11 * DAY);
    let report = w.app.engine.purge_expired().await.unwrap();
    // The old message and the sign-up's verification mail (a message of the system project).
    assert_eq!((report.bodies, report.blobs), (2, 0), "{report:?}");
    let purged = expect_json(w.app.get(&format!("/emails/{old}"), sk).await, 200).await;
    assert!(purged["html"].is_null(), "{purged}");
    assert!(purged["bodyPurgedAt"].is_string(), "{purged}");
    assert_eq!(purged["subject"], "Numbers");
    assert_eq!(purged["status"], "SENT");
    assert_eq!(purged["to"], "old@example.org");
    assert_eq!(
        purged["attachments"][0]["filename"], "q.txt",
        "metadata stays"
    );
    let history: Vec<&str> = purged["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["status"].as_str().unwrap())
        .collect();
    assert!(history.contains(&"SENT"), "history stays: {history:?}");
    let kept = expect_json(w.app.get(&format!("/emails/{newer}"), sk).await, 200).await;
    assert_eq!(kept["html"], "<p>Secret body</p>");
    assert!(kept["bodyPurgedAt"].is_null());
    assert_eq!(
        w.app.store.count_blobs(project).await.unwrap(),
        1,
        "still referenced"
    );
    let again = w.app.engine.purge_expired().await.unwrap();
    assert_eq!(again.bodies, 0, "purged once");

    // Day 51: the newer message goes too, and with it the blob.
    w.app.clock.advance(20 * DAY);
    let report = w.app.engine.purge_expired().await.unwrap();
    assert_eq!((report.bodies, report.blobs), (1, 1), "{report:?}");
    assert_eq!(w.app.store.count_blobs(project).await.unwrap(), 0);
    let list = expect_json(w.app.get("/emails", sk).await, 200).await;
    assert_eq!(list["total"], 2, "metadata stays");
}

async fn idempotency_keys_are_purged_after_a_day(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let body =
        json!({"to": "a@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let post = || {
        w.app
            .client
            .request(Method::POST, w.app.url("/v1/send"))
            .bearer_auth(&w.project.secret_key)
            .header("Idempotency-Key", "invoice-7")
            .json(&body)
            .send()
    };
    expect_json(post().await.unwrap(), 200).await;
    expect_error(post().await.unwrap(), 409, "IDEMPOTENCY_KEY_REUSED").await;
    w.app.clock.advance(Duration::from_secs(23 * 3600));
    assert_eq!(
        w.app.engine.purge_expired().await.unwrap().idempotency_keys,
        0
    );
    expect_error(post().await.unwrap(), 409, "IDEMPOTENCY_KEY_REUSED").await;
    w.app.clock.advance(Duration::from_secs(2 * 3600));
    assert_eq!(
        w.app.engine.purge_expired().await.unwrap().idempotency_keys,
        1
    );
    expect_json(post().await.unwrap(), 200).await;
}

async fn finished_jobs_are_purged_after_a_week(engine: Engine) {
    let app = engine.app_with(|c| c.workers = false).await;
    let p = app.project().await;
    let project = Some(p.id.parse().unwrap());
    let now = app.engine.now();
    let mut tx = app.store.begin().await.unwrap();
    herald_store::jobs::enqueue(&mut tx, project, "test-dead", &json!({}), now, 1)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    // Dead-lettered by the worker holding its lease.
    let claimed = app
        .store
        .claim_jobs("test-dead", 1, now, 10_000)
        .await
        .unwrap();
    let mut tx = app.store.begin().await.unwrap();
    assert!(
        herald_store::jobs::fail(
            &mut tx,
            claimed[0].id,
            claimed[0].lease_token,
            "gave up",
            now
        )
        .await
        .unwrap()
    );
    // Still queued a long time: never purged, whatever its age.
    herald_store::jobs::enqueue(&mut tx, project, "test-waiting", &json!({}), now, 1)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    app.clock.advance(6 * DAY);
    assert_eq!(app.engine.purge_expired().await.unwrap().jobs, 0);
    app.clock.advance(2 * DAY);
    assert_eq!(app.engine.purge_expired().await.unwrap().jobs, 1);
    assert_eq!(
        app.engine.purge_expired().await.unwrap().jobs,
        0,
        "the waiting job stays"
    );
    assert!(
        app.store
            .next_job_due("test-waiting")
            .await
            .unwrap()
            .is_some()
    );
}
