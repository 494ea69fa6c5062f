//! `dashboard`: the server time of the dashboard's pages at `count` contacts (default
//! 1,000,000) on SQLite. A user signs up and creates a project on a real server (port 0);
//! the project is then filled in SQL as `segments` fills its database (`segments::seed_rows`:
//! 5 custom fields, `login` and `page_view` events). Each page is requested [`RUNS`] times,
//! one after the other, with the session cookie over real HTTP, and its p50 and p95 printed:
//! home, the contacts page, an email-prefix search and a contact's page. Target (DESIGN.md "Weight and speed"): p95 under 50 ms each. Then the
//! segment builder's live count (`POST /app/p/{id}/filter/count`, the htmx request a keystroke
//! sends) for a 5-condition tree with a nested OR group: target p95 under 300 ms (issue 31).
//! Then the template editor's page (50 ms) and its two preview round trips as the user types (the
//! details fragment and the frame; issue 31: p95 under 20 ms), and the JS and CSS the
//! editor's page loads (every file the dashboard ships), as served, gzipped (`gzip -9`):
//! target under 100 KB. Last, the report of a campaign sent to every seeded contact
//! ([`crate::dashboard_campaign`]): target p95 under 50 ms. Then a 50-step workflow's page
//! (the graph laid out and drawn on the server) and the same page with one execution's path
//! ([`crate::dashboard_workflow`]): target p95 under 50 ms. With `--events N` (default
//! 10,000,000; 0 skips it), Analytics over 90 days and Activity at N events, and 500 open
//! Activity streams ([`crate::dashboard_live`]).

use std::str::FromStr as _;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use reqwest::{Client, StatusCode};
use serde_json::json;
use sqlx::ConnectOptions as _;
use sqlx::sqlite::SqliteConnectOptions;

use crate::Options;
use crate::contacts::percentile;
use crate::server::{Server, expect_status, signed_up_project};

/// Requests per page (after one warm-up).
const RUNS: usize = 60;

