//! Nodes wake each other: mail accepted by an `api` node is delivered by an idle `worker`
//! node at once, not at its next poll. The worker here polls every 30 s, so only a wake-up
//! (LISTEN/NOTIFY on PostgreSQL) can get the messages out within seconds. SQLite is one node:
//! the same holds in memory between the API and the workers of one process.

use std::time::{Duration, Instant};

use herald::Application;
use herald::config::Role;

use crate::both_engines;
use crate::crash::send_many;
use crate::helpers::Engine;
use crate::mail_setup::mail_world;

both_engines!(an_idle_worker_node_is_woken_by_mail_accepted_elsewhere);

async fn an_idle_worker_node_is_woken_by_mail_accepted_elsewhere(engine: Engine) {
    let w = mail_world(engine, |c| {
        c.idle_poll_secs = 30.0;
        if engine == Engine::Postgres {
            c.role = Role::Api;
        }
    })
    .await;
    if engine == Engine::Postgres {
        let mut config = w.app.config.clone();
        config.role = Role::Worker;
        let worker = Application::build_with_clock(config, w.app.clock.clone())
            .await
            .expect("worker node");
        tokio::spawn(worker.run_until_stopped(std::future::pending()));
    }
    // Let the worker go idle: its claimer is now asleep for up to 30 s.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for round in 1..=3 {
        let start = Instant::now();
        let sent = send_many(&w.app, &w.project.secret_key, 5).await;
        let got = w.sink.wait_for(5 * round, Duration::from_secs(10)).await;
        assert_eq!(got.len(), 5 * round, "round {round}: woken within seconds");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "round {round} took {:?}",
            start.elapsed()
        );
        assert_eq!(sent.len(), 5);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
