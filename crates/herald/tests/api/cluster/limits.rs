//! Limits hold across nodes (DECISIONS.md "Several nodes on one PostgreSQL"): the per-project
//! rate limit and the per-client auth limit, counted in one shared window, let through within
//! 10 % of the configured figure (and never more) however the requests spread over three
//! nodes; a project's send throttle spaces two workers' sends together to the rate.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::{cluster_of, send_range};
use crate::helpers::Engine;
use crate::mail_setup::mail_world;

const RATE_LIMIT: usize = 300;
const AUTH_LIMIT: usize = 60;

/// Sleeps into the next minute when fewer than 20 s of this one are left, so a burst fits in
/// one window (the nodes' windows are minutes of the database's clock, this machine's here).
async fn wait_for_a_fresh_window() {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let into = secs % 60.0;
    if into > 40.0 {
        tokio::time::sleep(Duration::from_secs_f64(60.5 - into)).await;
    }
}

/// Sends `n` requests spread round-robin over `bases` (12 at once); how many were not 429.
async fn let_through<F>(bases: &[String], n: usize, request: F) -> usize
where
    F: Fn(&reqwest::Client, &str) -> reqwest::RequestBuilder + Clone + Send + 'static,
{
    let mut set = tokio::task::JoinSet::new();
    for t in 0..12 {
        let bases = bases.to_vec();
        let request = request.clone();
        set.spawn(async move {
            let client = reqwest::Client::new();
            let mut passed = 0;
            for i in (t..n).step_by(12) {
                let res = request(&client, &bases[i % bases.len()])
                    .send()
                    .await
                    .expect("request");
                match res.status().as_u16() {
                    429 => {
                        assert!(res.headers().contains_key("retry-after"));
                    }
                    500.. => panic!("{}: {}", res.status(), res.text().await.unwrap_or_default()),
                    _ => passed += 1,
                }
            }
            passed
        });
    }
    set.join_all().await.into_iter().sum()
}

/// Three `api` nodes with a limit of 300 requests per minute per project and 60 per client
/// and route on the account routes: 450 of a project's requests and 90 sign-up verifications
/// spread over the three let through between 90 % and 100 % of each limit (counted per node,
/// three times the limit would pass).
#[tokio::test]
#[cfg_attr(
    not(any(herald_pg_tests, herald_ci)),
    ignore = "HERALD_TEST_POSTGRES_URL is not set"
)]
async fn the_rate_limits_hold_across_three_nodes() {
    let app = Engine::Postgres.app_with(|c| c.workers = false).await;
    let project = app.project().await;
    let mut cluster = cluster_of(&app.config);
    let (limit, auth) = (RATE_LIMIT.to_string(), AUTH_LIMIT.to_string());
    let settings = [
        ("HERALD_RATE_LIMIT_PER_MINUTE", limit.as_str()),
        ("HERALD_AUTH_RATE_LIMIT_PER_MINUTE", auth.as_str()),
    ];
    let mut bases = Vec::new();
    for _ in 0..3 {
        let i = cluster.start("api", &settings).await.expect("api node");
        bases.push(cluster.nodes[i].base());
    }
    wait_for_a_fresh_window().await;

    let key = project.secret_key.clone();
    let passed = let_through(&bases, RATE_LIMIT * 3 / 2, move |c, base| {
        c.get(format!("{base}/emails?limit=1")).bearer_auth(&key)
    })
    .await;
    println!("project requests let through: {passed} of a limit of {RATE_LIMIT}");
    assert!(
        passed <= RATE_LIMIT,
        "{passed} passed a limit of {RATE_LIMIT}"
    );
    assert!(
        passed * 10 >= RATE_LIMIT * 9,
        "only {passed} of {RATE_LIMIT}"
    );

    let passed = let_through(&bases, AUTH_LIMIT * 3 / 2, |c, base| {
        c.post(format!("{base}/auth/verify-email"))
            .json(&json!({"token": "not-a-token"}))
    })
    .await;
    println!("account requests let through: {passed} of a limit of {AUTH_LIMIT}");
    assert!(
        passed <= AUTH_LIMIT,
        "{passed} passed a limit of {AUTH_LIMIT}"
    );
    assert!(
        passed * 10 >= AUTH_LIMIT * 9,
        "only {passed} of {AUTH_LIMIT}"
    );
}

