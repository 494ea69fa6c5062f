//! Store-level delivery guarantees, driven with explicit `now` arguments and the test clock:
//! message status only moves forward; a worker whose lease was taken over can neither ack nor
//! change anything; a job claimed and abandoned again and again ends FAILED at the limit.

use std::time::Duration;

use herald::Application;
use herald_core::ids::{Uuid, new_id};
use herald_core::time::Millis;
use herald_store::jobs;
use herald_store::messages::{self, MessageStatus, NewMessage, SentRecord};
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, TestApp};

both_engines!(
    status_only_moves_forward_in_the_store,
    a_stale_worker_can_neither_ack_nor_change_status,
    a_job_abandoned_at_every_claim_ends_failed_at_the_limit,
    a_renewal_reports_lost_leases_and_never_waits_for_a_busy_row,
);

const KIND: &str = "send";
const LEASE_MS: i64 = 10_000;

/// A PENDING message of a fresh project and its queued send job.
async fn queued_message(app: &TestApp, max_attempts: i32, now: Millis) -> (Uuid, Uuid) {
    let project: Uuid = app.project().await.id.parse().expect("project id");
    // The sign-up queued its verification mail: lease what is due for a year, out of the
    // claims of these tests (which all call this before claiming anything).
    let year = 365 * 24 * 3600 * 1000;
    let parked = app
        .store
        .claim_jobs(KIND, 10, app.clock_now(), year)
        .await
        .expect("claim");
    assert!(
        parked
            .iter()
            .any(|j| j.project_id == Some(uuid::Uuid::nil())),
        "the verification mail's job"
    );
    let id = new_id();
    let mut tx = app.store.begin().await.expect("begin");
    messages::insert(
        &mut tx,
        &NewMessage {
            id,
            project_id: project,
            contact_id: None,
            template_id: None,
            campaign_id: None,
            source: "transactional",
            template_type: herald_core::kinds::TemplateType::Transactional,
            status: MessageStatus::Pending,
            from_email: "a@acme-mail.com",
            from_name: None,
            reply_to: None,
            to_email: "b@example.org",
            to_name: None,
            subject: "S",
            html: "<p>B</p>",
            headers: &json!({}),
            attachments: &json!([]),
            message_id_header: "x@acme-mail.com",
            detail: None,
            simulated: false,
            now,
        },
    )
    .await
    .expect("insert");
    let job = jobs::enqueue(
        &mut tx,
        Some(project),
        KIND,
        &json!({"messageId": id}),
        now,
        max_attempts,
    )
    .await
    .expect("enqueue");
    tx.commit().await.expect("commit");
    (id, job)
}

async fn status(app: &TestApp, id: Uuid) -> MessageStatus {
    app.store
        .message(id)
        .await
        .expect("read")
        .expect("message")
        .status
}

async fn set(app: &TestApp, id: Uuid, to: MessageStatus) -> bool {
    let mut tx = app.store.begin().await.expect("begin");
    let moved = messages::set_status(&mut tx, id, to, None, false, app.clock_now())
        .await
        .expect("set status");
    tx.commit().await.expect("commit");
    moved
}

trait ClockNow {
    fn clock_now(&self) -> Millis;
}

impl ClockNow for TestApp {
    fn clock_now(&self) -> Millis {
        herald_core::clock::Clock::now(&*self.clock)
    }
}

async fn status_only_moves_forward_in_the_store(engine: Engine) {
    use MessageStatus::*;
    let app = engine.app_with(|c| c.workers = false).await;
    let (id, _) = queued_message(&app, 3, app.clock_now()).await;
    assert!(set(&app, id, Sending).await);
    assert!(set(&app, id, Sent).await);
    for back in [Pending, Sending, Sent, Failed, Suppressed] {
        assert!(!set(&app, id, back).await, "SENT must not move to {back}");
        assert_eq!(status(&app, id).await, Sent);
    }
    assert!(set(&app, id, Clicked).await);
    assert!(
        !set(&app, id, Opened).await,
        "CLICKED must not move back to OPENED"
    );
    assert!(set(&app, id, Complained).await);
    assert_eq!(status(&app, id).await, Complained);

    let (failed, _) = queued_message(&app, 3, app.clock_now()).await;
    assert!(set(&app, failed, Failed).await);
    for to in MessageStatus::ALL {
        assert!(!set(&app, failed, to).await, "FAILED is terminal, not {to}");
    }
    assert_eq!(status(&app, failed).await, Failed);
}

