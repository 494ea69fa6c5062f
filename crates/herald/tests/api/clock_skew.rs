//! A node whose clock is ten minutes off (ahead, or behind) changes nothing on PostgreSQL:
//! lease, timer and schedule times come from the database's clock (docs/deploy.md "Time").
//!
//! Four nodes on one schema: a normal and a skewed API node accept the mail, a normal and a
//! skewed worker deliver it through a slow relay, holding leases of 3 s. Were a node's own
//! clock used, the one ahead would take the other's live leases (ten minutes "expired") and
//! send their messages a second time, and what one node stamps as due "now" would wait ten
//! minutes for the other. So, in three rounds (both workers; the skewed worker alone; the
//! normal worker alone) every message is delivered exactly once and within seconds, and
//! every time written to the database is the database's own, give or take a minute.
//!
//! SQLite is one node and keeps its own clock: the same rounds with that clock moved by ten
//! minutes deliver everything once and at once.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use herald::Application;
use herald::config::Role;
use herald_core::clock::{SharedClock, SkewedClock};
use herald_core::time::Millis;
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::both_engines;
use crate::helpers::{Engine, expect_json, pg_schema_connection};
use crate::mail_setup::{DOMAIN, MailWorld, mail_world};

both_engines!(
    a_node_ten_minutes_ahead_sends_each_message_once_and_on_time,
    a_node_ten_minutes_behind_sends_each_message_once_and_on_time,
);

const TEN_MINUTES_MS: Millis = 10 * 60 * 1000;
/// Messages per API node per round.
const PER_NODE: usize = 12;
/// Far below ten minutes, far above a round's work through the slow relay.
const ROUND_LIMIT: Duration = Duration::from_secs(20);

async fn a_node_ten_minutes_ahead_sends_each_message_once_and_on_time(engine: Engine) {
    skewed_cluster_sends_each_message_once(engine, TEN_MINUTES_MS).await;
}

async fn a_node_ten_minutes_behind_sends_each_message_once_and_on_time(engine: Engine) {
    skewed_cluster_sends_each_message_once(engine, -TEN_MINUTES_MS).await;
}

/// A node started in this process; dropping `stop` (or sending on it) stops it.
struct Node {
    base: String,
    stop: oneshot::Sender<()>,
    running: JoinHandle<anyhow::Result<()>>,
}

impl Node {
    async fn start(w: &MailWorld, role: Role, clock: SharedClock) -> Node {
        let mut config = w.app.config.clone();
        config.apply_role(role);
        let app = Application::build_with_clock(config, clock)
            .await
            .expect("a node on the same schema");
        let base = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = oneshot::channel::<()>();
        let running = tokio::spawn(app.run_until_stopped(async move {
            let _ = stopped.await;
        }));
        Node {
            base,
            stop,
            running,
        }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.running
            .await
            .expect("join")
            .expect("the node stops cleanly");
    }
}

