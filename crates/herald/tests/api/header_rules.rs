//! One rule in one place: custom headers, subjects, display names and addresses answer the
//! same on `/v1/send` and `/templates` (herald-core's rules), and whatever `/v1/send` accepts
//! is delivered (the MIME builder applies the same rule, so nothing answered 200 FAILS for a
//! header reason).

use std::time::Duration;

use mail_parser::MessageParser;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, expect_error, expect_json};
use crate::mail_setup::{DOMAIN, MailWorld, mail_world, message_ids, send, wait_status};

both_engines!(
    threading_and_borderline_headers_are_delivered,
    every_reserved_header_is_refused,
    control_characters_are_refused_on_both_endpoints,
    subject_name_and_address_rules_answer_alike,
    a_rendered_subject_never_carries_a_control_character,
);

const WAIT: Duration = Duration::from_secs(15);

/// Herald writes these itself (DECISIONS.md "/v1/send", plus Reply-To from `reply`). Written
/// out here on purpose, not taken from `herald_core::headers`: the test states the contract.
const RESERVED: [&str; 18] = [
    "From",
    "To",
    "Cc",
    "Bcc",
    "Subject",
    "Date",
    "Message-ID",
    "MIME-Version",
    "Content-Type",
    "Content-Transfer-Encoding",
    "Content-Disposition",
    "DKIM-Signature",
    "Return-Path",
    "Received",
    "Sender",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
    "Reply-To",
];

fn base() -> Value {
    json!({"to": "ada@example.org", "from": format!("hello@{DOMAIN}"), "subject": "S", "body": "<p>B</p>"})
}

/// The single `{field, code, message}` of a 422 answer.
fn only_error(err: &Value) -> (String, String, String) {
    let errors = err["error"]["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{err}");
    let e = &errors[0];
    let text = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
    (text("field"), text("code"), text("message"))
}

async fn send_error(w: &MailWorld, body: &Value) -> (String, String, String) {
    only_error(&expect_error(send(w, body).await, 422, "VALIDATION_ERROR").await)
}

async fn template_error(w: &MailWorld, body: &Value) -> (String, String, String) {
    let res = w.app.post("/templates", &w.project.secret_key, body).await;
    only_error(&expect_error(res, 422, "VALIDATION_ERROR").await)
}

fn template(k: &str, v: Value) -> Value {
    let mut t = json!({"name": "T", "type": "TRANSACTIONAL", "subject": "S", "body": "<p>B</p>"});
    t[k] = v;
    t
}

