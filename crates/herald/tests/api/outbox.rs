//! The default transport: messages kept as DKIM-signed .eml files in the data directory,
//! readable through `GET /emails/{id}/raw`; reserved `.test` domains work at once.

use std::time::Duration;

use mail_parser::MessageParser;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_error, expect_json};
use crate::mail_setup::{message_ids, wait_status};

both_engines!(outbox_keeps_the_exact_signed_bytes);

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
