//! `POST /v1/track`: the contact upsert with the custom-field rules, subscription events,
//! reserved and invalid names, the exact answer, `Idempotency-Key`, keys, the outbox row,
//! group commit, and CORS (open on `/v1/track` only).

use std::time::Duration;

use herald_core::clock::Clock;
use reqwest::{Method, Response};
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};

both_engines!(
    public_key_track_creates_a_subscribed_contact_an_event_and_its_outbox_row,
    secret_key_track_patches_an_existing_contact_and_keeps_its_state,
    subscribed_flips_record_their_events_once,
    system_and_invalid_event_names_are_refused_and_write_nothing,
    a_reused_idempotency_key_is_409_and_records_nothing,
    keys_decide_who_may_track,
    concurrent_tracks_are_all_committed,
    one_batch_inserts_its_new_contacts_together_and_applies_requests_in_order,
    one_batch_queues_each_project_s_own_workflow_events,
    a_batch_of_new_contacts_is_one_statement_and_known_contacts_the_usual_upsert,
    cors_is_open_on_v1_track_only,
);

pub async fn track(app: &TestApp, key: &str, body: &Value) -> Response {
    app.post("/v1/track", key, body).await
}

/// Tracks and returns `data` of the answer.
pub async fn tracked(app: &TestApp, key: &str, body: Value) -> Value {
    expect_json(track(app, key, &body).await, 200).await["data"].clone()
}

/// Creates and enables a workflow of the project of `key` triggered by `event`.
pub async fn enable_workflow_on(app: &TestApp, key: &str, event: &str) {
    let wf = expect_json(
        app.post(
            "/workflows",
            key,
            &json!({"name": "React", "triggerConfig": {"eventName": event}}),
        )
        .await,
        201,
    )
    .await;
    let path = format!("/workflows/{}", wf["id"].as_str().unwrap());
    let enabled = app.patch(&path, key, &json!({"enabled": true})).await;
    expect_json(enabled, 200).await;
}

async fn contact_events(app: &TestApp, key: &str, contact: &str) -> Vec<Value> {
    let list = expect_json(
        app.get(&format!("/events/contact/{contact}"), key).await,
        200,
    )
    .await;
    list["events"].as_array().cloned().unwrap_or_default()
}

async fn public_key_track_creates_a_subscribed_contact_an_event_and_its_outbox_row(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let body = json!({"event": "signed-up", "email": " New@Example.COM ",
        "data": {"plan": "pro", "seats": 3, "code": {"value": "X1", "persistent": false},
                 "empty": "", "email": "ignored@x.y"},
        "type": "extra fields are ignored"});
    // Time comes from the server's Clock: a year ahead of the wall clock here.
    app.clock.advance(Duration::from_secs(365 * 86_400));
    let before = app.clock.now();
    let res = track(&app, &p.public_key, &body).await;
    let after = app.clock.now();
    let answer = expect_json(res, 200).await;
    // Exactly {success, data: {contact, event, timestamp}}.
    assert_eq!(answer["success"], true);
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["data", "success"], "{answer}");
    let data = answer["data"].as_object().unwrap();
    let mut data_keys: Vec<&String> = data.keys().collect();
    data_keys.sort();
    assert_eq!(data_keys, ["contact", "event", "timestamp"], "{answer}");
    let ts = data["timestamp"].as_str().unwrap();
    let at = herald_core::time::parse_iso(ts).unwrap();
    assert!(before <= at && at <= after, "{ts}");
    let contact_id = data["contact"].as_str().unwrap();
    let event_id = data["event"].as_str().unwrap();

    // The contact: new, subscribed, persistent data stored (transient, empty and reserved not).
    let contact = expect_json(
        app.get(&format!("/contacts/{contact_id}"), &p.secret_key)
            .await,
        200,
    )
    .await;
    assert_eq!(contact["email"], "new@example.com");
    assert_eq!(contact["subscribed"], true);
    assert_eq!(contact["data"], json!({"plan": "pro", "seats": 3}));
    let fields = expect_json(app.get("/contacts/fields", &p.secret_key).await, 200).await;
    let plan = fields["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == "data.plan")
        .cloned();
    assert_eq!(plan.map(|f| f["type"].clone()), Some(json!("string")));

    // The event: tracked, its data as sent (one-request values included), no system event.
    let events = contact_events(&app, &p.secret_key, contact_id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e["id"], event_id);
    assert_eq!(e["name"], "signed-up");
    assert_eq!(e["tracked"], true);
    assert_eq!(e["contactId"], contact_id);
    assert_eq!(e["messageId"], Value::Null);
    assert_eq!(e["campaignId"], Value::Null);
    assert_eq!(e["data"], json!({"plan": "pro", "seats": 3, "code": "X1"}));
    assert_eq!(e["createdAt"], ts);

    // No workflow reacts to it: no outbox row (workflows.rs covers the ones that do).
    let project: uuid::Uuid = p.id.parse().unwrap();
    let jobs = app
        .store
        .waiting_job_payloads(project, herald_engine::track::EVENT_DISPATCH_JOB, 10)
        .await
        .unwrap();
    assert_eq!(jobs, Vec::<Value>::new());
}

