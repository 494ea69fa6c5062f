//! The contacts benchmark: upserts through `POST /contacts`, then every page by cursor, then
//! the first page's latency.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use crate::Options;
use crate::server::{Server, expect_status, project_key};

/// Upserts per second the contacts benchmark aims at (SQLite).
const TARGET_UPSERTS_PER_SEC: f64 = 3000.0;
/// Latency the first page of contacts aims at (SQLite).
const TARGET_FIRST_PAGE_MS: f64 = 10.0;

/// Contact number `i`, with `fields` keys of data (plan, seats, vip, signedUpAt, then extras).
fn contact_body(i: usize, fields: usize) -> Value {
    const PLANS: [&str; 3] = ["free", "pro", "team"];
    let mut data = serde_json::Map::new();
    for k in 0..fields {
        let (key, value) = match k {
            0 => ("plan".to_owned(), json!(PLANS[i % PLANS.len()])),
            1 => ("seats".to_owned(), json!(i % 50)),
            2 => ("vip".to_owned(), json!(i.is_multiple_of(10))),
            3 => ("signedUpAt".to_owned(), json!("2026-01-31")),
            k => (format!("extra{k}"), json!(k)),
        };
        data.insert(key, value);
    }
    json!({"email": format!("user{i:07}@bench.example"), "data": data})
}

/// `n` sequential GETs of `url`: median, min and max latency in ms, and the last body.
async fn timed_gets(
    client: &Client,
    url: &str,
    key: &str,
    n: usize,
) -> anyhow::Result<(f64, f64, f64, Value)> {
    ensure!(n > 0, "at least one request");
    let mut times = Vec::with_capacity(n);
    let mut body = Value::Null;
    for _ in 0..n {
        let t = Instant::now();
        let res = client.get(url).bearer_auth(key).send().await?;
        body = expect_status(res, StatusCode::OK, url).await?;
        times.push(ms(t.elapsed()));
    }
    times.sort_by(f64::total_cmp);
    let median = if n.is_multiple_of(2) {
        (times[n / 2 - 1] + times[n / 2]) / 2.0
    } else {
        times[n / 2]
    };
    Ok((median, times[0], times[n - 1], body))
}

/// Percent-encodes everything but the unreserved characters of RFC 3986.
pub(crate) fn encode_query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `p`-th percentile (0..=100) of sorted durations, in milliseconds.
pub(crate) fn percentile(sorted: &[Duration], p: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = (sorted.len() * p / 100).min(sorted.len() - 1);
    ms(sorted[idx])
}

pub async fn contacts(opts: &Options) -> anyhow::Result<()> {
    let server = Server::start_with(opts.database_url.as_deref(), |_| {}).await?;
    println!(
        "Herald contacts benchmark: {} contacts with {} data keys, concurrency {}, {}",
        opts.count, opts.fields, opts.concurrency, server.engine
    );
    let key = Arc::new(project_key(&server).await?);
    let client = Client::builder()
        .pool_max_idle_per_host(opts.concurrency)
        .build()?;

    // Upserts, `concurrency` in flight.
    let started = Instant::now();
    let fields = opts.fields;
    let mut latencies = crate::load::post_many(
        server.url("/contacts"),
        &key,
        opts.count,
        opts.concurrency,
        StatusCode::CREATED,
        move |i| contact_body(i, fields),
    )
    .await?;
    let elapsed = started.elapsed();
    latencies.sort();
    let rate = opts.count as f64 / elapsed.as_secs_f64();
    println!(
        "POST /contacts: {} in {:.1} s = {rate:.0} req/s (latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms)",
        opts.count,
        elapsed.as_secs_f64(),
        percentile(&latencies, 50),
        percentile(&latencies, 99),
        percentile(&latencies, 100),
    );

    // Every contact, page by page.
    let started = Instant::now();
    let mut cursor: Option<String> = None;
    let (mut pages, mut seen) = (0usize, 0usize);
    let mut page_latencies = Vec::new();
    loop {
        let path = match &cursor {
            None => "/contacts?limit=100".to_owned(),
            Some(c) => format!("/contacts?limit=100&cursor={}", encode_query_value(c)),
        };
        let req = client.get(server.url(&path)).bearer_auth(key.as_str());
        let t = Instant::now();
        let page =
            expect_status(req.send().await?, StatusCode::OK, "GET /contacts?limit=100").await?;
        page_latencies.push(t.elapsed());
        pages += 1;
        seen += page["data"].as_array().map_or(0, Vec::len);
        if page["hasMore"] != true {
            break;
        }
        cursor = Some(
            page["cursor"]
                .as_str()
                .context("hasMore without a cursor")?
                .to_owned(),
        );
    }
    let elapsed = started.elapsed();
    ensure!(
        seen == opts.count,
        "paging saw {seen} contacts, expected {}",
        opts.count
    );
    // Keyset pages should cost the same wherever they are; compare the ends of the walk.
    let ends = page_latencies.len().min(10);
    let mean = |d: &[Duration]| d.iter().map(|d| ms(*d)).sum::<f64>() / d.len().max(1) as f64;
    let (early, late) = (
        mean(&page_latencies[..ends]),
        mean(&page_latencies[page_latencies.len() - ends..]),
    );
    page_latencies.sort();
    println!(
        "GET /contacts?limit=100 by cursor: {pages} pages ({seen} contacts) in {:.1} s = {:.0} req/s (latency p50 {:.1} ms, p99 {:.1} ms)",
        elapsed.as_secs_f64(),
        pages as f64 / elapsed.as_secs_f64(),
        percentile(&page_latencies, 50),
        percentile(&page_latencies, 99),
    );
    println!("  first {ends} pages mean {early:.2} ms; last {ends} pages mean {late:.2} ms");

    // The first page, total included; then, to tell where its time goes, the same page
    // without the count (a cursor page) and the HTTP floor (GET /health).
    let (median, min, max, page) =
        timed_gets(&client, &server.url("/contacts?limit=20"), &key, 20).await?;
    ensure!(
        page["total"] == opts.count,
        "first page total {} != {}",
        page["total"],
        opts.count
    );
    println!(
        "GET /contacts?limit=20 (first page, total included): median {median:.2} ms over 20 (min {min:.2} ms, max {max:.2} ms)"
    );
    let cursor = page["cursor"]
        .as_str()
        .context("the first page has no cursor")?;
    let later = server.url(&format!(
        "/contacts?limit=20&cursor={}",
        encode_query_value(cursor)
    ));
    let (later_median, ..) = timed_gets(&client, &later, &key, 20).await?;
    let (health_median, ..) = timed_gets(&client, &server.url("/health"), &key, 20).await?;
    println!(
        "  for comparison: the second page (no total) median {later_median:.2} ms; GET /health median {health_median:.2} ms"
    );

    let met = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "Targets: >= {TARGET_UPSERTS_PER_SEC:.0} upserts/s {}; first page < {TARGET_FIRST_PAGE_MS:.0} ms {}",
        met(rate >= TARGET_UPSERTS_PER_SEC),
        met(median < TARGET_FIRST_PAGE_MS),
    );
    server.shutdown().await
}