async fn threading_and_borderline_headers_are_delivered(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let long_name = format!("X-{}", "N".repeat(74));
    let mut body = base();
    body["headers"] = json!({
        "In-Reply-To": "<parent@example.org>",
        "References": "<root@example.org> <parent@example.org>",
        long_name.clone(): "76 characters of name",
        "Content-ID": "<top@example.org>",
        "X-Tabbed": "a\tb",
        "X-Words": "word ".repeat(190).trim_end(),
    });
    let answer = expect_json(send(&w, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    let m = wait_status(&w.app, sk, id, &["SENT", "FAILED"], WAIT).await;
    assert_eq!(m["status"], "SENT", "accepted headers are delivered: {m}");
    let got = w.sink.wait_for(1, WAIT).await;
    let parsed = MessageParser::default()
        .parse(&got[0].data)
        .expect("parses");
    assert_eq!(parsed.in_reply_to().as_text(), Some("parent@example.org"));
    let refs = parsed.references().as_text_list().expect("references");
    assert_eq!(refs, ["root@example.org", "parent@example.org"]);
    // Folded after the long name; unfolding gives the value back.
    let unfolded = parsed
        .header_raw(long_name.as_str())
        .map(|v| v.replace("\r\n", "").trim().to_owned());
    assert_eq!(unfolded.as_deref(), Some("76 characters of name"));
}

async fn every_reserved_header_is_refused(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    for name in RESERVED {
        for spelled in [name.to_owned(), name.to_ascii_lowercase()] {
            let mut body = base();
            body["headers"] = json!({spelled.clone(): "v"});
            let (field, code, _) = send_error(&w, &body).await;
            assert_eq!(field, format!("headers.{spelled}"));
            assert_eq!(code, "reserved_header", "{spelled}");
        }
    }
    let long = format!("X-{}", "N".repeat(75));
    for (name, value, code) in [
        (long.as_str(), "v", "invalid_header_name"),
        ("X:B", "v", "invalid_header_name"),
        ("X-A", "v\r\nBcc: evil@example.org", "invalid_characters"),
        ("X-A", "nul\u{0}", "invalid_characters"),
    ] {
        let mut body = base();
        body["headers"] = json!({name: value});
        let (field, got, _) = send_error(&w, &body).await;
        assert_eq!(
            (field.as_str(), got.as_str()),
            (format!("headers.{name}").as_str(), code)
        );
    }
    let list = expect_json(w.app.get("/emails", &w.project.secret_key).await, 200).await;
    assert_eq!(list["total"], 0, "nothing was queued");
}

async fn control_characters_are_refused_on_both_endpoints(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    for c in ['\u{1b}', '\u{b}', '\u{c}', '\u{7}', '\r', '\n'] {
        let bad = format!("before{c}after");
        let mut body = base();
        body["subject"] = json!(bad);
        let sent = send_error(&w, &body).await;
        let templ = template_error(&w, &template("subject", json!(bad))).await;
        assert_eq!(sent.0, "subject");
        assert_eq!(sent.1, "invalid_characters", "{c:?}");
        assert_eq!(
            (&sent.1, &sent.2),
            (&templ.1, &templ.2),
            "same code and message"
        );

        let mut body = base();
        body["from"] = json!({"name": bad, "email": format!("hello@{DOMAIN}")});
        let sent = send_error(&w, &body).await;
        let templ = template_error(&w, &template("fromName", json!(bad))).await;
        assert_eq!(
            (sent.0.as_str(), templ.0.as_str()),
            ("from.name", "fromName")
        );
        assert_eq!(sent.1, "invalid_characters", "{c:?}");
        assert_eq!(
            (&sent.1, &sent.2),
            (&templ.1, &templ.2),
            "same code and message"
        );

        let mut body = base();
        body["headers"] = json!({"X-Note": bad});
        let (field, code, _) = send_error(&w, &body).await;
        assert_eq!(
            (field.as_str(), code.as_str()),
            ("headers.X-Note", "invalid_characters")
        );
    }
    // A tab is not a control character to refuse.
    let mut body = base();
    body["subject"] = json!("tab\there");
    expect_json(send(&w, &body).await, 200).await;
}

async fn subject_name_and_address_rules_answer_alike(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    for subject in [json!(""), json!("   "), json!("s".repeat(999))] {
        let mut body = base();
        body["subject"] = subject.clone();
        let sent = send_error(&w, &body).await;
        let templ = template_error(&w, &template("subject", subject.clone())).await;
        assert_eq!(sent, templ, "{subject}");
    }
    let long_name = "n".repeat(201);
    let mut body = base();
    body["from"] = json!({"name": long_name, "email": format!("hello@{DOMAIN}")});
    let sent = send_error(&w, &body).await;
    let templ = template_error(&w, &template("fromName", json!(long_name))).await;
    assert_eq!((&sent.1, &sent.2), (&templ.1, &templ.2));
    assert_eq!(sent.1, "too_long");

    let mut body = base();
    body["from"] = json!("not an address");
    let sent = send_error(&w, &body).await;
    let templ = template_error(&w, &template("from", json!("not an address"))).await;
    assert_eq!(sent, templ);
    let mut body = base();
    body["reply"] = json!("reply@");
    let sent = send_error(&w, &body).await;
    let templ = template_error(&w, &template("replyTo", json!("reply@"))).await;
    assert_eq!((&sent.1, &sent.2), (&templ.1, &templ.2));
    assert_eq!(sent.1, "invalid_email");
}

async fn a_rendered_subject_never_carries_a_control_character(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let mut body = base();
    body["subject"] = json!("Hi {{nick}}");
    body["data"] = json!({"nick": {"value": "a\u{1b}[31mb\u{c}c", "persistent": false}});
    let answer = expect_json(send(&w, &body).await, 200).await;
    let m = wait_status(
        &w.app,
        sk,
        &message_ids(&answer)[0],
        &["SENT", "FAILED"],
        WAIT,
    )
    .await;
    assert_eq!(m["status"], "SENT", "{m}");
    assert_eq!(m["subject"], "Hi a [31mb c");
    let got = w.sink.wait_for(1, WAIT).await;
    let parsed = MessageParser::default()
        .parse(&got[0].data)
        .expect("parses");
    assert_eq!(parsed.subject(), Some("Hi a [31mb c"));
}
