//! `herald serve` runs its threads under `SCHED_BATCH` while delivery keeps the signing
//! threads busy, and under the normal policy otherwise (src/scheduling.rs); with
//! `HERALD_BATCH_SCHEDULING=false`, always under the normal policy.

use std::process::Child;
use std::time::{Duration, Instant};

use crate::crash::{kill, send_many, spawn_worker_with};
use crate::helpers::Engine;
use crate::mail_setup::mail_world;

/// `SCHED_OTHER` and `SCHED_BATCH`, as `/proc/<pid>/task/<tid>/stat` shows a thread's policy.
const NORMAL: u32 = 0;
const BATCH: u32 = 3;
/// Enough messages to keep the signing threads busy for several of the governor's looks.
const MESSAGES: usize = 1_000;

#[tokio::test]
async fn a_node_turns_batch_while_it_delivers_and_normal_again_after() {
    let seen = deliver_watching_policies(None).await;
    assert_eq!(seen.at_start, vec![NORMAL], "at start: normal");
    assert!(seen.looks_mid_delivery > 0, "{seen:?}");
    assert!(
        seen.while_delivering.contains(&BATCH),
        "batch while delivering: {seen:?}"
    );
    assert_eq!(seen.idle_after, vec![NORMAL], "normal again: {seen:?}");
}

#[tokio::test]
async fn with_batch_scheduling_off_a_delivering_node_stays_normal() {
    let seen = deliver_watching_policies(Some("false")).await;
    assert_eq!(seen.at_start, vec![NORMAL]);
    // The node was looked at while it delivered: a sample taken, and not a batch one.
    assert!(seen.looks_mid_delivery > 0, "{seen:?}");
    assert!(!seen.while_delivering.is_empty(), "{seen:?}");
    assert!(!seen.while_delivering.contains(&BATCH), "{seen:?}");
    assert_eq!(seen.idle_after, vec![NORMAL]);
}

/// The distinct policies of the node's threads: at its start, at each look while it delivered,
/// and once it is idle again.
#[derive(Debug, Default)]
struct Seen {
    at_start: Vec<u32>,
    while_delivering: Vec<u32>,
    idle_after: Vec<u32>,
    /// Looks taken while some but not all messages had been delivered.
    looks_mid_delivery: usize,
}

async fn deliver_watching_policies(batch: Option<&str>) -> Seen {
    let w = mail_world(Engine::Sqlite, |c| c.workers = false).await;
    let sk = &w.project.secret_key;
    send_many(&w.app, sk, MESSAGES).await;
    // Nothing to deliver until the domain's messages are queued: the node starts idle.
    let extra: Vec<(&str, &str)> = batch
        .map(|b| vec![("HERALD_BATCH_SCHEDULING", b)])
        .unwrap_or_default();
    // A long lease: the node is never taken over here.
    let node = spawn_worker_with(&w.app.config, Duration::from_secs(30), &extra);
    let mut seen = Seen {
        at_start: policies(&node),
        ..Seen::default()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while w.sink.accepted_count() < MESSAGES {
        assert!(
            Instant::now() < deadline,
            "delivered {}",
            w.sink.accepted_count()
        );
        let delivered = w.sink.accepted_count();
        let looked = policies(&node);
        if delivered > 0 && !looked.is_empty() {
            seen.looks_mid_delivery += 1;
        }
        for p in looked {
            if !seen.while_delivering.contains(&p) {
                seen.while_delivering.push(p);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The governor looks every 250 ms: normal again within a few looks.
    let idle_deadline = Instant::now() + Duration::from_secs(10);
    loop {
        seen.idle_after = policies(&node);
        if seen.idle_after == [NORMAL] || Instant::now() > idle_deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    kill(node);
    seen
}

/// The distinct policies of the threads of `node` (the 41st field of each thread's `stat`).
fn policies(node: &Child) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", node.id())) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        // Fields after the name start with the 3rd (the state); the policy is the 41st.
        let policy = stat[close + 2..]
            .split(' ')
            .nth(41 - 3)
            .and_then(|p| p.parse().ok())
            .expect("policy field");
        if !out.contains(&policy) {
            out.push(policy);
        }
    }
    out
}
