//! SMTP submission end to end (DECISIONS.md "SMTP: submission and inbound mail"): real
//! clients (lettre over STARTTLS and implicit TLS, Python's smtplib, a raw socket for the
//! refusals) against the listener, the message through `/v1/send`'s path to a real relay,
//! DKIM-signed and tracked.

use std::time::Duration;

use herald_testkit::dkim_check::dkim_passes;
use lettre::address::Envelope;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use mail_parser::MessageParser;
use serde_json::Value;

use crate::helpers::{Engine, TestApp, expect_json, run_sql};
use crate::mail_setup::{DOMAIN, MailWorld, mail_world, wait_status};
use crate::smtp_client::{RawSmtp, cert_path};
use crate::{both_engines, both_engines_with_python};

both_engines!(
    lettre_over_starttls_delivers_a_signed_tracked_message,
    lettre_over_implicit_tls_is_accepted,
    refusals_get_their_codes_and_the_session_goes_on,
    bare_lf_never_ends_data,
    size_limits_are_enforced,
    wrong_auth_is_counted_per_client_address,
    client_leaving_mid_data_records_nothing,
    store_failure_during_data_is_451_with_nothing_recorded,
    auth_needs_tls_when_a_certificate_is_configured,
    the_connection_cap_and_the_idle_timeout_hold,
    a_thousand_idle_connections_leave_the_server_up,
    an_eight_bit_body_without_8bitmime_arrives_intact,
);
both_engines_with_python!(python_smtplib_submits_a_message);

const WAIT: Duration = Duration::from_secs(15);

/// A mail world with the submission listeners on loopback and the test certificate.
async fn world(engine: Engine, tweak: impl FnOnce(&mut herald::Config)) -> MailWorld {
    mail_world(engine, |c| {
        c.submission_listen = Some("127.0.0.1:0".into());
        c.submission_tls_listen = Some("127.0.0.1:0".into());
        c.tls_cert = Some(cert_path("cert.pem"));
        c.tls_key = Some(cert_path("key.pem"));
        tweak(c);
    })
    .await
}

fn lettre_client(port: u16, key: &str, wrapper: bool) -> AsyncSmtpTransport<Tokio1Executor> {
    let ca = std::fs::read(cert_path("ca.pem")).unwrap();
    let tls = TlsParameters::builder("localhost".into())
        .add_root_certificate(Certificate::from_pem(&ca).unwrap())
        .build_rustls()
        .unwrap();
    AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(port)
        .tls(if wrapper {
            Tls::Wrapper(tls)
        } else {
            Tls::Required(tls)
        })
        .credentials(Credentials::new("herald".into(), key.into()))
        .authentication(vec![Mechanism::Plain])
        .build()
}

fn envelope(from: &str, to: &[&str]) -> Envelope {
    Envelope::new(
        Some(from.parse::<Address>().unwrap()),
        to.iter().map(|t| t.parse::<Address>().unwrap()).collect(),
    )
    .unwrap()
}

/// The message id in `250 2.0.0 queued as <id>`.
fn queued_id(text: &str) -> String {
    let at = text.find("queued as ").expect("queued as") + "queued as ".len();
    text[at..].split_whitespace().next().unwrap().to_owned()
}

/// The project's messages (`GET /emails`).
async fn emails(app: &TestApp, key: &str) -> Vec<Value> {
    let v = expect_json(app.get("/emails", key).await, 200).await;
    v["data"].as_array().cloned().unwrap_or_default()
}

/// [`message_bytes`] from the verified domain to `to`, ended; the final reply.
async fn submit(c: &mut RawSmtp, subject: &str, to: &str) -> crate::smtp_client::Answer {
    let mut data = message_bytes(subject);
    data.extend_from_slice(b".\r\n");
    c.transaction(&format!("hello@{DOMAIN}"), &[to], &data)
        .await
}

