//! The send benchmark: `/v1/send` acceptance (one recipient each) and delivery of the queued
//! messages to a loopback SMTP sink with RSA-2048 DKIM signing, with the process's peak RSS
//! while the queue drains.
//!
//! Acceptance runs on a node without workers, so the number is the API's alone. Then a second
//! node on the same database starts its workers and drains the queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use herald_testkit::dns_server::DnsServer;
use herald_testkit::smtp_sink::SmtpSink;
use reqwest::{Client, StatusCode};
use serde_json::json;
use tokio::task::JoinSet;

use crate::server::{Server, expect_status, project_key};

const TARGET_ACCEPTED_PER_SEC: f64 = 2000.0;
const TARGET_DELIVERED_PER_SEC: f64 = 1500.0;
const TARGET_RSS_MB: f64 = 150.0;
pub const DOMAIN: &str = "bench-sender.com";

pub struct SendOptions {
    pub count: usize,
    pub concurrency: usize,
    pub database_url: Option<String>,
}

pub async fn run(opts: &SendOptions) -> anyhow::Result<()> {
    let sink = SmtpSink::start().await?;
    sink.keep_messages(false);
    let dns = DnsServer::start().await?;
    let (smtp_url, dns_addr) = (sink.url(), dns.addr());
    let api = Server::start_with(opts.database_url.as_deref(), |c| {
        c.workers = false;
        c.smtp_url = Some(smtp_url.clone());
        c.dns_resolver = Some(dns_addr);
    })
    .await?;
    println!("engine: {}", api.engine);
    let key = project_key(&api).await?;
    verify_domain(&api, &key, &dns).await?;

    // Acceptance.
    let client = Client::new();
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..opts.concurrency {
        let (client, next, key, url, count) = (
            client.clone(),
            next.clone(),
            key.clone(),
            api.url("/v1/send"),
            opts.count,
        );
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return Ok::<_, anyhow::Error>(());
                }
                let body = json!({
                    "to": format!("reader{i:07}@example.org"),
                    "from": {"name": "Bench", "email": format!("news@{DOMAIN}")},
                    "subject": "Hello {{firstName ?? \"there\"}}",
                    "body": "<p>Hi {{firstName ?? \"there\"}}, this is message {{n}}.</p><p><a href=\"https://example.org\">Read more</a></p>",
                    "data": {"firstName": "Reader", "n": i},
                });
                let res = client.post(&url).bearer_auth(&key).json(&body).send().await?;
                expect_status(res, StatusCode::OK, "POST /v1/send").await?;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let took = start.elapsed();
    let rate = opts.count as f64 / took.as_secs_f64();
    println!(
        "POST /v1/send: {} in {:.1} s = {rate:.0} accepted/s (target >= {TARGET_ACCEPTED_PER_SEC:.0}) {}",
        opts.count,
        took.as_secs_f64(),
        verdict(rate >= TARGET_ACCEPTED_PER_SEC)
    );

    // Delivery by a worker node on the same database.
    let rss_before = rss_mb();
    let config = api.config.clone();
    let worker = Server::start_on(config, |c| c.workers = true).await?;
    let start = Instant::now();
    let mut peak = rss_before;
    let mut last = 0;
    let mut stalled = Instant::now();
    while sink.accepted_count() < opts.count {
        tokio::time::sleep(Duration::from_millis(200)).await;
        peak = peak.max(rss_mb());
        let now = sink.accepted_count();
        if now != last {
            last = now;
            stalled = Instant::now();
        }
        anyhow::ensure!(
            stalled.elapsed() < Duration::from_secs(60),
            "delivery stalled at {now} of {}",
            opts.count
        );
    }
    let took = start.elapsed();
    let rate = opts.count as f64 / took.as_secs_f64();
    println!(
        "delivery (MIME + DKIM RSA-2048 + SMTP): {} in {:.1} s = {rate:.0} delivered/s (target >= {TARGET_DELIVERED_PER_SEC:.0}) {}",
        opts.count,
        took.as_secs_f64(),
        verdict(rate >= TARGET_DELIVERED_PER_SEC)
    );
    println!(
        "memory while draining: RSS {rss_before:.0} MB before, {peak:.0} MB peak (whole benchmark process: server, client and sink; target < {TARGET_RSS_MB:.0} MB) {}",
        verdict(peak < TARGET_RSS_MB)
    );
    worker.shutdown().await?;
    api.shutdown().await
}

pub fn verdict(ok: bool) -> &'static str {
    if ok { "ok" } else { "BELOW TARGET" }
}

/// Adds the sender domain and publishes its records in the loopback DNS server.
pub async fn verify_domain(api: &Server, key: &str, dns: &DnsServer) -> anyhow::Result<()> {
    let client = Client::new();
    let res = client
        .post(api.url("/domains"))
        .bearer_auth(key)
        .json(&json!({"domain": DOMAIN}))
        .send()
        .await?;
    let added = expect_status(res, StatusCode::CREATED, "POST /domains").await?;
    for r in added["records"].as_array().context("records")? {
        if r["type"] == "TXT" {
            let (name, value) = (
                r["name"].as_str().unwrap_or(""),
                r["value"].as_str().unwrap_or(""),
            );
            dns.set_txt(name, vec![value.to_owned()]);
        }
    }
    let id = added["id"].as_str().context("domain id")?;
    let res = client
        .get(api.url(&format!("/domains/{id}/verify")))
        .bearer_auth(key)
        .send()
        .await?;
    let verified = expect_status(res, StatusCode::OK, "GET /domains/:id/verify").await?;
    anyhow::ensure!(
        verified["status"] == "VERIFIED",
        "the domain did not verify: {verified}"
    );
    Ok(())
}

/// Resident memory of this process in MB (Linux), 0 elsewhere.
pub fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}
