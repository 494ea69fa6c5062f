//! Crash safety: a `herald serve` process killed (SIGKILL) in the middle of delivery, while
//! the relay is accepting (messages handed over, their 250 not yet answered), loses none;
//! after a restart with the default 10 s lease, delivery of the dead process's messages
//! resumes within 10 s, and the only messages handed over twice are ones that were in flight
//! at the kill. With the local outbox, each message is written exactly once.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use herald_store::messages::MessageStatus;
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_json};
use crate::mail_setup::{DOMAIN, mail_world, message_ids, wait_status};

both_engines!(
    killed_mid_delivery_loses_nothing_and_resends_only_in_flight,
    killed_outbox_worker_writes_each_message_once,
);

/// The lease the child runs with: the default, so recovery time is the real one.
const LEASE: Duration = Duration::from_secs(10);

fn spawn_worker(config: &herald::Config) -> Child {
    spawn_worker_with(config, LEASE, &[])
}

/// A `herald serve` child on the test app's database and relay, with its own lease and extra
/// settings (`HERALD_*` name, value).
pub fn spawn_worker_with(
    config: &herald::Config,
    lease: Duration,
    extra: &[(&str, &str)],
) -> Child {
    worker_command(config, lease, extra)
        .spawn()
        .expect("spawn herald")
}

/// The command [`spawn_worker_with`] runs (its stderr as `HERALD_TEST_NODE_STDERR` says).
pub fn worker_command(config: &herald::Config, lease: Duration, extra: &[(&str, &str)]) -> Command {
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
        .env("HERALD_SEND_LEASE_SECS", lease.as_secs().to_string())
        .env("HERALD_LOG", "warn")
        // A worker node serves no requests here; a small request pool keeps two nodes and the
        // tests running beside them within the CI PostgreSQL's 100 connections.
        .env("HERALD_DATABASE_MAX_CONNECTIONS", "4")
        .stdout(Stdio::null())
        .stderr(node_stderr());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

/// The nodes' log lines (warnings and errors) go nowhere, unless
/// `HERALD_TEST_NODE_STDERR=inherit` shows them (with `cargo nextest run --no-capture`).
fn node_stderr() -> Stdio {
    match std::env::var("HERALD_TEST_NODE_STDERR").as_deref() {
        Ok("inherit") => Stdio::inherit(),
        _ => Stdio::null(),
    }
}

pub fn kill(mut child: Child) {
    child.kill().expect("kill -9");
    child.wait().expect("reap");
}

pub async fn send_many(app: &TestApp, key: &str, n: usize) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for batch in 0..n.div_ceil(50) {
        let to: Vec<String> = (batch * 50..((batch + 1) * 50).min(n))
            .map(|i| format!("r{i}@example.org"))
            .collect();
        let body = json!({"to": to, "from": format!("x@{DOMAIN}"), "subject": "S", "body": "B"});
        let ids = message_ids(&expect_json(app.post("/v1/send", key, &body).await, 200).await);
        assert_eq!(ids.len(), to.len());
        out.extend(ids.into_iter().zip(to));
    }
    out
}

async fn status_of(app: &TestApp, id: &str) -> MessageStatus {
    let id = id.parse().expect("message id");
    let m = app.store.message(id).await.expect("read").expect("message");
    m.status
}

