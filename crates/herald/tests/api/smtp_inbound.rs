//! Inbound mail end to end (DECISIONS.md "SMTP: submission and inbound mail", Inbound): the MX
//! listener on loopback, verdicts through the test DNS server (a DKIM key and SPF and DMARC
//! records it publishes), the message row, the activity entry, the contact and the
//! `email.received` event that starts a workflow.

use std::time::Duration;

use herald_mail::dkim::{DkimSigner, dkim_txt_value, generate_rsa_2048};
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_json, run_sql};
use crate::mail_setup::{DOMAIN, MailWorld, mail_world};
use crate::smtp_client::{RawSmtp, cert_path};

both_engines!(
    inbound_mail_is_recorded_with_its_verdicts,
    inbound_verdicts_fail_for_an_altered_message_and_a_wrong_ip,
    inbound_refuses_unknown_recipients_and_mail_without_from,
    email_received_starts_a_workflow,
    concurrent_messages_share_commits_and_a_failing_one_is_undone_alone,
    inbound_over_starttls_with_lettre_is_recorded,
);

const SENDER_DOMAIN: &str = "sender.example";
/// Two addresses on the world's verified domain (`DOMAIN`).
const SUPPORT: &str = "support@acme-mail.com";
const SALES: &str = "sales@acme-mail.com";

/// A world with the MX listener, and a sender domain whose DKIM key, SPF (loopback allowed)
/// and DMARC records the DNS server publishes; the signer of that domain.
async fn world(engine: Engine) -> (MailWorld, DkimSigner) {
    let w = mail_world(engine, |c| c.mx_listen = Some("127.0.0.1:0".into())).await;
    let key = generate_rsa_2048().unwrap();
    w.dns.set_txt(
        &format!("s1._domainkey.{SENDER_DOMAIN}"),
        vec![dkim_txt_value(&key.public_key_b64)],
    );
    w.dns
        .set_txt(SENDER_DOMAIN, vec!["v=spf1 ip4:127.0.0.1 -all".into()]);
    w.dns.set_txt(
        &format!("_dmarc.{SENDER_DOMAIN}"),
        vec!["v=DMARC1; p=reject".into()],
    );
    w.dns.set_txt(
        "elsewhere.example",
        vec!["v=spf1 ip4:192.0.2.1 -all".into()],
    );
    let signer = DkimSigner::new(SENDER_DOMAIN, "s1", &key.private_pkcs8_der).unwrap();
    (w, signer)
}

