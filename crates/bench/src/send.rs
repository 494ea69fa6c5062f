//! The send benchmark: `/v1/send` acceptance (one recipient each) and delivery of the queued
//! messages to a loopback SMTP sink with RSA-2048 DKIM signing, with the process's peak RSS
//! while the queue drains. In the same run it measures the 2-thread signing rate of the
//! signer the worker uses, and prints delivered/s as a ratio of that bound.
//!
//! Acceptance runs on a node without workers, so the number is the API's alone. Then that node
//! stops and a second node on the same database starts its workers and drains the queue; the
//! RSS sampled meanwhile is the delivering server's and the sink's (the HTTP client is idle).
//!
//! `--concurrent` measures acceptance only, from outside with wrk and `concurrency`
//! connections, side by side with the perf baseline's `/sqlite`: on a node without workers,
//! then on a fresh node whose workers deliver to the local outbox while the requests arrive
//! (the group-commit targets).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use herald_testkit::dns_server::DnsServer;
use herald_testkit::smtp_sink::SmtpSink;
use reqwest::{Client, StatusCode};
use serde_json::json;
use tokio::task::JoinSet;

use crate::server::{Server, Stall, expect_status, project_key, tune_delivery};
use crate::wrk::{self, Baseline};

const TARGET_ACCEPTED_PER_SEC: f64 = 2000.0;
const TARGET_CONCURRENT_ACCEPTED: f64 = 6000.0;
const TARGET_ACCEPTED_WHILE_DELIVERING: f64 = 3500.0;
/// What the perf baseline's `/sqlite` did on the machine the acceptance targets were set on
/// (issue 7): the targets hold as ratios to it, measured in the same run.
const ISSUE_BASELINE_RPS: f64 = 7000.0;
/// `/v1/send` on PostgreSQL against the baseline's `/postgres` on the same server (issue 35).
const PG_TARGET_RATIO: f64 = 0.6;
const TARGET_DELIVERED_PER_SEC: f64 = 1500.0;
/// Delivered/s over the 2-core signing rate (issue 7).
const TARGET_SIGNING_RATIO: f64 = 0.45;
const TARGET_RSS_MB: f64 = 120.0;
pub const DOMAIN: &str = "bench-sender.com";

pub struct SendOptions {
    pub count: usize,
    pub concurrency: usize,
    pub database_url: Option<String>,
    /// Acceptance only, from outside with wrk: workers off, then workers on delivering to the
    /// outbox.
    pub concurrent: bool,
    /// `concurrent` only: how long each wrk run lasts.
    pub seconds: u64,
    /// The delivering node's settings, when not the defaults.
    pub send_concurrency: Option<usize>,
    pub smtp_connections: Option<usize>,
}

pub async fn run(opts: &SendOptions) -> anyhow::Result<()> {
    if opts.concurrent {
        return run_concurrent(opts).await;
    }
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
    let start = Instant::now();
    accept(&api, &key, opts.count, opts.concurrency).await?;
    let took = start.elapsed();
    let rate = opts.count as f64 / took.as_secs_f64();
    println!(
        "POST /v1/send: {} in {:.1} s = {rate:.0} accepted/s (target >= {TARGET_ACCEPTED_PER_SEC:.0}) {}",
        opts.count,
        took.as_secs_f64(),
        verdict(rate >= TARGET_ACCEPTED_PER_SEC)
    );

    // The signing bound, measured on this machine now (nothing else of ours runs meanwhile).
    let signatures = crate::signing::signing_rate(Duration::from_secs(3))?;
    println!("signing bound: {signatures:.0} RSA-2048 DKIM signatures/s on 2 threads");

    // Delivery by a worker node on the same database. The accepting node stops first: its
    // connections and caches are not the delivering server's memory.
    let config = api.config.clone();
    let api = api.stop().await?;
    let rss_before = rss_mb();
    let worker = Server::start_on(config, |c| {
        c.workers = true;
        tune_delivery(c, opts.send_concurrency, opts.smtp_connections);
    })
    .await?;
    println!(
        "delivering node: send_concurrency {}, smtp_max_connections {}",
        worker.config.send_concurrency, worker.config.smtp_max_connections
    );
    let start = Instant::now();
    let mut peak = rss_before;
    let mut stall = Stall::new();
    while sink.accepted_count() < opts.count {
        tokio::time::sleep(Duration::from_millis(200)).await;
        peak = peak.max(rss_mb());
        stall.check(sink.accepted_count(), opts.count)?;
    }
    let took = start.elapsed();
    let rate = opts.count as f64 / took.as_secs_f64();
    println!(
        "delivery (MIME + DKIM RSA-2048 + SMTP): {} in {:.1} s = {rate:.0} delivered/s (target >= {TARGET_DELIVERED_PER_SEC:.0}) {}",
        opts.count,
        took.as_secs_f64(),
        verdict(rate >= TARGET_DELIVERED_PER_SEC)
    );
    let ratio = rate / signatures;
    println!(
        "delivery / signing bound: {ratio:.2} (target >= {TARGET_SIGNING_RATIO:.2}) {}",
        verdict(ratio >= TARGET_SIGNING_RATIO)
    );
    println!(
        "memory while draining: RSS {rss_before:.0} MB before, {peak:.0} MB peak (whole benchmark process: the delivering server and the sink; target < {TARGET_RSS_MB:.0} MB) {}",
        verdict(peak < TARGET_RSS_MB)
    );
    worker.shutdown().await?;
    api.cleanup().await
}

