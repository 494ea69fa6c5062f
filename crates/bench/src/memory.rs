//! The memory benchmark: resident memory (RSS) of the process serving Herald through a
//! 128-way flood of wrong-password logins and through `/v1/send` requests carrying a 5 MB
//! attachment, and 30 s after each (issue 8, "Memory that no request may take"); then the
//! peak RSS of a node delivering those messages (issue 29, "Delivery memory").
//!
//! The API server runs in this process (as in the other benchmarks), so the numbers include
//! the client; the client sends one shared request body and keeps no responses, so its share
//! is a few MB. The sender domain is verified against a loopback DNS server; workers are off,
//! so those numbers are the API's alone. The delivering node is the `herald` binary in a
//! process of its own on the same database ([`crate::child`]), DKIM-signing every message
//! and handing it to a loopback SMTP sink in this process; its peak is the kernel's `VmHWM`
//! of that process, so the sink's buffers are not counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use base64::Engine as _;
use herald_testkit::dns_server::DnsServer;
use reqwest::{Client, StatusCode};
use serde_json::json;
use tokio::task::JoinSet;

use herald_testkit::smtp_sink::SmtpSink;

use crate::child::ChildNode;
use crate::send::{rss_mb, verdict, verify_domain};
use crate::server::{Server, Stall, expect_status, project_key, tune_delivery};

const LOGINS: usize = 600;
const LOGIN_CONCURRENCY: usize = 128;
const ATTACHMENT_BYTES: usize = 5 * 1024 * 1024;
const TARGET_PEAK_MB: f64 = 300.0;
const TARGET_AFTER_MB: f64 = 150.0;
/// The delivering node's peak while it delivers the 5 MB messages (issue 29).
const TARGET_DELIVERY_PEAK_MB: f64 = 400.0;
const SETTLE: Duration = Duration::from_secs(30);

pub struct MemoryOptions {
    /// `/v1/send` requests (default 2,000).
    pub count: usize,
    /// Sends in flight (default 16).
    pub concurrency: usize,
    pub database_url: Option<String>,
    /// The delivering node's settings, when not the defaults.
    pub send_concurrency: Option<usize>,
    pub smtp_connections: Option<usize>,
}

/// The highest RSS seen since the last reset, sampled every 20 ms.
pub(crate) struct Peak(Arc<AtomicU64>);

