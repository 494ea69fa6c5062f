//! Header values of every length SPEC.md allows, and international addresses: what reaches
//! the relay (the loopback SMTP sink, with and without SMTPUTF8) and the local outbox.

use std::time::Duration;

use herald_testkit::dkim_check::dkim_passes;
use mail_parser::MessageParser;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::{DOMAIN, mail_world, message_ids, outbox_project, send, wait_status};

both_engines!(
    a_998_character_subject_and_a_long_custom_header_are_delivered,
    an_international_domain_goes_out_as_a_labels,
    a_utf8_local_part_is_sent_with_smtputf8_when_the_relay_offers_it,
    a_utf8_local_part_fails_clearly_when_the_relay_lacks_smtputf8,
    the_local_outbox_accepts_a_utf8_local_part,
    an_international_sender_domain_is_stored_and_used_as_a_labels,
);

const WAIT: Duration = Duration::from_secs(15);

fn longest_line(raw: &[u8]) -> usize {
    raw.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l).len())
        .max()
        .unwrap_or(0)
}

async fn a_998_character_subject_and_a_long_custom_header_are_delivered(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let subject = "s".repeat(998);
    let name = format!("X-{}", "H".repeat(74));
    let value = format!("token={}", "v".repeat(992));
    let body = json!({"to": "ada@example.org", "from": format!("hello@{DOMAIN}"),
        "subject": subject, "body": "<p>Hi</p>", "headers": {name.clone(): value}});
    let answer = expect_json(send(&w, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    wait_status(&w.app, &w.project.secret_key, id, &["SENT"], WAIT).await;
    let got = w.sink.wait_for(1, WAIT).await;
    let data = &got[0].data;
    assert!(longest_line(data) <= 998, "{}", longest_line(data));
    let parsed = MessageParser::default().parse(data).expect("parses");
    assert_eq!(parsed.subject(), Some(subject.as_str()));
    // Unknown headers are RFC 2047-decoded only by a parser asked to.
    let parsed = MessageParser::new()
        .header_text(mail_parser::HeaderName::Other(name.clone().into()))
        .parse(data)
        .expect("parses");
    assert_eq!(
        parsed.header(name.as_str()).and_then(|h| h.as_text()),
        Some(value.as_str())
    );
    assert!(dkim_passes(data, DOMAIN, &w.selector, &w.dkim_txt).await);
}

async fn an_international_domain_goes_out_as_a_labels(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let body = json!({"to": "User@Bücher.example", "from": format!("hello@{DOMAIN}"),
        "subject": "Grüße", "body": "<p>Hi</p>"});
    let answer = expect_json(send(&w, &body).await, 200).await;
    assert_eq!(
        answer["data"]["emails"][0]["contact"]["email"],
        "user@bücher.example"
    );
    let id = &message_ids(&answer)[0];
    wait_status(&w.app, &w.project.secret_key, id, &["SENT"], WAIT).await;
    let got = w.sink.wait_for(1, WAIT).await;
    assert_eq!(got[0].rcpt_to, vec!["user@xn--bcher-kva.example"]);
    assert!(
        !got[0].mail_parameters.iter().any(|p| p == "SMTPUTF8"),
        "an ASCII local part needs no SMTPUTF8: {:?}",
        got[0].mail_parameters
    );
    assert!(got[0].data.is_ascii(), "the whole message stays 7-bit");
    let parsed = MessageParser::default()
        .parse(&got[0].data)
        .expect("parses");
    let to = parsed.to().and_then(|t| t.first()).expect("To");
    assert_eq!(to.address(), Some("user@xn--bcher-kva.example"));
}

async fn a_utf8_local_part_is_sent_with_smtputf8_when_the_relay_offers_it(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let body = json!({"to": "josé@bücher.example", "from": format!("hello@{DOMAIN}"),
        "subject": "Hola", "body": "<p>Hi</p>"});
    let answer = expect_json(send(&w, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    wait_status(&w.app, &w.project.secret_key, id, &["SENT"], WAIT).await;
    let got = w.sink.wait_for(1, WAIT).await;
    assert_eq!(got[0].rcpt_to, vec!["josé@xn--bcher-kva.example"]);
    assert!(
        got[0].mail_parameters.iter().any(|p| p == "SMTPUTF8"),
        "{:?}",
        got[0].mail_parameters
    );
    let parsed = MessageParser::default()
        .parse(&got[0].data)
        .expect("parses");
    let to = parsed.to().and_then(|t| t.first()).expect("To");
    assert_eq!(to.address(), Some("josé@xn--bcher-kva.example"));
    assert!(dkim_passes(&got[0].data, DOMAIN, &w.selector, &w.dkim_txt).await);
}

async fn a_utf8_local_part_fails_clearly_when_the_relay_lacks_smtputf8(engine: Engine) {
    // Before the app connects: no pooled connection may have seen SMTPUTF8 offered.
    let sink = herald_testkit::smtp_sink::SmtpSink::start().await.unwrap();
    sink.advertise_smtputf8(false);
    let w = crate::mail_setup::mail_world_on(sink, engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let body = json!({"to": ["josé@bücher.example", "user@bücher.example"],
        "from": format!("hello@{DOMAIN}"), "subject": "Hola", "body": "<p>Hi</p>"});
    let answer = expect_json(send(&w, &body).await, 200).await;
    let ids = message_ids(&answer);
    let failed = wait_status(&w.app, sk, &ids[0], &["FAILED", "SENT"], WAIT).await;
    assert_eq!(failed["status"], "FAILED", "{failed}");
    let reason = failed["lastError"].as_str().unwrap_or_default();
    assert!(
        reason.contains("does not support SMTPUTF8"),
        "the reason names the missing extension: {failed}"
    );
    assert_eq!(failed["attempts"], 1, "not retried: {failed}");
    // The recipient whose address needs no SMTPUTF8 is delivered, in A-labels.
    wait_status(&w.app, sk, &ids[1], &["SENT"], WAIT).await;
    let got = w.sink.wait_for(1, WAIT).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].rcpt_to, vec!["user@xn--bcher-kva.example"]);
    assert_eq!(w.sink.attempts(), 1, "the UTF-8 message never reached DATA");
}

async fn the_local_outbox_accepts_a_utf8_local_part(engine: Engine) {
    let app = engine.app().await;
    let p = outbox_project(&app).await;
    let sk = &p.secret_key;
    let body = json!({"to": "josé@bücher.example", "from": "news@shop.test",
        "subject": "Hola", "body": "<p>Hi</p>"});
    let answer = expect_json(app.post("/v1/send", sk, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    wait_status(&app, sk, id, &["SENT"], WAIT).await;
    let raw = app
        .get(&format!("/emails/{id}/raw"), sk)
        .await
        .bytes()
        .await
        .expect("raw");
    let parsed = MessageParser::default().parse(&raw[..]).expect("parses");
    let to = parsed.to().and_then(|t| t.first()).expect("To");
    assert_eq!(to.address(), Some("josé@xn--bcher-kva.example"));
}

async fn an_international_sender_domain_is_stored_and_used_as_a_labels(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let added = expect_json(
        app.post("/domains", sk, &json!({"domain": "Bücher.test"}))
            .await,
        201,
    )
    .await;
    assert_eq!(added["domain"], "xn--bcher-kva.test", "{added}");
    // The same domain in either form is one domain.
    let again = app
        .post("/domains", sk, &json!({"domain": "xn--bcher-kva.test"}))
        .await;
    assert_eq!(again.status(), 409);
    // A sender on the Unicode form of the domain is the verified domain.
    let body = json!({"to": "reader@example.org", "from": "news@bücher.test",
        "subject": "Hallo", "body": "<p>Hi</p>"});
    let answer = expect_json(app.post("/v1/send", sk, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    wait_status(&app, sk, id, &["SENT"], WAIT).await;
    let raw = app
        .get(&format!("/emails/{id}/raw"), sk)
        .await
        .bytes()
        .await
        .expect("raw");
    assert!(
        raw.windows(22).any(|w| w == b"d=xn--bcher-kva.test; "),
        "signed by the A-label domain"
    );
}
