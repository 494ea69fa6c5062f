//! Amazon SES notifications through SNS on `POST /webhooks/notifications`. Tests cannot reach
//! AWS: each test makes its own RSA key and certificate with the `openssl` command, points the
//! test-only `HERALD_SNS_TRUST_CERT_PEM` at it, serves it from a loopback HTTP server, and
//! signs SNS messages (versions 1 and 2) with the same `openssl`. The canonical string is
//! written out here independently of the server's code.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use base64::Engine as _;
use herald_core::time::iso;
use reqwest::Response;
use serde_json::{Value, json};

use crate::both_engines;
use crate::feedback::{WAIT, contact, count, email, event_names, sent, suppression};
use crate::helpers::{Engine, TestApp, expect_error, expect_json};
use crate::mail_setup::{MailWorld, mail_world, wait_status};

both_engines!(
    sns_subscription_confirmation_is_verified_then_confirmed,
    sns_v1_bounce_matched_by_the_relay_id_bounces_and_suppresses,
    sns_v2_complaint_and_delivery_matched_by_our_message_id,
    sns_forged_signature_is_refused,
    sns_foreign_certificate_hosts_are_refused_before_fetching,
    sns_stale_timestamp_is_refused,
    sns_replay_of_a_message_id_changes_nothing,
    sns_unknown_message_is_404,
    sns_without_a_topic_list_is_refused_even_when_signed,
    sns_cheap_refusals_fetch_no_certificate,
    sns_ses_receipt_records_inbound_mail_once,
);

const TOPIC: &str = "arn:aws:sns:us-east-1:123456789012:ses-feedback";

/// A key and certificate made by `openssl`, and a loopback server that serves the
/// certificate (`/cert.pem`), another one (`/other.pem`) and a confirmation endpoint.
struct Fixture {
    _dir: tempfile::TempDir,
    key: PathBuf,
    cert: PathBuf,
    base: String,
    requests: Arc<AtomicUsize>,
    confirmations: Arc<AtomicUsize>,
}

fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("the openssl command (Debian package openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn make_cert(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(format!("{name}.key"));
    let cert = dir.join(format!("{name}.pem"));
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=sns.amazonaws.com",
        "-keyout",
        key.to_str().unwrap(),
        "-out",
        cert.to_str().unwrap(),
    ]);
    (key, cert)
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (key, cert) = make_cert(dir.path(), "trusted");
    let (_, other) = make_cert(dir.path(), "other");
    let cert_pem = std::fs::read_to_string(&cert).unwrap();
    let other_pem = std::fs::read_to_string(&other).unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let confirmations = Arc::new(AtomicUsize::new(0));
    let (r, c) = (requests.clone(), confirmations.clone());
    let router = Router::new()
        .route("/cert.pem", get(move || async move { cert_pem }))
        .route("/other.pem", get(move || async move { other_pem }))
        .route(
            "/confirm",
            get(move || async move {
                c.fetch_add(1, Ordering::SeqCst);
                "<ConfirmSubscriptionResponse/>"
            }),
        )
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let r = r.clone();
                async move {
                    r.fetch_add(1, Ordering::SeqCst);
                    next.run(req).await
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, router).await });
    Fixture {
        _dir: dir,
        key,
        cert,
        base,
        requests,
        confirmations,
    }
}

/// A server trusting the fixture's certificate, with [`TOPIC`] as its one SNS topic.
async fn sns_world(engine: Engine, f: &Fixture) -> MailWorld {
    sns_world_with_topics(engine, f, &[TOPIC]).await
}

async fn sns_world_with_topics(engine: Engine, f: &Fixture, topics: &[&str]) -> MailWorld {
    let cert = f.cert.clone();
    let topics: Vec<String> = topics.iter().map(|t| (*t).to_owned()).collect();
    let w = mail_world(engine, move |c| {
        c.sns_trust_cert_pem = Some(cert);
        c.sns_topic_arns = topics;
    })
    .await;
    w.sink.reply_with_queue_ids(true);
    w
}

