//! Attachments stored once: a request's attachment is one content-addressed blob however many
//! recipients (and requests) carry it, and every recipient receives it intact. Delivering them
//! holds no more than the node's delivery memory budget: a message waits its turn, one larger
//! than the whole budget goes alone, and every one arrives intact and DKIM-signed.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use herald_testkit::dkim_check::dkim_passes;
use mail_parser::{MessageParser, MimeHeaders};
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::{DOMAIN, mail_world, message_ids, send, wait_status};

both_engines!(
    fifty_recipients_share_one_stored_attachment,
    a_small_delivery_budget_hands_over_one_large_message_at_a_time,
);

const WAIT: Duration = Duration::from_secs(30);

async fn fifty_recipients_share_one_stored_attachment(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let project: uuid::Uuid = w.project.id.parse().unwrap();
    let pdf: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 253) as u8).collect();
    let to: Vec<String> = (0..50)
        .map(|i| format!("reader{i:02}@example.org"))
        .collect();
    let body = json!({
        "to": to, "from": format!("x@{DOMAIN}"), "subject": "Report", "body": "<p>Attached</p>",
        "attachments": [{"filename": "report.pdf", "contentType": "application/pdf", "content": STANDARD.encode(&pdf)}]
    });
    let answer = expect_json(send(&w, &body).await, 200).await;
    let ids = message_ids(&answer);
    assert_eq!(ids.len(), 50);
    assert_eq!(w.app.store.count_blobs(project).await.unwrap(), 1);
    // The same bytes in another request are still the same blob.
    let again = json!({
        "to": "late@example.org", "from": format!("x@{DOMAIN}"), "subject": "Report", "body": "B",
        "attachments": [{"filename": "copy.pdf", "contentType": "application/pdf", "content": STANDARD.encode(&pdf)}]
    });
    expect_json(send(&w, &again).await, 200).await;
    assert_eq!(w.app.store.count_blobs(project).await.unwrap(), 1);

    let got = w.sink.wait_for(51, WAIT).await;
    assert_eq!(got.len(), 51);
    for mail in &got {
        let parsed = MessageParser::default().parse(&mail.data).unwrap();
        let part = parsed
            .attachments()
            .find(|a| a.attachment_name().is_some_and(|n| n.ends_with(".pdf")))
            .expect("pdf part");
        assert_eq!(part.contents(), pdf.as_slice(), "to {:?}", mail.rcpt_to);
    }
    let mut rcpts: Vec<String> = got.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    rcpts.sort();
    rcpts.dedup();
    assert_eq!(rcpts.len(), 51, "every recipient once");

    let detail = wait_status(&w.app, &w.project.secret_key, &ids[7], &["SENT"], WAIT).await;
    let a = &detail["attachments"][0];
    assert_eq!(a["filename"], "report.pdf");
    assert_eq!(a["contentType"], "application/pdf");
    assert_eq!(a["size"], 200_000);
    assert!(a.get("content").is_none(), "bytes are not echoed");
    assert!(detail["bodyPurgedAt"].is_null());
}

/// A budget of 600 KiB: a message with a 200 KB attachment is estimated at about 480 KiB while
/// composed and 290 KiB while handed over, so no two fit at once; one with a 700 KB attachment
/// is over the whole budget and goes alone. With the sink holding its replies, the messages
/// handed over and not yet answered are the deliveries in flight: one, however long we look.
async fn a_small_delivery_budget_hands_over_one_large_message_at_a_time(engine: Engine) {
    let w = mail_world(engine, |c| c.send_memory_budget_bytes = 600 * 1024).await;
    w.sink.hold_replies(true);
    let mut sent = Vec::new();
    for i in 0..6u32 {
        let size = if i == 3 { 700_000 } else { 200_000 };
        let content: Vec<u8> = (0..size).map(|n| ((n * 7 + i) % 253) as u8).collect();
        let body = json!({
            "to": format!("reader{i}@example.org"), "from": format!("x@{DOMAIN}"),
            "subject": format!("Report {i}"), "body": "<p>Attached</p>",
            "attachments": [{"filename": format!("r{i}.bin"), "contentType": "application/octet-stream",
                "content": STANDARD.encode(&content)}]
        });
        expect_json(send(&w, &body).await, 200).await;
        sent.push((format!("reader{i}@example.org"), content));
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    while w.sink.unreplied() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing was handed over"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Without the budget the others would be handed over meanwhile (32 relay connections).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(w.sink.unreplied(), 1, "one delivery in flight at a time");
    w.sink.hold_replies(false);

    let got = w.sink.wait_for(6, WAIT).await;
    assert_eq!(got.len(), 6);
    for (to, content) in &sent {
        let mail = got
            .iter()
            .find(|m| m.rcpt_to == [to.clone()])
            .unwrap_or_else(|| panic!("nothing for {to}"));
        let parsed = MessageParser::default().parse(&mail.data).unwrap();
        assert_eq!(parsed.attachment(0).unwrap().contents(), content.as_slice());
        assert!(
            dkim_passes(&mail.data, DOMAIN, &w.selector, &w.dkim_txt).await,
            "DKIM must verify for {to}"
        );
    }
}
