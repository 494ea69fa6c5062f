//! `/v1/send` end to end: validation, durable acceptance, delivery over real SMTP with DKIM
//! verified against the key published in DNS, retries, permanent failures, idempotency.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use herald_testkit::dkim_check::dkim_passes;
use herald_testkit::smtp_sink::SinkMode;
use mail_parser::{MessageParser, MimeHeaders};
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, error_fields, expect_error, expect_json};
use crate::mail_setup::{
    DOMAIN, mail_world, message_ids, send, wait_message, wait_queue_settled, wait_status,
};

both_engines!(
    send_delivers_signed_mime_over_smtp,
    send_rejects_bad_input_with_field_paths,
    send_refuses_an_unverified_sender_domain,
    send_needs_the_secret_key,
    send_with_an_idempotency_key_runs_once,
    send_carries_attachments_and_limits_them,
    send_applies_subscription_rules,
    transient_refusal_is_retried_and_delivered_once,
    permanent_refusal_bounces_the_message_with_the_reply,
    relay_down_is_retried_until_it_returns,
    throttle_spaces_a_projects_sends,
    send_uses_a_template_with_overrides,
    marketing_template_skips_unsubscribed_contacts,
);

const WAIT: Duration = Duration::from_secs(15);

async fn send_delivers_signed_mime_over_smtp(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let res = send(
        &w,
        &json!({
            "to": ["ada@example.org", {"name": "Bob B", "email": "bob@example.org"}],
            "from": {"name": "Acme", "email": format!("hello@{DOMAIN}")},
            "subject": "Hi {{firstName ?? \"there\"}}",
            "body": "<p>Hello {{firstName ?? \"friend\"}}, your plan is {{plan}}. <a href=\"https://acme.example/x\">Go</a></p>",
            "data": {"plan": "<pro>", "firstName": {"value": "Ada", "persistent": false}},
            "headers": {"X-Campaign": "welcome"},
            "reply": format!("support@{DOMAIN}"),
        }),
    )
    .await;
    let answer = expect_json(res, 200).await;
    assert_eq!(answer["success"], true);
    assert!(answer["data"]["timestamp"].as_str().unwrap().ends_with('Z'));
    let emails = answer["data"]["emails"].as_array().unwrap();
    assert_eq!(emails.len(), 2);
    assert_eq!(emails[0]["contact"]["email"], "ada@example.org");
    for id in message_ids(&answer) {
        let m = wait_status(&w.app, sk, &id, &["SENT"], WAIT).await;
        let history: Vec<&str> = m["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["status"].as_str().unwrap())
            .collect();
        assert_eq!(history, vec!["PENDING", "SENDING", "SENT"]);
        assert!(m["sentAt"].as_str().is_some());
    }
    let got = w.sink.wait_for(2, WAIT).await;
    assert_eq!(got.len(), 2);
    let ada = got
        .iter()
        .find(|m| m.rcpt_to == vec!["ada@example.org"])
        .expect("ada's message");
    assert_eq!(ada.mail_from, format!("hello@{DOMAIN}"));
    let parsed = MessageParser::default().parse(&ada.data).expect("parses");
    assert_eq!(parsed.subject(), Some("Hi Ada"));
    let from = parsed.from().and_then(|f| f.first()).unwrap();
    assert_eq!(from.name(), Some("Acme"));
    assert_eq!(from.address(), Some(format!("hello@{DOMAIN}").as_str()));
    assert_eq!(
        parsed.header_raw("X-Campaign").map(str::trim),
        Some("welcome")
    );
    assert!(
        parsed
            .message_id()
            .unwrap()
            .ends_with(&format!("@{DOMAIN}"))
    );
    let html = parsed.body_html(0).unwrap();
    assert!(
        html.contains("Hello Ada, your plan is &lt;pro&gt;."),
        "{html}"
    );
    let text = parsed.body_text(0).unwrap();
    assert!(text.contains("Go (https://acme.example/x)"), "{text}");
    assert!(parsed.content_type().unwrap().c_subtype.as_deref() == Some("alternative"));
    assert!(
        dkim_passes(&ada.data, DOMAIN, &w.selector, &w.dkim_txt).await,
        "DKIM must verify"
    );
    let mut tampered = ada.data.clone();
    let pos = tampered.windows(5).position(|x| x == b"Hello").unwrap();
    tampered[pos] = b'J';
    assert!(!dkim_passes(&tampered, DOMAIN, &w.selector, &w.dkim_txt).await);

    // The contact was created unsubscribed, kept the stored data, not the transient value.
    let cid = emails[0]["contact"]["id"].as_str().unwrap();
    let c = expect_json(w.app.get(&format!("/contacts/{cid}"), sk).await, 200).await;
    assert_eq!(c["subscribed"], false);
    assert_eq!(c["data"], json!({"plan": "<pro>"}));
    let ev = expect_json(w.app.get(&format!("/events/contact/{cid}"), sk).await, 200).await;
    assert_eq!(ev["events"][0]["name"], "email.sent");
    let list = expect_json(w.app.get("/emails?status=SENT", sk).await, 200).await;
    assert_eq!(list["total"], 2);
}

async fn send_rejects_bad_input_with_field_paths(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let from = format!("hello@{DOMAIN}");
    let ok = json!({"to": "a@example.org", "from": from, "subject": "S", "body": "<p>B</p>"});
    let with = |k: &str, v: Value| {
        let mut b = ok.clone();
        b[k] = v;
        b
    };
    let without = |k: &str| {
        let mut b = ok.clone();
        b.as_object_mut().unwrap().remove(k);
        b
    };
    let cases = vec![
        (without("to"), "to"),
        (with("to", json!("nope")), "to"),
        (with("to", json!(["a@example.org", "bad"])), "to.1"),
        (with("to", json!([{"name": "x"}])), "to.0.email"),
        (without("subject"), "subject"),
        (with("subject", json!("two\nlines")), "subject"),
        (with("subject", json!("x".repeat(999))), "subject"),
        (with("subject", json!("")), "subject"),
        (without("body"), "body"),
        (without("from"), "from"),
        (with("from", json!("not an address")), "from"),
        (with("reply", json!("nope")), "reply"),
        (
            with("headers", json!({"X-A": "v\r\nBcc: evil@example.org"})),
            "headers.X-A",
        ),
        (with("headers", json!({"X:B": "v"})), "headers.X:B"),
        (with("headers", json!({"Subject": "v"})), "headers.Subject"),
        (
            with("headers", json!({"X-Long": "v".repeat(999)})),
            "headers.X-Long",
        ),
        (
            with(
                "attachments",
                json!(
                    (0..11)
                        .map(|i| json!({"filename": format!("{i}.txt"), "content": "aGk="}))
                        .collect::<Vec<_>>()
                ),
            ),
            "attachments",
        ),
        (
            with(
                "attachments",
                json!([{"filename": "a.txt", "content": "!!not base64!!"}]),
            ),
            "attachments.0.content",
        ),
        (
            with(
                "attachments",
                json!([{"filename": "a.png", "content": "aGk=", "disposition": "inline"}]),
            ),
            "attachments.0.contentId",
        ),
        (with("data", json!([1])), "data"),
    ];
    for (body, field) in cases {
        let err = expect_error(send(&w, &body).await, 422, "VALIDATION_ERROR").await;
        assert_eq!(error_fields(&err), vec![field.to_string()], "{body}");
    }
    expect_error(
        send(
            &w,
            &with("template", json!("0190d7a4-0000-7000-8000-000000000000")),
        )
        .await,
        404,
        "TEMPLATE_NOT_FOUND",
    )
    .await;
    let list = expect_json(w.app.get("/emails", &w.project.secret_key).await, 200).await;
    assert_eq!(list["total"], 0, "nothing was queued");
}

async fn send_refuses_an_unverified_sender_domain(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let body = json!({"to": "a@example.org", "from": "x@unverified-domain.com", "subject": "S", "body": "B"});
    let err = expect_error(send(&w, &body).await, 403, "DOMAIN_NOT_VERIFIED").await;
    assert!(err["error"]["suggestion"].as_str().is_some());
    // Another project's verified domain is not ours either.
    let other = w.app.project().await;
    let body =
        json!({"to": "a@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    expect_error(
        w.app.post("/v1/send", &other.secret_key, &body).await,
        403,
        "DOMAIN_NOT_VERIFIED",
    )
    .await;
}

async fn send_needs_the_secret_key(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let body =
        json!({"to": "a@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    expect_error(
        w.app.post("/v1/send", &w.project.public_key, &body).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let session = w
        .project
        .owner
        .post(w.app.url("/v1/send"))
        .header("x-project-id", &w.project.id)
        .json(&body)
        .send()
        .await
        .unwrap();
    expect_error(session, 401, "INVALID_API_KEY").await;
    let anonymous = w
        .app
        .call(reqwest::Method::POST, "/v1/send", None, Some(&body))
        .await;
    expect_error(anonymous, 401, "MISSING_AUTH").await;
    let list = expect_json(w.app.get("/emails", &w.project.secret_key).await, 200).await;
    assert_eq!(list["total"], 0);
}

async fn send_with_an_idempotency_key_runs_once(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let body =
        json!({"to": "a@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let post = |key: &'static str| {
        w.app
            .client
            .post(w.app.url("/v1/send"))
            .bearer_auth(&w.project.secret_key)
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
    };
    expect_json(post("order-42").await.unwrap(), 200).await;
    expect_error(
        post("order-42").await.unwrap(),
        409,
        "IDEMPOTENCY_KEY_REUSED",
    )
    .await;
    expect_json(post("order-43").await.unwrap(), 200).await;
    let list = expect_json(w.app.get("/emails", &w.project.secret_key).await, 200).await;
    assert_eq!(list["total"], 2);
    w.sink.wait_for(2, WAIT).await;
    wait_queue_settled(&w.app, WAIT).await;
    assert_eq!(w.sink.messages().len(), 2);
}

async fn send_carries_attachments_and_limits_them(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let pdf: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let body = json!({
        "to": "a@example.org", "from": format!("x@{DOMAIN}"), "subject": "Files", "body": "<img src=\"cid:logo\">",
        "attachments": [
            {"filename": "report.pdf", "contentType": "application/pdf", "content": STANDARD.encode(&pdf)},
            {"filename": "logo.png", "contentType": "image/png", "content": STANDARD.encode(b"png!"), "contentId": "logo", "disposition": "inline"}
        ]
    });
    let answer = expect_json(send(&w, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    let detail = wait_status(&w.app, &w.project.secret_key, id, &["SENT"], WAIT).await;
    assert_eq!(detail["attachments"][0]["filename"], "report.pdf");
    assert!(
        detail["attachments"][0].get("content").is_none(),
        "bytes are not echoed"
    );
    let got = w.sink.wait_for(1, WAIT).await;
    let parsed = MessageParser::default().parse(&got[0].data).unwrap();
    let report = parsed
        .attachments()
        .find(|a| a.attachment_name() == Some("report.pdf"))
        .expect("pdf part");
    assert_eq!(report.contents(), pdf.as_slice());
    let logo = parsed
        .attachments()
        .find(|a| a.content_id() == Some("logo"))
        .expect("inline part");
    assert_eq!(logo.contents(), b"png!");
    assert!(dkim_passes(&got[0].data, DOMAIN, &w.selector, &w.dkim_txt).await);

    let big = STANDARD.encode(vec![7u8; 5 * 1024 * 1024 + 1]);
    let too_big = json!({"to": "a@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B",
        "attachments": [{"filename": "a.bin", "content": big}, {"filename": "b.bin", "content": big}]});
    expect_error(send(&w, &too_big).await, 413, "PAYLOAD_TOO_LARGE").await;
}

async fn send_applies_subscription_rules(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let base = json!({"from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let with_to = |to: &str, extra: Value| {
        let mut b = base.clone();
        b["to"] = json!(to);
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let a = expect_json(send(&w, &with_to("new@example.org", json!({}))).await, 200).await;
    let id = a["data"]["emails"][0]["contact"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/contacts/{id}");
    assert_eq!(
        expect_json(w.app.get(&path, sk).await, 200).await["subscribed"],
        false,
        "new contacts default to unsubscribed"
    );
    expect_json(
        send(&w, &with_to("new@example.org", json!({"subscribed": true}))).await,
        200,
    )
    .await;
    assert_eq!(
        expect_json(w.app.get(&path, sk).await, 200).await["subscribed"],
        true
    );
    expect_json(send(&w, &with_to("new@example.org", json!({}))).await, 200).await;
    assert_eq!(
        expect_json(w.app.get(&path, sk).await, 200).await["subscribed"],
        true,
        "omitted keeps the state"
    );
    let events = expect_json(w.app.get(&format!("/events/contact/{id}"), sk).await, 200).await;
    let names: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"contact.subscribed"), "{names:?}");
}

async fn transient_refusal_is_retried_and_delivered_once(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    w.sink.set_mode(SinkMode::TempFailNext(1));
    let body =
        json!({"to": "a@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let answer = expect_json(send(&w, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    let m = wait_status(&w.app, &w.project.secret_key, id, &["SENT"], WAIT).await;
    assert_eq!(m["attempts"], 2);
    let details: Vec<String> = m["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["detail"].as_str().map(str::to_owned))
        .collect();
    assert!(details.iter().any(|d| d.contains("451")), "{details:?}");
    wait_queue_settled(&w.app, WAIT).await;
    assert_eq!(w.sink.messages().len(), 1, "delivered exactly once");
    assert_eq!(w.sink.attempts(), 2);
}

/// A 5xx to the message is a permanent bounce (feedback.rs tests the rest of that path).
async fn permanent_refusal_bounces_the_message_with_the_reply(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    w.sink.set_mode(SinkMode::RejectPermanent);
    let body = json!({"to": "gone@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let answer = expect_json(send(&w, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    let m = wait_status(&w.app, &w.project.secret_key, id, &["BOUNCED"], WAIT).await;
    assert!(m["lastError"].as_str().unwrap().contains("550"), "{m}");
    assert_eq!(m["attempts"], 1, "a permanent refusal is not retried");
    assert_eq!(w.sink.attempts(), 1);
}

async fn relay_down_is_retried_until_it_returns(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    w.sink.stop().await;
    let body =
        json!({"to": "a@example.org", "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let answer = expect_json(send(&w, &body).await, 200).await;
    let id = &message_ids(&answer)[0];
    let m = wait_message(&w.app, &w.project.secret_key, id, WAIT, |m| {
        m["attempts"].as_i64().unwrap_or(0) >= 2
    })
    .await;
    assert_eq!(m["status"], "SENDING", "still trying: {m}");
    assert!(m["attempts"].as_i64().unwrap() >= 2, "{m}");
    w.sink.restart().await.unwrap();
    wait_status(&w.app, &w.project.secret_key, id, &["SENT"], WAIT).await;
    assert_eq!(w.sink.wait_for(1, WAIT).await.len(), 1);
}

async fn throttle_spaces_a_projects_sends(engine: Engine) {
    let w = mail_world(engine, |c| c.send_rate_per_second = 10).await;
    let to: Vec<String> = (0..11).map(|i| format!("r{i}@example.org")).collect();
    let body = json!({"to": to, "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let start = std::time::Instant::now();
    expect_json(send(&w, &body).await, 200).await;
    let got = w.sink.wait_for(11, WAIT).await;
    assert_eq!(got.len(), 11);
    assert!(
        start.elapsed() >= Duration::from_millis(950),
        "11 messages at 10/s take a second: {:?}",
        start.elapsed()
    );
}

async fn send_uses_a_template_with_overrides(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let t = expect_json(
        w.app
            .post(
                "/templates",
                sk,
                &json!({"name": "Welcome", "type": "TRANSACTIONAL", "subject": "Welcome {{name ?? \"friend\"}}",
                    "body": "<p>Code {{code}}</p>", "from": format!("team@{DOMAIN}"), "fromName": "Team", "replyTo": format!("help@{DOMAIN}")}),
            )
            .await,
        201,
    )
    .await;
    let tid = t["id"].as_str().unwrap();
    let answer = expect_json(
        send(&w, &json!({"to": "a@example.org", "template": tid, "data": {"name": "Ada", "code": {"value": "9 9", "persistent": false}}})).await,
        200,
    )
    .await;
    let m = wait_status(&w.app, sk, &message_ids(&answer)[0], &["SENT"], WAIT).await;
    assert_eq!(m["subject"], "Welcome Ada");
    assert_eq!(m["html"], "<p>Code 9 9</p>");
    assert_eq!(m["from"], format!("team@{DOMAIN}"));
    assert_eq!(m["fromName"], "Team");
    assert_eq!(m["replyTo"], format!("help@{DOMAIN}"));
    assert_eq!(m["templateId"], tid);
    let answer = expect_json(
        send(
            &w,
            &json!({"to": "b@example.org", "template": tid, "subject": "Override"}),
        )
        .await,
        200,
    )
    .await;
    let m = wait_status(&w.app, sk, &message_ids(&answer)[0], &["SENT"], WAIT).await;
    assert_eq!(m["subject"], "Override");
    let got = w.sink.wait_for(2, WAIT).await;
    assert!(got.iter().all(|g| g.mail_from == format!("team@{DOMAIN}")));
}

async fn marketing_template_skips_unsubscribed_contacts(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let t = expect_json(
        w.app
            .post("/templates", sk, &json!({"name": "News", "type": "MARKETING", "subject": "News", "body": "<p>News</p>", "from": format!("news@{DOMAIN}")}))
            .await,
        201,
    )
    .await;
    w.app
        .create_contact(sk, json!({"email": "in@example.org", "subscribed": true}))
        .await;
    w.app
        .create_contact(sk, json!({"email": "out@example.org", "subscribed": false}))
        .await;
    let answer = expect_json(
        send(
            &w,
            &json!({"to": ["in@example.org", "out@example.org"], "template": t["id"]}),
        )
        .await,
        200,
    )
    .await;
    let emails = answer["data"]["emails"].as_array().unwrap();
    assert!(emails[0].get("skipped").is_none());
    assert_eq!(emails[1]["skipped"], "unsubscribed");
    wait_status(
        &w.app,
        sk,
        emails[0]["email"].as_str().unwrap(),
        &["SENT"],
        WAIT,
    )
    .await;
    let skipped = expect_json(
        w.app
            .get(
                &format!("/emails/{}", emails[1]["email"].as_str().unwrap()),
                sk,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(skipped["status"], "SUPPRESSED");
    wait_queue_settled(&w.app, WAIT).await;
    let got = w.sink.messages();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].rcpt_to, vec!["in@example.org"]);
}
