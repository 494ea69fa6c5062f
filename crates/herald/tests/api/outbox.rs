//! The default transport: messages kept as DKIM-signed .eml files in the data directory,
//! readable through `GET /emails/{id}/raw`; reserved `.test` domains work at once; temporary
//! files left by a killed process are removed at startup, messages kept.

use std::time::Duration;

use mail_parser::MessageParser;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_error, expect_json};
use crate::mail_setup::{message_ids, outbox_project, wait_status};

both_engines!(
    outbox_keeps_the_exact_signed_bytes,
    history_names_the_transport_never_a_server_path,
    stale_temporary_files_are_removed_at_startup,
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

async fn stale_temporary_files_are_removed_at_startup(engine: Engine) {
    let stale = [
        ".0190aaaa-0000-7000-8000-000000000001.eml.0123456789abcdef0123456789abcdef.tmp",
        ".0190aaaa-0000-7000-8000-000000000002.eml.fedcba9876543210fedcba9876543210.tmp",
    ];
    let kept = "0190aaaa-0000-7000-8000-000000000003.eml";
    let mut outbox = std::path::PathBuf::new();
    // What a process killed mid-write leaves, placed before the server starts.
    let app = engine
        .app_with(|c| {
            outbox = c.data_dir.join("outbox");
            std::fs::create_dir_all(&outbox).unwrap();
            for name in stale {
                std::fs::write(outbox.join(name), b"half a mess").unwrap();
            }
            std::fs::write(outbox.join(kept), b"a whole message").unwrap();
        })
        .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while stale.iter().any(|n| outbox.join(n).exists()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "stale temporary files are still there"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        std::fs::read(outbox.join(kept)).unwrap(),
        b"a whole message"
    );
    // The server still writes its outbox afterwards.
    let p = outbox_project(&app).await;
    let body = json!({"to": "reader@example.org", "from": "news@shop.test", "subject": "Hi", "body": "<b>Hi</b>"});
    let answer = expect_json(app.post("/v1/send", &p.secret_key, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    wait_status(&app, &p.secret_key, id, &["SENT"], Duration::from_secs(15)).await;
    assert!(outbox.join(format!("{id}.eml")).exists());
    assert!(outbox.join(kept).exists());
}
