//! Analytics and Activity of `herald-bench dashboard` (issue 32): `--events N` (default
//! 10,000,000) mail events over 90 days are seeded in SQL into the benchmark's project (10 of
//! every 14 `email.sent`, 3 `email.open`, 1 `email.click` with one of five links), then each
//! Analytics tab over 90 days and the Activity page are timed like the other pages (target
//! p95 under 200 ms), and 500 Activity streams are held open (25 projects of 20, the cap)
//! while the process's resident memory is read before and after (target under 60 MB extra).
//!
//! The series reads the rollup the store keeps (`analytics_slots`, 15-minute slots per event
//! name, filled from a watermark): the first read of a project rolls its history up once, as
//! the first page view after an import would; the timings are of the reads after it.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use reqwest::{Client, StatusCode};
use serde_json::json;

use crate::contacts::percentile;
use crate::server::{Server, expect_status};

const DAY_MS: i64 = 86_400_000;
const RUNS: usize = 30;
const STREAMS: usize = 500;
const TARGET_MS: f64 = 200.0;
const TARGET_MB: f64 = 60.0;

/// Seeds `events` mail events over the 90 days before `now` into `project`.
pub async fn seed_events(
    conn: &mut sqlx::SqliteConnection,
    project: uuid::Uuid,
    events: usize,
    now: i64,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let span = 90 * DAY_MS;
    let total = i64::try_from(events)?;
    // In batches of a million, each its own transaction (the WAL stays small).
    let batch = 1_000_000_i64;
    let mut start = 0;
    while start < total {
        let end = (start + batch).min(total);
        let q = format!(
            "WITH RECURSIVE n(i) AS (SELECT $1 UNION ALL SELECT i + 1 FROM n WHERE i < $2 - 1) \
             INSERT INTO events (id, project_id, contact_id, name, data, created_at) \
             SELECT randomblob(16), $3, NULL, \
               CASE WHEN i % 14 < 10 THEN 'email.sent' WHEN i % 14 < 13 THEN 'email.open' ELSE 'email.click' END, \
               CASE WHEN i % 14 = 13 THEN json_object('url', 'https://example.com/link' || (i % 5)) ELSE '{{}}' END, \
               $4 - {span} + (i * {span}) / $5 FROM n"
        );
        sqlx::query(sqlx::AssertSqlSafe(q))
            .bind(start)
            .bind(end)
            .bind(project)
            .bind(now)
            .bind(total)
            .execute(&mut *conn)
            .await
            .context("seeding events")?;
        start = end;
        println!(
            "  {end} events seeded ({:.0} s)",
            started.elapsed().as_secs_f64()
        );
    }
    // The pages viewed before moved the project's rollup watermark to "now"; events written
    // into the past after that would never be rolled up (live events are always recorded at
    // now). Start the rollup over, so the first series rolls all of them up once.
    sqlx::query("DELETE FROM analytics_slots WHERE project_id = $1")
        .bind(project)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM analytics_watermarks WHERE project_id = $1")
        .bind(project)
        .execute(&mut *conn)
        .await?;
    // No ANALYZE: Herald never runs it on `events`, so the pages are timed with the plans a
    // user's database gets. (With statistics gathered here on this connection, the server's
    // connections opened before kept planning without them: a few requests of 30 took a
    // plan that read every event, which showed as an Engagement p95 of 2 s at 10,000,000.)
    crate::segments::settle_wal(conn).await?;
    Ok(())
}

/// How many of `events` seeded events are sends (10 of every 14).
fn seeded_sends(events: usize) -> usize {
    (events / 14) * 10 + (events % 14).min(10)
}

async fn time_get(session: &Client, url: &str, name: &str) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(RUNS);
    for i in 0..=RUNS {
        let t = Instant::now();
        let res = session.get(url).send().await?;
        let status = res.status();
        let body = res.text().await?;
        ensure!(status == StatusCode::OK, "{name}: {status}: {body}");
        if i > 0 {
            times.push(t.elapsed());
        }
        // Which requests of the run were over target, in order (a warm-up, or one at random).
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        if ms > TARGET_MS {
            println!("  {name}: request {i} of {RUNS} took {ms:.0} ms");
        }
    }
    times.sort();
    Ok(times)
}

