//! Load benchmarks against a real Herald server started in-process on port 0.
//!
//! ```text
//! cargo run --release -p herald-bench -- contacts [--count 100000] [--concurrency 32]
//!     [--database-url postgres://user@host/db]
//! ```
//!
//! `contacts` signs up, creates a project, upserts `count` contacts with `concurrency`
//! requests in flight, pages through them all by cursor, and times the first page. The data
//! lives in a temporary SQLite directory, or in a fresh schema (dropped afterwards) of the
//! PostgreSQL database given with `--database-url`.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use herald::{Application, Config};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

const USAGE: &str =
    "usage: herald-bench contacts [--count N] [--concurrency N] [--database-url postgres://...]";

/// Upserts per second the contacts benchmark aims at (SQLite).
const TARGET_UPSERTS_PER_SEC: f64 = 3000.0;
/// Latency the first page of contacts aims at (SQLite).
const TARGET_FIRST_PAGE_MS: f64 = 10.0;

#[derive(Debug)]
struct Options {
    count: usize,
    concurrency: usize,
    database_url: Option<String>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> anyhow::Result<Options> {
    match args.next().as_deref() {
        Some("contacts") => {}
        Some("-h" | "--help") | None => bail!("{USAGE}"),
        Some(other) => bail!("unknown benchmark {other:?}\n{USAGE}"),
    }
    let mut opts = Options {
        count: 100_000,
        concurrency: 32,
        database_url: None,
    };
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg, None),
        };
        let mut value = || -> anyhow::Result<String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => args
                    .next()
                    .with_context(|| format!("{name} needs a value\n{USAGE}")),
            }
        };
        match name.as_str() {
            "--count" => opts.count = value()?.parse().context("--count must be a whole number")?,
            "--concurrency" => {
                opts.concurrency = value()?
                    .parse()
                    .context("--concurrency must be a whole number")?;
            }
            "--database-url" => opts.database_url = Some(value()?),
            "-h" | "--help" => bail!("{USAGE}"),
            other => bail!("unknown option {other:?}\n{USAGE}"),
        }
    }
    ensure!(opts.count > 0, "--count must be at least 1");
    ensure!(opts.concurrency > 0, "--concurrency must be at least 1");
    Ok(opts)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let opts = parse_args(std::env::args().skip(1))?;
    contacts(&opts).await
}

