//! Every filter field kind and operator over HTTP on both engines: one project with a few
//! contacts (custom fields of each type, nested data, events, a static segment), and for each
//! tree the emails `/segments/:id/contacts` returns. The SQL-equals-memory property test lives
//! with the compiler (`herald-store`, `audience::tests`, both engines).

use std::time::Duration;

use herald_core::clock::Clock;
use serde_json::{Value, json};

use crate::both_engines;
use crate::helpers::{Engine, TestApp, expect_json};

both_engines!(every_operator_selects_the_right_contacts);

async fn emails_of(app: &TestApp, key: &str, tree: &Value) -> Vec<String> {
    let s = expect_json(
        app.post("/segments", key, &json!({"name": "probe", "filters": tree}))
            .await,
        201,
    )
    .await;
    let id = s["id"].as_str().unwrap();
    let page = expect_json(
        app.get(&format!("/segments/{id}/contacts?pageSize=100"), key)
            .await,
        200,
    )
    .await;
    assert_eq!(page["total"], s["memberCount"], "{tree}");
    let mut out: Vec<String> = page["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            c["email"]
                .as_str()
                .unwrap()
                .split('@')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    out.sort();
    out
}

fn leaf(field: &str, op: &str, value: Value) -> Value {
    json!({"field": field, "operator": op, "value": value, "unit": "days"})
}

async fn every_operator_selects_the_right_contacts(engine: Engine) {
    // A mail world: `email.<status>` conditions need a real delivery and its feedback.
    let w = crate::feedback::world(engine).await;
    let (app, sk) = (&w.app, &w.project.secret_key);
    let now = app.clock.now();
    let day = |n: i64| herald_core::time::iso(now - n * 86_400_000);
    let people = [
        (
            "ann",
            json!({"plan": "pro", "age": 30, "vip": true, "renewal": day(2), "address": {"city": "Oslo"}}),
        ),
        (
            "bob",
            json!({"plan": "free", "age": 45, "vip": false, "renewal": &day(40)[..10]}),
        ),
        ("cid", json!({"plan": "Pro team", "age": "unknown"})),
        ("dan", json!({})),
    ];
    for (name, data) in &people {
        app.create_contact(
            sk,
            json!({"email": format!("{name}@example.com"), "data": data}),
        )
        .await;
    }
    app.patch(
        &format!(
            "/contacts/{}",
            expect_json(app.get("/contacts?limit=100", sk).await, 200).await["data"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["email"] == "dan@example.com")
                .unwrap()["id"]
                .as_str()
                .unwrap()
        ),
        sk,
        &json!({"subscribed": false}),
    )
    .await;
    let res = app
        .post(
            "/v1/track",
            sk,
            &json!({"email": "ann@example.com", "event": "login"}),
        )
        .await;
    assert!(res.status().is_success());
    app.clock.advance(Duration::from_secs(3 * 86_400));
    let res = app
        .post(
            "/v1/track",
            sk,
            &json!({"email": "bob@example.com", "event": "login"}),
        )
        .await;
    assert!(res.status().is_success());

    let st = expect_json(
        app.post(
            "/segments",
            sk,
            &json!({"name": "picked", "type": "STATIC"}),
        )
        .await,
        201,
    )
    .await;
    let st_id = st["id"].as_str().unwrap().to_owned();
    expect_json(
        app.post(
            &format!("/segments/{st_id}/members"),
            sk,
            &json!({"emails": ["cid@example.com"]}),
        )
        .await,
        200,
    )
    .await;

    let cases: Vec<(Value, Vec<&str>)> = vec![
        (leaf("data.plan", "equals", json!("pro")), vec!["ann"]),
        (
            leaf("data.plan", "notEquals", json!("pro")),
            vec!["bob", "cid"],
        ),
        (
            leaf("data.plan", "contains", json!("ro")),
            vec!["ann", "cid"],
        ),
        (leaf("data.plan", "notContains", json!("ro")), vec!["bob"]),
        (leaf("data.age", "greaterThan", json!(30)), vec!["bob"]),
        (leaf("data.age", "lessThan", json!(45)), vec!["ann"]),
        (
            leaf("data.age", "greaterThanOrEqual", json!(30)),
            vec!["ann", "bob"],
        ),
        (
            leaf("data.age", "lessThanOrEqual", json!("45")),
            vec!["ann", "bob"],
        ),
        (leaf("data.vip", "equals", json!(true)), vec!["ann"]),
        (
            leaf("data.address.city", "equals", json!("Oslo")),
            vec!["ann"],
        ),
        (
            leaf("data.age", "exists", Value::Null),
            vec!["ann", "bob", "cid"],
        ),
        (leaf("data.age", "notExists", Value::Null), vec!["dan"]),
        (leaf("data.renewal", "within", json!(10)), vec!["ann"]),
        (leaf("data.renewal", "olderThan", json!(10)), vec!["bob"]),
        (leaf("email", "contains", json!("n@")), vec!["ann", "dan"]),
        (leaf("subscribed", "equals", json!(false)), vec!["dan"]),
        (
            leaf("createdAt", "olderThan", json!(1)),
            vec!["ann", "bob", "cid", "dan"],
        ),
        (
            leaf("updatedAt", "within", json!(4)),
            vec!["ann", "bob", "cid", "dan"],
        ),
        (leaf("updatedAt", "within", json!(1)), vec![]),
        (
            leaf("event.login", "triggered", Value::Null),
            vec!["ann", "bob"],
        ),
        (
            leaf("event.login", "triggeredWithin", json!(1)),
            vec!["bob"],
        ),
        (
            leaf("event.login", "triggeredOlderThan", json!(1)),
            vec!["ann"],
        ),
        (
            leaf("event.login", "notTriggered", Value::Null),
            vec!["cid", "dan"],
        ),
        (
            leaf("event.login", "notTriggeredWithin", json!(1)),
            vec!["ann", "cid", "dan"],
        ),
        (leaf("email.opened", "triggered", Value::Null), vec![]),
        (leaf("email.sent", "triggered", Value::Null), vec![]),
        (
            leaf(&format!("segment.{st_id}"), "memberOfSegment", Value::Null),
            vec!["cid"],
        ),
        (
            leaf("segment", "notMemberOfSegment", json!(st_id)),
            vec!["ann", "bob", "dan"],
        ),
        (
            json!({"operator": "OR", "conditions": [
                leaf("data.plan", "equals", json!("free")),
                {"operator": "AND", "conditions": [
                    leaf("data.vip", "equals", json!(true)),
                    leaf("event.login", "triggered", Value::Null)]}]}),
            vec!["ann", "bob"],
        ),
    ];
    for (tree, want) in cases {
        assert_eq!(emails_of(app, sk, &tree).await, want, "{tree}");
    }

    // One message to cid, delivered to the sink and then opened: `email.<status>` leaves
    // select it by the message's events.
    let ids = crate::feedback::sent(&w, &["cid@example.com"]).await;
    let open = json!({"type": "open", "messageId": ids[0]});
    expect_json(crate::feedback::notify(app, &open).await, 200).await;
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (leaf("email.sent", "triggered", Value::Null), vec!["cid"]),
        (leaf("email.opened", "triggered", Value::Null), vec!["cid"]),
        (
            leaf("email.opened", "triggeredWithin", json!(1)),
            vec!["cid"],
        ),
        (
            leaf("email.opened", "notTriggered", Value::Null),
            vec!["ann", "bob", "dan"],
        ),
        (leaf("email.clicked", "triggered", Value::Null), vec![]),
    ];
    for (tree, want) in cases {
        assert_eq!(emails_of(app, sk, &tree).await, want, "{tree}");
    }
}