async fn killed_mid_delivery_loses_nothing_and_resends_only_in_flight(engine: Engine) {
    // The in-process app only accepts (no workers); a separate process delivers.
    let w = mail_world(engine, |c| c.workers = false).await;
    let sk = &w.project.secret_key;
    let sent = send_many(&w.app, sk, 200).await;
    // A slow relay: each 250 comes 150 ms after the message was taken, so many are in flight.
    w.sink.set_reply_delay(Duration::from_millis(150));

    let first = spawn_worker(&w.app.config);
    let got = w.sink.wait_for(60, Duration::from_secs(60)).await;
    assert!(got.len() >= 60, "the first worker delivered {}", got.len());
    kill(first);
    let killed_at = Instant::now();
    // Bytes the dead process had written are still reaching the relay.
    crate::mail_setup::wait_relay_quiet(&w.sink).await;

    // At the kill: handed over (at the relay) but not recorded SENT = in flight.
    let at_relay: HashSet<String> = w
        .sink
        .messages()
        .into_iter()
        .flat_map(|m| m.rcpt_to)
        .collect();
    let mut in_flight = HashSet::new();
    let mut pending_at_kill = Vec::new();
    for (id, rcpt) in &sent {
        let st = status_of(&w.app, id).await;
        if at_relay.contains(rcpt) && st != MessageStatus::Sent {
            in_flight.insert(rcpt.clone());
        }
        if st != MessageStatus::Sent {
            pending_at_kill.push(id.clone());
        }
    }
    println!(
        "killed with {} of {} at the relay, {} of them in flight (handed over, not recorded)",
        at_relay.len(),
        sent.len(),
        in_flight.len()
    );
    assert!(
        !in_flight.is_empty(),
        "the kill must hit messages in flight"
    );

    w.sink.set_reply_delay(Duration::ZERO);
    let second = spawn_worker(&w.app.config);
    for id in &pending_at_kill {
        wait_status(&w.app, sk, id, &["SENT"], Duration::from_secs(60)).await;
    }
    let recovered = killed_at.elapsed();
    println!(
        "every message SENT {:.1} s after the kill (lease {} s)",
        recovered.as_secs_f64(),
        LEASE.as_secs()
    );
    // The dead process's leases (renewed every third of the lease) expire within the lease;
    // the restarted node takes the work over then. 2 s for process start-up on a busy machine.
    assert!(
        recovered < LEASE + Duration::from_secs(2),
        "delivery resumed only after {recovered:?}"
    );
    kill(second);

    let counts = crate::mail_setup::deliveries(&w.sink);
    for (_, rcpt) in &sent {
        assert!(counts.contains_key(rcpt), "{rcpt} lost");
    }
    crate::mail_setup::assert_repeats_only_in_flight(&counts, &in_flight);
}

/// Each `.eml` file of the outbox with its inode (a rewrite renames a new file over it).
fn outbox_files(dir: &Path) -> HashMap<String, u64> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".eml")?.to_owned();
            (!name.starts_with('.')).then_some(())?;
            Some((id, e.metadata().ok()?.ino()))
        })
        .collect()
}

async fn killed_outbox_worker_writes_each_message_once(engine: Engine) {
    let w = mail_world(engine, |c| {
        c.workers = false;
        c.smtp_url = None;
    })
    .await;
    let sk = &w.project.secret_key;
    let sent = send_many(&w.app, sk, 400).await;
    let outbox = w.app.config.data_dir.join("outbox");

    let first = spawn_worker(&w.app.config);
    let deadline = Instant::now() + Duration::from_secs(60);
    while outbox_files(&outbox).len() < 40 {
        assert!(Instant::now() < deadline, "the first worker wrote nothing");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    kill(first);
    // Only this test's messages (not the sign-up's verification mail).
    let mine = |files: HashMap<String, u64>| -> HashMap<String, u64> {
        files
            .into_iter()
            .filter(|(id, _)| sent.iter().any(|(s, _)| s == id))
            .collect()
    };
    let at_kill = mine(outbox_files(&outbox));
    let mut unrecorded = 0;
    for id in at_kill.keys() {
        if status_of(&w.app, id).await != MessageStatus::Sent {
            unrecorded += 1;
        }
    }
    println!(
        "killed with {} of {} in the outbox, {unrecorded} of them not recorded SENT",
        at_kill.len(),
        sent.len()
    );
    assert!(at_kill.len() < sent.len(), "the kill came too late");

    let second = spawn_worker(&w.app.config);
    for (id, _) in &sent {
        wait_status(&w.app, sk, id, &["SENT"], Duration::from_secs(60)).await;
    }
    kill(second);
    let after = mine(outbox_files(&outbox));
    assert_eq!(after.len(), sent.len(), "one file per message");
    for (id, ino) in &at_kill {
        assert_eq!(
            after.get(id),
            Some(ino),
            "{id} was written again after the restart"
        );
    }
    for (id, _) in &sent {
        let history = w
            .app
            .store
            .message_history(id.parse().expect("id"))
            .await
            .expect("history");
        let sent_steps = history
            .iter()
            .filter(|h| h.status == MessageStatus::Sent)
            .count();
        assert_eq!(sent_steps, 1, "{id}: {history:?}");
    }
}
