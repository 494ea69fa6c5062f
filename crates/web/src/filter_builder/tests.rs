//! The form model alone: form fields to tree, tree to form, the buttons' actions.

use serde_json::json;

use super::catalogue::{Catalogue, Choice, ChoiceGroup, Kind};
use super::model::{Node, from_form, from_tree, to_tree};
use crate::form::FormData;

fn catalogue() -> Catalogue {
    let choice = |v: &str, kind| Choice {
        value: v.to_owned(),
        label: v.to_owned(),
        kind,
    };
    Catalogue {
        groups: vec![ChoiceGroup {
            label: "All",
            choices: vec![
                choice("email", Kind::Text),
                choice("subscribed", Kind::Boolean),
                choice("createdAt", Kind::Date),
                choice("data.logins", Kind::Number),
                choice("data.plan", Kind::Text),
                choice("event", Kind::Event),
            ],
        }],
        events: Vec::new(),
    }
}

fn form(pairs: &[(&str, &str)]) -> FormData {
    FormData(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

#[test]
fn a_posted_form_becomes_the_api_tree_with_typed_values_and_no_gaps() {
    let f = form(&[
        ("name", "Pro users"),
        ("filters.conditions", ""),
        ("filters.operator", "AND"),
        ("filters.conditions.0.field", "data.plan"),
        ("filters.conditions.0.operator", "equals"),
        ("filters.conditions.0.value", "pro"),
        // Index 1 was removed; 2 follows 0 and becomes 1.
        ("filters.conditions.2.conditions", ""),
        ("filters.conditions.2.operator", "OR"),
        ("filters.conditions.2.conditions.0.field", "data.logins"),
        ("filters.conditions.2.conditions.0.operator", "greaterThan"),
        ("filters.conditions.2.conditions.0.value", "5"),
        ("filters.conditions.2.conditions.1.field", "event"),
        ("filters.conditions.2.conditions.1.event", "purchase"),
        (
            "filters.conditions.2.conditions.1.operator",
            "triggeredWithin",
        ),
        ("filters.conditions.2.conditions.1.value", "30"),
        ("filters.conditions.2.conditions.1.unit", "days"),
        ("filters.conditions.2.conditions.2.field", "subscribed"),
        ("filters.conditions.2.conditions.2.operator", "exists"),
        ("filters.conditions.2.conditions.2.value", "ignored"),
    ]);
    let c = catalogue();
    let mut root = from_form(&f, "filters");
    root.fit(&c);
    assert_eq!(
        to_tree(&root, &c),
        json!({"operator": "AND", "conditions": [
            {"field": "data.plan", "operator": "equals", "value": "pro"},
            {"operator": "OR", "conditions": [
                {"field": "data.logins", "operator": "greaterThan", "value": 5.0},
                {"field": "event.purchase", "operator": "triggeredWithin", "value": 30.0, "unit": "days"},
                {"field": "subscribed", "operator": "exists"},
            ]},
        ]})
    );
}

#[test]
fn a_value_that_is_not_of_its_type_goes_as_typed_for_the_api_to_refuse() {
    let f = form(&[
        ("filters.operator", "AND"),
        ("filters.conditions.0.field", "data.logins"),
        ("filters.conditions.0.operator", "greaterThan"),
        ("filters.conditions.0.value", "many"),
    ]);
    let c = catalogue();
    let tree = to_tree(&from_form(&f, "filters"), &c);
    assert_eq!(tree["conditions"][0]["value"], "many");
}

#[test]
fn the_buttons_add_a_row_add_a_group_and_remove_by_posted_path() {
    let base = [
        ("filters.operator", "AND"),
        ("filters.conditions.0.field", "email"),
        ("filters.conditions.0.operator", "contains"),
        ("filters.conditions.0.value", "a"),
        ("filters.conditions.3.field", "email"),
        ("filters.conditions.3.operator", "contains"),
        ("filters.conditions.3.value", "b"),
    ];
    let with = |action: &str| {
        let mut pairs = base.to_vec();
        pairs.push(("builder", action));
        from_form(&form(&pairs), "filters")
    };
    let added = with("add-row:filters");
    assert_eq!(added.children.len(), 3);
    assert!(matches!(&added.children[2], Node::Row(r) if r.fresh));
    let grouped = with("add-group:filters");
    assert!(
        matches!(&grouped.children[2], Node::Group(g) if g.op == "OR" && g.children.len() == 1)
    );
    let removed = with("remove:filters.conditions.3");
    assert_eq!(removed.children.len(), 1);
    assert!(matches!(&removed.children[0], Node::Row(r) if r.value == "a"));
    // An unknown path or verb changes nothing.
    assert_eq!(with("remove:filters.conditions.9").children.len(), 2);
    assert_eq!(with("explode:filters").children.len(), 2);
}

#[test]
fn a_stored_tree_comes_back_as_the_same_tree() {
    let tree = json!({"operator": "OR", "conditions": [
        {"field": "createdAt", "operator": "within", "value": 7.0, "unit": "days"},
        {"operator": "AND", "conditions": [
            {"field": "event.signup", "operator": "notTriggered"},
            {"field": "subscribed", "operator": "equals", "value": false},
        ]},
    ]});
    let c = catalogue();
    let mut g = from_tree(&tree);
    g.fit(&c);
    assert_eq!(to_tree(&g, &c), tree);
    // A leaf at the root becomes an AND group of one.
    let leaf = json!({"field": "email", "operator": "contains", "value": "@x"});
    assert_eq!(
        to_tree(&from_tree(&leaf), &c),
        json!({"operator": "AND", "conditions": [leaf]})
    );
}

#[test]
fn an_operator_the_field_does_not_take_becomes_its_first() {
    let f = form(&[
        ("filters.conditions.0.field", "subscribed"),
        ("filters.conditions.0.operator", "contains"),
    ]);
    let c = catalogue();
    let mut g = from_form(&f, "filters");
    g.fit(&c);
    assert_eq!(
        to_tree(&g, &c)["conditions"][0],
        json!({"field": "subscribed", "operator": "equals", "value": true})
    );
}

#[test]
fn a_crafted_form_cannot_nest_without_end() {
    let mut key = "filters".to_owned();
    let mut pairs = Vec::new();
    for _ in 0..5000 {
        key.push_str(".conditions.0");
        pairs.push((format!("{key}.conditions"), String::new()));
    }
    let g = from_form(&FormData(pairs), "filters");
    let mut depth = 0;
    let mut at = &g;
    while let Some(Node::Group(inner)) = at.children.first() {
        depth += 1;
        at = inner;
    }
    assert!(depth <= herald_core::filter::MAX_DEPTH + 1, "{depth}");
}