fn message_bytes(subject: &str) -> Vec<u8> {
    format!(
        "From: Acme <hello@{DOMAIN}>\r\n\
To: Ada Lovelace <ada@example.org>\r\n\
Subject: {subject}\r\n\
X-Campaign: smtp-test\r\n\
DKIM-Signature: v=1; a=rsa-sha256; d=evil.example; b=forged\r\n\
Received: from nowhere.example\r\n\
MIME-Version: 1.0\r\n\
Content-Type: text/html; charset=utf-8\r\n\
\r\n\
<p>Hello <b>Ada</b>, <a href=\"https://acme.example/offer\">see the offer</a>.</p>\r\n"
    )
    .into_bytes()
}

async fn lettre_over_starttls_delivers_a_signed_tracked_message(engine: Engine) {
    let w = world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let port = w.app.submission.unwrap().port();
    let client = lettre_client(port, sk, false);
    let res = client
        .send_raw(
            &envelope(&format!("hello@{DOMAIN}"), &["ada@example.org"]),
            &message_bytes("Hello over SMTP"),
        )
        .await
        .expect("accepted");
    assert!(res.is_positive(), "{res:?}");
    let text: Vec<&str> = res.message().collect();
    let id = queued_id(&text.join(" "));
    let m = wait_status(&w.app, sk, &id, &["SENT"], WAIT).await;
    assert_eq!(m["to"], "ada@example.org", "{m}");
    assert_eq!(m["subject"], "Hello over SMTP", "{m}");
    // The contact was upserted as /v1/send does.
    let c = w.app.contact_by_email(sk, "ada@example.org").await;
    assert_eq!(c["email"], "ada@example.org");
    let got = w.sink.wait_for(1, WAIT).await;
    let data = &got[0].data;
    assert!(
        dkim_passes(data, DOMAIN, &w.selector, &w.dkim_txt).await,
        "one DKIM signature, Herald's, and it verifies"
    );
    let parsed = MessageParser::default().parse(data).unwrap();
    assert_eq!(parsed.subject(), Some("Hello over SMTP"));
    assert_eq!(
        parsed.header_raw("X-Campaign").map(str::trim),
        Some("smtp-test"),
        "an unreserved header is kept"
    );
    let raw = String::from_utf8_lossy(data);
    assert!(
        !raw.contains("forged"),
        "the client's DKIM-Signature is replaced"
    );
    assert!(
        !raw.contains("nowhere.example"),
        "the client's Received is dropped"
    );
    let html = parsed.body_html(0).unwrap();
    assert!(html.contains("/t/click/"), "links are tracked: {html}");
    assert!(html.contains("/t/open/"), "the open pixel is added: {html}");
}

async fn lettre_over_implicit_tls_is_accepted(engine: Engine) {
    let w = world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let port = w.app.submission_tls.unwrap().port();
    let client = lettre_client(port, sk, true);
    let res = client
        .send_raw(
            &envelope(
                &format!("hello@{DOMAIN}"),
                &["ada@example.org", "bob@example.org"],
            ),
            &message_bytes("Implicit TLS"),
        )
        .await
        .expect("accepted");
    let text: Vec<&str> = res.message().collect();
    let id = queued_id(&text.join(" "));
    wait_status(&w.app, sk, &id, &["SENT"], WAIT).await;
    let got = w.sink.wait_for(2, WAIT).await;
    let mut to: Vec<String> = got.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    to.sort();
    assert_eq!(to, ["ada@example.org", "bob@example.org"]);
    assert_eq!(
        emails(&w.app, sk).await.len(),
        2,
        "one message row per recipient"
    );
}

