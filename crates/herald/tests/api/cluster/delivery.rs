//! Three nodes (one `api`, two `worker`) deliver what the `api` node accepts, each message
//! once, both workers taking work; a worker killed with SIGKILL mid-campaign and started again
//! leaves nobody out and repeats only what it had in flight.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{cluster_of, send_range, sent_by};
use crate::campaign_crash::campaign_messages;
use crate::campaigns::{body, create, seed, send_now, wait_campaign};
use crate::helpers::Engine;
use crate::mail_setup::{assert_repeats_only_in_flight, deliveries, mail_world};

/// Messages sent through the `api` node in [`an_api_node_and_two_workers_deliver_5000_sends_once`].
const SENDS: usize = 5_000;

/// 5,000 messages accepted through the `api` node (100 requests of 50, 8 at once) are all
/// handed to the relay exactly once by the two `worker` nodes, each of which delivers some;
/// the `api` node delivers none.
#[tokio::test]
#[cfg_attr(
    not(any(herald_pg_tests, herald_ci)),
    ignore = "HERALD_TEST_POSTGRES_URL is not set"
)]
async fn an_api_node_and_two_workers_deliver_5000_sends_once() {
    let w = mail_world(Engine::Postgres, |c| c.workers = false).await;
    let mut cluster = cluster_of(&w.app.config);
    let api = cluster.start("api", &[]).await.expect("api node");
    let workers = [
        cluster.start("worker", &[]).await.expect("worker 1"),
        cluster.start("worker", &[]).await.expect("worker 2"),
    ];
    let base = cluster.nodes[api].base();
    let started = Instant::now();
    // 8 clients at once, each sending every 8th batch of 50.
    let mut clients = tokio::task::JoinSet::new();
    for t in 0..8 {
        let (base, key) = (base.clone(), w.project.secret_key.clone());
        clients.spawn(async move {
            let client = reqwest::Client::new();
            let mut n = 0;
            for from in (t * 50..SENDS).step_by(8 * 50) {
                let to = send_range(&client, &base, &key, from..from + 50).await;
                n += to.expect("the api node accepts").len();
            }
            n
        });
    }
    let accepted: usize = clients.join_all().await.into_iter().sum();
    let accepted_in = started.elapsed();
    assert_eq!(accepted, SENDS);

    let got = w.sink.wait_for(SENDS, Duration::from_secs(60)).await;
    println!(
        "{SENDS} accepted in {:.1} s, delivered in {:.1} s",
        accepted_in.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(got.len(), SENDS, "every accepted message delivered");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let counts = deliveries(&w.sink);
    assert_eq!(counts.len(), SENDS, "every recipient");
    assert!(counts.values().all(|n| *n == 1), "a message went twice");

    let mut by = Vec::new();
    for i in [api, workers[0], workers[1]] {
        by.push(sent_by(&cluster, i).await);
    }
    println!(
        "sent by api {}, worker 1 {}, worker 2 {}",
        by[0], by[1], by[2]
    );
    assert_eq!(by[0], 0.0, "the api node delivers nothing");
    assert!(by[1] > 0.0 && by[2] > 0.0, "both workers take work: {by:?}");
    // The owner's sign-up verification mail (queued by the test's app) went out too.
    assert_eq!(by[1] + by[2], SENDS as f64 + 1.0);
}

/// Recipients of [`a_worker_killed_mid_campaign_and_restarted_misses_nobody`]'s campaign.
const RECIPIENTS: usize = 3_000;

/// A 3,000-recipient campaign delivered by two `worker` nodes (3 s leases); one is killed with
/// SIGKILL a third of the way through and started again. Every recipient gets the campaign;
/// one gets it twice only if its message was in flight at the kill (at the relay, not
/// recorded SENT).
#[tokio::test]
#[cfg_attr(
    not(any(herald_pg_tests, herald_ci)),
    ignore = "HERALD_TEST_POSTGRES_URL is not set"
)]
async fn a_worker_killed_mid_campaign_and_restarted_misses_nobody() {
    let w = mail_world(Engine::Postgres, |c| c.workers = false).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    seed(
        app,
        &w.project.id,
        RECIPIENTS,
        true,
        |i| format!("c{i:05}@example.org"),
        |_| json!({}),
    )
    .await;
    let campaign = create(app, sk, &body("Kill a worker")).await;
    let id = campaign["id"].as_str().expect("id").to_owned();
    let mut cluster = cluster_of(&app.config);
    let settings = [
        ("HERALD_SEND_LEASE_SECS", "3"),
        ("HERALD_CAMPAIGN_PAGE_SIZE", "100"),
    ];
    cluster.start("api", &settings).await.expect("api node");
    let victim = cluster.start("worker", &settings).await.expect("worker 1");
    cluster.start("worker", &settings).await.expect("worker 2");
    // A slow relay, so the kill lands with messages in flight.
    w.sink.set_reply_delay(Duration::from_millis(10));
    let started = Instant::now();
    send_now(app, sk, &id).await;

    w.sink
        .wait_for(RECIPIENTS / 3, Duration::from_secs(60))
        .await;
    cluster.kill(victim).expect("kill -9");
    // What the dead node wrote is still reaching the relay; no lease of its runs out sooner
    // than 3 s, so nothing of its is sent again meanwhile.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let at_relay: HashSet<String> = deliveries(&w.sink).into_keys().collect();
    let sent: HashSet<String> = campaign_messages(app, sk, &id)
        .await
        .into_iter()
        .filter(|(_, s)| s == "SENT")
        .map(|(to, _)| to)
        .collect();
    let in_flight: HashSet<String> = at_relay.difference(&sent).cloned().collect();
    println!(
        "killed with {} at the relay, {} of them in flight",
        at_relay.len(),
        in_flight.len()
    );
    assert!(
        at_relay.len() < RECIPIENTS,
        "the kill must land mid-campaign"
    );

    cluster.restart(victim).await.expect("worker 1 again");
    w.sink.set_reply_delay(Duration::ZERO);
    let done = wait_campaign(app, sk, &id, Duration::from_secs(60), |c| {
        c["status"] == "SENT"
    })
    .await;
    println!(
        "{RECIPIENTS} recipients in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(done["totalRecipients"], RECIPIENTS as u64);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let counts = deliveries(&w.sink);
    for i in 0..RECIPIENTS {
        let r = format!("c{i:05}@example.org");
        assert!(counts.contains_key(&r), "{r} never delivered");
    }
    assert_repeats_only_in_flight(&counts, &in_flight);
}