/// Sends `count` single-recipient requests (recipients numbered from 0) with
/// `concurrency` clients in flight; every answer must be 200.
async fn accept(api: &Server, key: &str, count: usize, concurrency: usize) -> anyhow::Result<()> {
    accept_at(api.url("/v1/send"), key, count, concurrency).await
}

/// [`accept`] against the `/v1/send` at `url` (a node in a process of its own).
pub async fn accept_at(
    url: String,
    key: &str,
    count: usize,
    concurrency: usize,
) -> anyhow::Result<()> {
    let client = Client::new();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..concurrency {
        let (client, next, key, url) = (client.clone(), next.clone(), key.to_owned(), url.clone());
        tasks.spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    return Ok::<_, anyhow::Error>(());
                }
                let body = json!({
                    "to": format!("reader{n:07}@example.org"),
                    "from": {"name": "Bench", "email": format!("news@{DOMAIN}")},
                    "subject": "Hello {{firstName ?? \"there\"}}",
                    "body": "<p>Hi {{firstName ?? \"there\"}}, this is message {{n}}.</p><p><a href=\"https://example.org\">Read more</a></p>",
                    "data": {"firstName": "Reader", "n": n},
                });
                let res = client.post(&url).bearer_auth(&key).json(&body).send().await?;
                expect_status(res, StatusCode::OK, "POST /v1/send").await?;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(())
}

/// Acceptance measured from outside, as its targets are stated: wrk with the perf harness's
/// `send.lua` (an HTML body, a new recipient each request) at `concurrency` connections for
/// `seconds`, on a node without workers, then on a fresh node whose workers deliver to the
/// local outbox meanwhile. Each run follows the harness baseline's `/sqlite` at the same load
/// (run before the node starts, so Herald's workers do not slow it down), and the verdict is
/// on the ratio of the two when the baseline is built.
async fn run_concurrent(opts: &SendOptions) -> anyhow::Result<()> {
    let perf = wrk::perf_dir()?;
    // On PostgreSQL the baseline writes to the same server (`/postgres`, issue 35).
    let pg_url = opts
        .database_url
        .as_deref()
        .filter(|u| u.starts_with("postgres"));
    let baseline = Baseline::start(&perf, pg_url).await?;
    let dns = DnsServer::start().await?;
    let dns_addr = dns.addr();
    let (secs, conns) = (opts.seconds, opts.concurrency);
    for workers in [false, true] {
        // The baseline first, while nothing of Herald runs.
        let base = match &baseline {
            Some(b) => Some((b.durable_path(), b.durable(&perf, secs, conns).await?)),
            None => None,
        };
        let api = Server::start_with(opts.database_url.as_deref(), |c| {
            c.workers = workers;
            c.smtp_url = None;
            tune_delivery(c, opts.send_concurrency, opts.smtp_connections);
            c.dns_resolver = Some(dns_addr);
        })
        .await?;
        let key = project_key(&api).await?;
        verify_domain(&api, &key, &dns).await?;
        let (url, from) = (api.url("/v1/send"), format!("news@{DOMAIN}"));
        let env = [("HERALD_FROM", from.as_str())];
        // Warm up (connections, caches; with workers, a queue to deliver), then measure.
        wrk::run(&perf, "send.lua", &url, &key, 2, conns, &env).await?;
        let outbox = api.config.data_dir.join("outbox");
        let before = eml_count(&outbox);
        let herald = wrk::run(&perf, "send.lua", &url, &key, secs, conns, &env).await?;
        let delivered = eml_count(&outbox).saturating_sub(before);
        let (label, target) = if workers {
            (
                "workers delivering to the outbox",
                TARGET_ACCEPTED_WHILE_DELIVERING,
            )
        } else {
            ("workers off", TARGET_CONCURRENT_ACCEPTED)
        };
        println!(
            "POST /v1/send, wrk {conns} connections {secs} s, {label} ({}): {:.0} accepted/s, p99 {:.1} ms; {delivered} delivered meanwhile ({:.0}/s)",
            api.engine,
            herald.rps,
            herald.p99_ms,
            delivered as f64 / secs as f64
        );
        // On PostgreSQL, issue 35: at least 0.6 of `/postgres` with the workers delivering.
        let ratio_target = if pg_url.is_some() {
            PG_TARGET_RATIO
        } else {
            target / ISSUE_BASELINE_RPS
        };
        match base {
            Some((path, base)) => {
                let ratio = herald.rps / base.rps;
                println!(
                    "  baseline {path} just before, Herald stopped: {:.0}/s, p99 {:.1} ms; ratio {ratio:.2} (target >= {ratio_target:.2}) {}",
                    base.rps,
                    base.p99_ms,
                    verdict(ratio >= ratio_target)
                );
            }
            None => println!(
                "  target >= {target:.0}/s (where the baseline did {ISSUE_BASELINE_RPS:.0}/s) {}",
                verdict(herald.rps >= target)
            ),
        }
        api.shutdown().await?;
    }
    if let Some(b) = baseline {
        b.stop().await;
    }
    Ok(())
}

/// Messages in an outbox directory (finished files, not the temporary ones).
fn eml_count(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".eml"))
                .count()
        })
        .unwrap_or(0)
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
