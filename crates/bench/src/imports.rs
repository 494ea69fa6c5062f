//! The import and analytics benchmarks (issue 12).
//!
//! `import`: a project already holding `--count` contacts (default 1,000,000, inserted
//! directly in SQL) imports a CSV of about 5 MB (60,000 rows by 5 columns) through `POST
//! /contacts/import`; prints rows/s from the 202 to `completed` and the progress values polled
//! meanwhile. Target: at least 100,000 rows/s on SQLite.
//!
//! `analytics`: 1,000,000 `email.sent` events (plus 300,000 opens and 100,000 clicks) spread
//! over 30 days, inserted directly in SQL; prints the latency of `GET /analytics/timeseries`
//! over those 30 days by day (UTC and Europe/Oslo). Target: under 200 ms.

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use reqwest::{Client, StatusCode};
use serde_json::Value;

use crate::Options;
use crate::server::{Server, expect_status, project_key};

const TARGET_ROWS_PER_SEC: f64 = 100_000.0;
const TARGET_SERIES_MS: f64 = 200.0;
const CSV_MAX: usize = 5 * 1024 * 1024;
const DAY_MS: i64 = 86_400_000;

/// Runs `sql` with `n` and `now` bound on the server's database (the statements name the
/// project `project_key` made, "Benchmark": signing up makes a first project of its own).
async fn seed(
    server: &Server,
    sqlite: &str,
    postgres: &str,
    n: i64,
    now: i64,
) -> anyhow::Result<()> {
    let url = &server.config.database_url;
    if url.starts_with("sqlite:") {
        let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(url).await?;
        sqlx::query(sqlx::AssertSqlSafe(sqlite))
            .bind(n)
            .bind(now)
            .execute(&mut conn)
            .await
            .context("seeding SQLite")?;
        // The seed's write-ahead log (hundreds of MB) is copied into the database now, so
        // the measured phase does not share the machine with the seed's checkpoint.
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await
            .context("checkpointing the seed")?;
    } else {
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(url).await?;
        if let Some(schema) = &server.config.database_schema {
            sqlx::query(sqlx::AssertSqlSafe(format!("SET search_path TO {schema}")))
                .execute(&mut conn)
                .await?;
        }
        sqlx::query(sqlx::AssertSqlSafe(postgres))
            .bind(n)
            .bind(now)
            .execute(&mut conn)
            .await
            .context("seeding PostgreSQL")?;
    }
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0))
}

/// The CSV: a header and rows of 5 columns, as many as fit in 5 MB up to 60,000.
fn csv_file() -> (Vec<u8>, usize) {
    const PLANS: [&str; 3] = ["free", "pro", "team"];
    const CITIES: [&str; 4] = ["Oslo", "Lisbon, Portugal", "Montréal", "São Paulo"];
    let mut out = b"email,firstName,plan,seats,city\n".to_vec();
    let mut rows = 0;
    for i in 0..60_000 {
        let city = CITIES[i % CITIES.len()];
        let city = if city.contains(',') {
            format!("\"{city}\"")
        } else {
            city.to_owned()
        };
        let line = format!(
            "imported{i:07}@bench-import.example,Reader number {i} with a longer name,{},{},{city}\n",
            PLANS[i % 3],
            i % 50
        );
        if out.len() + line.len() > CSV_MAX {
            break;
        }
        out.extend_from_slice(line.as_bytes());
        rows += 1;
    }
    (out, rows)
}