fn sent_record(job: Uuid, token: Uuid, message: Uuid, now: Millis) -> SentRecord<'static> {
    SentRecord {
        job_id: job,
        lease_token: token,
        message_id: message,
        template_id: None,
        subject: "S",
        reply: "250 ok",
        started_at: now,
        first_attempt: true,
        relay_message_id: None,
    }
}

async fn a_stale_worker_can_neither_ack_nor_change_status(engine: Engine) {
    let app = engine.app_with(|c| c.workers = false).await;
    let t0 = app.clock_now();
    let (msg, job) = queued_message(&app, 5, t0).await;

    let first = app
        .store
        .claim_jobs(KIND, 10, t0, LEASE_MS)
        .await
        .expect("claim");
    assert_eq!(first.len(), 1);
    let stale = first[0].lease_token;
    assert!(app.store.lease_held(job, stale, t0).await.expect("held"));
    assert!(
        app.store
            .claim_jobs(KIND, 10, t0 + LEASE_MS - 1, LEASE_MS)
            .await
            .expect("claim")
            .is_empty(),
        "a live lease is not taken over"
    );
    // The first worker stalls past its lease; another takes the job over.
    let t1 = t0 + LEASE_MS + 1;
    let second = app
        .store
        .claim_jobs(KIND, 10, t1, LEASE_MS)
        .await
        .expect("claim");
    assert_eq!(second.len(), 1);
    let fresh = second[0].lease_token;
    assert_ne!(fresh, stale, "every claim has a fresh owner token");
    assert_eq!(second[0].attempts, 2, "a re-claim counts an attempt");

    // The stale worker: nothing it does changes anything.
    assert!(!app.store.lease_held(job, stale, t1).await.expect("held"));
    assert!(
        app.store
            .extend_leases(&[(job, stale)], t1 + 60_000, jobs::LockedRows::Wait)
            .await
            .expect("extend")
            == jobs::LeaseRenewal {
                extended: vec![],
                lost: vec![job]
            }
    );
    let mut tx = app.store.begin().await.expect("begin");
    assert!(!jobs::complete(&mut tx, job, stale).await.expect("ack"));
    assert!(
        !jobs::retry(&mut tx, job, stale, t1, "x", t1)
            .await
            .expect("retry")
    );
    assert!(
        !jobs::fail(&mut tx, job, stale, "x", t1)
            .await
            .expect("fail")
    );
    let recorded = messages::record_sent(&mut tx, &[sent_record(job, stale, msg, t1)], t1)
        .await
        .expect("record");
    assert!(recorded.is_empty(), "a stale record is skipped");
    tx.commit().await.expect("commit");
    assert_eq!(status(&app, msg).await, MessageStatus::Pending);
    assert!(
        app.store
            .message_history(msg)
            .await
            .expect("history")
            .is_empty()
    );
    assert!(
        app.store.lease_held(job, fresh, t1).await.expect("held"),
        "the stale worker's calls left the new owner's lease alone"
    );

    // The new owner records the delivery.
    let extended = app
        .store
        .extend_leases(&[(job, fresh)], t1 + 2 * LEASE_MS, jobs::LockedRows::Wait)
        .await
        .expect("extend");
    assert_eq!(extended.extended, vec![job]);
    assert!(extended.lost.is_empty());
    let mut tx = app.store.begin().await.expect("begin");
    let recorded = messages::record_sent(&mut tx, &[sent_record(job, fresh, msg, t1)], t1)
        .await
        .expect("record");
    tx.commit().await.expect("commit");
    assert_eq!(recorded, vec![msg]);
    assert_eq!(status(&app, msg).await, MessageStatus::Sent);
    assert!(
        app.store.job_state(job).await.expect("job").is_none(),
        "acked"
    );
}