/// An SNS message before signing.
struct Sns {
    version: u8,
    kind: &'static str,
    topic: String,
    message_id: String,
    message: String,
    timestamp: String,
    cert_url: String,
    subscribe_url: Option<String>,
    token: Option<String>,
}

impl Sns {
    fn notification(app: &TestApp, f: &Fixture, version: u8, ses: &Value) -> Sns {
        Sns {
            version,
            kind: "Notification",
            topic: TOPIC.to_owned(),
            message_id: uuid::Uuid::new_v4().to_string(),
            message: ses.to_string(),
            timestamp: iso(herald_core::clock::Clock::now(&*app.clock)),
            cert_url: format!("{}/cert.pem", f.base),
            subscribe_url: None,
            token: None,
        }
    }

    /// AWS's canonical form: "Key\nvalue\n" for the type's fields, in byte order of the keys.
    fn canonical(&self) -> String {
        let mut fields: Vec<(&str, &str)> = vec![
            ("Message", &self.message),
            ("MessageId", &self.message_id),
            ("Timestamp", &self.timestamp),
            ("TopicArn", &self.topic),
            ("Type", self.kind),
        ];
        if let (Some(u), Some(t)) = (&self.subscribe_url, &self.token) {
            fields.push(("SubscribeURL", u));
            fields.push(("Token", t));
        }
        fields.sort();
        fields.iter().map(|(k, v)| format!("{k}\n{v}\n")).collect()
    }