/// One batch with events of two projects: each event gets its outbox row only when a
/// workflow of its own project reacts to its name (on PostgreSQL the names are read by the
/// events' insert itself, for every project of the batch at once).
async fn one_batch_queues_each_project_s_own_workflow_events(engine: Engine) {
    use herald_core::email::EmailAddress;
    use herald_core::fields::DataPatch;
    use herald_engine::track::TrackPlan;

    let app = engine.app_with(|c| c.workers = false).await;
    let (a, b) = (app.project().await, app.project().await);
    for (p, event) in [(&a, "signed-up"), (&b, "paid")] {
        enable_workflow_on(&app, &p.secret_key, event).await;
    }
    let id = |p: &crate::helpers::TestProject| uuid::Uuid::parse_str(&p.id).unwrap();
    let plan = |project: uuid::Uuid, email: &str, event: &str| TrackPlan {
        project_id: project,
        email: EmailAddress::parse(email).unwrap(),
        event: event.into(),
        subscribed: None,
        data: DataPatch::parse(None).unwrap(),
        idempotency_key: None,
    };
    let answers = app
        .engine
        .track_batch(vec![
            plan(id(&a), "x@example.org", "signed-up"),
            plan(id(&b), "x@example.org", "signed-up"),
            plan(id(&b), "y@example.org", "paid"),
            plan(id(&a), "y@example.org", "paid"),
        ])
        .await;
    let event_ids: Vec<String> = answers
        .iter()
        .map(|r| r.as_ref().expect("recorded").event_id.to_string())
        .collect();
    for (p, queued) in [(&a, &event_ids[0]), (&b, &event_ids[2])] {
        let jobs = app
            .store
            .waiting_job_payloads(id(p), herald_engine::track::EVENT_DISPATCH_JOB, 10)
            .await
            .unwrap();
        let names: Vec<(&str, &str)> = jobs
            .iter()
            .map(|j| (j["eventId"].as_str().unwrap(), j["name"].as_str().unwrap()))
            .collect();
        let want = if p.id == a.id { "signed-up" } else { "paid" };
        assert_eq!(names, vec![(queued.as_str(), want)], "project {}", p.id);
    }
}