pub async fn run(opts: &Options) -> anyhow::Result<()> {
    ensure!(
        opts.database_url.is_none(),
        "dashboard runs on SQLite only (no --database-url)"
    );
    let server = Server::start_with(None, |_| {}).await?;
    let session = Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let project = signed_up_project(&server, &session).await?;
    let project_id = project["id"]
        .as_str()
        .context("the project has no id")?
        .to_owned();
    let secret = project["secretKey"]
        .as_str()
        .context("the project has no secretKey")?
        .to_owned();

    let started = Instant::now();
    let mut conn = SqliteConnectOptions::from_str(&server.config.database_url)
        .context("the server's SQLite URL")?
        .connect()
        .await
        .context("opening the server's database")?;
    let now = herald_core::clock::system().now();
    let id: uuid::Uuid = project_id.parse().context("the project id")?;
    crate::segments::seed_rows(&mut conn, id, opts.count, now).await?;
    // The seeded fields' types, as contact writes would have recorded them (the builder and
    // the filter parse compare by them).
    for (key, ty) in [
        ("plan", "string"),
        ("age", "number"),
        ("city", "string"),
        ("score", "number"),
        ("signup", "date"),
    ] {
        sqlx::query(
            "INSERT INTO contact_fields (project_id, created_at, key, type) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (project_id, key) DO NOTHING",
        )
        .bind(id)
        .bind(now)
        .bind(key)
        .bind(ty)
        .execute(&mut conn)
        .await?;
    }
    sqlx::query("ANALYZE").execute(&mut conn).await?;
    crate::segments::settle_wal(&mut conn).await?;
    println!(
        "{} contacts seeded in {:.1} s (SQLite)",
        opts.count,
        started.elapsed().as_secs_f64()
    );

    // The server's worker indexes the seeded emails for search behind the writes
    // (docs/architecture.md "Contact search"); a search before it is done reads the contacts
    // past its mark directly, as slowly as without the index. Wait for it, as a server that
    // has been running would have.
    let indexing = Instant::now();
    loop {
        let (left,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM contacts WHERE rowid > (SELECT upto FROM contacts_trigrams_mark)",
        )
        .fetch_one(&mut conn)
        .await?;
        if left == 0 {
            break;
        }
        ensure!(
            indexing.elapsed() < std::time::Duration::from_secs(600),
            "the search index did not catch up in 10 minutes ({left} contacts left)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    println!(
        "search index caught up in {:.1} s (by the server's worker)",
        indexing.elapsed().as_secs_f64()
    );

    // A contact in the middle of the table, through the API.
    let middle = opts.count / 2 + 1;
    let res = session
        .get(server.url(&format!("/contacts?search=user{middle}%40&limit=1")))
        .bearer_auth(&secret)
        .send()
        .await?;
    let found = expect_status(res, StatusCode::OK, "GET /contacts?search").await?;
    let contact = found["data"][0]["id"]
        .as_str()
        .with_context(|| format!("no contact user{middle}@example.com: {found}"))?
        .to_owned();

    let base = format!("/app/p/{project_id}");
    // A prefix that matches about a hundred contacts ("user1234" matches user1234,
    // user12340..user12349, user123400.. at 1,000,000).
    let prefix = format!("user{}", middle / 100);
    let pages = [
        ("home", format!("{base}/")),
        ("contacts", format!("{base}/contacts")),
        (
            "email-prefix search",
            format!("{base}/contacts?search={prefix}"),
        ),
        // A term in every address: read newest first, its number estimated ("About").
        (
            "common-term search",
            format!("{base}/contacts?search=example"),
        ),
        ("contact", format!("{base}/contacts/{contact}")),
    ];
    println!("p50 / p95 of {RUNS} requests each, one at a time (target p95 < 50 ms):");
    for (name, path) in &pages {
        let times = time_page(&session, &server.url(path), name).await?;
        report(name, &times, 50.0);
    }

    let times = time_count(
        &session,
        &server.url(&format!("{base}/filter/count?prefix=filters")),
    )
    .await?;
    let (p50, p95) = (percentile(&times, 50), percentile(&times, 95));
    let verdict = if p95 < 300.0 { "ok" } else { "over target" };
    println!(
        "builder live count, 5 conditions: {p50:>7.1} ms / {p95:>7.1} ms  {verdict} (target p95 < 300 ms)"
    );

    // The template editor: its page, and the preview round trips it makes as the user types
    // (the details fragment and the frame), each rendered by the send rules.
    let res = session
        .post(server.url("/templates"))
        .bearer_auth(&secret)
        .json(
            &json!({"name": "Bench", "subject": "Hi {{firstName ?? \"there\"}}",
            "body": PREVIEW_BODY, "type": "MARKETING"}),
        )
        .send()
        .await?;
    let template = expect_status(res, StatusCode::CREATED, "POST /templates").await?;
    let template = template["id"].as_str().context("the template has no id")?;
    let editor = format!("{base}/templates/{template}");
    let times = time_page(&session, &server.url(&editor), "template editor").await?;
    report("template editor", &times, 50.0);
    let form = [
        ("name", "Bench"),
        ("subject", "Hi {{firstName ?? \"there\"}}"),
        ("body", PREVIEW_BODY),
        ("type", "MARKETING"),
        ("sampleEmail", "ada@example.com"),
        ("sampleData", r#"{"firstName": "Ada", "plan": "pro"}"#),
    ];
    println!("p50 / p95 of {RUNS} preview requests (target p95 < 20 ms):");
    for (name, path) in [
        ("preview details", format!("{base}/templates/preview")),
        ("preview frame", format!("{base}/templates/frame")),
    ] {
        let times = time_post(&session, &server.url(&path), &form, name).await?;
        report(name, &times, 20.0);
    }

    let page = session.get(server.url(&editor)).send().await?;
    let html = page.text().await?;
    let (raw, gzipped) = asset_sizes(&session, &server, &html).await?;
    println!(
        "shipped JS + CSS: {:.1} KB, {:.1} KB gzipped (target < 100 KB)",
        raw as f64 / 1024.0,
        gzipped as f64 / 1024.0
    );

    // The campaign report after a campaign to every contact (1,000,000 recipients by default).
    let res = session
        .post(server.url("/domains"))
        .bearer_auth(&secret)
        .json(&json!({"domain": "bench.test"}))
        .send()
        .await?;
    expect_status(res, StatusCode::CREATED, "POST /domains").await?;
    let res = session
        .post(server.url("/campaigns"))
        .bearer_auth(&secret)
        .json(
            &json!({"name": "Bench", "subject": "Hi", "body": "<p>Hi</p>",
            "from": "news@bench.test", "audienceType": "ALL"}),
        )
        .send()
        .await?;
    let campaign = expect_status(res, StatusCode::CREATED, "POST /campaigns").await?;
    let campaign = campaign["data"]["id"]
        .as_str()
        .context("the campaign has no id")?
        .to_owned();
    let started = Instant::now();
    let recipients = crate::dashboard_campaign::seed_sent_campaign(
        &mut conn,
        id,
        campaign.parse().context("the campaign id")?,
        now - 3 * 24 * 3_600_000,
    )
    .await?;
    sqlx::query("ANALYZE").execute(&mut conn).await?;
    // The server reads the database now: checkpoint what its readers allow (a TRUNCATE would
    // wait for them).
    sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
        .execute(&mut conn)
        .await?;
    println!(
        "campaign to {recipients} recipients seeded in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!("p50 / p95 of {RUNS} requests each (target p95 < 50 ms):");
    for (name, path) in [
        ("campaign report", format!("{base}/campaigns/{campaign}")),
        (
            "campaign progress",
            format!("{base}/campaigns/{campaign}/progress"),
        ),
    ] {
        let times = time_page(&session, &server.url(&path), name).await?;
        report(name, &times, 50.0);
    }

    // A 50-step workflow's page, with executions waiting on it ([`crate::dashboard_workflow`]).
    let (workflow, execution) = crate::dashboard_workflow::seed(&session, &server, &secret).await?;
    println!(
        "p50 / p95 of {RUNS} requests each, a {}-step workflow (target p95 < 50 ms):",
        crate::dashboard_workflow::STEPS
    );
    for (name, path) in [
        ("workflow page", format!("{base}/workflows/{workflow}")),
        (
            "workflow path",
            format!("{base}/workflows/{workflow}?execution={execution}"),
        ),
    ] {
        let times = time_page(&session, &server.url(&path), name).await?;
        report(name, &times, 50.0);
    }
    if opts.events > 0 {
        let started = Instant::now();
        crate::dashboard_live::seed_events(&mut conn, id, opts.events, now).await?;
        println!(
            "{} events over 90 days seeded in {:.1} s",
            opts.events,
            started.elapsed().as_secs_f64()
        );
        crate::dashboard_live::run(&server, &session, &project_id, &secret, opts.events).await?;
    }
    server.shutdown().await
}

/// A template body of a realistic size (about 6 KB of HTML, a dozen variables).
const PREVIEW_BODY: &str = include_str!("dashboard_preview_body.html");

fn report(name: &str, times: &[Duration], target_ms: f64) {
    let (p50, p95) = (percentile(times, 50), percentile(times, 95));
    let verdict = if p95 < target_ms { "ok" } else { "over target" };
    println!("  {name:<20} {p50:>7.1} ms / {p95:>7.1} ms  {verdict}");
}

/// [`time_page`] for a form post (the preview as the editor sends it).
async fn time_post(
    client: &Client,
    url: &str,
    form: &[(&str, &str)],
    name: &str,
) -> anyhow::Result<Vec<Duration>> {
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    time_requests(url, name, || {
        client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.clone())
    })
    .await
}

/// One warm-up, then [`RUNS`] timed requests; each must answer 200 with HTML.
async fn time_page(client: &Client, url: &str, name: &str) -> anyhow::Result<Vec<Duration>> {
    time_requests(url, name, || client.get(url)).await
}

/// One warm-up, then [`RUNS`] timed requests made by `request`; each must answer 200.
async fn time_requests(
    url: &str,
    name: &str,
    request: impl Fn() -> reqwest::RequestBuilder,
) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(RUNS);
    for i in 0..=RUNS {
        let t = Instant::now();
        let res = request().send().await?;
        let status = res.status();
        let body = res.bytes().await?;
        let elapsed = t.elapsed();
        if status != StatusCode::OK {
            bail!(
                "{name}: {url} answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        if i > 0 {
            times.push(elapsed);
        }
    }
    times.sort();
    Ok(times)
}

/// The builder's form for plan = pro AND age > 30 AND (score < 500 OR city = city7) AND a
/// login in the last 7 days: the fields a browser posts (names are the API's paths).
const FIVE_CONDITIONS: [(&str, &str); 23] = [
    ("filters.conditions", ""),
    ("filters.operator", "AND"),
    ("filters.conditions.0.field", "data.plan"),
    ("filters.conditions.0.operator", "equals"),
    ("filters.conditions.0.value", "pro"),
    ("filters.conditions.1.field", "data.age"),
    ("filters.conditions.1.operator", "greaterThan"),
    ("filters.conditions.1.value", "30"),
    ("filters.conditions.2.conditions", ""),
    ("filters.conditions.2.operator", "OR"),
    ("filters.conditions.2.conditions.0.field", "data.score"),
    ("filters.conditions.2.conditions.0.operator", "lessThan"),
    ("filters.conditions.2.conditions.0.value", "500"),
    ("filters.conditions.2.conditions.1.field", "data.city"),
    ("filters.conditions.2.conditions.1.operator", "equals"),
    ("filters.conditions.2.conditions.1.value", "city7"),
    ("filters.conditions.3.field", "event"),
    ("filters.conditions.3.event", "login"),
    ("filters.conditions.3.operator", "triggeredWithin"),
    ("filters.conditions.3.value", "7"),
    ("filters.conditions.3.unit", "days"),
    ("name", "Benchmark"),
    ("description", ""),
];

/// One warm-up, then [`RUNS`] live counts of [`FIVE_CONDITIONS`]; each must answer a count.
async fn time_count(client: &Client, url: &str) -> anyhow::Result<Vec<Duration>> {
    let body = {
        let mut s = form_urlencoded::Serializer::new(String::new());
        s.extend_pairs(FIVE_CONDITIONS);
        s.finish()
    };
    let mut times = Vec::with_capacity(RUNS);
    for i in 0..=RUNS {
        let t = Instant::now();
        let res = client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.clone())
            .send()
            .await?;
        let status = res.status();
        let html = res.text().await?;
        let elapsed = t.elapsed();
        ensure!(
            status == StatusCode::OK && html.contains(" match"),
            "the live count answered {status}: {html}"
        );
        if i > 0 {
            times.push(elapsed);
        }
    }
    times.sort();
    Ok(times)
}

/// The stylesheets and scripts a page links (`/app/assets/...css|js`), fetched as served:
/// their total size and their total gzipped with `gzip -9`.
async fn asset_sizes(
    client: &Client,
    server: &Server,
    html: &str,
) -> anyhow::Result<(usize, usize)> {
    let mut urls: Vec<&str> = html
        .split('"')
        .filter(|s| s.starts_with("/app/assets/") && (s.ends_with(".css") || s.ends_with(".js")))
        .collect();
    urls.sort_unstable();
    urls.dedup();
    ensure!(
        !urls.is_empty(),
        "the home page links no stylesheet or script"
    );
    let (mut raw, mut gzipped) = (0, 0);
    for url in urls {
        let res = client.get(server.url(url)).send().await?;
        ensure!(res.status() == StatusCode::OK, "{url}: {}", res.status());
        let bytes = res.bytes().await?;
        raw += bytes.len();
        gzipped += gzip_len(&bytes).with_context(|| format!("gzipping {url}"))?;
    }
    Ok((raw, gzipped))
}

fn gzip_len(bytes: &[u8]) -> anyhow::Result<usize> {
    use std::io::Write as _;
    let mut child = std::process::Command::new("gzip")
        .arg("-9")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("running gzip (needed to measure the gzipped size)")?;
    child
        .stdin
        .take()
        .context("gzip's stdin")?
        .write_all(bytes)?;
    let out = child.wait_with_output()?;
    ensure!(out.status.success(), "gzip failed");
    Ok(out.stdout.len())
}
