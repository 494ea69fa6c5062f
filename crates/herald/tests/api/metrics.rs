//! `GET /metrics`: off by default, guarded by its bearer token, and after a send it counts the
//! request, the delivery and the relay's reply, with the queue and message gauges read from
//! the database.

use std::time::Duration;

use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_error, expect_json};
use crate::mail_setup::{message_ids, outbox_project, wait_status};

both_engines!(
    metrics_are_off_without_a_token,
    metrics_need_the_token_and_count_a_send,
);

const TOKEN: &str = "metrics-token-for-tests";

async fn metrics_are_off_without_a_token(engine: Engine) {
    let app = engine.app().await;
    let res = app.client.get(app.url("/metrics")).send().await.unwrap();
    expect_error(res, 404, "NOT_FOUND").await;
    let res = app.get("/metrics", "anything").await;
    expect_error(res, 404, "NOT_FOUND").await;
}

/// The value of the sample whose line starts with `name{` and has every label of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| labels.iter().all(|want| l.contains(want)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn metrics_need_the_token_and_count_a_send(engine: Engine) {
    let app = engine
        .app_with(|c| c.metrics_token = Some(TOKEN.into()))
        .await;
    let res = app.client.get(app.url("/metrics")).send().await.unwrap();
    expect_error(res, 401, "MISSING_AUTH").await;
    expect_error(
        app.get("/metrics", "wrong-token").await,
        401,
        "UNAUTHORIZED",
    )
    .await;

    let p = outbox_project(&app).await;
    let sk = &p.secret_key;
    let body =
        json!({"to": "reader@example.org", "from": "news@shop.test", "subject": "S", "body": "B"});
    let answer = expect_json(app.post("/v1/send", sk, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    wait_status(&app, sk, id, &["SENT"], Duration::from_secs(15)).await;
    // The sign-up's verification mail is a message too (of the system project).
    crate::mail_setup::wait_queue_settled(&app, Duration::from_secs(15)).await;

    let res = app.get("/metrics", TOKEN).await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = res.text().await.unwrap();
    let sends = sample(
        &text,
        "herald_http_requests_total",
        &["route=\"/v1/send\"", "method=\"POST\"", "status=\"200\""],
    );
    assert_eq!(sends, Some(1.0), "{text}");
    assert!(
        sample(
            &text,
            "herald_http_requests_total",
            &["route=\"/metrics\"", "status=\"401\""]
        )
        .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        text.contains("herald_http_request_duration_seconds_bucket{"),
        "{text}"
    );
    assert!(
        sample(&text, "herald_messages_total", &["outcome=\"sent\""]).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        sample(&text, "herald_relay_replies_total", &["class=\"2xx\""]).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        text.contains("herald_delivery_latency_seconds_count"),
        "{text}"
    );
    assert_eq!(
        sample(&text, "herald_messages_by_status", &["status=\"SENT\""]),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "herald_messages_by_status", &["status=\"FAILED\""]),
        Some(0.0),
        "{text}"
    );
    assert!(
        text.contains("herald_queue_depth") || !text.contains("state="),
        "{text}"
    );
    // Ids never become labels.
    assert!(!text.contains(id.as_str()), "{text}");
}
