//! The Segments resource over HTTP: CRUD with both tree names, validation paths, live contacts
//! by page, static members with entry/exit events, compute and refresh of tracked dynamic
//! segments, membership following contact changes, and isolation between projects.

use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, error_fields, expect_error, expect_json};

both_engines!(
    create_get_patch_list_delete,
    bad_trees_are_422_with_the_node_path,
    contacts_are_live_and_paged,
    static_members_add_and_remove_with_events,
    compute_records_entry_and_exit_refresh_only_counts,
    imports_and_the_periodic_recompute_move_tracked_membership,
    segment_references_and_cycles,
    projects_never_see_each_others_segments,
);

async fn create(app: &TestApp, key: &str, body: &Value) -> Value {
    expect_json(app.post("/segments", key, body).await, 201).await
}

fn plan_is(plan: &str) -> Value {
    json!({"operator": "AND", "conditions": [{"field": "data.plan", "operator": "equals", "value": plan}]})
}

async fn contacts(app: &TestApp, key: &str, people: &[(&str, Value)]) -> Vec<String> {
    let mut ids = Vec::new();
    for (email, data) in people {
        let c = app
            .create_contact(key, json!({"email": email, "data": data}))
            .await;
        ids.push(
            c["contact"]["id"]
                .as_str()
                .or(c["id"].as_str())
                .unwrap()
                .to_owned(),
        );
    }
    ids
}

