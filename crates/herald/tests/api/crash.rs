//! Crash safety: a `herald serve` process killed (SIGKILL) while messages are pending loses
//! none and, after a restart, delivers each exactly once.

use std::collections::HashSet;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::{DOMAIN, mail_world, message_ids, wait_status};

both_engines!(killed_worker_loses_nothing_and_sends_each_once);

fn spawn_worker(config: &herald::Config) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_herald"));
    cmd.arg("serve")
        .env("HERALD_LISTEN", "127.0.0.1:0")
        .env("HERALD_DATA_DIR", &config.data_dir)
        .env("HERALD_DATABASE_URL", &config.database_url)
        .env(
            "HERALD_DATABASE_SCHEMA",
            config.database_schema.clone().unwrap_or_default(),
        )
        .env("HERALD_SECRET", config.secret.clone().unwrap_or_default())
        .env(
            "HERALD_SMTP_URL",
            config.smtp_url.clone().unwrap_or_default(),
        )
        .env(
            "HERALD_DNS_RESOLVER",
            config
                .dns_resolver
                .map(|a| a.to_string())
                .unwrap_or_default(),
        )
        .env("HERALD_SEND_RETRY_BASE_SECS", "0.2")
        .env("HERALD_SEND_LEASE_SECS", "1")
        .env("HERALD_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.spawn().expect("spawn herald")
}

async fn killed_worker_loses_nothing_and_sends_each_once(engine: Engine) {
    // The in-process app only accepts (no workers); a separate process delivers.
    let w = mail_world(engine, |c| c.workers = false).await;
    let sk = &w.project.secret_key;
    w.sink.stop().await;
    let to: Vec<String> = (0..20).map(|i| format!("r{i}@example.org")).collect();
    let body = json!({"to": to, "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
    let ids = message_ids(&expect_json(w.app.post("/v1/send", sk, &body).await, 200).await);
    assert_eq!(ids.len(), 20);

    let mut first = spawn_worker(&w.app.config);
    // Wait until the worker has tried (and failed against the stopped relay) at least once.
    wait_status(&w.app, sk, &ids[0], &["SENDING"], Duration::from_secs(20)).await;
    first.kill().expect("kill");
    first.wait().expect("reap");

    w.sink.restart().await.expect("relay back");
    let mut second = spawn_worker(&w.app.config);
    for id in &ids {
        wait_status(&w.app, sk, id, &["SENT"], Duration::from_secs(30)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    second.kill().ok();
    second.wait().ok();
    let got = w.sink.messages();
    let rcpts: Vec<String> = got.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    let unique: HashSet<&String> = rcpts.iter().collect();
    assert_eq!(rcpts.len(), 20, "each message exactly once: {rcpts:?}");
    assert_eq!(unique.len(), 20);
}