async fn a_job_abandoned_at_every_claim_ends_failed_at_the_limit(engine: Engine) {
    let app = engine.app_with(|c| c.workers = false).await;
    let t0 = app.clock_now();
    let (msg, job) = queued_message(&app, 3, t0).await;
    // Three workers claim it and die without a word (kill -9 mid-send, say).
    for i in 0..3 {
        let now = t0 + i * (LEASE_MS + 1);
        let claimed = app
            .store
            .claim_jobs(KIND, 10, now, LEASE_MS)
            .await
            .expect("claim");
        assert_eq!(claimed.len(), 1, "claim {i}");
        assert_eq!(claimed[0].attempts, i32::try_from(i + 1).unwrap_or(0));
    }
    // A healthy node comes up after the last lease expired: the job is past its limit.
    app.clock
        .advance(Duration::from_millis(3 * (LEASE_MS as u64 + 1)));
    let mut config = app.config.clone();
    config.workers = true;
    let worker = Application::build_with_clock(config, app.clock.clone())
        .await
        .expect("worker node");
    tokio::spawn(worker.run_until_stopped(std::future::pending()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while status(&app, msg).await != MessageStatus::Failed {
        assert!(tokio::time::Instant::now() < deadline, "never FAILED");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let m = app
        .store
        .message(msg)
        .await
        .expect("read")
        .expect("message");
    let reason = m.last_error.unwrap_or_default();
    assert!(reason.contains("gave up after 3 attempts"), "{reason}");
    let history = app.store.message_history(msg).await.expect("history");
    assert_eq!(
        history.last().map(|h| h.status),
        Some(MessageStatus::Failed),
        "{history:?}"
    );
    let (state, attempts) = app
        .store
        .job_state(job)
        .await
        .expect("job")
        .expect("dead letter kept");
    assert_eq!(state, "failed");
    assert_eq!(attempts, 4);
}

/// A renewal of held leases tells the lost ones apart. On PostgreSQL it never waits for a job
/// row locked by a transaction in progress (the record of a delivery deletes its job in a
/// transaction that may take a while on a loaded machine): the other leases are extended
/// meanwhile, and the busy one keeps its lease. (On SQLite an open write transaction holds
/// the only writer, so that part has no counterpart there.)
async fn a_renewal_reports_lost_leases_and_never_waits_for_a_busy_row(engine: Engine) {
    let app = engine.app_with(|c| c.workers = false).await;
    // Due a second from now: out of reach of the parking claim of each `queued_message`.
    let t0 = app.clock_now() + 1_000;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(queued_message(&app, 5, t0).await.1);
    }
    let claimed = app
        .store
        .claim_jobs(KIND, 10, t0, LEASE_MS)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 3);
    let token = |job: Uuid| {
        claimed
            .iter()
            .find(|j| j.id == job)
            .map(|j| j.lease_token)
            .expect("claimed")
    };
    let (busy, free, taken) = (ids[0], ids[1], ids[2]);
    let held = [
        (busy, token(busy)),
        (free, token(free)),
        (taken, token(taken)),
    ];
    // `taken` is not renewed in time, and another worker takes it over.
    let renewal = app
        .store
        .extend_leases(&held[..2], t0 + 3 * LEASE_MS, jobs::LockedRows::Skip)
        .await
        .expect("extend");
    assert_eq!(renewal.extended.len(), 2);
    let t1 = t0 + LEASE_MS + 1;
    let other = app
        .store
        .claim_jobs(KIND, 10, t1, LEASE_MS)
        .await
        .expect("claim");
    assert_eq!(other.iter().map(|j| j.id).collect::<Vec<_>>(), vec![taken]);

    // This node's recorder is deleting `busy` in a transaction not yet committed.
    let recording = if engine == Engine::Postgres {
        let mut tx = app.store.begin().await.expect("begin");
        let acked = jobs::complete_many(&mut tx, &held[..1]).await.expect("ack");
        assert_eq!(acked, vec![busy]);
        Some(tx)
    } else {
        None
    };
    let renewal = tokio::time::timeout(
        Duration::from_secs(5),
        app.store
            .extend_leases(&held, t1 + LEASE_MS, jobs::LockedRows::Skip),
    )
    .await
    .expect("the renewal waited for the row being recorded")
    .expect("extend");
    assert_eq!(renewal.lost, vec![taken], "taken over");
    match recording {
        Some(tx) => {
            assert_eq!(renewal.extended, vec![free], "busy is neither");
            tx.commit().await.expect("commit");
            let after = app
                .store
                .extend_leases(&held, t1 + LEASE_MS, jobs::LockedRows::Skip)
                .await
                .expect("extend");
            assert_eq!(after.extended, vec![free]);
            assert_eq!(after.lost, vec![busy, taken], "acked, then gone");
        }
        None => {
            let mut extended = renewal.extended.clone();
            extended.sort();
            let mut expected = vec![busy, free];
            expected.sort();
            assert_eq!(extended, expected);
        }
    }
}
