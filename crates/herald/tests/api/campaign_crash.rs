//! Crash safety of campaigns: a `herald serve` process killed (SIGKILL) in the middle of a
//! 10,000-recipient campaign's fan-out, and again while its messages are being delivered.
//! After each restart every subscribed recipient is queued exactly once (one message per
//! contact, none missing, none for an unsubscribed contact), and a
//! recipient is handed to the relay twice only if its message was in flight (at the relay,
//! not yet recorded SENT) at a kill (DECISIONS.md "Delivery guarantees"). Two processes on one
//! database deliver one large campaign together, each recipient exactly once.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::both_engines;
use crate::campaigns::{body, create, get, seed, send_now, wait_campaign};
use crate::crash::{kill, spawn_worker_with};
use crate::helpers::{Engine, TestApp, expect_json};
use crate::mail_setup::{MailWorld, mail_world};

both_engines!(
    killed_during_fan_out_and_sending_queues_each_recipient_once,
    two_nodes_deliver_a_large_campaign_once,
);

const CONTACTS: usize = 10_000;
/// Unsubscribed contacts beside the audience: never queued, never delivered.
const UNSUBSCRIBED: usize = 500;
const LEASE: Duration = Duration::from_secs(3);

/// Every message of the campaign: (to, status), through the cursor-paged `/emails`.
pub async fn campaign_messages(app: &TestApp, key: &str, id: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/emails?campaignId={id}&limit=100");
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let page = expect_json(app.get(&path, key).await, 200).await;
        for m in page["data"].as_array().expect("data") {
            out.push((
                m["to"].as_str().unwrap_or_default().to_owned(),
                m["status"].as_str().unwrap_or_default().to_owned(),
            ));
        }
        match page["cursor"].as_str() {
            Some(c) if page["hasMore"] == true => cursor = Some(c.to_owned()),
            _ => return out,
        }
    }
}

/// After a kill: waits until the relay is quiet, then returns the recipients in flight (at the
/// relay, not recorded SENT).
async fn in_flight_after_kill(w: &MailWorld, id: &str) -> HashSet<String> {
    // Bytes the dead process had written are still reaching the relay.
    crate::mail_setup::wait_relay_quiet(&w.sink).await;
    let at_relay: HashSet<String> = w
        .sink
        .messages()
        .into_iter()
        .flat_map(|m| m.rcpt_to)
        .collect();
    let sent: HashSet<String> = campaign_messages(&w.app, &w.project.secret_key, id)
        .await
        .into_iter()
        .filter(|(_, s)| s == "SENT")
        .map(|(to, _)| to)
        .collect();
    at_relay.difference(&sent).cloned().collect()
}

async fn killed_during_fan_out_and_sending_queues_each_recipient_once(engine: Engine) {
    // The in-process app only answers the API; child processes fan out and deliver.
    let w = mail_world(engine, |c| c.workers = false).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    seed(
        app,
        &w.project.id,
        CONTACTS,
        true,
        |i| format!("r{i:05}@example.org"),
        |i| json!({"n": i}),
    )
    .await;
    seed_unsubscribed(&w.app, &w.project.id).await;
    let c = create(app, sk, &body("Crash me")).await;
    let id = c["id"].as_str().unwrap().to_owned();
    send_now(app, sk, &id).await;
    // Small pages (many checkpoints) and a slow relay, so both kills land mid-work.
    let settings = [("HERALD_CAMPAIGN_PAGE_SIZE", "100")];
    w.sink.set_reply_delay(Duration::from_millis(20));

    let queued = |c: &Value| c["totalRecipients"].as_u64().unwrap_or(0);
    let first = spawn_worker_with(&app.config, LEASE, &settings);
    let at_kill = wait_campaign(app, sk, &id, Duration::from_secs(120), |c| {
        queued(c) >= 1000
    })
    .await;
    kill(first);
    let mut in_flight = in_flight_after_kill(&w, &id).await;
    let at_first_kill = queued(&get(app, sk, &id).await);
    println!(
        "first kill: {} of {CONTACTS} queued (read {} just before), {} in flight",
        at_first_kill,
        queued(&at_kill),
        in_flight.len()
    );
    assert!(
        (at_first_kill as usize) < CONTACTS,
        "the first kill must land during the fan-out"
    );

    let second = spawn_worker_with(&app.config, LEASE, &settings);
    wait_campaign(app, sk, &id, Duration::from_secs(120), |c| {
        queued(c) as usize == CONTACTS
    })
    .await;
    let delivered_before = w.sink.messages().len();
    w.sink
        .wait_for(delivered_before + 50, Duration::from_secs(120))
        .await;
    kill(second);
    in_flight.extend(in_flight_after_kill(&w, &id).await);
    let at_second_kill = w.sink.messages().len();
    println!(
        "second kill: fan-out done, {at_second_kill} handed over, {} in flight in all",
        in_flight.len()
    );
    assert!(
        at_second_kill < CONTACTS,
        "the second kill must land during delivery"
    );

    w.sink.set_reply_delay(Duration::ZERO);
    let third = spawn_worker_with(&app.config, LEASE, &settings);
    let done = wait_campaign(app, sk, &id, Duration::from_secs(180), |c| {
        c["status"] == "SENT"
    })
    .await;
    kill(third);
    assert_eq!(done["totalRecipients"], CONTACTS as u64);

    // Queued exactly once: one message per recipient, none missing.
    let messages = campaign_messages(app, sk, &id).await;
    assert_eq!(messages.len(), CONTACTS);
    let distinct: HashSet<&String> = messages.iter().map(|(to, _)| to).collect();
    assert_eq!(distinct.len(), CONTACTS, "a recipient was queued twice");
    assert!(messages.iter().all(|(_, s)| s == "SENT"));

    // Delivered at least once; twice only if in flight at a kill; never when unsubscribed.
    let counts = crate::mail_setup::deliveries(&w.sink);
    assert!(
        counts.keys().all(|r| !r.starts_with("unsub")),
        "an unsubscribed contact got it"
    );
    for i in 0..CONTACTS {
        let r = format!("r{i:05}@example.org");
        assert!(counts.contains_key(&r), "{r} never delivered");
    }
    crate::mail_setup::assert_repeats_only_in_flight(&counts, &in_flight);
}

