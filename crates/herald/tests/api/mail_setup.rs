//! Fixtures for tests that send: a real SMTP sink and a real DNS server on loopback, an app
//! wired to both, and a project whose sender domain is verified through DNS.

use std::time::Duration;

use herald_testkit::dns_server::DnsServer;
use herald_testkit::smtp_sink::SmtpSink;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Engine, TestApp, TestProject, expect_json};

pub const DOMAIN: &str = "acme-mail.com";

pub struct MailWorld {
    pub app: TestApp,
    pub sink: SmtpSink,
    /// Kept alive: the app resolves through it.
    #[allow(dead_code)]
    pub dns: DnsServer,
    pub project: TestProject,
    /// The DKIM TXT record published for the domain, and its selector.
    pub dkim_txt: String,
    pub selector: String,
}

/// An app that relays to a fresh SMTP sink, resolves through a fresh DNS server, and a project
/// with `acme-mail.com` verified.
pub async fn mail_world(engine: Engine, tweak: impl FnOnce(&mut herald::Config)) -> MailWorld {
    let sink = SmtpSink::start().await.expect("smtp sink");
    mail_world_on(sink, engine, tweak).await
}

/// [`mail_world`] relaying to `sink` (set up before the app connects to it).
pub async fn mail_world_on(
    sink: SmtpSink,
    engine: Engine,
    tweak: impl FnOnce(&mut herald::Config),
) -> MailWorld {
    let dns = DnsServer::start().await.expect("dns server");
    let smtp_url = sink.url();
    let dns_addr = dns.addr();
    let app = engine
        .app_with(|c| {
            c.smtp_url = Some(smtp_url);
            c.dns_resolver = Some(dns_addr);
            c.dns_timeout_secs = 1.0;
            c.send_retry_base_secs = 0.1;
            tweak(c);
        })
        .await;
    // Every sign-up mails a verification link; tests here count their own mail only.
    sink.ignore_from(&app.config.system_from);
    let project = app.project().await;
    let (dkim_txt, selector) = verify_domain(&app, &project, &dns, DOMAIN).await;
    MailWorld {
        app,
        sink,
        dns,
        project,
        dkim_txt,
        selector,
    }
}

/// Adds `domain`, publishes its records in `dns`, verifies it; returns (DKIM TXT, selector).
pub async fn verify_domain(
    app: &TestApp,
    p: &TestProject,
    dns: &DnsServer,
    domain: &str,
) -> (String, String) {
    let added = expect_json(
        app.post("/domains", &p.secret_key, &json!({"domain": domain}))
            .await,
        201,
    )
    .await;
    let mut dkim = (String::new(), String::new());
    for r in added["records"].as_array().expect("records") {
        let (name, value) = (
            r["name"].as_str().unwrap_or(""),
            r["value"].as_str().unwrap_or(""),
        );
        if r["type"] == "TXT" {
            dns.set_txt(name, vec![value.to_owned()]);
        }
        if r["purpose"] == "dkim" {
            dkim = (
                value.to_owned(),
                added["selector"].as_str().unwrap_or("").to_owned(),
            );
        }
    }
    let id = added["id"].as_str().expect("id");
    let verified = expect_json(
        app.get(&format!("/domains/{id}/verify"), &p.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(verified["status"], "VERIFIED", "{verified}");
    dkim
}

/// A project whose reserved sender domain `shop.test` is verified at once (local outbox).
pub async fn outbox_project(app: &TestApp) -> TestProject {
    let p = app.project().await;
    let answer = app
        .post("/domains", &p.secret_key, &json!({"domain": "shop.test"}))
        .await;
    expect_json(answer, 201).await;
    p
}

/// `POST /v1/send` with the project's secret key.
pub async fn send(w: &MailWorld, body: &Value) -> reqwest::Response {
    w.app.post("/v1/send", &w.project.secret_key, body).await
}

/// Polls `GET /emails/{id}` until its status is one of `want` (or panics after `timeout`).
pub async fn wait_status(
    app: &TestApp,
    key: &str,
    id: &str,
    want: &[&str],
    timeout: Duration,
) -> Value {
    wait_message(app, key, id, timeout, |m| {
        want.iter().any(|w| m["status"] == *w)
    })
    .await
}

/// Waits until no send job is waiting or leased (or panics after `timeout`). From then on
/// nothing more can be handed to the relay, so counting deliveries is final: this replaces
/// "sleep a while and hope a duplicate would have shown up by now".
pub async fn wait_queue_settled(app: &TestApp, timeout: Duration) {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let counts = app.store.job_counts().await.expect("job counts");
        let busy: i64 = counts
            .iter()
            .filter(|(kind, state, _)| kind == "send" && (state == "waiting" || state == "active"))
            .map(|(_, _, n)| n)
            .sum();
        if busy == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "send queue never settled: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Polls `GET /emails/{id}` until `done` holds for it (or panics after `timeout`).
pub async fn wait_message(
    app: &TestApp,
    key: &str,
    id: &str,
    timeout: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let res = app
            .call(Method::GET, &format!("/emails/{id}"), Some(key), None)
            .await;
        let body: Value = res.json().await.expect("json");
        if done(&body) {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "message {id} never got there: {body}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The message ids of a `/v1/send` answer.
pub fn message_ids(answer: &Value) -> Vec<String> {
    answer["data"]["emails"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["email"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `GET /emails/{id}` of the world's project.
pub async fn message(w: &MailWorld, id: &str) -> Value {
    expect_json(
        w.app
            .get(&format!("/emails/{id}"), &w.project.secret_key)
            .await,
        200,
    )
    .await
}

/// `GET /contacts/{id}` of the world's project.
pub async fn contact(w: &MailWorld, id: &str) -> Value {
    expect_json(
        w.app
            .get(&format!("/contacts/{id}"), &w.project.secret_key)
            .await,
        200,
    )
    .await
}

/// After a worker process was killed: waits until the bytes it had written have reached the
/// relay (no new transfer for 300 ms and no 250 pending), so what the sink holds is final.
pub async fn wait_relay_quiet(sink: &herald_testkit::smtp_sink::SmtpSink) {
    let mut last = (sink.attempts(), std::time::Instant::now());
    while last.1.elapsed() < Duration::from_millis(300) || sink.unreplied() > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if sink.attempts() != last.0 {
            last = (sink.attempts(), std::time::Instant::now());
        }
    }
}

/// How often the sink received each recipient.
pub fn deliveries(
    sink: &herald_testkit::smtp_sink::SmtpSink,
) -> std::collections::HashMap<String, usize> {
    let mut counts = std::collections::HashMap::new();
    for m in sink.messages() {
        for r in m.rcpt_to {
            *counts.entry(r).or_insert(0) += 1;
        }
    }
    counts
}

/// DECISIONS.md "Delivery guarantees" after kills: a recipient handed over more than once got
/// it exactly twice and was in flight (at the relay, not recorded SENT) at a kill.
pub fn assert_repeats_only_in_flight(
    counts: &std::collections::HashMap<String, usize>,
    in_flight: &std::collections::HashSet<String>,
) {
    let twice: Vec<&String> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(r, _)| r)
        .collect();
    println!(
        "handed over twice: {} (bound: {} in flight)",
        twice.len(),
        in_flight.len()
    );
    for r in twice {
        assert_eq!(counts[r], 2, "{r} handed over more than twice");
        assert!(
            in_flight.contains(r),
            "{r} handed over twice but was not in flight at a kill"
        );
    }
}
