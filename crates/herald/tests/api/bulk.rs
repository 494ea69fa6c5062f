//! `POST /contacts/bulk-subscribe|bulk-unsubscribe|bulk-delete` and `GET /contacts/bulk/:jobId`
//! (DECISIONS.md "Jobs"): counts that add up to the ids requested, subscription events as
//! PATCH records them, the 1,000-id limit, and tenant isolation of jobs and contacts.

use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};
use crate::imports::wait_job;

both_engines!(
    bulk_unsubscribe_and_subscribe_count_and_record_events,
    bulk_delete_removes_only_this_projects_contacts,
    bulk_requests_need_1_to_1000_string_ids,
    kept_contact_counts_follow_every_change,
);

/// Runs a bulk operation and waits for its job; returns the last poll.
async fn run_bulk(app: &TestApp, key: &str, op: &str, ids: &[&str]) -> Value {
    let accepted = expect_json(
        app.post(&format!("/contacts/{op}"), key, &json!({"contactIds": ids}))
            .await,
        202,
    )
    .await;
    let id = accepted["jobId"].as_str().expect("jobId");
    let seen = wait_job(app, key, &format!("/contacts/bulk/{id}")).await;
    seen.last().cloned().expect("a poll")
}

async fn new_contact(app: &TestApp, key: &str, email: &str) -> String {
    let c = app.create_contact(key, json!({"email": email})).await;
    c["id"].as_str().expect("id").to_owned()
}

async fn events_of(app: &TestApp, key: &str, contact: &str, kind: &str) -> usize {
    let feed = expect_json(
        app.get(&format!("/activity?contactId={contact}&type={kind}"), key)
            .await,
        200,
    )
    .await;
    feed["data"].as_array().map_or(0, Vec::len)
}

