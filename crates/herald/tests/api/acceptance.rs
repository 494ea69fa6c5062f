//! Acceptance by group commit: concurrent sends share transactions, each is answered after
//! its commit, and one request's failure (an `Idempotency-Key` conflict, a database error)
//! neither fails nor rolls back the others of its batch.

use std::time::Duration;

use herald_core::email::EmailAddress;
use herald_engine::send::{AcceptError, Merged, Recipient, SendPlan};
use serde_json::json;

use crate::both_engines;
use crate::helpers::{Engine, expect_json};
use crate::mail_setup::{DOMAIN, mail_world};

both_engines!(
    concurrent_sends_are_all_committed_and_conflicts_fail_alone,
    a_failing_request_does_not_fail_its_batch,
    a_batch_counts_its_earlier_requests_against_the_cap,
    a_batch_reads_the_suppression_list_once_and_sees_a_lift_made_in_it,
    a_batch_creates_a_contact_once_and_applies_its_requests_in_order,
);

const WAIT: Duration = Duration::from_secs(30);

async fn concurrent_sends_are_all_committed_and_conflicts_fail_alone(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let mut calls = Vec::new();
    for i in 0..40 {
        let body = json!({"to": format!("r{i}@example.org"), "from": format!("x@{DOMAIN}"),
            "subject": "Hi {{email}}", "body": "<p>n={{n}}</p>", "data": {"n": i}});
        let mut req = w
            .app
            .client
            .post(w.app.url("/v1/send"))
            .bearer_auth(&w.project.secret_key)
            .json(&body);
        if i % 8 == 0 {
            req = req.header("Idempotency-Key", "same-key");
        }
        calls.push(tokio::spawn(req.send()));
    }
    let (mut ok, mut conflicts) = (0, 0);
    for c in calls {
        let res = c.await.unwrap().unwrap();
        match res.status().as_u16() {
            200 => ok += 1,
            409 => conflicts += 1,
            s => panic!("unexpected {s}: {}", res.text().await.unwrap_or_default()),
        }
    }
    assert_eq!(
        (ok, conflicts),
        (36, 4),
        "one of the five same-key sends goes"
    );
    // Acknowledged = committed: every 200 is there at once.
    let list = expect_json(w.app.get("/emails", &w.project.secret_key).await, 200).await;
    assert_eq!(list["total"], 36);
    let got = w.sink.wait_for(36, WAIT).await;
    assert_eq!(got.len(), 36);
    let (batches, requests) = w.app.engine.acceptor.stats();
    eprintln!("{requests} requests in {batches} transactions");
    assert!(requests >= 40 && batches <= requests);
}

fn plan(project_id: uuid::Uuid, to: &str, key: Option<&str>) -> SendPlan {
    SendPlan {
        project_id,
        recipients: vec![Recipient {
            email: EmailAddress::parse(to).unwrap(),
            name: None,
        }],
        message: Merged {
            subject: "Batch".into(),
            body: "<p>Hello {{email}}</p>".into(),
            from: EmailAddress::parse(&format!("x@{DOMAIN}")).unwrap(),
            from_name: None,
            reply_to: None,
            template_id: None,
            template_type: None,
        },
        subscribed: None,
        data: Default::default(),
        headers: Vec::new(),
        attachments: Vec::new(),
        idempotency_key: key.map(str::to_owned),
        ignore_subscription: false,
    }
}

async fn a_failing_request_does_not_fail_its_batch(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let project: uuid::Uuid = w.project.id.parse().unwrap();
    let plans = vec![
        plan(project, "first@example.org", None),
        // No such project: its contact insert fails on the foreign key inside the batch.
        plan(uuid::Uuid::now_v7(), "orphan@example.org", None),
        plan(project, "keyed@example.org", Some("k-1")),
        plan(project, "again@example.org", Some("k-1")),
        plan(project, "last@example.org", None),
    ];
    let answers = w.app.engine.accept_batch(&plans).await;
    assert!(answers[0].is_ok(), "{:?}", answers[0]);
    assert!(
        matches!(answers[1], Err(AcceptError::Store(_))),
        "{:?}",
        answers[1]
    );
    assert!(answers[2].is_ok(), "{:?}", answers[2]);
    assert!(
        matches!(answers[3], Err(AcceptError::IdempotencyKeyReused)),
        "{:?}",
        answers[3]
    );
    assert!(answers[4].is_ok(), "{:?}", answers[4]);
    let list = expect_json(w.app.get("/emails", &w.project.secret_key).await, 200).await;
    assert_eq!(list["total"], 3, "{list}");
    let got = w.sink.wait_for(3, WAIT).await;
    let mut rcpts: Vec<String> = got.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    rcpts.sort();
    assert_eq!(
        rcpts,
        ["first@example.org", "keyed@example.org", "last@example.org"]
    );
}