/// Two `herald serve` processes on one database deliver one 10,000-recipient campaign
/// together: one fan-out, and every recipient handed to the relay exactly once.
async fn two_nodes_deliver_a_large_campaign_once(engine: Engine) {
    let w = mail_world(engine, |c| c.workers = false).await;
    two_nodes_deliver_once(&w, 10_000).await;
}

/// PostgreSQL: one node's record of a group of deliveries stalls for longer than the lease (a
/// trigger sleeps 5 s in the first recording transaction). The node's other leases are
/// renewed meanwhile, so the other node takes over none of the messages handed over and
/// waiting to be recorded, and every recipient still gets the campaign once. (When the
/// renewal waited for the stalled transaction's rows, the leases ran out and several hundred
/// recipients got it twice.) SQLite has no counterpart: its one writer stalls every node.
#[tokio::test]
#[cfg_attr(
    not(any(herald_pg_tests, herald_ci)),
    ignore = "HERALD_TEST_POSTGRES_URL is not set"
)]
async fn a_record_stalled_past_the_lease_makes_no_other_node_send_again() {
    let w = mail_world(Engine::Postgres, |c| c.workers = false).await;
    crate::helpers::raw_sql(
        &w.app,
        &[
            "CREATE SEQUENCE stall_once",
            "CREATE FUNCTION stall_first_record() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN IF nextval('stall_once') = 1 THEN PERFORM pg_sleep(5); END IF; RETURN NULL; END $$",
            "CREATE TRIGGER stall_first_record AFTER INSERT ON message_history \
             FOR EACH STATEMENT EXECUTE FUNCTION stall_first_record()",
        ],
    )
    .await;
    two_nodes_deliver_once(&w, 5_000).await;
}

/// Seeds [`UNSUBSCRIBED`] unsubscribed contacts (`unsub…@example.org`) in the project.
async fn seed_unsubscribed(app: &TestApp, project_id: &str) {
    seed(
        app,
        project_id,
        UNSUBSCRIBED,
        false,
        |i| format!("unsub{i:04}@example.org"),
        |_| json!({}),
    )
    .await;
}

/// Seeds `n` subscribed contacts (and [`UNSUBSCRIBED`] unsubscribed ones), runs two worker
/// nodes on the app's database, sends a campaign to them all, and checks that each subscribed
/// contact was handed to the relay exactly once and no unsubscribed one at all.
async fn two_nodes_deliver_once(w: &MailWorld, n: usize) {
    let (app, sk) = (&w.app, &w.project.secret_key);
    seed(
        app,
        &w.project.id,
        n,
        true,
        |i| format!("n{i:05}@example.org"),
        |_| json!({}),
    )
    .await;
    seed_unsubscribed(&w.app, &w.project.id).await;
    let c = create(app, sk, &body("Everyone")).await;
    let id = c["id"].as_str().unwrap().to_owned();
    let settings = [("HERALD_CAMPAIGN_PAGE_SIZE", "500")];
    let nodes = [
        spawn_worker_with(&app.config, LEASE, &settings),
        spawn_worker_with(&app.config, LEASE, &settings),
    ];
    let started = Instant::now();
    send_now(app, sk, &id).await;
    let done = wait_campaign(app, sk, &id, Duration::from_secs(300), |c| {
        c["status"] == "SENT"
    })
    .await;
    println!(
        "{n} recipients delivered by two nodes in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    for node in nodes {
        kill(node);
    }
    assert_eq!(done["totalRecipients"], n as u64);
    let counts = crate::mail_setup::deliveries(&w.sink);
    assert_eq!(
        counts.len(),
        n,
        "every subscribed recipient got the campaign"
    );
    assert!(
        counts.keys().all(|r| r.starts_with('n')),
        "an unsubscribed contact got it"
    );
    let repeated: Vec<_> = counts.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        repeated.is_empty(),
        "{} handed over more than once: {:?}",
        repeated.len(),
        &repeated[..repeated.len().min(10)]
    );
}
