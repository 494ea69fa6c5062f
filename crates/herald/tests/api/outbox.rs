//! The default transport: messages kept as DKIM-signed .eml files in the data directory,
//! readable through `GET /emails/{id}/raw`; reserved `.test` domains work at once.

use std::time::Duration;

use mail_parser::MessageParser;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_error, expect_json};
use crate::mail_setup::{message_ids, outbox_project, wait_status};

both_engines!(
    outbox_keeps_the_exact_signed_bytes,
    history_names_the_transport_never_a_server_path,
);

async fn outbox_keeps_the_exact_signed_bytes(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let d = expect_json(
        app.post("/domains", sk, &json!({"domain": "shop.test"}))
            .await,
        201,
    )
    .await;
    assert_eq!(
        d["status"], "VERIFIED",
        "reserved domains are verified at once with the outbox: {d}"
    );
    let body = json!({"to": "reader@example.org", "from": "news@shop.test", "subject": "Hello {{email}}", "body": "<b>Hi</b>"});
    let answer = expect_json(app.post("/v1/send", sk, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    wait_status(&app, sk, id, &["SENT"], Duration::from_secs(15)).await;
    let res = app.get(&format!("/emails/{id}/raw"), sk).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "message/rfc822");
    let raw = res.bytes().await.unwrap();
    assert!(raw.starts_with(b"DKIM-Signature:"), "signed");
    let parsed = MessageParser::default().parse(&raw[..]).unwrap();
    assert_eq!(parsed.subject(), Some("Hello reader@example.org"));
    let on_disk =
        std::fs::read(app.config.data_dir.join("outbox").join(format!("{id}.eml"))).unwrap();
    assert_eq!(on_disk, raw.to_vec());
    let other = app.project().await;
    expect_error(
        app.get(&format!("/emails/{id}/raw"), &other.secret_key)
            .await,
        404,
        "NOT_FOUND",
    )
    .await;
    expect_error(
        app.get(&format!("/emails/{id}"), &other.secret_key).await,
        404,
        "NOT_FOUND",
    )
    .await;
}

/// The SENT entry of a message's history shows the transport and its reply; no entry shows
/// the data directory (where the outbox lives on the server).
async fn history_names_the_transport_never_a_server_path(engine: Engine) {
    let app = engine.app().await;
    let p = outbox_project(&app).await;
    let sk = &p.secret_key;
    let body =
        json!({"to": "reader@example.org", "from": "news@shop.test", "subject": "S", "body": "B"});
    let answer = expect_json(app.post("/v1/send", sk, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    let m = wait_status(&app, sk, id, &["SENT"], Duration::from_secs(15)).await;
    let text = m.to_string();
    let data_dir = app.config.data_dir.to_string_lossy().into_owned();
    assert!(!text.contains(&data_dir), "{data_dir} in {text}");
    let history = m["history"].as_array().expect("history");
    let sent = history
        .iter()
        .find(|h| h["status"] == "SENT")
        .expect("a SENT entry");
    assert_eq!(
        sent["detail"],
        format!("250 kept as {id}.eml (via the local outbox)"),
        "{m}"
    );
    for h in history {
        let detail = h["detail"].as_str().unwrap_or("");
        assert!(!detail.contains('/'), "a path in {detail:?}");
    }
}