/// On PostgreSQL a batch of plain tracks is one statement committed on its own (contacts,
/// events, outbox rows); a request whose contact exists wrote nothing there and takes the usual
/// upsert after it. SQLite writes every batch the usual way. Same rows either way.
async fn a_batch_of_new_contacts_is_one_statement_and_known_contacts_the_usual_upsert(
    engine: Engine,
) {
    use herald_core::email::EmailAddress;
    use herald_core::fields::DataPatch;
    use herald_engine::track::TrackPlan;

    let app = engine.app_with(|c| c.workers = false).await;
    let p = app.project().await;
    let project = uuid::Uuid::parse_str(&p.id).unwrap();
    enable_workflow_on(&app, &p.secret_key, "signed-up").await;
    let plan = |email: &str, event: &str, data: Value| TrackPlan {
        project_id: project,
        email: EmailAddress::parse(email).unwrap(),
        event: event.into(),
        subscribed: None,
        data: DataPatch::parse(Some(&data)).unwrap(),
        idempotency_key: None,
    };
    // The caches the one-statement path asks (field types, tracked segments) last a second:
    // on a slow machine a round may find them expired, so try a few.
    let mut round = 0;
    let (answers, fresh) = loop {
        round += 1;
        let warm = app
            .engine
            .track_batch(vec![plan(
                &format!("warm{round}@example.org"),
                "paid",
                json!({"plan": "free"}),
            )])
            .await;
        assert!(warm[0].is_ok(), "{warm:?}");
        let old = format!("old{round}@example.org");
        app.create_contact(
            &p.secret_key,
            json!({"email": old, "subscribed": false, "data": {"plan": "free", "city": "Oslo"}}),
        )
        .await;
        let before = app.engine.acceptor.one_statement_batches();
        let answers = app
            .engine
            .track_batch(vec![
                plan(
                    &format!("new{round}a@example.org"),
                    "signed-up",
                    json!({"plan": "pro"}),
                ),
                plan(&old, "signed-up", json!({"plan": "team"})),
                plan(
                    &format!("new{round}b@example.org"),
                    "paid",
                    json!({"plan": "free"}),
                ),
            ])
            .await;
        let fresh = app.engine.acceptor.one_statement_batches() - before;
        if fresh > 0 || engine == Engine::Sqlite || round == 5 {
            break (answers, fresh);
        }
    };
    match engine {
        Engine::Sqlite => assert_eq!(fresh, 0),
        Engine::Postgres => assert_eq!(fresh, 1, "no round of five went in one statement"),
    }
    let tracked: Vec<_> = answers
        .iter()
        .map(|a| a.as_ref().expect("recorded"))
        .collect();
    let contact = |id: &uuid::Uuid| {
        let path = format!("/contacts/{id}");
        let key = p.secret_key.clone();
        let app = &app;
        async move { expect_json(app.get(&path, &key).await, 200).await }
    };
    let (new_a, old, new_b) = (
        contact(&tracked[0].contact_id).await,
        contact(&tracked[1].contact_id).await,
        contact(&tracked[2].contact_id).await,
    );
    assert_eq!(new_a["email"], format!("new{round}a@example.org"));
    assert_eq!(
        (&new_a["subscribed"], &new_a["data"]),
        (&json!(true), &json!({"plan": "pro"}))
    );
    assert_eq!(new_b["data"], json!({"plan": "free"}));
    // The known contact kept its id and state, and got the patch.
    assert_eq!(old["email"], format!("old{round}@example.org"));
    assert_eq!(old["subscribed"], false);
    assert_eq!(old["data"], json!({"plan": "team", "city": "Oslo"}));
    for (t, name) in tracked.iter().zip(["signed-up", "signed-up", "paid"]) {
        let events = contact_events(&app, &p.secret_key, &t.contact_id.to_string()).await;
        let ids: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e["id"].as_str().unwrap(), e["name"].as_str().unwrap()))
            .collect();
        assert_eq!(ids, vec![(t.event_id.to_string().as_str(), name)]);
    }
    // Outbox rows for this round's two events the workflow reacts to, whichever path wrote
    // them.
    let mut jobs: Vec<(String, String)> = app
        .store
        .waiting_job_payloads(project, herald_engine::track::EVENT_DISPATCH_JOB, 100)
        .await
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["eventId"].as_str().unwrap().to_owned(),
                j["name"].as_str().unwrap().to_owned(),
            )
        })
        .filter(|(id, _)| tracked.iter().any(|t| t.event_id.to_string() == *id))
        .collect();
    jobs.sort();
    let mut want = vec![
        (tracked[0].event_id.to_string(), "signed-up".to_owned()),
        (tracked[1].event_id.to_string(), "signed-up".to_owned()),
    ];
    want.sort();
    assert_eq!(jobs, want);
    let contacts = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(
        contacts["total"],
        4 * round,
        "warm, old and two new per round"
    );
}