async fn skewed_cluster_sends_each_message_once(engine: Engine, skew: Millis) {
    let w = mail_world(engine, |c| {
        c.send_concurrency = 2;
        c.smtp_max_connections = 2;
        c.send_lease_secs = 3.0;
        c.idle_poll_secs = 0.2;
        c.shutdown_grace_secs = 5.0;
        if engine == Engine::Postgres {
            c.role = Role::Api;
        }
    })
    .await;
    // Each delivery takes a while, so leases are held (and renewed) while others look.
    w.sink.set_reply_delay(Duration::from_millis(150));
    let normal: SharedClock = w.app.clock.clone();
    let skewed: SharedClock = SkewedClock::new(w.app.clock.clone(), skew);
    let key = w.project.secret_key.clone();
    let mut expected = 0;

    if engine == Engine::Sqlite {
        println!("SQLite is one node and keeps its own clock: that clock moved by {skew} ms");
        let moved = herald_core::clock::Clock::now(w.app.clock.as_ref()) + skew;
        w.app.clock.set(moved);
        for round in ["r1", "r2", "r3"] {
            expected += send(&w.app.base, &key, round, 2 * PER_NODE).await;
            delivered_within(&w, expected, round).await;
        }
        exactly_once(&w, expected).await;
        return;
    }

    let since = w
        .app
        .store
        .database_time()
        .await
        .expect("db time")
        .expect("pg");
    let skewed_api = Node::start(&w, Role::Api, skewed.clone()).await;
    let skewed_worker = Node::start(&w, Role::Worker, skewed.clone()).await;
    let normal_worker = Node::start(&w, Role::Worker, normal.clone()).await;

    // Round 1: both workers at once; the skewed one must not take the other's leases.
    expected += send(&w.app.base, &key, "r1n", PER_NODE).await;
    expected += send(&skewed_api.base, &key, "r1s", PER_NODE).await;
    delivered_within(&w, expected, "both workers").await;

    // Round 2: the skewed worker alone delivers what both API nodes stamped.
    normal_worker.stop().await;
    expected += send(&w.app.base, &key, "r2n", PER_NODE).await;
    expected += send(&skewed_api.base, &key, "r2s", PER_NODE).await;
    delivered_within(&w, expected, "the skewed worker alone").await;

    // Round 3: the normal worker alone.
    skewed_worker.stop().await;
    let normal_worker = Node::start(&w, Role::Worker, normal).await;
    expected += send(&w.app.base, &key, "r3n", PER_NODE).await;
    expected += send(&skewed_api.base, &key, "r3s", PER_NODE).await;
    delivered_within(&w, expected, "the normal worker alone").await;

    exactly_once(&w, expected).await;
    times_are_the_databases(&w, since).await;
    normal_worker.stop().await;
    skewed_api.stop().await;
}

/// Sends `n` messages through the API at `base`, to recipients named after `round`.
async fn send(base: &str, key: &str, round: &str, n: usize) -> usize {
    let to: Vec<String> = (0..n).map(|i| format!("{round}-{i}@example.org")).collect();
    let body = json!({"to": to, "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let res = reqwest::Client::new()
        .post(format!("{base}/v1/send"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("send");
    expect_json(res, 200).await;
    n
}

/// Waits until `expected` recipients in all got mail (a duplicate does not count), and asserts
/// that the relay accepted nothing twice so far.
async fn delivered_within(w: &MailWorld, expected: usize, round: &str) {
    let deadline = Instant::now() + ROUND_LIMIT;
    loop {
        let got = recipients(w).len();
        if got >= expected {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{round}: {got} of {expected} delivered within {ROUND_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let accepted = w.sink.accepted_count();
    assert!(
        accepted <= expected,
        "{round}: {accepted} deliveries of {expected} messages"
    );
}

/// Every recipient got its message, and the relay accepted nothing twice.
async fn exactly_once(w: &MailWorld, expected: usize) {
    // Room for a duplicate still in flight to arrive.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(recipients(w).len(), expected, "every recipient got mail");
    assert_eq!(w.sink.accepted_count(), expected, "each message once");
}

fn recipients(w: &MailWorld) -> HashSet<String> {
    w.sink
        .messages()
        .iter()
        .flat_map(|m| m.rcpt_to.clone())
        .collect()
}

/// The times the nodes wrote (messages, jobs) are the database's, not ten minutes off.
async fn times_are_the_databases(w: &MailWorld, since: Millis) {
    let now = w
        .app
        .store
        .database_time()
        .await
        .expect("db time")
        .expect("pg");
    let (lo, hi) = (since - 60_000, now + 60_000);
    let mut conn = pg_schema_connection(&w.app).await.expect("pg");
    let off: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM messages WHERE created_at NOT BETWEEN $1 AND $2 \
                 OR updated_at NOT BETWEEN $1 AND $2 OR sent_at NOT BETWEEN $1 AND $2), \
                (SELECT count(*) FROM jobs WHERE created_at NOT BETWEEN $1 AND $2 \
                 OR updated_at NOT BETWEEN $1 AND $2 OR run_at NOT BETWEEN $1 AND $2)",
    )
    .bind(lo)
    .bind(hi)
    .fetch_one(&mut conn)
    .await
    .expect("count");
    assert_eq!(
        off,
        (0, 0),
        "messages and jobs with times off the database's clock"
    );
}
