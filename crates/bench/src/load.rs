//! Closed-loop load: `count` POSTs with `concurrency` clients, each answer checked, each
//! latency kept (what the track and contacts benchmarks share).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use reqwest::{Client, StatusCode};
use serde_json::Value;
use tokio::task::JoinSet;

/// POSTs `body(i)` for `i` in `0..count` to `url` with a bearer `key`, `concurrency` requests
/// in flight; every answer must be `expected`. Returns each request's latency.
pub async fn post_many(
    url: String,
    key: &str,
    count: usize,
    concurrency: usize,
    expected: StatusCode,
    body: impl Fn(usize) -> Value + Send + Sync + 'static,
) -> anyhow::Result<Vec<Duration>> {
    let client = Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()?;
    let next = Arc::new(AtomicUsize::new(0));
    let url = Arc::new(url);
    let key = Arc::new(key.to_owned());
    let body = Arc::new(body);
    let mut tasks = JoinSet::new();
    for _ in 0..concurrency {
        let (client, next, url, key, body) = (
            client.clone(),
            next.clone(),
            url.clone(),
            key.clone(),
            body.clone(),
        );
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return anyhow::Ok(latencies);
                }
                let t = Instant::now();
                let res = client
                    .post(url.as_str())
                    .bearer_auth(key.as_str())
                    .json(&body(i))
                    .send()
                    .await?;
                let status = res.status();
                let bytes = res.bytes().await?;
                ensure!(
                    status == expected,
                    "POST {url} #{i}: expected {expected}, got {status}: {}",
                    String::from_utf8_lossy(&bytes)
                );
                latencies.push(t.elapsed());
            }
        });
    }
    let mut latencies = Vec::with_capacity(count);
    while let Some(done) = tasks.join_next().await {
        latencies.extend(done.context("a load client panicked")??);
    }
    Ok(latencies)
}