async fn secret_key_track_patches_an_existing_contact_and_keeps_its_state(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let c = app
        .create_contact(
            &p.secret_key,
            json!({"email": "ada@example.com", "subscribed": false,
                   "data": {"plan": "free", "city": "Oslo", "age": 36}}),
        )
        .await;
    let got = tracked(
        &app,
        &p.secret_key,
        json!({"event": "upgraded", "email": "ADA@example.com",
               "data": {"plan": "team", "age": null, "city": ""}}),
    )
    .await;
    assert_eq!(got["contact"], c["id"]);
    let contact = expect_json(
        app.get(
            &format!("/contacts/{}", c["id"].as_str().unwrap()),
            &p.secret_key,
        )
        .await,
        200,
    )
    .await;
    // Omitted `subscribed` keeps the state; data patched: null deletes, "" keeps.
    assert_eq!(contact["subscribed"], false);
    assert_eq!(contact["data"], json!({"plan": "team", "city": "Oslo"}));
    let events = contact_events(&app, &p.secret_key, c["id"].as_str().unwrap()).await;
    let names: Vec<&str> = events.iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(names, ["upgraded"], "no subscription event without a flip");
}

async fn subscribed_flips_record_their_events_once(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let pk = &p.public_key;
    // A new contact told `subscribed: false` starts unsubscribed, without a flip event.
    let a = tracked(
        &app,
        pk,
        json!({"event": "visit", "email": "a@example.com", "subscribed": false}),
    )
    .await;
    let id = a["contact"].as_str().unwrap().to_owned();
    let names = |events: Vec<Value>| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| e["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        names(contact_events(&app, &p.secret_key, &id).await),
        ["visit"]
    );
    tracked(
        &app,
        pk,
        json!({"event": "opt-in", "email": "a@example.com", "subscribed": true}),
    )
    .await;
    tracked(
        &app,
        pk,
        json!({"event": "again", "email": "a@example.com", "subscribed": true}),
    )
    .await;
    tracked(
        &app,
        pk,
        json!({"event": "opt-out", "email": "a@example.com", "subscribed": false}),
    )
    .await;
    let mut got = names(contact_events(&app, &p.secret_key, &id).await);
    got.reverse();
    assert_eq!(
        got,
        [
            "visit",
            "contact.subscribed",
            "opt-in",
            "again",
            "contact.unsubscribed",
            "opt-out"
        ]
    );
    let contact = expect_json(
        app.get(&format!("/contacts/{id}"), &p.secret_key).await,
        200,
    )
    .await;
    assert_eq!(contact["subscribed"], false);
}

