//! The inbound-mail benchmark (issue 34): `count` messages of about 10 KB, each DKIM-signed by a
//! sender domain whose key, SPF and DMARC records a loopback DNS server publishes, delivered
//! over `concurrency` sessions to the MX listener for a verified domain. Every message gets its
//! SPF, DKIM and DMARC verdicts, its message row, its contact upsert and its `email.received`
//! event before the `250`. Target: at least 1,000 messages/s, the process's RSS under 150 MB.
//!
//! Signing is the sender's cost, not Herald's: a pool of distinct signed messages is built
//! before the clock starts and sent round-robin.

use std::sync::Arc;

use anyhow::{Context, ensure};
use herald_mail::dkim::{DkimSigner, dkim_txt_value, generate_rsa_2048};
use herald_testkit::dns_server::DnsServer;
use reqwest::{Client, StatusCode};

use crate::memory::Peak;
use crate::send::{DOMAIN, verdict, verify_domain};
use crate::server::{Server, expect_status, free_loopback_addr, project_keys};
use crate::smtp::{SmtpOptions, TARGET_RSS_MB, Traffic, submit_all};

const TARGET_PER_SEC: f64 = 1000.0;
const SENDER_DOMAIN: &str = "customers.example";
/// Distinct signed messages sent round-robin.
const POOL: usize = 512;

/// Message `i` of the pool, about 10 KB, signed by the sender domain.
fn signed_message(signer: &DkimSigner, i: usize) -> anyhow::Result<Arc<[u8]>> {
    let line = "I ordered the blue one last week and it has not arrived yet; can you check? ";
    let body = (0..130).map(|_| line).collect::<Vec<_>>().join("\r\n");
    let message = format!(
        "From: Customer {i} <customer{i}@{SENDER_DOMAIN}>\r\nTo: support@{DOMAIN}\r\n\
Subject: Where is order {i}?\r\nDate: Fri, 27 Nov 2026 06:00:00 +0000\r\n\
Message-ID: <order-{i}@{SENDER_DOMAIN}>\r\nMIME-Version: 1.0\r\n\
Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    );
    let mut signed = signer.sign(message.as_bytes())?;
    signed.extend_from_slice(b".\r\n");
    Ok(signed.into())
}

pub async fn run(opts: &SmtpOptions) -> anyhow::Result<()> {
    let dns = DnsServer::start().await?;
    let dns_addr = dns.addr();
    let addr = free_loopback_addr()?;
    let server = Server::start_with(opts.database_url.as_deref(), |c| {
        c.workers = false;
        c.dns_resolver = Some(dns_addr);
        c.mx_listen = Some(addr.clone());
        c.smtp_server_max_connections = opts.concurrency * 2 + 8;
    })
    .await?;
    let (_, key) = project_keys(&server).await?;
    verify_domain(&server, &key, &dns).await?;
    let pair = generate_rsa_2048()?;
    dns.set_txt(
        &format!("s1._domainkey.{SENDER_DOMAIN}"),
        vec![dkim_txt_value(&pair.public_key_b64)],
    );
    dns.set_txt(SENDER_DOMAIN, vec!["v=spf1 ip4:127.0.0.1 -all".into()]);
    dns.set_txt(
        &format!("_dmarc.{SENDER_DOMAIN}"),
        vec!["v=DMARC1; p=reject".into()],
    );
    let signer = DkimSigner::new(SENDER_DOMAIN, "s1", &pair.private_pkcs8_der)?;
    let pool: Vec<Arc<[u8]>> = (0..POOL)
        .map(|i| signed_message(&signer, i))
        .collect::<anyhow::Result<_>>()?;
    println!(
        "Herald inbound benchmark: {} messages of {:.1} KB, DKIM-signed, over {} sessions to the MX listener, workers off, {}",
        opts.count,
        pool[0].len() as f64 / 1024.0,
        opts.concurrency,
        server.engine
    );
    let pool = Arc::new(pool);
    let traffic = Traffic {
        addr,
        key: None,
        mail_from: format!("customer@{SENDER_DOMAIN}"),
        rcpt: Arc::new(|_| format!("support@{DOMAIN}")),
        data: Arc::new(move |i| pool[i % POOL].clone()),
    };
    let peak = Peak::start();
    submit_all(&traffic, opts.concurrency * 10, opts.concurrency).await?;
    let secs = submit_all(&traffic, opts.count, opts.concurrency).await?;
    let rate = opts.count as f64 / secs;
    let rss = peak.get();
    check_verdicts(&server, &key).await?;
    println!(
        "Inbound: {} in {secs:.1} s = {rate:.0} messages/s (target >= {TARGET_PER_SEC:.0}) {}",
        opts.count,
        verdict(rate >= TARGET_PER_SEC)
    );
    println!(
        "RSS peak during the inbound run: {rss} MB (whole benchmark process; target < {TARGET_RSS_MB:.0} MB) {}",
        verdict((rss as f64) < TARGET_RSS_MB)
    );
    server.shutdown().await
}

/// The run measured real verification: the newest `email.received` event passed all three.
async fn check_verdicts(server: &Server, key: &str) -> anyhow::Result<()> {
    let res = Client::new()
        .get(server.url("/activity?type=email.received&limit=1"))
        .bearer_auth(key)
        .send()
        .await?;
    let page = expect_status(res, StatusCode::OK, "GET /activity").await?;
    let data = &page["data"][0]["data"];
    let verdicts = ["spf", "dkim", "dmarc"].map(|k| data[k].as_str().unwrap_or_default());
    ensure!(
        verdicts == ["pass"; 3],
        "the verdicts were not all pass: {}",
        serde_json::to_string(data).context("verdicts")?
    );
    Ok(())
}