fn message(from: &str, subject: &str, body: &str) -> Vec<u8> {
    format!(
        "From: Alice <{from}>\r\nTo: support@{DOMAIN}, sales@{DOMAIN}\r\nSubject: {subject}\r\n\
Date: Fri, 27 Nov 2026 06:00:00 +0000\r\nMessage-ID: <{subject}@{SENDER_DOMAIN}>\r\n\
MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    )
    .into_bytes()
}

/// Delivers `data` (without the final dot) to the MX listener; the final reply.
async fn deliver(
    app: &TestApp,
    mail_from: &str,
    to: &[&str],
    data: &[u8],
) -> crate::smtp_client::Answer {
    deliver_at(app.mx.unwrap(), mail_from, to, data).await
}

/// [`deliver`] to the MX listener at `mx`.
async fn deliver_at(
    mx: std::net::SocketAddr,
    mail_from: &str,
    to: &[&str],
    data: &[u8],
) -> crate::smtp_client::Answer {
    let mut c = RawSmtp::connect(mx).await;
    c.expect(&format!("EHLO mx.{SENDER_DOMAIN}"), 250).await;
    let mut d = data.to_vec();
    d.extend_from_slice(b".\r\n");
    c.transaction(mail_from, to, &d).await
}

fn queued_id(text: &str) -> String {
    let at = text.find("queued as ").expect("queued as") + "queued as ".len();
    text[at..].split_whitespace().next().unwrap().to_owned()
}

/// The `email.received` activity entries of the project.
async fn received(app: &TestApp, key: &str) -> Vec<Value> {
    let v = expect_json(
        app.get("/activity?type=email.received&limit=100", key)
            .await,
        200,
    )
    .await;
    v["data"].as_array().cloned().unwrap_or_default()
}

async fn inbound_mail_is_recorded_with_its_verdicts(engine: Engine) {
    let (w, signer) = world(engine).await;
    let sk = &w.project.secret_key;
    let signed = signer
        .sign(&message(
            &format!("alice@{SENDER_DOMAIN}"),
            "hello",
            "Can you help me?\r\nThanks",
        ))
        .unwrap();
    let a = deliver(
        &w.app,
        &format!("alice@{SENDER_DOMAIN}"),
        &[SUPPORT, SALES],
        &signed,
    )
    .await;
    assert_eq!(a.code, 250, "{a:?}");
    let id = queued_id(&a.text);
    let m = expect_json(w.app.get(&format!("/emails/{id}"), sk).await, 200).await;
    assert_eq!(m["status"], "RECEIVED", "{m}");
    assert_eq!(m["from"], format!("alice@{SENDER_DOMAIN}"));
    assert_eq!(m["subject"], "hello");
    // One message to two addresses of the project: one row, one event.
    let list = expect_json(w.app.get("/emails", sk).await, 200).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
    let events = received(&w.app, sk).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let data = &events[0]["data"];
    assert_eq!(data["messageId"], id.as_str());
    assert_eq!(data["from"], format!("alice@{SENDER_DOMAIN}"));
    assert_eq!(
        data["to"],
        json!([format!("support@{DOMAIN}"), format!("sales@{DOMAIN}")])
    );
    assert_eq!(data["subject"], "hello");
    assert!(
        data["text"].as_str().unwrap().contains("Can you help me?"),
        "{data}"
    );
    assert_eq!(
        (&data["spf"], &data["dkim"], &data["dmarc"]),
        (&json!("pass"), &json!("pass"), &json!("pass")),
        "{data}"
    );
    assert_eq!(events[0]["email"], format!("alice@{SENDER_DOMAIN}"));
    // The sender is a contact now; an existing one keeps its subscription.
    let c = w
        .app
        .contact_by_email(sk, &format!("alice@{SENDER_DOMAIN}"))
        .await;
    assert_eq!(c["subscribed"], false);
    w.app
        .create_contact(
            sk,
            json!({"email": format!("bob@{SENDER_DOMAIN}"), "subscribed": true}),
        )
        .await;
    let signed = signer
        .sign(&message(&format!("bob@{SENDER_DOMAIN}"), "again", "Me too"))
        .unwrap();
    let a = deliver(&w.app, &format!("bob@{SENDER_DOMAIN}"), &[SUPPORT], &signed).await;
    assert_eq!(a.code, 250, "{a:?}");
    let bob = w
        .app
        .contact_by_email(sk, &format!("bob@{SENDER_DOMAIN}"))
        .await;
    assert_eq!(bob["subscribed"], true, "subscription unchanged");
}

async fn inbound_verdicts_fail_for_an_altered_message_and_a_wrong_ip(engine: Engine) {
    let (w, signer) = world(engine).await;
    let sk = &w.project.secret_key;
    let signed = signer
        .sign(&message(
            &format!("alice@{SENDER_DOMAIN}"),
            "altered",
            "Pay 10 EUR",
        ))
        .unwrap();
    let altered = String::from_utf8(signed)
        .unwrap()
        .replace("Pay 10 EUR", "Pay 9999 EUR");
    let a = deliver(
        &w.app,
        &format!("alice@{SENDER_DOMAIN}"),
        &[SUPPORT],
        altered.as_bytes(),
    )
    .await;
    assert_eq!(a.code, 250, "{a:?}");
    // SPF: elsewhere.example allows only 192.0.2.1, and the mail comes from loopback.
    let unsigned = message("carol@elsewhere.example", "spoof", "Hi");
    let a = deliver(&w.app, "carol@elsewhere.example", &[SUPPORT], &unsigned).await;
    assert_eq!(a.code, 250, "{a:?}");
    let events = received(&w.app, sk).await;
    let by_subject = |s: &str| {
        events
            .iter()
            .find(|e| e["data"]["subject"] == s)
            .unwrap_or_else(|| panic!("no event for {s}: {events:?}"))["data"]
            .clone()
    };
    let altered = by_subject("altered");
    assert_eq!(altered["dkim"], "fail", "{altered}");
    assert_eq!(altered["spf"], "pass", "{altered}");
    let spoof = by_subject("spoof");
    assert_eq!(spoof["spf"], "fail", "{spoof}");
    assert_eq!(spoof["dkim"], "none", "{spoof}");
}

async fn inbound_refuses_unknown_recipients_and_mail_without_from(engine: Engine) {
    let (w, _) = world(engine).await;
    let sk = &w.project.secret_key;
    let mut c = RawSmtp::connect(w.app.mx.unwrap()).await;
    let ehlo = c.expect("EHLO mx.sender.example", 250).await;
    assert!(!ehlo.text.contains("AUTH"), "{:?}", ehlo.text);
    c.expect(&format!("MAIL FROM:<alice@{SENDER_DOMAIN}>"), 250)
        .await;
    let a = c
        .expect("RCPT TO:<someone@not-verified.example>", 550)
        .await;
    assert!(a.text.starts_with("5.1.1"), "{a:?}");
    c.expect(&format!("RCPT TO:<support@{DOMAIN}>"), 250).await;
    c.expect("DATA", 354).await;
    c.send(b"To: support@acme-mail.com\r\nSubject: no from\r\n\r\nhi\r\n.\r\n")
        .await;
    let a = c.read().await.unwrap();
    assert_eq!(a.code, 550, "{a:?}");
    // A message over the size limit is refused at MAIL.
    let a = c
        .expect(
            &format!("MAIL FROM:<alice@{SENDER_DOMAIN}> SIZE=999999999"),
            552,
        )
        .await;
    assert!(a.text.starts_with("5.3.4"), "{a:?}");
    assert!(received(&w.app, sk).await.is_empty());
    let list = expect_json(w.app.get("/emails", sk).await, 200).await;
    assert_eq!(list["data"], json!([]));
}

async fn email_received_starts_a_workflow(engine: Engine) {
    let (w, signer) = world(engine).await;
    let sk = &w.project.secret_key;
    let wf = expect_json(
        w.app
            .post(
                "/workflows",
                sk,
                &json!({"name": "Replies", "triggerConfig": {"eventName": "email.received"}}),
            )
            .await,
        201,
    )
    .await;
    let wf = wf["id"].as_str().unwrap().to_owned();
    expect_json(
        w.app
            .patch(&format!("/workflows/{wf}"), sk, &json!({"enabled": true}))
            .await,
        200,
    )
    .await;
    let signed = signer
        .sign(&message(
            &format!("alice@{SENDER_DOMAIN}"),
            "reply",
            "Stop the sequence",
        ))
        .unwrap();
    let a = deliver(
        &w.app,
        &format!("alice@{SENDER_DOMAIN}"),
        &[SUPPORT],
        &signed,
    )
    .await;
    assert_eq!(a.code, 250, "{a:?}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let list = expect_json(
            w.app
                .get(&format!("/workflows/{wf}/executions?limit=100"), sk)
                .await,
            200,
        )
        .await;
        let runs = list["executions"].as_array().cloned().unwrap_or_default();
        if let Some(run) = runs.first() {
            assert_eq!(runs.len(), 1, "{runs:?}");
            let detail = expect_json(
                w.app
                    .get(
                        &format!("/workflows/{wf}/executions/{}", run["id"].as_str().unwrap()),
                        sk,
                    )
                    .await,
                200,
            )
            .await;
            assert_eq!(detail["context"]["subject"], "reply", "{detail}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no execution started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Inbound messages go through the acceptance batcher: messages arriving together share a
/// commit, each is answered after its commit, and a message whose rows fail (an injected fault
/// on one subject) is answered `451` and undone alone while the others are recorded once.
async fn concurrent_messages_share_commits_and_a_failing_one_is_undone_alone(engine: Engine) {
    let (w, signer) = world(engine).await;
    let sk = &w.project.secret_key;
    let fault: &[&str] = match engine {
        Engine::Sqlite => &["CREATE TRIGGER poison BEFORE INSERT ON messages \
             WHEN NEW.subject = 'poison' BEGIN SELECT RAISE(ABORT, 'injected fault'); END"],
        Engine::Postgres => &[
            "CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN IF NEW.subject = 'poison' THEN RAISE EXCEPTION 'injected fault'; \
             END IF; RETURN NEW; END $$",
            "CREATE TRIGGER poison BEFORE INSERT ON messages \
             FOR EACH ROW EXECUTE FUNCTION poison()",
        ],
    };
    run_sql(&w.app, fault).await;
    let (_, requests_before) = w.app.engine.acceptor.stats();
    const N: usize = 24;
    let mut calls = Vec::new();
    for i in 0..N {
        let subject = if i == N / 2 {
            "poison".to_owned()
        } else {
            format!("m{i}")
        };
        let from = format!("s{i}@{SENDER_DOMAIN}");
        let signed = signer.sign(&message(&from, &subject, "Hello")).unwrap();
        let mx = w.app.mx.unwrap();
        calls.push(tokio::spawn(async move {
            let a = deliver_at(mx, &from, &[SUPPORT], &signed).await;
            (subject, a)
        }));
    }
    let mut accepted = Vec::new();
    for c in calls {
        let (subject, a) = c.await.unwrap();
        if subject == "poison" {
            assert_eq!((a.code, &a.text[..5]), (451, "4.3.0"), "{a:?}");
        } else {
            assert_eq!(a.code, 250, "{subject}: {a:?}");
            accepted.push(queued_id(&a.text));
        }
    }
    // Acknowledged = committed, once each; the failing message left nothing behind.
    let list = expect_json(w.app.get("/emails?limit=100", sk).await, 200).await;
    let mut listed: Vec<String> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    accepted.sort();
    assert_eq!(listed, accepted);
    assert_eq!(received(&w.app, sk).await.len(), N - 1);
    let poisoned = format!("s{}@{SENDER_DOMAIN}", N / 2);
    let found = expect_json(
        w.app
            .post("/contacts/lookup", sk, &json!({"emails": [poisoned]}))
            .await,
        200,
    )
    .await;
    assert_eq!(found["found"], json!([]), "no contact half-recorded");
    let (_, requests) = w.app.engine.acceptor.stats();
    assert!(
        requests - requests_before >= N as u64,
        "every message went through the batcher"
    );
}

/// Another MTA delivering over STARTTLS (lettre, no credentials: the MX needs none) to the MX
/// listener configured with the test certificate: the EHLO offers STARTTLS, the message is
/// recorded with its verdicts as over plain text.
async fn inbound_over_starttls_with_lettre_is_recorded(engine: Engine) {
    use lettre::address::Envelope;
    use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
    use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

    let w = mail_world(engine, |c| {
        c.mx_listen = Some("127.0.0.1:0".into());
        c.tls_cert = Some(cert_path("cert.pem"));
        c.tls_key = Some(cert_path("key.pem"));
    })
    .await;
    let sk = &w.project.secret_key;
    let mx = w.app.mx.unwrap();
    let mut raw = RawSmtp::connect(mx).await;
    let ehlo = raw.expect("EHLO mx.sender.example", 250).await;
    assert!(
        ehlo.text.lines().any(|l| l == "STARTTLS"),
        "{:?}",
        ehlo.text
    );
    let ca = std::fs::read(cert_path("ca.pem")).unwrap();
    let tls = TlsParameters::builder("localhost".into())
        .add_root_certificate(Certificate::from_pem(&ca).unwrap())
        .build_rustls()
        .unwrap();
    let client = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(mx.port())
        .tls(Tls::Required(tls))
        .build();
    let from = format!("carol@{SENDER_DOMAIN}");
    let envelope = Envelope::new(
        Some(from.parse::<Address>().unwrap()),
        vec![SUPPORT.parse::<Address>().unwrap()],
    )
    .unwrap();
    let res = client
        .send_raw(&envelope, &message(&from, "tls", "Over TLS"))
        .await
        .expect("accepted over STARTTLS");
    assert!(res.is_positive(), "{res:?}");
    let text: Vec<&str> = res.message().collect();
    let id = queued_id(&text.join(" "));
    let m = expect_json(w.app.get(&format!("/emails/{id}"), sk).await, 200).await;
    assert_eq!(m["status"], "RECEIVED", "{m}");
    assert_eq!(m["subject"], "tls", "{m}");
    let events = received(&w.app, sk).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["data"]["from"], from);
}