async fn system_and_invalid_event_names_are_refused_and_write_nothing(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    for name in [
        "email.sent",
        "email.open",
        "Email.Click",
        "contact.subscribed",
        "contact.unsubscribed",
        "segment.vip.entry",
        "segment.big-spenders.exit",
    ] {
        let res = track(
            &app,
            &p.public_key,
            &json!({"event": name, "email": "x@example.com"}),
        )
        .await;
        let body = expect_error(res, 422, "VALIDATION_ERROR").await;
        assert_eq!(body["error"]["errors"][0]["field"], "event", "{body}");
        assert_eq!(
            body["error"]["errors"][0]["code"], "reserved_event",
            "{name}: {body}"
        );
    }
    let long = "e".repeat(256);
    for (body, field, code) in [
        (
            json!({"event": "", "email": "x@example.com"}),
            "event",
            "required",
        ),
        (
            json!({"event": "   ", "email": "x@example.com"}),
            "event",
            "required",
        ),
        (json!({"email": "x@example.com"}), "event", "required"),
        (
            json!({"event": "a\nb", "email": "x@example.com"}),
            "event",
            "invalid_characters",
        ),
        (
            json!({"event": "a\u{1b}b", "email": "x@example.com"}),
            "event",
            "invalid_characters",
        ),
        (
            json!({"event": long, "email": "x@example.com"}),
            "event",
            "too_long",
        ),
        (json!({"event": "ok"}), "email", "required"),
        (
            json!({"event": "ok", "email": "not-an-address"}),
            "email",
            "invalid_email",
        ),
        (
            json!({"event": "ok", "email": "x@example.com", "data": [1]}),
            "data",
            "invalid_type",
        ),
    ] {
        let res = track(&app, &p.public_key, &body).await;
        let err = expect_error(res, 422, "VALIDATION_ERROR").await;
        assert_eq!(error_fields(&err), [field], "{body}: {err}");
        assert_eq!(err["error"]["errors"][0]["code"], code, "{body}: {err}");
    }
    // A wrong type is a validation error of that field, never a 500.
    let res = track(
        &app,
        &p.public_key,
        &json!({"event": "ok", "email": "x@example.com", "subscribed": "yes"}),
    )
    .await;
    let err = expect_error(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(error_fields(&err), ["subscribed"], "{err}");
    // Malformed JSON: 400.
    let res = app
        .client
        .post(app.url("/v1/track"))
        .bearer_auth(&p.public_key)
        .header("content-type", "application/json")
        .body("{\"event\":")
        .send()
        .await
        .unwrap();
    expect_error(res, 400, "BAD_REQUEST").await;
    // Nothing was written.
    let contacts = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(contacts["total"], 0, "{contacts}");
}

async fn a_reused_idempotency_key_is_409_and_records_nothing(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let call = |key: &'static str, email: &'static str| {
        app.client
            .post(app.url("/v1/track"))
            .bearer_auth(&p.public_key)
            .header("Idempotency-Key", key)
            .json(&json!({"event": "purchase", "email": email, "data": {"n": 1}}))
            .send()
    };
    let first = expect_json(call("order-1", "a@example.com").await.unwrap(), 200).await;
    let again = call("order-1", "b@example.com").await.unwrap();
    expect_error(again, 409, "IDEMPOTENCY_KEY_REUSED").await;
    expect_json(call("order-2", "a@example.com").await.unwrap(), 200).await;
    // The refused call wrote nothing: no contact b, two events in all.
    let contacts = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(contacts["total"], 1, "{contacts}");
    let list = expect_json(app.get("/events", &p.secret_key).await, 200).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 2, "{list}");
    assert_eq!(list["data"][1]["id"], first["data"]["event"]);
    // An invalid key is refused before anything happens.
    let res = app
        .client
        .post(app.url("/v1/track"))
        .bearer_auth(&p.public_key)
        .header("Idempotency-Key", "tab\there")
        .json(&json!({"event": "purchase", "email": "a@example.com"}))
        .send()
        .await
        .unwrap();
    let err = expect_error(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(error_fields(&err), ["Idempotency-Key"]);
}

async fn keys_decide_who_may_track(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let body = json!({"event": "visit", "email": "k@example.com"});
    let res = app.call(Method::POST, "/v1/track", None, Some(&body)).await;
    expect_error(res, 401, "MISSING_AUTH").await;
    let bogus = format!("pk_{}", "0".repeat(48));
    expect_error(track(&app, &bogus, &body).await, 401, "INVALID_API_KEY").await;
    expect_json(track(&app, &p.public_key, &body).await, 200).await;
    expect_json(track(&app, &p.secret_key, &body).await, 200).await;
    // The dashboard alias takes the secret key (or a session), never the public key.
    expect_json(app.post("/events/track", &p.secret_key, &body).await, 200).await;
    expect_error(
        app.post("/events/track", &p.public_key, &body).await,
        401,
        "INVALID_API_KEY",
    )
    .await;
    let res = p
        .owner
        .post(app.url("/events/track"))
        .header("x-project-id", &p.id)
        .json(&body)
        .send()
        .await
        .unwrap();
    expect_json(res, 200).await;
    // The public key reaches nothing else of the Events resource.
    for path in ["/events", "/events/names", "/events/stats"] {
        expect_error(app.get(path, &p.public_key).await, 401, "INVALID_API_KEY").await;
    }
    let list = expect_json(app.get("/events", &p.secret_key).await, 200).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 4, "{list}");
}