async fn bulk_unsubscribe_and_subscribe_count_and_record_events(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let a = new_contact(&app, sk, "a@example.com").await;
    let b = new_contact(&app, sk, "b@example.com").await;
    let c = new_contact(&app, sk, "c@example.com").await;
    let unknown = "01900000-0000-7000-8000-000000000000";
    let job = run_bulk(
        &app,
        sk,
        "bulk-unsubscribe",
        &[&a, &b, unknown, "garbage", &a],
    )
    .await;
    assert_eq!(job["state"], "completed", "{job}");
    let r = &job["result"];
    assert_eq!(r["operation"], "unsubscribe");
    assert_eq!(r["totalRequested"], 5);
    assert_eq!(r["successCount"], 2, "{job}");
    assert_eq!(r["unchangedCount"], 1, "the repeated id");
    assert_eq!(r["failureCount"], 2);
    let failed: Vec<&str> = r["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["contactId"].as_str().unwrap())
        .collect();
    assert_eq!(failed, vec![unknown, "garbage"]);
    assert_eq!(events_of(&app, sk, &a, "contact.unsubscribed").await, 1);
    assert_eq!(events_of(&app, sk, &c, "contact.unsubscribed").await, 0);
    let got = expect_json(app.get(&format!("/contacts/{b}"), sk).await, 200).await;
    assert_eq!(got["subscribed"], false);

    let job = run_bulk(&app, sk, "bulk-subscribe", &[&a, &c]).await;
    let r = &job["result"];
    assert_eq!(
        (r["successCount"].clone(), r["unchangedCount"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(events_of(&app, sk, &a, "contact.subscribed").await, 1);
    assert_eq!(
        events_of(&app, sk, &c, "contact.subscribed").await,
        0,
        "already subscribed"
    );
}

async fn bulk_delete_removes_only_this_projects_contacts(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let other = app.project().await;
    let mine = new_contact(&app, &p.secret_key, "mine@example.com").await;
    let theirs = new_contact(&app, &other.secret_key, "theirs@example.com").await;
    let job = run_bulk(&app, &p.secret_key, "bulk-delete", &[&mine, &theirs]).await;
    let r = &job["result"];
    assert_eq!(r["operation"], "delete");
    assert_eq!(
        (r["successCount"].clone(), r["failureCount"].clone()),
        (json!(1), json!(1))
    );
    expect_error(
        app.get(&format!("/contacts/{mine}"), &p.secret_key).await,
        404,
        "CONTACT_NOT_FOUND",
    )
    .await;
    expect_json(
        app.get(&format!("/contacts/{theirs}"), &other.secret_key)
            .await,
        200,
    )
    .await;
    // The job itself is not visible to the other project.
    let path = format!("/contacts/bulk/{}", job["id"].as_str().unwrap());
    expect_error(
        app.get(&path, &other.secret_key).await,
        404,
        "JOB_NOT_FOUND",
    )
    .await;
}

async fn bulk_requests_need_1_to_1000_string_ids(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let sk = &p.secret_key;
    let many: Vec<String> = (0..1001).map(|i| format!("id-{i}")).collect();
    for op in ["bulk-subscribe", "bulk-unsubscribe", "bulk-delete"] {
        let path = format!("/contacts/{op}");
        let body = expect_error(
            app.post(&path, sk, &json!({"contactIds": many})).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&body), vec!["contactIds"]);
        let body = expect_error(
            app.post(&path, sk, &json!({"contactIds": []})).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&body), vec!["contactIds"]);
        let body = expect_error(
            app.post(&path, sk, &json!({"contactIds": ["x", 7]})).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&body), vec!["contactIds.1"]);
        expect_error(
            app.post(&path, sk, &json!({})).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
    }
    let exactly: Vec<String> = many[..1000].to_vec();
    expect_json(
        app.post("/contacts/bulk-delete", sk, &json!({"contactIds": exactly}))
            .await,
        202,
    )
    .await;
}

/// `GET /contacts`' total without a search comes from the counts the `contact_counts` triggers
/// keep; with a search (`@` matches every address) it is counted row by row. The two agree
/// after each kind of change: single and batched inserts, an upsert of an existing contact,
/// subscription changes one by one and in bulk, deletes, and another project's contacts.
async fn kept_contact_counts_follow_every_change(engine: Engine) {
    let app = engine.app().await;
    let p = app.project().await;
    let other = app.project().await;
    let sk = &p.secret_key;
    async fn totals(app: &TestApp, sk: &str) -> Vec<Value> {
        let mut out = Vec::new();
        for filter in ["", "&subscribed=true", "&subscribed=false"] {
            let kept = expect_json(
                app.get(&format!("/contacts?limit=1{filter}"), sk).await,
                200,
            );
            let counted = expect_json(
                app.get(&format!("/contacts?limit=1&search=%40{filter}"), sk)
                    .await,
                200,
            );
            let (kept, counted) = (kept.await, counted.await);
            assert_eq!(kept["total"], counted["total"], "{filter}");
            out.push(kept["total"].clone());
        }
        out
    }
    let a = app
        .create_contact(sk, json!({"email": "a@example.com", "subscribed": true}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let b = new_contact(&app, sk, "b@example.com").await;
    new_contact(&app, &other.secret_key, "x@example.com").await;
    assert_eq!(totals(&app, sk).await, [json!(2), json!(2), json!(0)]);
    // An upsert of an existing address adds nothing; its subscription change counts.
    app.create_contact(sk, json!({"email": "b@example.com", "subscribed": false}))
        .await;
    assert_eq!(totals(&app, sk).await, [json!(2), json!(1), json!(1)]);
    // Tracked events insert new contacts in batches.
    for i in 0..5 {
        let res = app
            .client
            .post(app.url("/v1/track"))
            .bearer_auth(&p.public_key)
            .json(&json!({"event": "signup", "email": format!("t{i}@example.com"), "subscribed": i % 2 == 0}))
            .send()
            .await
            .unwrap();
        expect_json(res, 200).await;
    }
    totals(&app, sk).await;
    expect_json(
        app.patch(&format!("/contacts/{a}"), sk, &json!({"subscribed": false}))
            .await,
        200,
    )
    .await;
    run_bulk(&app, sk, "bulk-unsubscribe", &[&b]).await;
    totals(&app, sk).await;
    run_bulk(&app, sk, "bulk-subscribe", &[&a, &b]).await;
    let before_delete = totals(&app, sk).await;
    let res = app.delete(&format!("/contacts/{a}"), sk).await;
    assert!(res.status().is_success(), "{}", res.status());
    run_bulk(&app, sk, "bulk-delete", &[&b]).await;
    let after = totals(&app, sk).await;
    assert_eq!(
        after[0].as_i64().unwrap(),
        before_delete[0].as_i64().unwrap() - 2
    );
    // The other project's count never moved.
    assert_eq!(totals(&app, &other.secret_key).await[0], json!(1));
}