impl Peak {
    pub(crate) fn start() -> Peak {
        let peak = Arc::new(AtomicU64::new(0));
        let p = peak.clone();
        tokio::spawn(async move {
            loop {
                p.fetch_max(rss_mb() as u64, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        Peak(peak)
    }
    fn reset(&self) {
        self.0.store(rss_mb() as u64, Ordering::Relaxed);
    }
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed).max(rss_mb() as u64)
    }
}

pub async fn run(opts: &MemoryOptions) -> anyhow::Result<()> {
    let dns = DnsServer::start().await?;
    let dns_addr = dns.addr();
    let sink = SmtpSink::start().await?;
    sink.keep_messages(false);
    let smtp_url = sink.url();
    let api = Server::start_with(opts.database_url.as_deref(), |c| {
        c.workers = false;
        c.dns_resolver = Some(dns_addr);
        c.smtp_url = Some(smtp_url);
    })
    .await?;
    println!("engine: {}", api.engine);
    let allocator = if cfg!(feature = "mimalloc") {
        "mimalloc"
    } else {
        "system (glibc)"
    };
    println!("allocator: {allocator}");
    let key = project_key(&api).await?;
    verify_domain(&api, &key, &dns).await?;
    let peak = Peak::start();
    println!("RSS at start: {:.0} MB", rss_mb());

    peak.reset();
    let statuses = login_flood(&api).await?;
    report(
        &format!(
            "login flood ({LOGINS} wrong passwords, {LOGIN_CONCURRENCY} in flight; {statuses})"
        ),
        &peak,
    )
    .await;

    peak.reset();
    let statuses = sends(&api, &key, opts).await?;
    report(
        &format!(
            "/v1/send ({} with a 5 MB attachment, {} in flight; {statuses})",
            opts.count, opts.concurrency
        ),
        &peak,
    )
    .await;
    deliver(api, &sink, opts).await
}

/// Stops the accepting node and delivers its queue from a node in a process of its own,
/// printing that node's peak RSS (`VmHWM`) and how long the delivery took.
async fn deliver(api: Server, sink: &SmtpSink, opts: &MemoryOptions) -> anyhow::Result<()> {
    let mut config = api.config.clone();
    let api = api.stop().await?;
    config.listen = "127.0.0.1:0".into();
    config.workers = true;
    tune_delivery(&mut config, opts.send_concurrency, opts.smtp_connections);
    let started = std::time::Instant::now();
    let mut node = ChildNode::start(&config)?;
    let mut stall = Stall::new();
    while sink.accepted_count() < opts.count {
        tokio::time::sleep(Duration::from_millis(200)).await;
        node.check_running()?;
        stall.check(sink.accepted_count(), opts.count)?;
    }
    let secs = started.elapsed().as_secs_f64();
    let top = node.peak_rss_mb()?;
    node.stop()?;
    println!(
        "delivery of those {} (DKIM + SMTP to a loopback sink; a node in its own process, send_concurrency {}, smtp_max_connections {}): {secs:.1} s = {:.0}/s; node peak RSS {top:.0} MB (target < {TARGET_DELIVERY_PEAK_MB:.0} MB) {}",
        opts.count,
        config.send_concurrency,
        config.smtp_max_connections,
        opts.count as f64 / secs,
        verdict(top < TARGET_DELIVERY_PEAK_MB)
    );
    api.cleanup().await
}

async fn report(what: &str, peak: &Peak) {
    let top = peak.get() as f64;
    println!(
        "{what}: peak RSS {top:.0} MB (target < {TARGET_PEAK_MB:.0} MB) {}",
        verdict(top < TARGET_PEAK_MB)
    );
    tokio::time::sleep(SETTLE).await;
    let after = rss_mb();
    println!(
        "  RSS {} s later: {after:.0} MB (target < {TARGET_AFTER_MB:.0} MB) {}",
        SETTLE.as_secs(),
        verdict(after < TARGET_AFTER_MB)
    );
}

/// Runs `count` requests with `concurrency` in flight; returns the statuses seen, counted.
async fn flood<F, Fut>(count: usize, concurrency: usize, request: F) -> anyhow::Result<String>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = reqwest::Result<reqwest::Response>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let counts: Arc<[AtomicUsize; 600]> = Arc::new(std::array::from_fn(|_| AtomicUsize::new(0)));
    let mut tasks = JoinSet::new();
    for _ in 0..concurrency {
        let (next, counts, request) = (next.clone(), counts.clone(), request.clone());
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return Ok::<_, anyhow::Error>(());
                }
                let res = request(i).await?;
                let status = usize::from(res.status().as_u16()).min(599);
                res.bytes().await?;
                counts[status].fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(counts
        .iter()
        .enumerate()
        .filter_map(|(s, n)| {
            let n = n.load(Ordering::Relaxed);
            (n > 0).then(|| format!("{n}x {s}"))
        })
        .collect::<Vec<_>>()
        .join(", "))
}

async fn login_flood(api: &Server) -> anyhow::Result<String> {
    let client = Client::new();
    let email = format!("flood-{}@example.com", uuid::Uuid::new_v4().simple());
    let res = client
        .post(api.url("/auth/signup"))
        .json(&json!({"email": email, "password": "the right password"}))
        .send()
        .await?;
    expect_status(res, StatusCode::CREATED, "POST /auth/signup").await?;
    let url = api.url("/auth/login");
    flood(LOGINS, LOGIN_CONCURRENCY, move |i| {
        client
            .post(&url)
            .json(&json!({"email": email, "password": format!("wrong password {i}")}))
            .send()
    })
    .await
}

async fn sends(api: &Server, key: &str, opts: &MemoryOptions) -> anyhow::Result<String> {
    let content: Vec<u8> = (0..ATTACHMENT_BYTES)
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    let body = json!({
        "to": "reader@example.org",
        "from": {"name": "Bench", "email": format!("news@{}", crate::send::DOMAIN)},
        "subject": "A report",
        "body": "<p>The report is attached.</p>",
        "attachments": [{
            "filename": "report.bin",
            "contentType": "application/octet-stream",
            "content": base64::engine::general_purpose::STANDARD.encode(&content),
        }],
    });
    // One body shared by every request, so the client holds a single copy.
    let body: &'static [u8] = Vec::leak(serde_json::to_vec(&body).context("the send body")?);
    let (client, url, key) = (Client::new(), api.url("/v1/send"), key.to_owned());
    flood(opts.count, opts.concurrency, move |_| {
        client
            .post(&url)
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body(body)
            .send()
    })
    .await
}