/// A batch counts its consumption once, at its flush: the cap still sees the requests staged
/// before in the same batch, on the shared path and on the isolated one (a failing request).
async fn a_batch_counts_its_earlier_requests_against_the_cap(engine: Engine) {
    use herald_core::billing::{Category, Limits};
    use herald_core::clock::Clock;
    let w = mail_world(engine, |_| {}).await;
    let project: uuid::Uuid = w.project.id.parse().unwrap();
    let store = &w.app.engine.store;
    let cap = |n| Limits {
        transactional: Some(n),
        ..Limits::default()
    };
    let used = || async {
        let now = w.app.clock.now();
        let c = store.billing_consumption(project, now).await.unwrap();
        c.used
            .iter()
            .find(|(c, _)| *c == Category::Transactional)
            .map_or(0, |(_, n)| *n)
    };
    let refused = |a: &Result<_, AcceptError>| matches!(a, Err(AcceptError::BillingLimit(_)));

    store
        .set_billing_limits(project, &cap(3), w.app.clock.now())
        .await
        .unwrap();
    let names = ["a", "b", "c", "d"].map(|n| format!("{n}@example.org"));
    let plans: Vec<SendPlan> = names.iter().map(|to| plan(project, to, None)).collect();
    let answers = w.app.engine.accept_batch(&plans).await;
    assert!(answers[..3].iter().all(|a| a.is_ok()), "{answers:?}");
    assert!(refused(&answers[3]), "{:?}", answers[3]);
    assert_eq!(used().await, 3);
    // A refused request writes nothing: its new contact is not inserted ahead of the cap.
    let refused_contact = store.contact_by_email(project, "d@example.org").await;
    assert!(refused_contact.unwrap().is_none());

    store
        .set_billing_limits(project, &cap(5), w.app.clock.now())
        .await
        .unwrap();
    let plans = vec![
        plan(project, "e@example.org", None),
        // Fails on the foreign key: the batch is written again request by request.
        plan(uuid::Uuid::now_v7(), "orphan@example.org", None),
        plan(project, "f@example.org", None),
        plan(project, "g@example.org", None),
    ];
    let answers = w.app.engine.accept_batch(&plans).await;
    assert!(answers[0].is_ok() && answers[2].is_ok(), "{answers:?}");
    assert!(matches!(answers[1], Err(AcceptError::Store(_))));
    assert!(refused(&answers[3]), "{:?}", answers[3]);
    assert_eq!(used().await, 5);
    let list = expect_json(w.app.get("/emails", &w.project.secret_key).await, 200).await;
    assert_eq!(list["total"], 5, "{list}");
}

fn with_data(mut p: SendPlan, data: serde_json::Value, subscribed: Option<bool>) -> SendPlan {
    p.data = herald_core::fields::DataPatch::parse(Some(&data)).unwrap();
    p.subscribed = subscribed;
    p
}

fn skipped(a: &Result<Vec<herald_engine::send::Accepted>, AcceptError>) -> Option<&'static str> {
    a.as_ref().expect("accepted")[0].skipped
}