/// Messages of [`two_workers_share_a_projects_send_rate`], and the rate.
const THROTTLED: usize = 120;
const SEND_RATE: usize = 40;
const WARM_UP: usize = 10;

/// Two `worker` nodes with `HERALD_SEND_RATE_PER_SECOND=40` deliver a project's 120 messages
/// at 40 per second together (2.75 s from the 10th to the last), not 40 each (1.4 s).
#[tokio::test]
#[cfg_attr(
    not(any(herald_pg_tests, herald_ci)),
    ignore = "HERALD_TEST_POSTGRES_URL is not set"
)]
async fn two_workers_share_a_projects_send_rate() {
    let w = mail_world(Engine::Postgres, |c| c.workers = false).await;
    let client = reqwest::Client::new();
    for from in (0..THROTTLED).step_by(40) {
        send_range(&client, &w.app.base, &w.project.secret_key, from..from + 40)
            .await
            .expect("accepted");
    }
    let mut cluster = cluster_of(&w.app.config);
    let rate = SEND_RATE.to_string();
    let settings = [("HERALD_SEND_RATE_PER_SECOND", rate.as_str())];
    cluster.start("worker", &settings).await.expect("worker 1");
    cluster.start("worker", &settings).await.expect("worker 2");
    // Timed from the 10th delivery: the first ones wait for the relay connections.
    w.sink.wait_for(WARM_UP, Duration::from_secs(30)).await;
    let first = std::time::Instant::now();
    let got = w.sink.wait_for(THROTTLED, Duration::from_secs(30)).await;
    assert_eq!(got.len(), THROTTLED);
    let took = first.elapsed().as_secs_f64();
    let ideal = (THROTTLED - WARM_UP) as f64 / SEND_RATE as f64;
    println!(
        "{THROTTLED} messages at {SEND_RATE}/s on two workers: the last {} in {took:.2} s \
         (ideal {ideal:.2} s)",
        THROTTLED - WARM_UP
    );
    assert!(took >= ideal * 0.9, "faster than the rate: {took:.2} s");
    assert!(took <= ideal * 1.5, "far slower than the rate: {took:.2} s");
}

/// The retention task deletes past request windows and idle send slots, and keeps the current
/// window (its count would start again).
#[tokio::test]
#[cfg_attr(
    not(any(herald_pg_tests, herald_ci)),
    ignore = "HERALD_TEST_POSTGRES_URL is not set"
)]
async fn retention_deletes_past_windows_and_idle_slots() {
    let app = Engine::Postgres.app_with(|c| c.workers = false).await;
    let project = app.project().await;
    let count = |rows: String| {
        let app = &app;
        async move {
            let mut conn = crate::helpers::pg_schema_connection(app)
                .await
                .expect("schema");
            let (n,): (i64,) =
                sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {rows}")))
                    .fetch_one(&mut conn)
                    .await
                    .expect("count");
            n
        }
    };
    crate::helpers::raw_sql(
        &app,
        &[
            "INSERT INTO rate_windows (key, window_start, used) VALUES ('p:old', 1, 5)",
            "INSERT INTO send_throttle (project_id, next_slot) \
             VALUES ('00000000-0000-7000-8000-000000000001', 1000000)",
        ],
    )
    .await;
    let res = app.get("/emails?limit=1", &project.secret_key).await;
    assert_eq!(res.status(), 200);
    let old = || count("rate_windows WHERE key = 'p:old'".to_owned());
    let current = || count(format!("rate_windows WHERE key LIKE 'p:{}/%'", project.id));
    let slots = || count("send_throttle".to_owned());
    assert_eq!((old().await, current().await, slots().await), (1, 1, 1));
    app.engine.purge_expired().await.expect("purge");
    assert_eq!(
        (old().await, current().await, slots().await),
        (0, 1, 0),
        "the past window and the idle slot go, this minute's window stays"
    );
}