async fn concurrent_tracks_are_all_committed(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let (batches_before, requests_before) = app.engine.acceptor.stats();
    let mut calls = Vec::new();
    for i in 0..64 {
        let req = app
            .client
            .post(app.url("/v1/track"))
            .bearer_auth(&p.public_key)
            .json(
                &json!({"event": format!("step-{}", i % 4), "email": format!("c{i}@example.com"),
                          "data": {"i": i}}),
            );
        calls.push(tokio::spawn(req.send()));
    }
    let mut events = Vec::new();
    for c in calls {
        let res = c.await.unwrap().unwrap();
        let body = expect_json(res, 200).await;
        events.push(body["data"]["event"].as_str().unwrap().to_owned());
    }
    // Acknowledged = committed: every event is listed at once.
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/events?limit=100&cursor={c}"),
            None => "/events?limit=100".to_owned(),
        };
        let page = expect_json(app.get(&path, &p.secret_key).await, 200).await;
        for e in page["data"].as_array().unwrap() {
            listed.push(e["id"].as_str().unwrap().to_owned());
        }
        match page["cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    events.sort();
    listed.sort();
    assert_eq!(events, listed);
    let contacts = expect_json(app.get("/contacts", &p.secret_key).await, 200).await;
    assert_eq!(contacts["total"], 64);
    let (batches, requests) = app.engine.acceptor.stats();
    let (batches, requests) = (batches - batches_before, requests - requests_before);
    eprintln!("{requests} track requests in {batches} transactions");
    assert_eq!(requests, 64);
    assert!(batches <= requests);
}

fn header<'a>(res: &'a Response, name: &str) -> Option<&'a str> {
    res.headers().get(name).and_then(|v| v.to_str().ok())
}

async fn cors_is_open_on_v1_track_only(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let origin = "https://shop.example.org";
    let preflight = |path: &str| {
        app.client
            .request(Method::OPTIONS, app.url(path))
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "POST")
            .header(
                "Access-Control-Request-Headers",
                "authorization, content-type, idempotency-key",
            )
            .send()
    };
    // Preflight of /v1/track: allowed from any origin, with the three headers.
    let res = preflight("/v1/track").await.unwrap();
    assert_eq!(res.status(), 204);
    assert_eq!(header(&res, "access-control-allow-origin"), Some("*"));
    let methods = header(&res, "access-control-allow-methods").unwrap_or("");
    assert!(methods.contains("POST"), "{methods}");
    let allowed = header(&res, "access-control-allow-headers")
        .unwrap_or("")
        .to_ascii_lowercase();
    for h in ["authorization", "content-type", "idempotency-key"] {
        assert!(allowed.contains(h), "{allowed}");
    }
    assert!(header(&res, "x-request-id").is_some());
    assert_eq!(header(&res, "access-control-allow-credentials"), None);

    // The call itself, and its errors, carry the header so page code can read them.
    let res = app
        .client
        .post(app.url("/v1/track"))
        .header("Origin", origin)
        .bearer_auth(&p.public_key)
        .json(&json!({"event": "visit", "email": "browser@example.com"}))
        .send()
        .await
        .unwrap();
    assert_eq!(header(&res, "access-control-allow-origin"), Some("*"));
    expect_json(res, 200).await;
    let res = app
        .client
        .post(app.url("/v1/track"))
        .header("Origin", origin)
        .json(&json!({"event": "visit", "email": "browser@example.com"}))
        .send()
        .await
        .unwrap();
    assert_eq!(header(&res, "access-control-allow-origin"), Some("*"));
    expect_error(res, 401, "MISSING_AUTH").await;

    // Every other route stays closed: no CORS header on preflights or answers.
    for path in [
        "/v1/send",
        "/events/track",
        "/contacts",
        "/v1/track/",
        "/events",
    ] {
        let res = preflight(path).await.unwrap();
        assert_ne!(res.status(), 204, "{path}");
        assert_eq!(header(&res, "access-control-allow-origin"), None, "{path}");
        assert_eq!(header(&res, "access-control-allow-headers"), None, "{path}");
    }
    let res = app
        .client
        .get(app.url("/contacts"))
        .header("Origin", origin)
        .bearer_auth(&p.secret_key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(header(&res, "access-control-allow-origin"), None);
    let res = app
        .client
        .post(app.url("/events/track"))
        .header("Origin", origin)
        .bearer_auth(&p.secret_key)
        .json(&json!({"event": "visit", "email": "browser@example.com"}))
        .send()
        .await
        .unwrap();
    assert_eq!(header(&res, "access-control-allow-origin"), None);
}