    fn signed(&self, key: &Path) -> Value {
        let digest = if self.version == 1 {
            "-sha1"
        } else {
            "-sha256"
        };
        let mut child = Command::new("openssl")
            .args(["dgst", digest, "-sign", key.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("openssl");
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(self.canonical().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let mut v = json!({
            "Type": self.kind,
            "MessageId": self.message_id,
            "TopicArn": self.topic,
            "Message": self.message,
            "Timestamp": self.timestamp,
            "SignatureVersion": self.version.to_string(),
            "Signature": base64::engine::general_purpose::STANDARD.encode(out.stdout),
            "SigningCertURL": self.cert_url,
        });
        if let (Some(u), Some(t)) = (&self.subscribe_url, &self.token) {
            v["SubscribeURL"] = json!(u);
            v["Token"] = json!(t);
        }
        v
    }
}

async fn post_sns(app: &TestApp, kind: &str, body: &Value) -> Response {
    app.client
        .post(app.url("/webhooks/notifications"))
        // SNS posts JSON as text/plain.
        .header("content-type", "text/plain; charset=UTF-8")
        .header("x-amz-sns-message-type", kind)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

fn ses_bounce(relay_id: &str, bounce_type: &str) -> Value {
    json!({"notificationType": "Bounce",
        "bounce": {"bounceType": bounce_type, "bounceSubType": "General",
            "bouncedRecipients": [{"emailAddress": "x@example.org", "action": "failed",
                "status": "5.1.1", "diagnosticCode": "smtp; 550 5.1.1 user unknown"}],
            "timestamp": "2026-11-23T10:00:00.000Z", "feedbackId": "fb-1"},
        "mail": {"timestamp": "2026-11-23T09:59:59.000Z", "messageId": relay_id,
            "source": "x@acme-mail.com", "destination": ["x@example.org"]}})
}

async fn sns_subscription_confirmation_is_verified_then_confirmed(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let mut m = Sns::notification(&w.app, &f, 1, &json!("You have chosen to subscribe"));
    m.kind = "SubscriptionConfirmation";
    m.message = "You have chosen to subscribe to the topic".into();
    m.subscribe_url = Some(format!(
        "{}/confirm?Action=ConfirmSubscription&Token=tok",
        f.base
    ));
    m.token = Some("tok".into());
    let body = m.signed(&f.key);
    // A forged token is refused before any confirmation.
    let mut forged = body.clone();
    forged["Token"] = json!("other");
    expect_error(
        post_sns(&w.app, "SubscriptionConfirmation", &forged).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert_eq!(f.confirmations.load(Ordering::SeqCst), 0);
    let ok = expect_json(
        post_sns(&w.app, "SubscriptionConfirmation", &body).await,
        200,
    )
    .await;
    assert_eq!(ok, json!({"success": true}));
    assert_eq!(
        f.confirmations.load(Ordering::SeqCst),
        1,
        "SubscribeURL was requested"
    );
}

async fn sns_v1_bounce_matched_by_the_relay_id_bounces_and_suppresses(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let ids = sent(&w, &["hard@example.org"]).await;
    let m = email(&w, &ids[0]).await;
    let relay_id = m["relayMessageId"]
        .as_str()
        .expect("relay id kept from 250 Ok <id>");
    assert_eq!(Some(relay_id), w.sink.messages()[0].queue_id.as_deref());
    let body = Sns::notification(&w.app, &f, 1, &ses_bounce(relay_id, "Permanent")).signed(&f.key);
    expect_json(post_sns(&w.app, "Notification", &body).await, 200).await;
    let m = email(&w, &ids[0]).await;
    assert_eq!(m["status"], "BOUNCED");
    assert!(
        m["lastError"]
            .as_str()
            .unwrap()
            .contains("550 5.1.1 user unknown"),
        "{m}"
    );
    let contact_id = m["contactId"].as_str().unwrap();
    assert_eq!(contact(&w, contact_id).await["subscribed"], false);
    let names = event_names(&w, contact_id).await;
    assert_eq!(count(&names, "email.bounce"), 1, "{names:?}");
    assert_eq!(count(&names, "contact.unsubscribed"), 1, "{names:?}");
    assert_eq!(
        suppression(&w, "hard@example.org").await.as_deref(),
        Some("bounce")
    );
}

async fn sns_v2_complaint_and_delivery_matched_by_our_message_id(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let ids = sent(&w, &["a@example.org", "b@example.org"]).await;
    let header_a = email(&w, &ids[0]).await["messageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let header_b = email(&w, &ids[1]).await["messageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let delivery = json!({"notificationType": "Delivery",
        "delivery": {"recipients": ["a@example.org"], "smtpResponse": "250 2.6.0 Message received"},
        "mail": {"messageId": "not-a-relay-id", "headers": [{"name": "Message-ID", "value": header_a}]}});
    let body = Sns::notification(&w.app, &f, 2, &delivery).signed(&f.key);
    expect_json(post_sns(&w.app, "Notification", &body).await, 200).await;
    assert_eq!(email(&w, &ids[0]).await["status"], "DELIVERED");
    let complaint = json!({"notificationType": "Complaint",
        "complaint": {"complainedRecipients": [{"emailAddress": "b@example.org"}], "complaintFeedbackType": "abuse"},
        "mail": {"messageId": "unknown", "commonHeaders": {"messageId": header_b}}});
    let body = Sns::notification(&w.app, &f, 2, &complaint).signed(&f.key);
    expect_json(post_sns(&w.app, "Notification", &body).await, 200).await;
    let m = email(&w, &ids[1]).await;
    assert_eq!(m["status"], "COMPLAINED");
    let names = event_names(&w, m["contactId"].as_str().unwrap()).await;
    assert_eq!(count(&names, "email.complaint"), 1, "{names:?}");
    assert_eq!(
        suppression(&w, "b@example.org").await.as_deref(),
        Some("complaint")
    );
}

async fn sns_forged_signature_is_refused(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let ids = sent(&w, &["x@example.org"]).await;
    let relay_id = email(&w, &ids[0]).await["relayMessageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let good = Sns::notification(&w.app, &f, 2, &ses_bounce(&relay_id, "Transient")).signed(&f.key);
    let tampered = [
        // The message changed after signing.
        (
            "Message",
            json!(ses_bounce(&relay_id, "Permanent").to_string()),
        ),
        // Signed by a key whose certificate is not the trusted one.
        ("SigningCertURL", json!(format!("{}/other.pem", f.base))),
        // A signature that is not base64.
        ("Signature", json!("%%%")),
    ];
    for (field, value) in tampered {
        let mut bad = good.clone();
        bad[field] = value;
        expect_error(
            post_sns(&w.app, "Notification", &bad).await,
            401,
            "UNAUTHORIZED",
        )
        .await;
    }
    assert_eq!(email(&w, &ids[0]).await["status"], "SENT");
    assert_eq!(suppression(&w, "x@example.org").await, None);
}

async fn sns_foreign_certificate_hosts_are_refused_before_fetching(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let ids = sent(&w, &["x@example.org"]).await;
    let relay_id = email(&w, &ids[0]).await["relayMessageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let port = f.base.rsplit(':').next().unwrap().to_owned();
    for url in [
        // The same loopback server under a name that is neither SNS nor the test address.
        format!("http://localhost:{port}/cert.pem"),
        "https://sns.us-east-1.amazonaws.com.evil.test/cert.pem".to_owned(),
        "https://evil.test/sns.us-east-1.amazonaws.com/cert.pem".to_owned(),
        "http://sns.us-east-1.amazonaws.com/cert.pem".to_owned(),
    ] {
        let mut m = Sns::notification(&w.app, &f, 1, &ses_bounce(&relay_id, "Permanent"));
        m.cert_url = url.clone();
        let body = m.signed(&f.key);
        let e = expect_error(
            post_sns(&w.app, "Notification", &body).await,
            401,
            "UNAUTHORIZED",
        )
        .await;
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap()
                .contains("not an Amazon SNS URL"),
            "{url}: {e}"
        );
    }
    assert_eq!(f.requests.load(Ordering::SeqCst), 0, "nothing was fetched");
    // A SubscribeURL off SNS is not requested either.
    let mut m = Sns::notification(&w.app, &f, 1, &json!("subscribe"));
    m.kind = "SubscriptionConfirmation";
    m.subscribe_url = Some(format!("http://localhost:{port}/confirm"));
    m.token = Some("tok".into());
    let body = m.signed(&f.key);
    expect_error(
        post_sns(&w.app, "SubscriptionConfirmation", &body).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert_eq!(f.confirmations.load(Ordering::SeqCst), 0);
    assert_eq!(email(&w, &ids[0]).await["status"], "SENT");
}

async fn sns_stale_timestamp_is_refused(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let ids = sent(&w, &["x@example.org"]).await;
    let relay_id = email(&w, &ids[0]).await["relayMessageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = Sns::notification(&w.app, &f, 2, &ses_bounce(&relay_id, "Permanent")).signed(&f.key);
    // Captured, then replayed after more than an hour.
    w.app.clock.advance(Duration::from_secs(3601));
    let e = expect_error(
        post_sns(&w.app, "Notification", &body).await,
        401,
        "UNAUTHORIZED",
    )
    .await;
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Timestamp"),
        "{e}"
    );
    assert_eq!(email(&w, &ids[0]).await["status"], "SENT");
}

async fn sns_replay_of_a_message_id_changes_nothing(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let ids = sent(&w, &["x@example.org"]).await;
    let relay_id = email(&w, &ids[0]).await["relayMessageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let history = |m: &Value| m["history"].as_array().unwrap().len();
    let before = history(&email(&w, &ids[0]).await);
    // A transient bounce adds a history entry each time it is applied: a replay must not.
    let body = Sns::notification(&w.app, &f, 1, &ses_bounce(&relay_id, "Transient")).signed(&f.key);
    expect_json(post_sns(&w.app, "Notification", &body).await, 200).await;
    expect_json(post_sns(&w.app, "Notification", &body).await, 200).await;
    let m = email(&w, &ids[0]).await;
    assert_eq!(history(&m), before + 1, "{m}");
    assert_eq!(m["status"], "SENT");
    // The same for a delivery: one event.
    let delivery = json!({"notificationType": "Delivery", "delivery": {"smtpResponse": "250 ok"},
        "mail": {"messageId": relay_id}});
    let body = Sns::notification(&w.app, &f, 2, &delivery).signed(&f.key);
    for _ in 0..2 {
        expect_json(post_sns(&w.app, "Notification", &body).await, 200).await;
    }
    let m = wait_status(&w.app, &w.project.secret_key, &ids[0], &["DELIVERED"], WAIT).await;
    let names = event_names(&w, m["contactId"].as_str().unwrap()).await;
    assert_eq!(count(&names, "email.delivery"), 1, "{names:?}");
}

async fn sns_unknown_message_is_404(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let body = Sns::notification(&w.app, &f, 2, &ses_bounce("0100-nobody-000", "Permanent"))
        .signed(&f.key);
    expect_error(
        post_sns(&w.app, "Notification", &body).await,
        404,
        "NOT_FOUND",
    )
    .await;
    // The header must match the body's Type.
    expect_error(
        post_sns(&w.app, "SubscriptionConfirmation", &body).await,
        400,
        "BAD_REQUEST",
    )
    .await;
}

/// A subscription confirmation for `topic`, signed.
fn confirmation(app: &TestApp, f: &Fixture, topic: &str) -> Value {
    let mut m = Sns::notification(app, f, 2, &json!("subscribe"));
    m.kind = "SubscriptionConfirmation";
    m.topic = topic.to_owned();
    m.message = "You have chosen to subscribe to the topic".into();
    m.subscribe_url = Some(format!(
        "{}/confirm?Action=ConfirmSubscription&Token=tok",
        f.base
    ));
    m.token = Some("tok".into());
    m.signed(&f.key)
}

async fn sns_without_a_topic_list_is_refused_even_when_signed(engine: Engine) {
    let f = fixture().await;
    let w = sns_world_with_topics(engine, &f, &[]).await;
    let ids = sent(&w, &["x@example.org"]).await;
    let relay_id = email(&w, &ids[0]).await["relayMessageId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Validly signed by a certificate the server trusts, from a topic nobody listed.
    let body = Sns::notification(&w.app, &f, 2, &ses_bounce(&relay_id, "Permanent")).signed(&f.key);
    let e = expect_error(
        post_sns(&w.app, "Notification", &body).await,
        403,
        "FORBIDDEN",
    )
    .await;
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("HERALD_SNS_TOPIC_ARNS"),
        "{e}"
    );
    let body = confirmation(&w.app, &f, TOPIC);
    expect_error(
        post_sns(&w.app, "SubscriptionConfirmation", &body).await,
        403,
        "FORBIDDEN",
    )
    .await;
    assert_eq!(f.confirmations.load(Ordering::SeqCst), 0, "not confirmed");
    assert_eq!(f.requests.load(Ordering::SeqCst), 0, "nothing was fetched");
    assert_eq!(email(&w, &ids[0]).await["status"], "SENT");
    assert_eq!(suppression(&w, "x@example.org").await, None);
}

async fn sns_cheap_refusals_fetch_no_certificate(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let ids = sent(&w, &["x@example.org"]).await;
    let relay_id = email(&w, &ids[0]).await["relayMessageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let good = Sns::notification(&w.app, &f, 2, &ses_bounce(&relay_id, "Permanent")).signed(&f.key);
    let refusals: Vec<(&str, &str, String, u16, &str)> = vec![
        // An unknown signature version: 400, whatever the certificate would say.
        (
            "version 3",
            "Notification",
            {
                let mut b = good.clone();
                b["SignatureVersion"] = json!("3");
                b.to_string()
            },
            400,
            "BAD_REQUEST",
        ),
        // Not JSON, and JSON without the SNS fields.
        (
            "not JSON",
            "Notification",
            "{not json".to_owned(),
            400,
            "BAD_REQUEST",
        ),
        (
            "no Signature",
            "Notification",
            {
                let mut b = good.clone();
                b.as_object_mut().unwrap().remove("Signature");
                b.to_string()
            },
            400,
            "BAD_REQUEST",
        ),
        // A confirmation without its Token cannot have a canonical string.
        (
            "no Token",
            "SubscriptionConfirmation",
            {
                let mut b = confirmation(&w.app, &f, TOPIC);
                b.as_object_mut().unwrap().remove("Token");
                b.to_string()
            },
            400,
            "BAD_REQUEST",
        ),
        // Signed, from a topic that is not listed: a notification and a confirmation.
        (
            "other topic",
            "Notification",
            {
                let mut m = Sns::notification(&w.app, &f, 2, &ses_bounce(&relay_id, "Permanent"));
                m.topic = "arn:aws:sns:us-east-1:999999999999:someone-else".into();
                m.signed(&f.key).to_string()
            },
            403,
            "FORBIDDEN",
        ),
        (
            "other topic",
            "SubscriptionConfirmation",
            confirmation(
                &w.app,
                &f,
                "arn:aws:sns:us-east-1:999999999999:someone-else",
            )
            .to_string(),
            403,
            "FORBIDDEN",
        ),
    ];
    for (what, kind, body, status, code) in refusals {
        let res = w
            .app
            .client
            .post(w.app.url("/webhooks/notifications"))
            .header("content-type", "text/plain; charset=UTF-8")
            .header("x-amz-sns-message-type", kind)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), status, "{what}");
        expect_error(res, status, code).await;
        assert_eq!(
            f.requests.load(Ordering::SeqCst),
            0,
            "{what}: refused before any certificate was fetched"
        );
    }
    assert_eq!(f.confirmations.load(Ordering::SeqCst), 0);
    assert_eq!(email(&w, &ids[0]).await["status"], "SENT");
    // The same message, untouched, is accepted: the refusals were for what they changed.
    expect_json(post_sns(&w.app, "Notification", &good).await, 200).await;
    assert_eq!(email(&w, &ids[0]).await["status"], "BOUNCED");
}

/// SES receipt (`notificationType: "Received"`, the message in `content`): the inbound path
/// of the MX listener (docs/smtp.md), SES's verdicts, and a replay records nothing.
async fn sns_ses_receipt_records_inbound_mail_once(engine: Engine) {
    let f = fixture().await;
    let w = sns_world(engine, &f).await;
    let raw = "From: Dana <dana@example.org>\r\nTo: support@acme-mail.com\r\nSubject: via SES\r\n\r\nHello from SES\r\n";
    let ses = json!({"notificationType": "Received",
        "content": base64::engine::general_purpose::STANDARD.encode(raw),
        "receipt": {"recipients": ["support@acme-mail.com", "x@not-ours.example"],
            "spfVerdict": {"status": "PASS"}, "dkimVerdict": {"status": "GRAY"},
            "dmarcVerdict": {"status": "FAIL"}, "action": {"type": "SNS", "encoding": "BASE64"}},
        "mail": {"source": "dana@example.org", "destination": ["support@acme-mail.com"]}});
    let body = Sns::notification(&w.app, &f, 2, &ses).signed(&f.key);
    for _ in 0..2 {
        expect_json(post_sns(&w.app, "Notification", &body).await, 200).await;
    }
    let sk = &w.project.secret_key;
    let feed = expect_json(w.app.get("/activity?type=email.received", sk).await, 200).await;
    let entries = feed["data"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{feed}");
    let data = &entries[0]["data"];
    assert_eq!(data["subject"], "via SES");
    assert_eq!(data["to"], json!(["support@acme-mail.com"]));
    assert_eq!(
        (&data["spf"], &data["dkim"], &data["dmarc"]),
        (&json!("pass"), &json!("none"), &json!("fail"))
    );
    assert!(data["text"].as_str().unwrap().contains("Hello from SES"));
    let m = expect_json(
        w.app
            .get(
                &format!("/emails/{}", data["messageId"].as_str().unwrap()),
                sk,
            )
            .await,
        200,
    )
    .await;
    assert_eq!(m["status"], "RECEIVED");
}