async fn refusals_get_their_codes_and_the_session_goes_on(engine: Engine) {
    let w = world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let addr = w.app.submission.unwrap();
    let mut c = RawSmtp::connect(addr).await;
    c.expect("HELLO?", 500).await;
    c.expect("MAIL FROM:<hello@acme-mail.com>", 503).await;
    let ehlo = c.expect("EHLO client.test", 250).await;
    for ext in [
        "PIPELINING",
        "SIZE 10485760",
        "8BITMIME",
        "ENHANCEDSTATUSCODES",
        "SMTPUTF8",
        "STARTTLS",
        "AUTH PLAIN LOGIN",
    ] {
        assert!(
            ehlo.text.lines().any(|l| l == ext),
            "{ext} in {:?}",
            ehlo.text
        );
    }
    let a = c.expect("MAIL FROM:<hello@acme-mail.com>", 530).await;
    assert!(a.text.starts_with("5.7.0"), "{a:?}");
    let mut c = RawSmtp::login(addr, sk).await;
    let a = c
        .expect("MAIL FROM:<someone@not-verified.example>", 550)
        .await;
    assert!(a.text.starts_with("5.7.1"), "{a:?}");
    c.expect(&format!("MAIL FROM:<hello@{DOMAIN}>"), 250).await;
    c.expect("RCPT TO:<not an address>", 501).await;
    for i in 0..50 {
        c.expect(&format!("RCPT TO:<r{i}@example.org>"), 250).await;
    }
    let a = c.expect("RCPT TO:<r50@example.org>", 452).await;
    assert!(a.text.starts_with("4.5.3"), "{a:?}");
    c.expect("RSET", 250).await;
    // A message without From.
    let a = c
        .transaction(
            &format!("hello@{DOMAIN}"),
            &["ada@example.org"],
            b"To: ada@example.org\r\nSubject: no sender\r\n\r\nHi\r\n.\r\n",
        )
        .await;
    assert_eq!(a.code, 550, "{a:?}");
    // A From header on a domain the project has not verified.
    let a = c
        .transaction(
            &format!("hello@{DOMAIN}"),
            &["ada@example.org"],
            b"From: x@not-verified.example\r\nTo: ada@example.org\r\nSubject: s\r\n\r\nHi\r\n.\r\n",
        )
        .await;
    assert_eq!((a.code, &a.text[..5]), (550, "5.7.1"), "{a:?}");
    assert!(
        emails(&w.app, sk).await.is_empty(),
        "nothing refused was recorded"
    );
    // The session still works: a good message after the refusals.
    let a = submit(&mut c, "After refusals", "ada@example.org").await;
    assert_eq!(a.code, 250, "{a:?}");
    wait_status(&w.app, sk, &queued_id(&a.text), &["SENT"], WAIT).await;
    // A line longer than the command limit, and more than 100 commands without MAIL.
    c.send(&vec![b'x'; 20_000]).await;
    c.expect("", 500).await;
    for _ in 0..99 {
        c.expect("NOOP", 250).await;
    }
    let a = c.cmd("NOOP").await;
    assert_eq!(a.code, 421, "{a:?}");
    assert!(c.read().await.is_none(), "closed after 421");
}

async fn bare_lf_never_ends_data(engine: Engine) {
    let w = world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let mut c = RawSmtp::login(w.app.submission.unwrap(), sk).await;
    // `<LF>.<LF>` followed by a smuggled second transaction, then the real end.
    let mut data = message_bytes("Smuggler");
    data.extend_from_slice(
        b"\n.\nMAIL FROM:<hello@acme-mail.com>\r\nRCPT TO:<victim@example.org>\r\nDATA\r\n\
From: hello@acme-mail.com\r\nSubject: smuggled\r\n\r\nboo\r\n.\r\n",
    );
    let a = c
        .transaction(&format!("hello@{DOMAIN}"), &["ada@example.org"], &data)
        .await;
    assert_eq!(a.code, 550, "one reply for the whole thing: {a:?}");
    c.expect("NOOP", 250).await;
    assert!(
        emails(&w.app, sk).await.is_empty(),
        "nothing was accepted or smuggled"
    );
}