/// The batcher inserts the new contacts of a batch's tracks with one statement before staging
/// the requests; a repeated email, a keyed request and an existing contact take the upsert, and
/// every request is applied in its order.
async fn one_batch_inserts_its_new_contacts_together_and_applies_requests_in_order(engine: Engine) {
    use herald_core::email::EmailAddress;
    use herald_core::fields::DataPatch;
    use herald_engine::send::AcceptError;
    use herald_engine::track::TrackPlan;

    let app = engine.app().await;
    let p = app.project().await;
    let old = tracked(
        &app,
        &p.secret_key,
        json!({"event": "seen", "email": "old@example.org", "data": {"plan": "free"}}),
    )
    .await;
    let project_id = uuid::Uuid::parse_str(&p.id).unwrap();
    let plan = |email: &str, data: Value, subscribed: Option<bool>, key: Option<&str>| TrackPlan {
        project_id,
        email: EmailAddress::parse(email).unwrap(),
        event: "batched".into(),
        subscribed,
        data: DataPatch::parse(Some(&data)).unwrap(),
        idempotency_key: key.map(str::to_owned),
    };
    let answers = app
        .engine
        .track_batch(vec![
            plan("new@example.org", json!({"plan": "pro"}), Some(false), None),
            plan("new@example.org", json!({"seats": 2}), None, None),
            plan("old@example.org", json!({"plan": "team"}), None, None),
            plan("keyed@example.org", json!({"n": 1}), None, Some("k-1")),
            plan("keyed@example.org", json!({"n": 2}), None, None),
            plan("fresh@example.org", json!({}), None, None),
        ])
        .await;
    // A reused key writes nothing, not even the new contact of its email.
    let reused = app
        .engine
        .track_batch(vec![plan("late@example.org", json!({}), None, Some("k-1"))])
        .await;
    assert!(
        matches!(reused[0], Err(AcceptError::IdempotencyKeyReused)),
        "{:?}",
        reused[0]
    );
    let ids: Vec<String> = answers
        .iter()
        .map(|a| {
            a.as_ref()
                .expect("every request is recorded")
                .contact_id
                .to_string()
        })
        .collect();
    assert_eq!(ids[0], ids[1], "one contact for a repeated email");
    assert_eq!(
        ids[2], old["contact"],
        "an existing contact is updated, not duplicated"
    );
    assert_eq!(ids[3], ids[4]);
    let contact = |id: String| {
        let app = &app;
        let key = p.secret_key.clone();
        async move { expect_json(app.get(&format!("/contacts/{id}"), &key).await, 200).await }
    };
    let new = contact(ids[0].clone()).await;
    assert_eq!(new["data"], json!({"plan": "pro", "seats": 2}), "{new}");
    assert_eq!(
        new["subscribed"], false,
        "the first request's state stays: {new}"
    );
    let old = contact(ids[2].clone()).await;
    assert_eq!(old["data"]["plan"], "team", "{old}");
    let keyed = contact(ids[3].clone()).await;
    assert_eq!(
        keyed["data"]["n"], 2,
        "the later request is applied last: {keyed}"
    );
    let fresh = contact(ids[5].clone()).await;
    assert_eq!(
        fresh["subscribed"], true,
        "new contacts are subscribed: {fresh}"
    );
    for (id, n) in [(&ids[0], 2), (&ids[2], 2), (&ids[3], 2), (&ids[5], 1)] {
        assert_eq!(
            contact_events(&app, &p.secret_key, id).await.len(),
            n,
            "events of {id}"
        );
    }
    let list = expect_json(app.get("/contacts?limit=100", &p.secret_key).await, 200).await;
    assert_eq!(list["total"], 4, "{list}");
}
