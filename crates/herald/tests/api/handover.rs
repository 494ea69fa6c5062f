//! A node stopping (SIGTERM) finishes its deliveries in hand and gives back the send jobs it
//! claimed ahead and never started: another node takes them at once, not after their lease.
//! Here the lease is 60 s and the next node polls every 30 s, so only the hand-over (the jobs
//! released and the other nodes woken) gets every message out within seconds, each once.

use std::collections::HashSet;
use std::time::Duration;

use herald::Application;
use herald::config::Role;

use crate::both_engines;
use crate::crash::send_many;
use crate::helpers::Engine;
use crate::mail_setup::mail_world;

both_engines!(a_stopping_node_hands_over_the_jobs_it_has_not_started);

const MESSAGES: usize = 30;

async fn a_stopping_node_hands_over_the_jobs_it_has_not_started(engine: Engine) {
    let w = mail_world(engine, |c| {
        c.role = Role::Api;
        c.send_lease_secs = 60.0;
        c.idle_poll_secs = 30.0;
    })
    .await;
    send_many(&w.app, &w.project.secret_key, MESSAGES).await;
    // A slow relay: the first node holds two deliveries and has more claimed ahead.
    w.sink.set_reply_delay(Duration::from_millis(1500));
    let mut first = w.app.config.clone();
    first.role = Role::Worker;
    first.send_concurrency = 2;
    first.smtp_max_connections = 2;
    let node = Application::build_with_clock(first, w.app.clock.clone())
        .await
        .expect("first worker");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(node.run_until_stopped(async move {
        let _ = stopped.await;
    }));
    w.sink.wait_for(2, Duration::from_secs(20)).await;
    stop.send(()).expect("stop the first node");
    running
        .await
        .expect("join")
        .expect("the first node stops cleanly");
    let by_first = w.sink.accepted_count();
    assert!(by_first < MESSAGES, "the first node delivered {by_first}");

    w.sink.set_reply_delay(Duration::ZERO);
    let mut second = w.app.config.clone();
    second.role = Role::Worker;
    let node = Application::build_with_clock(second, w.app.clock.clone())
        .await
        .expect("second worker");
    tokio::spawn(node.run_until_stopped(std::future::pending()));
    let got = w.sink.wait_for(MESSAGES, Duration::from_secs(15)).await;
    assert_eq!(
        got.len(),
        MESSAGES,
        "everything delivered at once after the hand-over"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let recipients: HashSet<String> = w
        .sink
        .messages()
        .iter()
        .flat_map(|m| m.rcpt_to.clone())
        .collect();
    assert_eq!(recipients.len(), MESSAGES);
    assert_eq!(w.sink.accepted_count(), MESSAGES, "each message once");
}
