//! The SMTP submission benchmark (issue 34): `count` messages of one recipient each over
//! `concurrency` SMTP sessions (AUTH once per session; MAIL, RCPT and DATA pipelined, then the
//! message), then the same count through `POST /v1/send` with `concurrency` requests in flight,
//! on one server with its workers off, so both measure acceptance alone (contacts upserted,
//! rows and jobs committed before the answer). Target: submission at least 0.5 x `/v1/send`'s
//! accepted/s, the process's RSS under 150 MB. Then inbound mail (`smtp_inbound.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, bail, ensure};
use base64::Engine as _;
use reqwest::{Client, StatusCode};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::memory::Peak;
use crate::send::verdict;
use crate::server::{Server, expect_status, free_loopback_addr, project_keys};

const DOMAIN: &str = "bench.test";
const TARGET_RATIO: f64 = 0.5;
pub const TARGET_RSS_MB: f64 = 150.0;

pub struct SmtpOptions {
    pub count: usize,
    pub concurrency: usize,
    pub database_url: Option<String>,
}

/// A message of about 2 KB.
fn message(i: usize) -> String {
    let para = "Thank you for your order. It ships tomorrow; the tracking link follows. ";
    format!(
        "From: Shop <orders@{DOMAIN}>\r\nTo: <buyer{i}@example.org>\r\nSubject: Order {i}\r\n\
MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>{}</p>\r\n.\r\n",
        // Lines of one sentence: SMTP lines are at most 998 characters.
        [para; 24].join("\r\n")
    )
}

/// One reply's code (multi-line replies read whole).
async fn reply<R: AsyncBufReadExt + Unpin>(r: &mut R) -> anyhow::Result<u16> {
    let mut line = String::new();
    loop {
        line.clear();
        ensure!(
            r.read_line(&mut line).await? > 3,
            "the server closed the session"
        );
        if line.as_bytes()[3] == b' ' {
            return line[..3].parse().context("reply code");
        }
    }
}

async fn expect<R: AsyncBufReadExt + Unpin>(
    r: &mut R,
    want: u16,
    what: &str,
) -> anyhow::Result<()> {
    let got = reply(r).await?;
    if got != want {
        bail!("{what}: expected {want}, got {got}");
    }
    Ok(())
}

/// What the sessions of one run send: each message `i` goes from `mail_from` to `rcpt(i)`
/// with `data(i)` (ending in `<CRLF>.<CRLF>`), after AUTH PLAIN when `key` is given.
#[derive(Clone)]
pub struct Traffic {
    pub addr: String,
    pub key: Option<String>,
    pub mail_from: String,
    pub rcpt: Arc<dyn Fn(usize) -> String + Send + Sync>,
    pub data: Arc<dyn Fn(usize) -> Arc<[u8]> + Send + Sync>,
}

/// One session sending messages numbered from the shared counter until `count`.
async fn session(t: Traffic, next: Arc<AtomicUsize>, count: usize) -> anyhow::Result<()> {
    let stream = TcpStream::connect(&t.addr).await?;
    stream.set_nodelay(true)?;
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    expect(&mut r, 220, "greeting").await?;
    w.write_all(b"EHLO bench.example\r\n").await?;
    expect(&mut r, 250, "EHLO").await?;
    if let Some(key) = &t.key {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("\0herald\0{key}"));
        w.write_all(format!("AUTH PLAIN {auth}\r\n").as_bytes())
            .await?;
        expect(&mut r, 235, "AUTH").await?;
    }
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= count {
            w.write_all(b"QUIT\r\n").await?;
            return Ok(());
        }
        w.write_all(
            format!(
                "MAIL FROM:<{}>\r\nRCPT TO:<{}>\r\nDATA\r\n",
                t.mail_from,
                (t.rcpt)(i)
            )
            .as_bytes(),
        )
        .await?;
        expect(&mut r, 250, "MAIL").await?;
        expect(&mut r, 250, "RCPT").await?;
        expect(&mut r, 354, "DATA").await?;
        w.write_all(&(t.data)(i)).await?;
        expect(&mut r, 250, "end of DATA").await?;
    }
}

/// `count` messages over `concurrency` sessions; the seconds it took.
pub async fn submit_all(t: &Traffic, count: usize, concurrency: usize) -> anyhow::Result<f64> {
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = JoinSet::new();
    for _ in 0..concurrency {
        tasks.spawn(session(t.clone(), next.clone(), count));
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(started.elapsed().as_secs_f64())
}

pub async fn run(opts: &SmtpOptions) -> anyhow::Result<()> {
    let addr = free_loopback_addr()?;
    let server = Server::start_with(opts.database_url.as_deref(), |c| {
        c.workers = false;
        c.submission_listen = Some(addr.clone());
        c.smtp_server_max_connections = opts.concurrency * 2 + 8;
    })
    .await?;
    println!(
        "Herald SMTP benchmark: {} messages of ~2 KB over {} sessions, then as many POST /v1/send, workers off, {}",
        opts.count, opts.concurrency, server.engine
    );
    let (_, key) = project_keys(&server).await?;
    let res = Client::new()
        .post(server.url("/domains"))
        .bearer_auth(&key)
        .json(&json!({"domain": DOMAIN}))
        .send()
        .await?;
    expect_status(res, StatusCode::CREATED, "POST /domains").await?;
    let traffic = Traffic {
        addr: addr.clone(),
        key: Some(key.clone()),
        mail_from: format!("orders@{DOMAIN}"),
        rcpt: Arc::new(|i| format!("buyer{i}@example.org")),
        data: Arc::new(|i| message(i).into_bytes().into()),
    };
    let peak = Peak::start();
    // Warm-up, then measure.
    submit_all(&traffic, opts.concurrency * 10, opts.concurrency).await?;
    let smtp_secs = submit_all(&traffic, opts.count, opts.concurrency).await?;
    let smtp_rate = opts.count as f64 / smtp_secs;
    let smtp_rss = peak.get();
    let body = |i: usize| {
        json!({"to": format!("api-buyer{i}@example.org"), "from": format!("Shop <orders@{DOMAIN}>"),
            "subject": format!("Order {i}"),
            "body": format!("<p>{}</p>", "Thank you for your order. It ships tomorrow; the tracking link follows. ".repeat(24))})
    };
    let started = Instant::now();
    crate::load::post_many(
        server.url("/v1/send"),
        &key,
        opts.count,
        opts.concurrency,
        StatusCode::OK,
        body,
    )
    .await?;
    let api_rate = opts.count as f64 / started.elapsed().as_secs_f64();
    let ratio = smtp_rate / api_rate;
    println!(
        "SMTP submission: {} in {smtp_secs:.1} s = {smtp_rate:.0} accepted/s; POST /v1/send: {api_rate:.0}/s; \
         ratio {ratio:.2} (target >= {TARGET_RATIO}) {}",
        opts.count,
        verdict(ratio >= TARGET_RATIO)
    );
    println!(
        "RSS peak during the submissions: {smtp_rss} MB (whole benchmark process; target < {TARGET_RSS_MB:.0} MB) {}",
        verdict((smtp_rss as f64) < TARGET_RSS_MB)
    );
    server.shutdown().await?;
    crate::smtp_inbound::run(opts).await
}