/// The batch reads its recipients' suppressions once, ahead of staging: an address named
/// twice is suppressed both times, and when a request of the batch subscribes a contact
/// again (lifting its suppression) the requests after it see the lift.
async fn a_batch_reads_the_suppression_list_once_and_sees_a_lift_made_in_it(engine: Engine) {
    use herald_core::clock::Clock;
    use herald_core::feedback::SuppressionReason;
    use herald_store::contacts::ContactUpsert;
    let w = mail_world(engine, |_| {}).await;
    let project: uuid::Uuid = w.project.id.parse().unwrap();
    let store = &w.app.engine.store;
    let now = w.app.clock.now();
    let patch = herald_core::fields::DataPatch::default();
    store
        .upsert_contact(&ContactUpsert {
            project_id: project,
            email: "back@example.org",
            subscribed: Some(false),
            default_subscribed: false,
            patch: &patch,
            now,
        })
        .await
        .unwrap();
    let mut tx = store.begin().await.unwrap();
    for email in ["gone@example.org", "back@example.org"] {
        let reason = SuppressionReason::Bounce;
        herald_store::suppressions::suppress(&mut tx, project, email, reason, None, None, now)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();

    let plans = vec![
        plan(project, "gone@example.org", None),
        plan(project, "fresh@example.org", None),
        plan(project, "gone@example.org", None),
    ];
    let answers = w.app.engine.accept_batch(&plans).await;
    let got: Vec<_> = answers.iter().map(skipped).collect();
    assert_eq!(got, [Some("suppressed"), None, Some("suppressed")]);

    let plans = vec![
        plan(project, "back@example.org", None),
        with_data(
            plan(project, "back@example.org", None),
            json!({}),
            Some(true),
        ),
        plan(project, "back@example.org", None),
        plan(project, "gone@example.org", None),
    ];
    let answers = w.app.engine.accept_batch(&plans).await;
    let got: Vec<_> = answers.iter().map(skipped).collect();
    assert_eq!(got, [Some("suppressed"), None, None, Some("suppressed")]);
    let lifted = store
        .suppression(project, "back@example.org")
        .await
        .unwrap();
    assert!(lifted.is_none());
    let list = expect_json(w.app.get("/emails", &w.project.secret_key).await, 200).await;
    assert_eq!(list["total"], 7, "{list}");
    w.sink.wait_for(3, WAIT).await;
}

/// A new address named by several requests of one batch is one contact: the first request
/// creates it (inserted ahead with the batch's other new contacts), the later ones update it
/// in their order, and it enters the segments its data matches.
async fn a_batch_creates_a_contact_once_and_applies_its_requests_in_order(engine: Engine) {
    let w = mail_world(engine, |_| {}).await;
    let project: uuid::Uuid = w.project.id.parse().unwrap();
    let key = &w.project.secret_key;
    let segment = json!({"name": "Max plan", "trackMembership": true, "filters": {"operator": "AND",
        "conditions": [{"field": "data.plan", "operator": "equals", "value": "max"}]}});
    expect_json(w.app.post("/segments", key, &segment).await, 201).await;
    let plans = vec![
        with_data(
            plan(project, "new@example.org", None),
            json!({"plan": "pro"}),
            None,
        ),
        with_data(
            plan(project, "other@example.org", None),
            json!({"plan": "max"}),
            None,
        ),
        with_data(
            plan(project, "new@example.org", None),
            json!({"plan": "max", "seats": 3}),
            None,
        ),
    ];
    let answers = w.app.engine.accept_batch(&plans).await;
    let ids: Vec<_> = answers
        .iter()
        .map(|a| a.as_ref().expect("accepted")[0].contact_id)
        .collect();
    assert_eq!(ids[0], ids[2], "one contact for one address");
    assert_ne!(ids[0], ids[1]);
    let contact = w
        .app
        .engine
        .store
        .contact_by_email(project, "new@example.org")
        .await
        .unwrap()
        .expect("created");
    assert_eq!(contact.data["plan"], "max");
    assert_eq!(contact.data["seats"], 3);
    assert!(
        !contact.subscribed,
        "a send's new contact is not subscribed"
    );
    // Both new contacts are re-evaluated for the tracked segment (their outbox rows): each
    // enters it.
    let deadline = std::time::Instant::now() + WAIT;
    for id in [ids[0], ids[1]] {
        loop {
            let events = w.app.get(&format!("/events/contact/{id}"), key).await;
            let events = events.text().await.unwrap();
            if events.contains("segment.max-plan.entry") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{id}: {events}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