pub async fn import(opts: &Options) -> anyhow::Result<()> {
    let count = if opts.count == 100_000 {
        1_000_000
    } else {
        opts.count
    };
    let server = Server::start_with(opts.database_url.as_deref(), |_| {}).await?;
    let key = project_key(&server).await?;
    println!("engine: {}", server.engine);
    let started = Instant::now();
    seed(
        &server,
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $1 - 1) \
         INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) \
         SELECT randomblob(16), (SELECT id FROM projects WHERE name = 'Benchmark'), 'seed' || i || '@bench.example', 1, \
         '{\"plan\":\"free\"}', $2, $2 FROM n",
        "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) \
         SELECT gen_random_uuid(), (SELECT id FROM projects WHERE name = 'Benchmark'), 'seed' || i || '@bench.example', true, \
         '{\"plan\":\"free\"}'::jsonb, $2, $2 FROM generate_series(0, $1 - 1) i",
        i64::try_from(count)?,
        now_ms(),
    )
    .await?;
    println!(
        "seeded {count} contacts in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let (csv, rows) = csv_file();
    println!("CSV: {rows} rows x 5 columns, {} bytes", csv.len());
    let client = Client::new();
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(csv).file_name("bench.csv"),
    );
    let started = Instant::now();
    let res = client
        .post(server.url("/contacts/import"))
        .bearer_auth(&key)
        .multipart(form)
        .send()
        .await?;
    let accepted = expect_status(res, StatusCode::ACCEPTED, "POST /contacts/import").await?;
    let job = accepted["jobId"].as_str().context("no jobId")?.to_owned();
    let mut progress = Vec::new();
    let done: Value = loop {
        let res = client
            .get(server.url(&format!("/contacts/import/{job}")))
            .bearer_auth(&key)
            .send()
            .await?;
        let body = expect_status(res, StatusCode::OK, "GET /contacts/import/:id").await?;
        let p = body["progress"].as_i64().unwrap_or(0);
        if progress.last() != Some(&p) {
            progress.push(p);
        }
        if body["state"] == "completed" || body["state"] == "failed" {
            break body;
        }
        ensure!(
            started.elapsed() < Duration::from_secs(600),
            "the import took too long"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let secs = started.elapsed().as_secs_f64();
    ensure!(done["state"] == "completed", "the import failed: {done}");
    ensure!(
        done["result"]["created"] == rows,
        "unexpected result: {done}"
    );
    let rate = rows as f64 / secs;
    println!(
        "import: {rows} rows in {secs:.2} s = {rate:.0} rows/s (target >= {TARGET_ROWS_PER_SEC:.0})"
    );
    println!("progress seen while polling: {progress:?}");
    println!(
        "{}",
        if rate >= TARGET_ROWS_PER_SEC {
            "PASS"
        } else {
            "BELOW TARGET"
        }
    );
    server.shutdown().await
}

pub async fn analytics(opts: &Options) -> anyhow::Result<()> {
    let sent = if opts.count == 100_000 {
        1_000_000
    } else {
        opts.count
    };
    let total = sent + sent * 4 / 10;
    let server = Server::start_with(opts.database_url.as_deref(), |_| {}).await?;
    let key = project_key(&server).await?;
    println!("engine: {}", server.engine);
    let now = now_ms();
    let start = now - 30 * DAY_MS;
    let started = Instant::now();
    // Event i: 10 of every 14 are sends, 3 opens, 1 a click; spread evenly over 30 days.
    let name = "CASE WHEN i % 14 < 10 THEN 'email.sent' WHEN i % 14 < 13 THEN 'email.open' ELSE 'email.click' END";
    seed(
        &server,
        &format!(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $1 - 1) \
             INSERT INTO events (id, project_id, contact_id, name, data, created_at) \
             SELECT randomblob(16), (SELECT id FROM projects WHERE name = 'Benchmark'), NULL, {name}, '{{}}', \
             $2 - {span} + (i * {span}) / $1 FROM n",
            span = 30 * DAY_MS
        ),
        &format!(
            "INSERT INTO events (id, project_id, contact_id, name, data, created_at) \
             SELECT gen_random_uuid(), (SELECT id FROM projects WHERE name = 'Benchmark'), NULL, {name}, '{{}}'::jsonb, \
             $2 - {span} + (i * {span}) / $1 FROM generate_series(0, $1 - 1) i",
            span = 30 * DAY_MS
        ),
        i64::try_from(total)?,
        now,
    )
    .await?;
    println!(
        "seeded {total} events ({sent} sends) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let client = Client::new();
    let from = herald_core::time::iso(start);
    let to = herald_core::time::iso(now + 1);
    for tz in ["UTC", "Europe/Oslo"] {
        let url = server.url(&format!(
            "/analytics/timeseries?from={from}&to={to}&interval=day&tz={tz}"
        ));
        let mut times = Vec::new();
        let mut body = Value::Null;
        for _ in 0..6 {
            let t = Instant::now();
            let res = client.get(&url).bearer_auth(&key).send().await?;
            body = expect_status(res, StatusCode::OK, "GET /analytics/timeseries").await?;
            times.push(t.elapsed());
        }
        let counted: i64 = body["series"]
            .as_array()
            .map(|s| s.iter().filter_map(|p| p["sent"].as_i64()).sum())
            .unwrap_or(0);
        ensure!(
            counted == i64::try_from(sent)?,
            "counted {counted} sends, seeded {sent}: {body}"
        );
        // The first call of a project rolls its closed slots up; later ones read the rollup.
        let first = times[0];
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let median = ms(times[times.len() / 2]);
        println!(
            "timeseries 30 days by day, tz {tz}: median {median:.1} ms, first call {:.1} ms, max {:.1} ms (target < {TARGET_SERIES_MS:.0}) {}",
            ms(first),
            ms(*times.last().unwrap_or(&Duration::ZERO)),
            if median < TARGET_SERIES_MS {
                "PASS"
            } else {
                "ABOVE TARGET"
            }
        );
    }
    server.shutdown().await
}