/// A server running in this process, and what to clean up when it stops.
struct Server {
    base: String,
    engine: String,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
    pg_schema: Option<(String, String)>,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(opts: &Options) -> anyhow::Result<Server> {
        let dir = tempfile::tempdir().context("creating a temporary data directory")?;
        let mut config = Config {
            listen: "127.0.0.1:0".into(),
            data_dir: dir.path().to_path_buf(),
            rate_limit_per_minute: u32::MAX,
            ..Config::default()
        };
        let mut pg_schema = None;
        if let Some(url) = &opts.database_url {
            if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                let schema = format!("bench_{}", uuid::Uuid::new_v4().simple());
                let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(url)
                    .await
                    .context("connecting to PostgreSQL")?;
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
                    .execute(&mut conn)
                    .await
                    .context("creating the benchmark schema")?;
                config.database_schema = Some(schema.clone());
                pg_schema = Some((url.clone(), schema));
            }
            config.database_url = url.clone();
        }
        let config = config.resolved();
        let engine = match &pg_schema {
            Some((_, schema)) => format!(
                "PostgreSQL ({}, schema {schema})",
                config.database_description()
            ),
            None => format!("SQLite ({})", config.database_description()),
        };
        let app = Application::build(config)
            .await
            .context("starting Herald")?;
        let base = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(app.run_until_stopped(async {
            let _ = stopped.await;
        }));
        Ok(Server {
            base,
            engine,
            stop,
            task,
            pg_schema,
            _dir: dir,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn shutdown(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.task.await.context("the server task failed")??;
        if let Some((url, schema)) = self.pg_schema {
            let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await?;
            sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
                .execute(&mut conn)
                .await
                .context("dropping the benchmark schema")?;
        }
        Ok(())
    }
}

/// Signs up a user and creates a project; returns its secret key.
async fn project_key(server: &Server) -> anyhow::Result<String> {
    let session = Client::builder().cookie_store(true).build()?;
    let email = format!("bench-{}@example.com", uuid::Uuid::new_v4().simple());
    let res = session
        .post(server.url("/auth/signup"))
        .json(&json!({"email": email, "password": "benchmark password"}))
        .send()
        .await?;
    expect_status(res, StatusCode::CREATED, "POST /auth/signup").await?;
    let res = session
        .post(server.url("/users/@me/projects"))
        .json(&json!({"name": "Benchmark"}))
        .send()
        .await?;
    let project = expect_status(res, StatusCode::CREATED, "POST /users/@me/projects").await?;
    project["secretKey"]
        .as_str()
        .map(str::to_owned)
        .context("the project has no secretKey")
}

/// The JSON body of a response with the expected status, or an error showing the body.
async fn expect_status(
    res: reqwest::Response,
    status: StatusCode,
    what: &str,
) -> anyhow::Result<Value> {
    let got = res.status();
    let text = res
        .text()
        .await
        .with_context(|| format!("{what}: reading the body"))?;
    ensure!(
        got == status,
        "{what}: expected {status}, got {got}: {text}"
    );
    serde_json::from_str(&text).with_context(|| format!("{what}: the body is not JSON: {text}"))
}

fn contact_body(i: usize) -> Value {
    const PLANS: [&str; 3] = ["free", "pro", "team"];
    json!({
        "email": format!("user{i:07}@bench.example"),
        "data": {
            "plan": PLANS[i % PLANS.len()],
            "seats": i % 50,
            "vip": i.is_multiple_of(10),
            "signedUpAt": "2026-01-31",
        }
    })
}

/// Percent-encodes everything but the unreserved characters of RFC 3986.
fn encode_query_value(s: &str) -> String {
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
fn percentile(sorted: &[Duration], p: usize) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = (sorted.len() * p / 100).min(sorted.len() - 1);
    ms(sorted[idx])
}

async fn contacts(opts: &Options) -> anyhow::Result<()> {
    let server = Server::start(opts).await?;
    println!(
        "Herald contacts benchmark: {} contacts, concurrency {}, {}",
        opts.count, opts.concurrency, server.engine
    );
    let key = Arc::new(project_key(&server).await?);
    let client = Client::builder()
        .pool_max_idle_per_host(opts.concurrency)
        .build()?;

    // Upserts, `concurrency` in flight.
    let next = Arc::new(AtomicUsize::new(0));
    let url = Arc::new(server.url("/contacts"));
    let started = Instant::now();
    let mut workers = JoinSet::new();
    for _ in 0..opts.concurrency {
        let (client, key, url, next) = (client.clone(), key.clone(), url.clone(), next.clone());
        let count = opts.count;
        workers.spawn(async move {
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
                    .json(&contact_body(i))
                    .send()
                    .await?;
                let status = res.status();
                let body = res.bytes().await?;
                ensure!(
                    status == StatusCode::CREATED,
                    "POST /contacts #{i}: expected 201, got {status}: {}",
                    String::from_utf8_lossy(&body)
                );
                latencies.push(t.elapsed());
            }
        });
    }
    let mut latencies = Vec::with_capacity(opts.count);
    while let Some(done) = workers.join_next().await {
        latencies.extend(done.context("an upsert worker panicked")??);
    }
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
    page_latencies.sort();
    println!(
        "GET /contacts?limit=100 by cursor: {pages} pages ({seen} contacts) in {:.1} s = {:.0} req/s (latency p50 {:.1} ms, p99 {:.1} ms)",
        elapsed.as_secs_f64(),
        pages as f64 / elapsed.as_secs_f64(),
        percentile(&page_latencies, 50),
        percentile(&page_latencies, 99),
    );

    // The first page, total included.
    let mut first = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let res = client
            .get(server.url("/contacts?limit=20"))
            .bearer_auth(key.as_str())
            .send()
            .await?;
        let page = expect_status(res, StatusCode::OK, "GET /contacts?limit=20").await?;
        first.push(t.elapsed());
        ensure!(
            page["total"] == opts.count,
            "first page total {} != {}",
            page["total"],
            opts.count
        );
    }
    first.sort();
    let median = (ms(first[9]) + ms(first[10])) / 2.0;
    println!(
        "GET /contacts?limit=20 (first page, total included): median {median:.2} ms over 20 (min {:.2} ms, max {:.2} ms)",
        ms(first[0]),
        ms(first[19]),
    );

    let met = |ok: bool| if ok { "met" } else { "MISSED" };
    println!(
        "Targets: >= {TARGET_UPSERTS_PER_SEC:.0} upserts/s {}; first page < {TARGET_FIRST_PAGE_MS:.0} ms {}",
        met(rate >= TARGET_UPSERTS_PER_SEC),
        met(median < TARGET_FIRST_PAGE_MS),
    );
    server.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> impl Iterator<Item = String> {
        s.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn options_have_defaults_and_overrides() {
        let o = parse_args(args("contacts")).unwrap();
        assert_eq!(
            (o.count, o.concurrency, o.database_url),
            (100_000, 32, None)
        );
        let o = parse_args(args(
            "contacts --count 10 --concurrency=4 --database-url postgres://x/y",
        ))
        .unwrap();
        assert_eq!((o.count, o.concurrency), (10, 4));
        assert_eq!(o.database_url.as_deref(), Some("postgres://x/y"));
        assert!(parse_args(args("contacts --count")).is_err());
        assert!(parse_args(args("contacts --count 0")).is_err());
        assert!(parse_args(args("contacts --bogus 1")).is_err());
        assert!(parse_args(args("sends")).is_err());
        assert!(parse_args(args("")).is_err());
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(encode_query_value("aZ0-_.~"), "aZ0-_.~");
        assert_eq!(encode_query_value("a+b/c=é"), "a%2Bb%2Fc%3D%C3%A9");
    }

    #[test]
    fn percentiles_pick_from_sorted_durations() {
        let d: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&d, 50), 51.0);
        assert_eq!(percentile(&d, 100), 100.0);
        assert_eq!(percentile(&[], 50), 0.0);
    }
}