async fn size_limits_are_enforced(engine: Engine) {
    let w = world(engine, |c| c.submission_max_bytes = 20_000).await;
    let sk = &w.project.secret_key;
    let mut c = RawSmtp::login(w.app.submission.unwrap(), sk).await;
    let a = c
        .expect(&format!("MAIL FROM:<hello@{DOMAIN}> SIZE=20001"), 552)
        .await;
    assert!(a.text.starts_with("5.3.4"), "{a:?}");
    // A body over the limit.
    let mut big = message_bytes("Big");
    for _ in 0..400 {
        big.extend_from_slice(&[b'a'; 78]);
        big.extend_from_slice(b"\r\n");
    }
    big.extend_from_slice(b".\r\n");
    let a = c
        .transaction(&format!("hello@{DOMAIN}"), &["ada@example.org"], &big)
        .await;
    assert_eq!((a.code, &a.text[..5]), (552, "5.3.4"), "{a:?}");
    // A header line of 10 KB.
    let mut long = format!("From: hello@{DOMAIN}\r\nX-Long: ").into_bytes();
    long.extend_from_slice(&[b'h'; 10_000]);
    long.extend_from_slice(b"\r\nSubject: s\r\n\r\nbody\r\n.\r\n");
    let a = c
        .transaction(&format!("hello@{DOMAIN}"), &["ada@example.org"], &long)
        .await;
    assert_eq!(a.code, 500, "{a:?}");
    c.expect("NOOP", 250).await;
    assert!(emails(&w.app, sk).await.is_empty());
}

async fn wrong_auth_is_counted_per_client_address(engine: Engine) {
    let w = world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let addr = w.app.submission.unwrap();
    let mut c = RawSmtp::connect(addr).await;
    c.expect("EHLO client.test", 250).await;
    let wrong = format!("sk_{}", "0".repeat(48));
    for pass in [wrong.as_str(), "not-a-key", sk.as_str()] {
        // The right key under another user name is wrong too.
        let user = if pass == sk.as_str() {
            "admin"
        } else {
            "herald"
        };
        let auth = base64_plain(user, pass);
        let a = c.expect(&format!("AUTH PLAIN {auth}"), 535).await;
        assert!(a.text.starts_with("5.7.8"), "{a:?}");
    }
    // AUTH LOGIN, wrong twice more: five failures.
    for _ in 0..2 {
        c.expect("AUTH LOGIN", 334).await;
        c.expect(&b64("herald"), 334).await;
        c.expect(&b64(&wrong), 535).await;
    }
    // Now even the right key is refused from this address until the window passes.
    let a = c
        .expect(&format!("AUTH PLAIN {}", base64_plain("herald", sk)), 454)
        .await;
    assert!(a.text.starts_with("4.7.0"), "{a:?}");
    w.app.clock.advance(Duration::from_secs(16 * 60));
    c.expect(&format!("AUTH PLAIN {}", base64_plain("herald", sk)), 235)
        .await;
}

fn b64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn base64_plain(user: &str, pass: &str) -> String {
    b64(&format!("\0{user}\0{pass}"))
}

async fn client_leaving_mid_data_records_nothing(engine: Engine) {
    let w = world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let addr = w.app.submission.unwrap();
    let mut c = RawSmtp::login(addr, sk).await;
    c.expect(&format!("MAIL FROM:<hello@{DOMAIN}>"), 250).await;
    c.expect("RCPT TO:<ada@example.org>", 250).await;
    c.expect("DATA", 354).await;
    c.send(&message_bytes("Half")).await;
    drop(c);
    // The listener is still up and the half message was never recorded.
    let mut c = RawSmtp::login(addr, sk).await;
    c.expect("NOOP", 250).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(emails(&w.app, sk).await.is_empty());
}

