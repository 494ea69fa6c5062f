use serde_json::{Value, json};

use super::*;
use crate::fields::FieldType;
use crate::time::parse_iso;

const NOW: i64 = 1_795_253_400_000; // 2026-11-21T09:30:00Z
const DAY: i64 = 86_400_000;

fn contact() -> ContactView {
    let mut c = ContactView {
        email: "ada@example.com".into(),
        subscribed: true,
        created_at: NOW - 10 * DAY,
        updated_at: NOW - DAY,
        data: json!({"plan": "pro", "age": 36, "vip": true, "renewal": "2026-11-20",
                     "seen": "2026-11-01T10:00:00Z", "address": {"city": "Oslo"}, "gone": null})
        .as_object()
        .cloned()
        .unwrap(),
        ..Default::default()
    };
    c.events
        .insert("login".into(), vec![NOW - 40 * DAY, NOW - 2 * DAY]);
    c.events.insert("email.open".into(), vec![NOW - 40 * DAY]);
    c
}

fn m(tree: Value) -> bool {
    evaluate(&Filter::parse(&tree).unwrap(), &contact(), NOW)
}

fn leaf(field: &str, op: &str, value: Value) -> bool {
    m(json!({"field": field, "operator": op, "value": value, "unit": "days"}))
}

#[test]
fn every_value_operator() {
    assert!(leaf("data.plan", "equals", json!("pro")));
    assert!(!leaf("data.plan", "notEquals", json!("pro")));
    assert!(leaf("data.plan", "contains", json!("r")));
    assert!(leaf("data.plan", "notContains", json!("x")));
    assert!(leaf("data.age", "greaterThan", json!(30)));
    assert!(leaf("data.age", "lessThan", json!(40)));
    assert!(leaf("data.age", "greaterThanOrEqual", json!(36)));
    assert!(leaf("data.age", "lessThanOrEqual", json!(36)));
    assert!(leaf("data.vip", "equals", json!(true)));
    assert!(leaf("data.address.city", "equals", json!("Oslo")));
    assert!(leaf("data.plan", "exists", Value::Null));
    assert!(leaf("data.gone", "notExists", Value::Null));
    assert!(leaf("data.renewal", "within", json!(3)));
    assert!(!leaf("data.renewal", "olderThan", json!(3)));
    assert!(leaf("data.seen", "olderThan", json!(3)));
    assert!(leaf("data.seen", "greaterThan", json!("2026-11-01")));
    assert!(leaf("createdAt", "olderThan", json!(5)));
    assert!(leaf("updatedAt", "within", json!(5)));
    assert!(leaf("email", "contains", json!("@example")));
    assert!(leaf("subscribed", "equals", json!(true)));
}

#[test]
fn event_operators() {
    assert!(leaf("event.login", "triggered", Value::Null));
    assert!(leaf("event.login", "triggeredWithin", json!(3)));
    assert!(!leaf("event.login", "triggeredOlderThan", json!(3)));
    assert!(leaf("event.login", "triggeredOlderThan", json!(1)));
    assert!(leaf("event.never", "notTriggered", Value::Null));
    assert!(leaf("event.login", "notTriggeredWithin", json!(1)));
    assert!(leaf("email.opened", "triggered", Value::Null));
    assert!(!leaf("email.clicked", "triggered", Value::Null));
}

#[test]
fn missing_field_matches_only_not_exists() {
    for op in [
        "equals",
        "notEquals",
        "contains",
        "notContains",
        "greaterThan",
        "lessThan",
        "exists",
    ] {
        assert!(!leaf("data.nope", op, json!("x")), "{op}");
    }
    assert!(leaf("data.nope", "notExists", Value::Null));
    assert!(!leaf("data.nope", "within", json!(1)));
}

#[test]
fn groups_nest() {
    assert!(m(json!({"operator": "OR", "conditions": [
        {"field": "data.plan", "operator": "equals", "value": "free"},
        {"operator": "AND", "conditions": [
            {"field": "data.age", "operator": "greaterThan", "value": 1},
            {"field": "event.login", "operator": "triggered"}]}]})));
    assert!(m(json!({"operator": "AND", "conditions": []})));
    assert!(!m(json!({"operator": "OR", "conditions": []})));
}

#[test]
fn coercion_follows_the_inferred_type() {
    let types = |k: &str| (k == "age").then_some(FieldType::Number);
    let f = Filter::parse_with_types(
        &json!({"field": "data.age", "operator": "greaterThan", "value": "30"}),
        &types,
    )
    .unwrap();
    assert!(evaluate(&f, &contact(), NOW));
    let e = Filter::parse_with_types(
        &json!({"field": "data.age", "operator": "equals", "value": "old"}),
        &types,
    )
    .unwrap_err();
    assert_eq!((e.path.as_str(), e.code), ("value", "invalid_value"));
    assert_eq!(
        parse_iso("2026-11-20T00:00:00.000Z"),
        Some(NOW - DAY - 9 * 3_600_000 - 1_800_000)
    );
}

#[test]
fn errors_carry_the_path() {
    let cases = [
        (json!([]), "", "invalid_type"),
        (
            json!({"conditions": [{"field": "data.a", "operator": "near", "value": 1}]}),
            "conditions.0.operator",
            "invalid_operator",
        ),
        (
            json!({"conditions": [{"field": "data.a", "operator": "equals"}]}),
            "conditions.0.value",
            "required",
        ),
        (
            json!({"conditions": [{}, {"field": "createdAt", "operator": "within", "value": 3}]}),
            "conditions.0.field",
            "required",
        ),
        (
            json!({"conditions": [{"field": "createdAt", "operator": "within", "value": 3}]}),
            "conditions.0.unit",
            "required",
        ),
        (
            json!({"conditions": [{"field": "event.x", "operator": "equals", "value": 3}]}),
            "conditions.0.operator",
            "invalid_operator",
        ),
        (
            json!({"conditions": [{"field": "nope", "operator": "exists"}]}),
            "conditions.0.field",
            "invalid_field",
        ),
        (
            json!({"operator": "XOR", "conditions": []}),
            "operator",
            "invalid_operator",
        ),
        (
            json!({"field": "data.vip", "operator": "contains", "value": true}),
            "operator",
            "invalid_operator",
        ),
    ];
    for (tree, path, code) in cases {
        let e = Filter::parse(&tree).unwrap_err();
        assert_eq!((e.path.as_str(), e.code), (path, code), "{tree}");
    }
}

#[test]
fn segment_fields() {
    let id = uuid::Uuid::nil();
    let f =
        Filter::parse(&json!({"field": format!("segment.{id}"), "operator": "memberOfSegment"}))
            .unwrap();
    assert_eq!(f.segment_refs(), vec![id]);
    let mut c = contact();
    assert!(!evaluate(&f, &c, NOW));
    c.segments.insert(id);
    assert!(evaluate(&f, &c, NOW));
    let g = Filter::parse(
        &json!({"field": "segment", "operator": "notMemberOfSegment", "value": id.to_string()}),
    )
    .unwrap();
    assert!(!evaluate(&g, &c, NOW));
}
