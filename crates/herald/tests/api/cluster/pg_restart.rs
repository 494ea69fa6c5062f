//! PostgreSQL restarted while an `api` node accepts and two `worker` nodes deliver: every node
//! reconnects on its own (the `api` node accepts again, the workers deliver what was accepted
//! after the restart), and every message acknowledged with a 200, before or after, is
//! delivered. The database is a private server of this test's (`herald_testkit::pg_server`),
//! never the shared one the other tests use.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use herald_testkit::cluster::http_get;
use herald_testkit::pg_server::PgServer;

use super::{cluster_of, send_range};
use crate::helpers::Engine;
use crate::mail_setup::{deliveries, mail_world};

/// Messages acknowledged before the restart, and again after it, before the sending stops.
const EACH_SIDE: usize = 500;

#[tokio::test]
#[cfg_attr(
    not(any(herald_pg_tests, herald_ci)),
    ignore = "HERALD_TEST_POSTGRES_URL is not set"
)]
async fn postgres_restarted_mid_run_loses_nothing_acknowledged() {
    let Some(pg) = PgServer::start().expect("a private PostgreSQL server") else {
        if cfg!(herald_ci) {
            panic!("CI needs PostgreSQL's server binaries (initdb, pg_ctl) for this test");
        }
        println!("skipped: no PostgreSQL server binaries (initdb, pg_ctl) for a private server");
        return;
    };
    let url = pg.url();
    let w = mail_world(Engine::Postgres, |c| {
        c.workers = false;
        c.database_url = url;
        c.database_schema = None;
    })
    .await;
    let mut cluster = cluster_of(&w.app.config);
    let api = cluster.start("api", &[]).await.expect("api node");
    cluster.start("worker", &[]).await.expect("worker 1");
    cluster.start("worker", &[]).await.expect("worker 2");

    // One client sends batches of 10 until told to stop, keeping what was acknowledged.
    let stop = Arc::new(AtomicBool::new(false));
    let acked = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let refused = Arc::new(std::sync::Mutex::new(HashMap::<String, usize>::new()));
    let sender = {
        let (stop, acked, refused) = (stop.clone(), acked.clone(), refused.clone());
        let (base, key) = (cluster.nodes[api].base(), w.project.secret_key.clone());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut next = 0;
            while !stop.load(Ordering::Relaxed) {
                match send_range(&client, &base, &key, next..next + 10).await {
                    Ok(to) => acked.lock().unwrap().extend(to),
                    Err(e) => {
                        let status = e.split(':').next().unwrap_or_default().to_owned();
                        *refused.lock().unwrap().entry(status).or_default() += 1;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                next += 10;
            }
        })
    };
    let acked_count = || acked.lock().unwrap().len();
    let wait_acked = |n: usize| {
        let acked = acked.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(40);
            while acked.lock().unwrap().len() < n {
                assert!(
                    Instant::now() < deadline,
                    "the api node accepted {} of {n}",
                    acked.lock().unwrap().len()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    wait_acked(EACH_SIDE).await;
    let restarted_at = Instant::now();
    let pg = tokio::task::spawn_blocking(move || {
        pg.restart().expect("restart PostgreSQL");
        pg
    })
    .await
    .expect("join");
    let before = acked_count();
    wait_acked(before + EACH_SIDE).await;
    stop.store(true, Ordering::Relaxed);
    sender.await.expect("sender");
    let acked: Vec<String> = acked.lock().unwrap().clone();
    println!(
        "{} acknowledged ({before} before the restart); the api node accepted again {:.1} s \
         after it; refused meanwhile: {:?}",
        acked.len(),
        restarted_at.elapsed().as_secs_f64(),
        refused.lock().unwrap()
    );

    // A request the restart cut off is refused as the database being away (503, or the
    // connection to the node itself failing), never as a server fault.
    assert!(
        !refused.lock().unwrap().contains_key("500"),
        "a lost database answers 503, never 500: {:?}",
        refused.lock().unwrap()
    );

    // Everything acknowledged reaches the relay: the workers reconnected.
    let want: HashSet<String> = acked.into_iter().collect();
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let got: HashSet<String> = deliveries(&w.sink).into_keys().collect();
        let missing = want.difference(&got).count();
        if missing == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} acknowledged messages never delivered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for node in &cluster.nodes {
        let (status, _) = http_get(node.port, "/health", None).await.expect("health");
        assert_eq!(status, 200, "{} after the restart", node.name);
    }
    drop(cluster);
    drop(pg);
}