async fn member_emails(app: &TestApp, key: &str, id: &str) -> Vec<String> {
    let page = expect_json(
        app.get(&format!("/segments/{id}/contacts?pageSize=100"), key)
            .await,
        200,
    )
    .await;
    let mut emails: Vec<String> = page["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["email"].as_str().unwrap().to_owned())
        .collect();
    emails.sort();
    emails
}

async fn create_get_patch_list_delete(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    contacts(
        &app,
        sk,
        &[
            ("a@example.com", json!({"plan": "pro"})),
            ("b@example.com", json!({"plan": "free"})),
        ],
    )
    .await;
    let s = create(
        &app,
        sk,
        &json!({"name": "Pro users", "filters": plan_is("pro")}),
    )
    .await;
    assert_eq!(s["type"], "DYNAMIC");
    assert_eq!(s["memberCount"], 1);
    assert_eq!(s["trackMembership"], false);
    assert_eq!(s["filters"], plan_is("pro"));
    assert_eq!(s["condition"], plan_is("pro"));
    let id = s["id"].as_str().unwrap();
    let path = format!("/segments/{id}");
    assert_eq!(
        expect_json(app.get(&path, sk).await, 200).await["name"],
        "Pro users"
    );

    let p = expect_json(
        app.patch(
            &path,
            sk,
            &json!({"description": "d", "condition": plan_is("free"), "trackMembership": true}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(p["description"], "d");
    assert_eq!(p["trackMembership"], true);
    assert_eq!(p["memberCount"], 1);
    assert_eq!(member_emails(&app, sk, id).await, ["b@example.com"]);

    let st = create(&app, sk, &json!({"name": "Hand picked", "type": "STATIC"})).await;
    assert_eq!(st["type"], "STATIC");
    assert_eq!(st["memberCount"], 0);
    let list = expect_json(app.get("/segments", sk).await, 200).await;
    assert_eq!(list.as_array().unwrap().len(), 2);

    assert_eq!(app.delete(&path, sk).await.status(), 204);
    expect_error(app.get(&path, sk).await, 404, "SEGMENT_NOT_FOUND").await;
}

async fn bad_trees_are_422_with_the_node_path(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let cases = [
        (json!({"filters": plan_is("x")}), "name"),
        (json!({"name": "x"}), "filters"),
        (
            json!({"name": "x", "type": "STATIC", "condition": plan_is("x")}),
            "condition",
        ),
        (
            json!({"name": "x", "type": "ODD", "filters": plan_is("x")}),
            "type",
        ),
        (
            json!({"name": "x", "filters": {"conditions": [{"field": "data.a", "operator": "near", "value": 1}]}}),
            "filters.conditions.0.operator",
        ),
        (
            json!({"name": "x", "condition": {"conditions": [{"field": "data.a", "operator": "equals"}]}}),
            "condition.conditions.0.value",
        ),
        (
            json!({"name": "x", "filters": {"conditions": [{"field": "createdAt", "operator": "within", "value": 3}]}}),
            "filters.conditions.0.unit",
        ),
        (
            json!({"name": "x", "filters": {"operator": "AND", "conditions": [{"operator": "OR", "conditions": [{"field": "bogus", "operator": "exists"}]}]}}),
            "filters.conditions.0.conditions.0.field",
        ),
    ];
    for (body, field) in cases {
        let e = expect_error(
            app.post("/segments", sk, &body).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&e), [field], "{body}");
    }
    // Limits: groups nest at most 8 levels, a tree holds at most 200 nodes.
    let mut deep = plan_is("x");
    for _ in 0..8 {
        deep = json!({"operator": "AND", "conditions": [deep]});
    }
    let e = expect_error(
        app.post("/segments", sk, &json!({"name": "deep", "filters": deep}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    let path = format!("filters{}", ".conditions.0".repeat(8));
    assert_eq!(error_fields(&e), [path.as_str()], "{e}");
    let wide =
        json!({"operator": "OR", "conditions": vec![plan_is("x")["conditions"][0].clone(); 200]});
    let e = expect_error(
        app.post("/segments", sk, &json!({"name": "wide", "filters": wide}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["filters.conditions.199"], "{e}");
    // A segment keeps its type, and a STATIC one takes no tree.
    let st = create(&app, sk, &json!({"name": "st", "type": "STATIC"})).await;
    let st_path = format!("/segments/{}", st["id"].as_str().unwrap());
    for (body, field) in [
        (json!({"type": "DYNAMIC", "filters": plan_is("x")}), "type"),
        (json!({"filters": plan_is("x")}), "filters"),
        (json!({"condition": plan_is("x")}), "condition"),
    ] {
        let e = expect_error(
            app.patch(&st_path, sk, &body).await,
            422,
            "VALIDATION_ERROR",
        )
        .await;
        assert_eq!(error_fields(&e), [field], "{body}");
    }
    let e = expect_error(
        app.get(
            "/segments/00000000-0000-0000-0000-000000000000/contacts?pageSize=101",
            sk,
        )
        .await,
        404,
        "SEGMENT_NOT_FOUND",
    )
    .await;
    assert!(e["error"]["message"].is_string());
    let s = create(&app, sk, &json!({"name": "ok", "filters": plan_is("x")})).await;
    let id = s["id"].as_str().unwrap();
    expect_error(
        app.get(&format!("/segments/{id}/contacts?pageSize=101"), sk)
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
}

async fn contacts_are_live_and_paged(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let people: Vec<(String, Value)> = (0..25)
        .map(|i| (format!("p{i:02}@example.com"), json!({"n": i})))
        .collect();
    let refs: Vec<(&str, Value)> = people
        .iter()
        .map(|(e, d)| (e.as_str(), d.clone()))
        .collect();
    contacts(&app, sk, &refs).await;
    let s = create(
        &app,
        sk,
        &json!({"name": "big n", "filters": {"conditions": [{"field": "data.n", "operator": "greaterThanOrEqual", "value": 5}]}}),
    )
    .await;
    let id = s["id"].as_str().unwrap();
    let page = expect_json(
        app.get(&format!("/segments/{id}/contacts?page=2&pageSize=15"), sk)
            .await,
        200,
    )
    .await;
    assert_eq!(page["total"], 20);
    assert_eq!(page["page"], 2);
    assert_eq!(page["pageSize"], 15);
    assert_eq!(page["contacts"].as_array().unwrap().len(), 5);
    // Live: a new matching contact shows at once, before any refresh.
    contacts(&app, sk, &[("late@example.com", json!({"n": 99}))]).await;
    let page = expect_json(app.get(&format!("/segments/{id}/contacts"), sk).await, 200).await;
    assert_eq!(page["total"], 21);
}

/// Waits (up to 10 s) until the cached count of a segment is `n`.
async fn wait_member_count(app: &TestApp, key: &str, id: &str, n: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let got = expect_json(app.get(&format!("/segments/{id}"), key).await, 200).await;
        if got["memberCount"] == n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "memberCount stays {}",
            got["memberCount"]
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn events_of(app: &TestApp, key: &str, contact_id: &str) -> String {
    app.get(&format!("/events/contact/{contact_id}"), key)
        .await
        .text()
        .await
        .unwrap()
}

async fn static_members_add_and_remove_with_events(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let ids = contacts(&app, sk, &[("known@example.com", json!({}))]).await;
    let s = create(
        &app,
        sk,
        &json!({"name": "Beta Testers!", "type": "STATIC"}),
    )
    .await;
    let id = s["id"].as_str().unwrap();
    let members = format!("/segments/{id}/members");
    let r = expect_json(
        app.post(
            &members,
            sk,
            &json!({"emails": ["known@example.com", "new@example.com"]}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(r["changed"], 1);
    assert_eq!(r["notFound"], json!(["new@example.com"]));
    let r = expect_json(
        app.post(
            &members,
            sk,
            &json!({"emails": ["known@example.com", "new@example.com"], "createMissing": true, "subscribed": false}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (
            r["changed"].clone(),
            r["created"].clone(),
            r["memberCount"].clone()
        ),
        (json!(1), json!(1), json!(2))
    );
    assert_eq!(
        member_emails(&app, sk, id).await,
        ["known@example.com", "new@example.com"]
    );
    // `subscribed: false` applies to the contacts it created.
    let created = app.contact_by_email(sk, "new@example.com").await;
    assert_eq!(created["subscribed"], false, "{created}");
    assert!(
        events_of(&app, sk, &ids[0])
            .await
            .contains("segment.beta-testers.entry")
    );

    let r = expect_json(
        app.call(
            reqwest::Method::DELETE,
            &members,
            Some(sk),
            Some(&json!({"emails": ["known@example.com"]})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (r["changed"].clone(), r["memberCount"].clone()),
        (json!(1), json!(1))
    );
    assert!(
        events_of(&app, sk, &ids[0])
            .await
            .contains("segment.beta-testers.exit")
    );
    let e = expect_error(
        app.post(&members, sk, &json!({"emails": ["not an email"]}))
            .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["emails.0"]);

    let dynamic = create(&app, sk, &json!({"name": "d", "filters": plan_is("x")})).await;
    let path = format!("/segments/{}/members", dynamic["id"].as_str().unwrap());
    expect_error(
        app.post(&path, sk, &json!({"emails": ["a@example.com"]}))
            .await,
        409,
        "CONFLICT",
    )
    .await;
}

async fn compute_records_entry_and_exit_refresh_only_counts(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let ids = contacts(
        &app,
        sk,
        &[
            ("a@example.com", json!({"plan": "pro"})),
            ("b@example.com", json!({"plan": "free"})),
        ],
    )
    .await;
    let s = create(
        &app,
        sk,
        &json!({"name": "VIP", "filters": plan_is("pro"), "trackMembership": true}),
    )
    .await;
    let id = s["id"].as_str().unwrap();
    let c = expect_json(
        app.post(&format!("/segments/{id}/compute"), sk, &json!({}))
            .await,
        200,
    )
    .await;
    assert_eq!(c, json!({"memberCount": 1, "entered": 1, "exited": 0}));
    assert!(
        events_of(&app, sk, &ids[0])
            .await
            .contains("segment.vip.entry")
    );
    // Idempotent.
    let c = expect_json(
        app.post(&format!("/segments/{id}/compute"), sk, &json!({}))
            .await,
        200,
    )
    .await;
    assert_eq!(c, json!({"memberCount": 1, "entered": 0, "exited": 0}));

    // A contact change moves membership of tracked segments without a recompute.
    let res = app
        .patch(
            &format!("/contacts/{}", ids[0]),
            sk,
            &json!({"data": {"plan": "free"}}),
        )
        .await;
    assert_eq!(res.status(), 200);
    wait_member_count(&app, sk, id, 0).await;
    assert!(
        events_of(&app, sk, &ids[0])
            .await
            .contains("segment.vip.exit")
    );
    // A tracked event can move a contact in too (event conditions).
    let ev = create(
        &app,
        sk,
        &json!({"name": "Clicked", "trackMembership": true,
            "filters": {"conditions": [{"field": "event.signup", "operator": "triggered"}]}}),
    )
    .await;
    let ev_id = ev["id"].as_str().unwrap();
    let res = app
        .post(
            "/v1/track",
            sk,
            &json!({"email": "b@example.com", "event": "signup"}),
        )
        .await;
    assert!(res.status().is_success());
    wait_member_count(&app, sk, ev_id, 1).await;
    assert!(
        events_of(&app, sk, &ids[1])
            .await
            .contains("segment.clicked.entry")
    );

    // Refresh: count only, no events.
    app.patch(
        &format!("/contacts/{}", ids[1]),
        sk,
        &json!({"data": {"plan": "pro"}}),
    )
    .await;
    let untracked = create(
        &app,
        sk,
        &json!({"name": "Untracked", "filters": plan_is("pro")}),
    )
    .await;
    let uid = untracked["id"].as_str().unwrap();
    let r = expect_json(
        app.post(&format!("/segments/{uid}/refresh"), sk, &json!({}))
            .await,
        200,
    )
    .await;
    assert_eq!(r["memberCount"], 1);
    assert!(
        !events_of(&app, sk, &ids[1])
            .await
            .contains("segment.untracked")
    );
    expect_error(
        app.post(&format!("/segments/{uid}/compute"), sk, &json!({}))
            .await,
        409,
        "CONFLICT",
    )
    .await;
}

async fn imports_and_the_periodic_recompute_move_tracked_membership(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    let ids = contacts(&app, sk, &[("old@example.com", json!({"plan": "free"}))]).await;
    let pro = create(
        &app,
        sk,
        &json!({"name": "Pro", "filters": plan_is("pro"), "trackMembership": true}),
    )
    .await;
    let pro_id = pro["id"].as_str().unwrap();
    let recent = create(
        &app,
        sk,
        &json!({"name": "Recent", "trackMembership": true, "filters": {"conditions": [
            {"field": "updatedAt", "operator": "within", "value": 1, "unit": "days"}]}}),
    )
    .await;
    let recent_id = recent["id"].as_str().unwrap();
    for id in [pro_id, recent_id] {
        expect_json(
            app.post(&format!("/segments/{id}/compute"), sk, &json!({}))
                .await,
            200,
        )
        .await;
    }
    wait_member_count(&app, sk, pro_id, 0).await;
    wait_member_count(&app, sk, recent_id, 1).await;

    // An import: a new contact and an updated one both enter, without a recompute.
    let job = crate::imports::import(
        &app,
        sk,
        "email,plan\nnew@example.com,pro\nold@example.com,pro\n",
    )
    .await;
    assert_eq!(job["result"]["created"], 1, "{job}");
    assert_eq!(job["result"]["updated"], 1, "{job}");
    wait_member_count(&app, sk, pro_id, 2).await;
    wait_member_count(&app, sk, recent_id, 2).await;
    assert!(
        events_of(&app, sk, &ids[0])
            .await
            .contains("segment.pro.entry")
    );
    let new = app.contact_by_email(sk, "new@example.com").await;
    let new_id = new["id"].as_str().unwrap();
    assert!(
        events_of(&app, sk, new_id)
            .await
            .contains("segment.pro.entry")
    );

    // No write moves anyone out of "Recent": time does, through the periodic recompute,
    // which follows the server's clock.
    app.clock
        .advance(std::time::Duration::from_secs(2 * 86_400));
    wait_member_count(&app, sk, recent_id, 0).await;
    assert!(
        events_of(&app, sk, new_id)
            .await
            .contains("segment.recent.exit")
    );
    wait_member_count(&app, sk, pro_id, 2).await;
}

async fn segment_references_and_cycles(engine: Engine) {
    let app = engine.app().await;
    let sk = &app.project().await.secret_key;
    contacts(
        &app,
        sk,
        &[
            ("a@example.com", json!({"plan": "pro"})),
            ("b@example.com", json!({"plan": "free"})),
        ],
    )
    .await;
    let pro = create(&app, sk, &json!({"name": "pro", "filters": plan_is("pro")})).await;
    let pro_id = pro["id"].as_str().unwrap();
    let not_pro = create(
        &app,
        sk,
        &json!({"name": "not pro", "filters": {"conditions": [{"field": format!("segment.{pro_id}"), "operator": "notMemberOfSegment"}]}}),
    )
    .await;
    assert_eq!(not_pro["memberCount"], 1);
    let not_pro_id = not_pro["id"].as_str().unwrap();
    assert_eq!(member_emails(&app, sk, not_pro_id).await, ["b@example.com"]);
    let e = expect_error(
        app.patch(
            &format!("/segments/{pro_id}"),
            sk,
            &json!({"filters": {"conditions": [{"field": "segment", "operator": "memberOfSegment", "value": not_pro_id}]}}),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["filters"]);
}

async fn projects_never_see_each_others_segments(engine: Engine) {
    let app = engine.app().await;
    let a = app.project().await.secret_key;
    let b = app.project().await.secret_key;
    let s = create(&app, &a, &json!({"name": "mine", "type": "STATIC"})).await;
    let id = s["id"].as_str().unwrap();
    for path in [
        format!("/segments/{id}"),
        format!("/segments/{id}/contacts"),
    ] {
        expect_error(app.get(&path, &b).await, 404, "SEGMENT_NOT_FOUND").await;
    }
    expect_error(
        app.post(&format!("/segments/{id}/refresh"), &b, &json!({}))
            .await,
        404,
        "SEGMENT_NOT_FOUND",
    )
    .await;
    expect_error(
        app.delete(&format!("/segments/{id}"), &b).await,
        404,
        "SEGMENT_NOT_FOUND",
    )
    .await;
    // A tree naming another project's segment is refused.
    let e = expect_error(
        app.post(
            "/segments",
            &b,
            &json!({"name": "x", "filters": {"conditions": [{"field": format!("segment.{id}"), "operator": "memberOfSegment"}]}}),
        )
        .await,
        422,
        "VALIDATION_ERROR",
    )
    .await;
    assert_eq!(error_fields(&e), ["filters"]);
    assert!(
        expect_json(app.get("/segments", &b).await, 200)
            .await
            .as_array()
            .unwrap()
            .is_empty()
    );
}