async fn store_failure_during_data_is_451_with_nothing_recorded(engine: Engine) {
    let w = world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let fault: &[&str] = match engine {
        Engine::Sqlite => &["CREATE TRIGGER fail_messages BEFORE INSERT ON messages \
             BEGIN SELECT RAISE(ABORT, 'injected fault'); END"],
        Engine::Postgres => &[
            "CREATE FUNCTION fail_insert() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$",
            "CREATE TRIGGER fail_messages BEFORE INSERT ON messages \
             FOR EACH ROW EXECUTE FUNCTION fail_insert()",
        ],
    };
    run_sql(&w.app, fault).await;
    let mut c = RawSmtp::login(w.app.submission.unwrap(), sk).await;
    let a = submit(&mut c, "Store down", "fresh@example.org").await;
    assert_eq!((a.code, &a.text[..5]), (451, "4.3.0"), "{a:?}");
    let found = expect_json(
        w.app
            .post(
                "/contacts/lookup",
                sk,
                &serde_json::json!({"emails": ["fresh@example.org"]}),
            )
            .await,
        200,
    )
    .await;
    assert_eq!(
        found["found"],
        serde_json::json!([]),
        "no contact half-recorded"
    );
    let drop = match engine {
        Engine::Sqlite => "DROP TRIGGER fail_messages",
        Engine::Postgres => "DROP TRIGGER fail_messages ON messages",
    };
    run_sql(&w.app, &[drop]).await;
    let a = submit(&mut c, "Store down", "fresh@example.org").await;
    assert_eq!(a.code, 250, "the client's retry goes through: {a:?}");
    wait_status(&w.app, sk, &queued_id(&a.text), &["SENT"], WAIT).await;
    assert_eq!(emails(&w.app, sk).await.len(), 1, "recorded once");
}

async fn auth_needs_tls_when_a_certificate_is_configured(engine: Engine) {
    // Loopback peers may authenticate in clear; this checks the other peers through the
    // same rule by listening on a non-loopback address of this machine when there is one.
    let Some(ip) = local_non_loopback_ip() else {
        println!("no non-loopback address on this machine: skipping the TLS-only AUTH check");
        return;
    };
    let w = world(engine, |c| c.submission_listen = Some(format!("{ip}:0"))).await;
    let mut c = RawSmtp::connect(w.app.submission.unwrap()).await;
    let ehlo = c.expect("EHLO client.test", 250).await;
    assert!(!ehlo.text.contains("AUTH"), "{:?}", ehlo.text);
    let a = c
        .expect(
            &format!(
                "AUTH PLAIN {}",
                base64_plain("herald", &w.project.secret_key)
            ),
            538,
        )
        .await;
    assert!(a.text.starts_with("5.7.11"), "{a:?}");
}

/// An address of this machine other than loopback (the one a UDP socket would route from).
fn local_non_loopback_ip() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

async fn python_smtplib_submits_a_message(engine: Engine) {
    let w = world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let port = w.app.submission.unwrap().port();
    let script = r#"
import smtplib, ssl, sys
from email.message import EmailMessage
port, key, ca, domain = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
m = EmailMessage()
m["From"] = f"Acme <hello@{domain}>"
m["To"] = "py@example.org"
m["Subject"] = "From smtplib"
m.set_content("Plain text from Python\nsecond line")
with smtplib.SMTP("127.0.0.1", port, timeout=10) as s:
    s.starttls(context=ssl.create_default_context(cafile=ca))
    s.login("herald", key)
    s.send_message(m)
    print("sent")
"#;
    let ca = cert_path("ca.pem");
    let out = tokio::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(port.to_string())
        .arg(sk)
        .arg(&ca)
        .arg(DOMAIN)
        .output()
        .await
        .expect("python3");
    assert!(
        out.status.success(),
        "smtplib failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = emails(&w.app, sk).await;
        if let Some(m) = list.iter().find(|m| m["subject"] == "From smtplib") {
            let id = m["id"].as_str().unwrap().to_owned();
            wait_status(&w.app, sk, &id, &["SENT"], WAIT).await;
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no message from smtplib"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = w.sink.wait_for(1, WAIT).await;
    let parsed = MessageParser::default().parse(&got[0].data).unwrap();
    assert!(parsed.body_text(0).unwrap().contains("second line"));
}

async fn the_connection_cap_and_the_idle_timeout_hold(engine: Engine) {
    let w = world(engine, |c| {
        c.smtp_server_max_connections = 3;
        c.smtp_server_idle_timeout_secs = 1.0;
    })
    .await;
    let addr = w.app.submission.unwrap();
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(RawSmtp::connect(addr).await);
    }
    // The fourth is told to come back later and closed.
    let s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut r = tokio::io::BufReader::new(s);
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut r, &mut line)
        .await
        .unwrap();
    assert!(line.starts_with("421 4.3.2"), "{line:?}");
    // An idle client is dropped after the idle timeout, which frees its slot.
    let a = open[0].read().await.expect("a reply before the close");
    assert_eq!((a.code, &a.text[..5]), (421, "4.4.2"), "{a:?}");
    assert!(open[0].read().await.is_none());
    drop(open);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut c = RawSmtp::connect(addr).await;
    c.expect("NOOP", 250).await;
}