/// The process's resident set in MB (Linux `/proc/self/status`).
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Times the Analytics tabs and the Activity page of `project`, then holds 500 streams.
pub async fn run(
    server: &Server,
    session: &Client,
    project: &str,
    secret: &str,
    events: usize,
) -> anyhow::Result<()> {
    let base = format!("/app/p/{project}");
    // The first series of the project rolls its history up (once).
    let t = Instant::now();
    let res = session
        .get(server.url(&format!("{base}/analytics?range=90")))
        .send()
        .await?;
    ensure!(
        res.status() == StatusCode::OK,
        "analytics: {}",
        res.status()
    );
    let html = res.text().await?;
    // The page's Sent equals the API's series for the range it shows.
    let attr = |name: &str| {
        html.split(&format!("{name}=\""))
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_default()
            .to_owned()
    };
    let res = session
        .get(server.url(&format!(
            "/analytics/timeseries?from={}&to={}",
            attr("data-from"),
            attr("data-to")
        )))
        .bearer_auth(secret)
        .send()
        .await?;
    let series = expect_status(res, StatusCode::OK, "GET /analytics/timeseries").await?;
    let api_sent: i64 = series["series"]
        .as_array()
        .map(|s| s.iter().filter_map(|p| p["sent"].as_i64()).sum())
        .unwrap_or(0);
    let sent = html
        .split("data-figure=\"Sent\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .unwrap_or_default()
        .replace(',', "");
    ensure!(
        sent == api_sent.to_string() && api_sent >= seeded_sends(events) as i64 * 98 / 100,
        "the overview counts {sent} sends, the API {api_sent}, {} were seeded",
        seeded_sends(events)
    );
    println!(
        "first analytics view (rolls up {events} events once): {:.0} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );
    println!(
        "p50 / p95 of {RUNS} requests each, {events} events over 90 days (target p95 < {TARGET_MS:.0} ms):"
    );
    for (name, path) in [
        (
            "analytics overview, 90 days",
            format!("{base}/analytics?tab=overview&range=90"),
        ),
        (
            "analytics engagement",
            format!("{base}/analytics?tab=engagement"),
        ),
        (
            "analytics deliverability, 90 days",
            format!("{base}/analytics?tab=deliverability&range=90"),
        ),
        (
            "analytics audience, 90 days",
            format!("{base}/analytics?tab=audience&range=90"),
        ),
        ("activity", format!("{base}/activity")),
        (
            "activity, kind email.click",
            format!("{base}/activity?type=email.click"),
        ),
    ] {
        let times = time_get(session, &server.url(&path), name).await?;
        let (p50, p95) = (percentile(&times, 50), percentile(&times, 95));
        let verdict = if p95 < TARGET_MS { "ok" } else { "over target" };
        println!("{name:<36} {p50:>8.1} ms / {p95:>8.1} ms  {verdict}");
    }

    // 500 open streams: 25 projects with 20 each (the per-project cap).
    let per_project = herald_web::live::STREAMS_PER_PROJECT;
    let mut projects = vec![project.to_owned()];
    while projects.len() * per_project < STREAMS {
        let res = session
            .post(server.url("/users/@me/projects"))
            .json(&json!({"name": format!("Streams {}", projects.len())}))
            .send()
            .await?;
        let p = expect_status(res, StatusCode::CREATED, "POST /users/@me/projects").await?;
        projects.push(p["id"].as_str().context("project id")?.to_owned());
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = rss_mb();
    let mut held = Vec::with_capacity(STREAMS);
    for i in 0..STREAMS {
        let p = &projects[i / per_project];
        let mut res = session
            .get(server.url(&format!("/app/p/{p}/activity/stream")))
            .send()
            .await?;
        ensure!(
            res.status() == StatusCode::OK,
            "stream {i}: {}",
            res.status()
        );
        // The first event (the retry hint) shows the stream is open.
        let _ = tokio::time::timeout(Duration::from_secs(5), res.chunk()).await;
        held.push(res);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = rss_mb();
    let extra = after - before;
    let verdict = if extra < TARGET_MB {
        "ok"
    } else {
        "over target"
    };
    println!(
        "{STREAMS} open activity streams: RSS {before:.1} MB -> {after:.1} MB, {extra:.1} MB extra \
         (server and its client in one process)  {verdict} (target < {TARGET_MB:.0} MB)"
    );
    drop(held);
    Ok(())
}