/// A thousand clients that connect and say nothing: the first `max_connections` (500 by
/// default) are greeted, the rest told to come back later; all are dropped after the idle
/// timeout, and then a client sends a message as usual.
async fn a_thousand_idle_connections_leave_the_server_up(engine: Engine) {
    let w = world(engine, |c| c.smtp_server_idle_timeout_secs = 2.0).await;
    let addr = w.app.submission.unwrap();
    let mut idle = Vec::new();
    for _ in 0..1000 {
        let s = tokio::net::TcpStream::connect(addr).await.unwrap();
        idle.push(tokio::io::BufReader::new(s));
    }
    let mut greeted = 0;
    let mut turned_away = 0;
    for r in &mut idle {
        let mut line = String::new();
        tokio::io::AsyncBufReadExt::read_line(r, &mut line)
            .await
            .unwrap();
        match &line[..3] {
            "220" => greeted += 1,
            "421" => turned_away += 1,
            _ => panic!("unexpected greeting {line:?}"),
        }
    }
    assert_eq!((greeted, turned_away), (500, 500));
    // Every idle client is closed once the idle timeout passes, which frees the slots.
    for r in &mut idle {
        let mut rest = Vec::new();
        tokio::time::timeout(WAIT, tokio::io::AsyncReadExt::read_to_end(r, &mut rest))
            .await
            .expect("closed after the idle timeout")
            .unwrap();
    }
    drop(idle);
    let sk = &w.project.secret_key;
    let mut c = RawSmtp::login(addr, sk).await;
    let a = submit(&mut c, "After the crowd", "ada@example.org").await;
    assert_eq!(a.code, 250, "{a:?}");
    w.sink.wait_for(1, WAIT).await;
}

/// 8-bit bytes after a MAIL FROM without `BODY=8BITMIME` are taken as sent (as Postfix does
/// by default): the UTF-8 body and a Latin-1 one arrive with their text intact.
async fn an_eight_bit_body_without_8bitmime_arrives_intact(engine: Engine) {
    let w = world(engine, |_| {}).await;
    let sk = &w.project.secret_key;
    let mut c = RawSmtp::login(w.app.submission.unwrap(), sk).await;
    for (charset, body) in [
        ("utf-8", "Gr\u{fc}\u{df}e aus K\u{f6}ln".as_bytes().to_vec()),
        ("iso-8859-1", b"Gr\xfc\xdfe aus K\xf6ln".to_vec()),
    ] {
        let mut data = format!(
            "From: hello@{DOMAIN}\r\nTo: ada@example.org\r\nSubject: {charset}\r\n\
MIME-Version: 1.0\r\nContent-Type: text/plain; charset={charset}\r\n\r\n"
        )
        .into_bytes();
        data.extend_from_slice(&body);
        data.extend_from_slice(b"\r\n.\r\n");
        let a = c
            .transaction(&format!("hello@{DOMAIN}"), &["ada@example.org"], &data)
            .await;
        assert_eq!(a.code, 250, "{charset}: {a:?}");
    }
    let got = w.sink.wait_for(2, WAIT).await;
    for m in &got {
        let parsed = MessageParser::default().parse(&m.data).unwrap();
        let subject = parsed.subject().unwrap_or_default().to_owned();
        let text = parsed.body_text(0).unwrap();
        assert!(
            text.contains("Gr\u{fc}\u{df}e aus K\u{f6}ln"),
            "{subject}: {text:?}"
        );
    }
}
